//! How the agent loop sees the subagents it started: the [`Spawner`] trait, which
//! [`Subagents`](crate::Subagents) implements. The loop knows no more of them.

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use toolbelt_core::Origin;

use crate::events::EventTx;

/// The subagents an agent started, as its loop sees them: their progress goes into
/// the agent's events, and the reports of those in the background into its
/// conversation. [`Subagents`](crate::Subagents) is the one the crate provides; the
/// loop knows no more of it than this.
pub trait Spawner: Send + Sync + std::fmt::Debug {
    /// Sends the subagents' events to `events`, and records `run_id` as the parent
    /// run of the subagents started from now on; their calls come from `origin`
    /// (the agent's, with its run), as `subagent` with `run_id` as their parent.
    fn bind(&self, events: EventTx, run_id: &str, origin: &Origin);

    /// The reports of background subagents that ended and were not yet delivered,
    /// as messages for the model; they count as delivered from now on.
    fn take_reports(&self) -> BoxFuture<'_, Vec<String>>;

    /// True when reports wait for delivery.
    fn has_reports(&self) -> bool;

    /// Background subagents this agent started that are still running.
    fn running(&self) -> usize;

    /// Waits until a background subagent of this agent ends (or `cancel` fires).
    fn wait_any<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()>;
}
