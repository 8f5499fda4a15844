//! What the registry asks before and after a call that may change files, so that
//! whatever the call did can be seen and undone.
//!
//! The registry knows nothing of how changes are kept: a [`Checkpointer`] (the
//! binary's, over the state directory and the store) is asked
//! [`Checkpointer::before`] every call whose tool may change files
//! ([`Tool::changes`](crate::Tool::changes) is not [`Changes::Nothing`]), after the
//! call was approved and before it runs; the [`PendingCheckpoint`] it returns is
//! finished after the call, whatever its outcome. Who asked for the call travels
//! with it as its [`Origin`], kept in the checkpoint and the call log.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::Envelope;

/// A boxed future that may move between threads (the same type as
/// [`crate::BoxFuture`], spelled here so that this module needs no other).
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Where a call came from: the front end and, where it has them, the agent run and
/// its turn, the MCP session and client, the API token's label or the cron job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The front end: `cli`, `batch`, `mcp`, `mcp-http`, `api`, `web`, `agent`,
    /// `subagent`, `cron` or `rewind`.
    pub front_end: String,
    /// The agent run the call is part of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The run's turn (1 is the first prompt of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The run that started this one (a subagent's parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// The MCP session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The MCP client's name, as it gave it (`claude-code`, `codex-mcp-client`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The label of the API token the request carried (never the token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The cron job that ran the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

impl Origin {
    /// An origin with only its front end.
    pub fn new(front_end: impl Into<String>) -> Origin {
        Origin {
            front_end: front_end.into(),
            ..Origin::default()
        }
    }

    /// The same origin in agent run `run_id`'s turn `turn`.
    #[must_use]
    pub fn in_turn(mut self, run_id: impl Into<String>, turn: u32) -> Origin {
        self.run_id = Some(run_id.into());
        self.turn = Some(turn);
        self
    }
}

impl fmt::Display for Origin {
    /// `mcp (client claude-code, session 3f2a)`, `agent (run r-1, turn 2)`, `cli`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let front = if self.front_end.is_empty() {
            "unknown"
        } else {
            &self.front_end
        };
        f.write_str(front)?;
        let mut parts = Vec::new();
        if let Some(c) = &self.client {
            parts.push(format!("client {c}"));
        }
        if let Some(s) = &self.session {
            parts.push(format!("session {s}"));
        }
        if let Some(t) = &self.token {
            parts.push(format!("token {t}"));
        }
        if let Some(j) = &self.job {
            parts.push(format!("job {j}"));
        }
        if let Some(p) = &self.parent_run_id {
            parts.push(format!("parent {p}"));
        }
        if let Some(r) = &self.run_id {
            parts.push(format!("run {r}"));
        }
        if let Some(t) = self.turn {
            parts.push(format!("turn {t}"));
        }
        if !parts.is_empty() {
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

/// A path a call changed, as its checkpoint saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    /// The path, relative to the workspace's first root (absolute outside it).
    pub path: String,
    /// `created`, `modified`, `deleted`, `renamed` or `mode`.
    pub change: String,
}

/// What a call may change, as its tool tells from the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    /// Nothing on disk (the tool only reads, or keeps its state in the store).
    Nothing,
    /// These paths and nothing else (absolute, or relative to the session's
    /// directory): a file tool's targets, both ends of a move.
    Paths(Vec<PathBuf>),
    /// Anything in the workspace: a shell command, a tool that cannot say.
    Unknown,
}

/// A path of [`Changes::Paths`] (absolute, or relative to `cwd`) made absolute
/// and cleaned of `.` and `..` by text, without touching the disk.
pub fn absolute_path(cwd: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A call about to run, as a [`Checkpointer`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct CheckpointCall<'a> {
    /// The canonical tool name.
    pub tool: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// The arguments, repaired and validated.
    pub arguments: &'a Value,
    /// What the call may change.
    pub changes: &'a Changes,
    /// Where it came from.
    pub origin: &'a Origin,
    /// The session's directory (relative paths of `changes` are under it).
    pub cwd: &'a Path,
}

/// Why a call must not run: a checkpoint is required and could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no checkpoint could be taken before this call, and one is required: {reason}")]
pub struct CheckpointRefused {
    /// What went wrong (`no space left on the device`).
    pub reason: String,
}

/// What became of a call's checkpoint, for its envelope and record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckpointNote {
    /// The checkpoint's id (`cp-12`), when one was kept.
    pub id: Option<String>,
    /// How many paths the call changed.
    pub files: usize,
    /// The paths it changed and how (for the hooks that run after it).
    pub changed: Vec<ChangedFile>,
    /// What was left out, when the checkpoint is partial or was not taken
    /// (`checkpoint not taken: no space`).
    pub problem: Option<String>,
}

/// Takes what is needed to undo a call before it runs. See the
/// [module documentation](self).
pub trait Checkpointer: Send + Sync {
    /// Called once the call is approved and just before it runs. `Ok(None)`: there
    /// is nothing to keep (checkpoints are off for this workspace). `Err`: the call
    /// must not run (a checkpoint is required and could not be taken); any other
    /// failure is the checkpoint's own, noted in its [`CheckpointNote`], and the call
    /// runs.
    fn before<'a>(
        &'a self,
        call: CheckpointCall<'a>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn PendingCheckpoint>>, CheckpointRefused>>;

    /// Undoes what the call of checkpoint `id` (`cp-12`) changed, and only that
    /// (a hook asked for it after the call); the checkpoint is marked reverted.
    /// Returns how many paths were put back.
    ///
    /// # Errors
    /// The checkpoint is unknown, or a path cannot be put back. The default:
    /// this checkpointer cannot undo single calls.
    fn revert<'a>(
        &'a self,
        id: &'a str,
        origin: &'a Origin,
    ) -> BoxFuture<'a, Result<usize, RevertFailed>> {
        let _ = origin;
        Box::pin(async move {
            Err(RevertFailed(
                format!("checkpoint {id} cannot be reverted by this checkpointer").into(),
            ))
        })
    }
}

/// Why a call's changes could not be undone.
#[derive(Debug, thiserror::Error)]
#[error("the call's changes could not be undone")]
pub struct RevertFailed(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// A checkpoint taken before a call, finished after it.
pub trait PendingCheckpoint: Send {
    /// Called after the call, whatever its outcome (an error, a timeout and a
    /// cancellation may have changed files too): finds and keeps what changed.
    fn after(self: Box<Self>, envelope: &Envelope) -> BoxFuture<'static, CheckpointNote>;
}
