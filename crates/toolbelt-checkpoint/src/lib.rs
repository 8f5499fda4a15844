//! Checkpoints and rewind: what each tool call changed in the workspace, kept so
//! that it can be seen and undone, whatever front end made the call.
//!
//! - [`Checkpoints`] is the registry's [`toolbelt_core::Checkpointer`]. Before a
//!   call of a file tool it keeps the bytes of the paths the tool names; before a
//!   shell command (or any tool that cannot say what it writes) it walks the
//!   workspace with a stat index (ignore rules honoured, `.git` never, only
//!   changed entries read again) and after it walks again: what was created,
//!   modified, deleted, renamed (same inode) or changed in mode is one
//!   checkpoint. A command the shell parser knows reads only costs nothing.
//! - The content is kept once per SHA-256, compressed, in
//!   `<state>/checkpoints/objects/` (outside the workspace and the sandbox); the
//!   records are in the store (SQLite or PostgreSQL), so replicas share them.
//! - Bounds ([`Settings`]): a file over `max_file_bytes` is recorded as not
//!   captured (a rewind leaves it alone and says so), `max_total_bytes` and
//!   `max_age` prune the oldest checkpoints first, `walk_budget` marks a
//!   checkpoint partial instead of delaying the call, `required` refuses a call
//!   that cannot be checkpointed.
//! - [`Checkpoints::plan_rewind`] and [`Checkpoints::rewind`]: every path changed
//!   from a checkpoint on goes back to how it was before it, all or nothing,
//!   journalled (a rewind cut short is finished by [`Checkpoints::recover`]);
//!   a path changed outside toolbelt since it last wrote it is a conflict. A
//!   rewind is itself a checkpoint, so it can be undone.

mod blobs;
mod error;
mod gc;
mod index;
mod observe;
mod recorder;
mod rewind;
mod show;
mod watch;
mod workspace;

use std::time::Duration;

pub use blobs::{Blobs, hash_bytes};
pub use error::CheckpointError;
pub use gc::Collected;
pub use rewind::{Conflicts, RewindItem, RewindOutcome, RewindPlan, RewindRequest};
pub use show::{FileDiff, checkpoint_diff};
pub use workspace::Checkpoints;

/// How checkpoints are taken and kept (`[checkpoints]` in the configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Take checkpoints at all.
    pub enabled: bool,
    /// Refuse a call when no checkpoint can be taken (no space, say), instead of
    /// running it without one.
    pub required: bool,
    /// A file larger than this is recorded as "not captured".
    pub max_file_bytes: u64,
    /// The content kept for all checkpoints; past it the oldest are pruned.
    pub max_total_bytes: u64,
    /// Checkpoints older than this are pruned.
    pub max_age: Duration,
    /// How long one walk of the workspace may take before the checkpoint is
    /// marked partial (the call still runs).
    pub walk_budget: Duration,
}

/// 16 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// 1 GiB.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;
/// 30 days.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            enabled: true,
            required: false,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            max_age: DEFAULT_MAX_AGE,
            walk_budget: recorder::DEFAULT_WALK_BUDGET,
        }
    }
}

/// A checkpoint's id as people and models see it: `cp-12`.
pub fn display_id(id: i64) -> String {
    format!("cp-{id}")
}

/// The number in `cp-12` (or `12`).
///
/// # Errors
/// [`CheckpointError::BadId`] for anything else.
pub fn parse_id(text: &str) -> Result<i64, CheckpointError> {
    let digits = text.trim().strip_prefix("cp-").unwrap_or(text.trim());
    digits
        .parse::<i64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| CheckpointError::BadId(text.to_string()))
}
