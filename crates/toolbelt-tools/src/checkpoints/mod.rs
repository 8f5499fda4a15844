//! The checkpoints toolset, served when the workspace keeps checkpoints:
//! [`checkpoint_list::CheckpointList`] lists them, [`checkpoint_diff::CheckpointDiff`]
//! shows what one changed, [`rewind::Rewind`] goes back to before one. And what
//! they share: a checkpoint as the model reads it, the errors of
//! `toolbelt-checkpoint` as tool errors, and [`AskBeforeRewind`], which makes a
//! rewind wait for approval unless a rule of the user's says otherwise.

pub(crate) mod checkpoint_diff;
pub(crate) mod checkpoint_list;
pub(crate) mod rewind;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use toolbelt_checkpoint::CheckpointError;
use toolbelt_core::{
    Authorizer, Decision, ErrorCode, Evaluation, Guard, Origin, Request, ToolError, error_chain,
};
use toolbelt_store::CheckpointRecord;

/// The permission `rewind` declares: [`AskBeforeRewind`] asks for it by default.
pub(crate) const REWIND_PERMISSION: &str = "checkpoints:rewind";

/// What ends the permission subject of a dry run (`cp-7 dry run`), which changes
/// nothing and so is not asked about.
pub(crate) const DRY_RUN_SUBJECT: &str = " dry run";

/// Paths of a checkpoint a listing names; the others are counted.
pub(crate) const LISTED_PATHS: usize = 10;

/// Puts a call that rewinds files to the person first ([`Decision::Ask`]) when no
/// rule of the user's decided it: a rewind overwrites the workspace's files with
/// older content, and is not what a model should do unasked. A rule that allows
/// it (`rewind`, `rewind(cp-7)`, `*`) lets it run; a dry run is never asked about.
/// Every other request is the wrapped authorizer's.
#[derive(Debug)]
pub(crate) struct AskBeforeRewind {
    inner: Arc<dyn Authorizer>,
}

impl AskBeforeRewind {
    pub(crate) fn new(inner: Arc<dyn Authorizer>) -> AskBeforeRewind {
        AskBeforeRewind { inner }
    }
}

impl Authorizer for AskBeforeRewind {
    fn evaluate(&self, request: &Request<'_>) -> Evaluation {
        let eval = self.inner.evaluate(request);
        let rewinds = request.permissions.iter().any(|p| p == REWIND_PERMISSION);
        let dry_run = request
            .subject
            .is_some_and(|s| s.ends_with(DRY_RUN_SUBJECT));
        if !rewinds || dry_run || eval.decision != Decision::Allow || eval.rule.is_some() {
            return eval;
        }
        // The rule's text is what the model reads when nobody can approve: it
        // says how the person can rewind themselves.
        let command = request.subject.map_or_else(
            || "toolbelt rewind ID".to_string(),
            |id| format!("toolbelt rewind {id}"),
        );
        Evaluation {
            decision: Decision::Ask,
            rule: Some(format!(
                "ask before a rewind (built-in; without approval here, the user can run: {command})"
            )),
        }
    }

    fn guard(&self, request: &Request<'_>) -> Option<Guard> {
        self.inner.guard(request)
    }

    fn secret_defaults(&self) -> bool {
        self.inner.secret_defaults()
    }
}

/// A checkpoint as the tools list it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CheckpointSummary {
    /// Its id, e.g. `cp-12`.
    pub id: String,
    /// When it was taken (RFC 3339, UTC).
    pub at: String,
    /// The tool whose call it is (`rewind` for a rewind's own).
    pub tool: String,
    /// Where the call came from: `mcp (client claude-code)`, `cli`, `api`...
    pub origin: String,
    /// `complete`, `partial` (some content could not be kept) or `pruned` (its
    /// content is no longer kept: it cannot be rewound to).
    pub status: String,
    /// What went wrong, or why it was pruned.
    pub problem: Option<String>,
    /// On a rewind's own checkpoint, the checkpoint it went back to.
    pub rewind_of: Option<String>,
    /// How many paths it changed.
    pub file_count: u64,
    /// The paths (the first 10 in a listing).
    pub files: Vec<String>,
}

impl CheckpointSummary {
    /// `record` with at most `paths` of its paths.
    pub(crate) fn new(record: &CheckpointRecord, paths: usize) -> CheckpointSummary {
        CheckpointSummary {
            id: toolbelt_checkpoint::display_id(record.id),
            at: rfc3339(record.at_ms),
            tool: record.tool.clone(),
            origin: origin_text(&record.origin),
            status: record.status.clone(),
            problem: record.problem.clone(),
            rewind_of: record.rewind_of.map(toolbelt_checkpoint::display_id),
            file_count: u64::try_from(record.file_count).unwrap_or(0),
            files: record
                .files
                .iter()
                .take(paths)
                .map(|f| f.path.clone())
                .collect(),
        }
    }

    /// One line: `cp-9 2026-05-04T09:36:12Z edit_file from mcp (client x): src/a.rs`.
    pub(crate) fn line(&self) -> String {
        let mut line = format!("{} {} {} from {}", self.id, self.at, self.tool, self.origin);
        if let Some(to) = &self.rewind_of {
            line.push_str(&format!(" (rewound to before {to})"));
        }
        if self.status != "complete" {
            line.push_str(&format!(" [{}]", self.status));
        }
        let shown = self.files.len() as u64;
        match self.file_count {
            0 => line.push_str(": no files"),
            1 => line.push_str(&format!(": {}", self.files.join(""))),
            n => {
                line.push_str(&format!(": {n} files: {}", self.files.join(", ")));
                if n > shown {
                    line.push_str(&format!(" and {} more", n - shown));
                }
            }
        }
        line
    }
}

/// A record's origin (its JSON) as one line: `mcp (client claude-code)`.
pub(crate) fn origin_text(json: &str) -> String {
    match serde_json::from_str::<Origin>(json) {
        Ok(origin) => origin.to_string(),
        Err(_) if json.is_empty() => "unknown".to_string(),
        Err(_) => json.to_string(),
    }
}

/// Milliseconds since the epoch as RFC 3339 (UTC, seconds).
pub(crate) fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}

/// The number of a checkpoint id as the model gives it (`cp-12` or `12`).
pub(crate) fn checkpoint_number(text: &str) -> Result<i64, ToolError> {
    toolbelt_checkpoint::parse_id(text).map_err(tool_error)
}

/// What to do when an id is unknown.
const LIST_HINT: &str = "call checkpoint_list for the ids of this workspace's checkpoints";

/// A failure of `toolbelt-checkpoint` as the model reads it.
pub(crate) fn tool_error(e: CheckpointError) -> ToolError {
    let message = error_chain(&e);
    match e {
        CheckpointError::NotFound(_) => {
            ToolError::new(ErrorCode::NotFound, message).hint(LIST_HINT)
        }
        CheckpointError::BadId(_) => {
            ToolError::new(ErrorCode::InvalidParams, message).hint(LIST_HINT)
        }
        CheckpointError::BadGlob { .. } => ToolError::new(ErrorCode::InvalidParams, message)
            .hint("give globs relative to the workspace root, such as `src/**` or `*.toml`"),
        CheckpointError::Pruned(_) => ToolError::new(ErrorCode::NotFound, message).hint(
            "its content was removed (too old, or over the space kept for checkpoints); \
             choose a later checkpoint, or tell the user",
        ),
        CheckpointError::Conflicts(paths) => ToolError::new(ErrorCode::Conflict, message)
            .hint(
                "nothing was changed; someone else edited these files since: read them first, \
                 then rewind with `skip_conflicts: true` to leave them alone, or with `files` \
                 naming only the paths to rewind",
            )
            .data(serde_json::json!({ "conflicts": paths })),
        CheckpointError::Outside { .. } => ToolError::new(ErrorCode::AccessDenied, message),
        CheckpointError::NoRewind => ToolError::new(ErrorCode::NotFound, message),
        CheckpointError::Store(e) => ToolError::from(e),
        CheckpointError::Io { .. }
        | CheckpointError::Damaged { .. }
        | CheckpointError::NoSpace
        | CheckpointError::Task(_) => {
            tracing::error!("checkpoint failure: {message}");
            ToolError::new(ErrorCode::Internal, message).hint(
                "a rewind cut short is finished the next time one runs; tell the user, \
                 who can run `toolbelt rewind` to see where things stand",
            )
        }
    }
}
