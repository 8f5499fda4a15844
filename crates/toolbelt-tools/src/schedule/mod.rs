//! The schedule toolset: [`Cron`] adds, lists, removes and fires jobs kept in the
//! store and fired by `toolbelt serve` ([`toolbelt_sched::Scheduler`]).

pub(crate) mod cron;

use toolbelt_core::ToolContext;

/// The workspace a job belongs to: the session's first root (its cwd without roots).
pub(crate) fn workspace_key(ctx: &ToolContext) -> String {
    let session = ctx.session();
    session.roots().first().map_or_else(
        || session.cwd().display().to_string(),
        |r| r.display().to_string(),
    )
}
