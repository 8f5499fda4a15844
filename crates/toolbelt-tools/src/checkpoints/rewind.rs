//! `rewind`: every file changed from a checkpoint on goes back to how it was
//! before it, all or nothing. Its permission subject is the checkpoint (`cp-7`,
//! or `cp-7 dry run`), and [`AskBeforeRewind`](super::AskBeforeRewind) puts every
//! real rewind to the person unless a rule allows it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_checkpoint::{Checkpoints, RewindItem, RewindOutcome, RewindRequest};
use toolbelt_core::{
    BoxFuture, Category, Changes, Envelope, Hints, Origin, Reply, Tool, ToolContext, ToolResult,
    ToolSpec, Typed, TypedTool, Violation,
};

use crate::checkpoints::{DRY_RUN_SUBJECT, REWIND_PERMISSION, checkpoint_number, tool_error};

/// Arguments of `rewind`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewindParams {
    /// The checkpoint to undo from, e.g. `cp-7`.
    #[schemars(length(min = 1))]
    pub checkpoint: String,
    /// Only paths matching these globs (e.g. `src/**`).
    #[serde(default)]
    pub files: Option<Vec<String>>,
    /// Only show what would change (default false).
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// Leave conflicting files alone and rewind the others (default false).
    #[serde(default)]
    pub skip_conflicts: Option<bool>,
}

/// One path of a rewind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RewoundPath {
    /// The path, relative to the workspace root.
    pub path: String,
    /// `restore`, `remove`, `recreate`, `relink`, `chmod`, or `none` when it is
    /// already as it was.
    pub action: String,
    /// It was edited outside toolbelt since toolbelt last wrote it.
    pub conflict: bool,
    /// Why it is left alone, when it is.
    pub skipped: Option<String>,
}

/// Result of `rewind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RewindOutput {
    /// The checkpoint gone back to before.
    pub to: String,
    /// The checkpoints undone, oldest first.
    pub undoes: Vec<String>,
    /// Nothing was changed (a dry run).
    pub dry_run: bool,
    /// Paths put back (in a dry run: that would be).
    pub restored: u64,
    /// Every path the undone checkpoints changed.
    pub paths: Vec<RewoundPath>,
    /// The rewind's own checkpoint: rewinding to it undoes this rewind.
    pub checkpoint: Option<String>,
}

/// The `rewind` tool as typed arguments see it; served as [`RewindTool`].
#[derive(Debug, Clone)]
pub struct Rewind {
    checkpoints: Checkpoints,
}

impl TypedTool for Rewind {
    type Params = RewindParams;
    type Output = RewindOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("rewind", include_str!("rewind.md"))
            .title("Rewind Files to a Checkpoint")
            .category(Category::Files)
            .permission(REWIND_PERMISSION)
            .key_argument("checkpoint")
            .hints(Hints::writes().destructive())
            .example(
                "See what going back to before cp-7 would do",
                serde_json::json!({"checkpoint": "cp-7", "dry_run": true}),
                serde_json::json!({
                    "to": "cp-7", "undoes": ["cp-7", "cp-8"], "dry_run": true, "restored": 2,
                    "paths": [
                        {"path": "src/main.rs", "action": "restore", "conflict": false, "skipped": null},
                        {"path": "src/new.rs", "action": "remove", "conflict": false, "skipped": null}
                    ],
                    "checkpoint": null
                }),
            )
    }

    fn validate(&self, p: &RewindParams) -> Vec<Violation> {
        match checkpoint_number(&p.checkpoint) {
            Ok(_) => Vec::new(),
            Err(e) => vec![Violation::new("checkpoint", e.message)],
        }
    }

    /// Nothing: a rewind keeps its own checkpoint of what it overwrites.
    fn changes(&self, _args: &Value) -> Option<Changes> {
        Some(Changes::Nothing)
    }

    async fn call(&self, _ctx: &ToolContext, p: RewindParams) -> ToolResult<RewindOutput> {
        let request = RewindRequest {
            to: checkpoint_number(&p.checkpoint)?,
            files: p.files.unwrap_or_default(),
            skip_conflicts: p.skip_conflicts.unwrap_or(false),
            force: false,
            dry_run: p.dry_run.unwrap_or(false),
            only: false,
            // The call's own origin is in the call log; the rewind's checkpoint
            // says it was a rewind.
            origin: Origin::new("rewind"),
        };
        let outcome = self
            .checkpoints
            .rewind(&request)
            .await
            .map_err(tool_error)?;
        let text = outcome_text(&outcome);
        Ok(Reply::new(output(outcome), text))
    }
}

fn output(outcome: RewindOutcome) -> RewindOutput {
    RewindOutput {
        to: outcome.plan.to,
        undoes: outcome.plan.undoes,
        dry_run: outcome.dry_run,
        restored: outcome.restored as u64,
        paths: outcome.plan.items.into_iter().map(rewound_path).collect(),
        checkpoint: outcome.checkpoint,
    }
}

fn rewound_path(item: RewindItem) -> RewoundPath {
    RewoundPath {
        path: item.path,
        action: item.action,
        conflict: item.conflict,
        skipped: item.skipped,
    }
}

/// What the model reads: what was (or would be) done to each path, and how to undo it.
fn outcome_text(outcome: &RewindOutcome) -> String {
    let plan = &outcome.plan;
    let undoes = plan.undoes.join(", ");
    let mut text = if outcome.dry_run {
        format!(
            "Dry run: rewinding to before {} would undo {undoes} and put back {} path{}; nothing was changed.",
            plan.to,
            outcome.restored,
            if outcome.restored == 1 { "" } else { "s" }
        )
    } else if outcome.restored == 0 {
        format!(
            "Nothing to rewind: every path {undoes} changed is already as it was before {}, or left alone.",
            plan.to
        )
    } else {
        format!(
            "Rewound to before {} (undid {undoes}): {} path{} put back.",
            plan.to,
            outcome.restored,
            if outcome.restored == 1 { "" } else { "s" }
        )
    };
    for item in &plan.items {
        text.push('\n');
        match (&item.skipped, item.action.as_str()) {
            (Some(why), _) => text.push_str(&format!("  left alone: {} ({why})", item.path)),
            (None, "none") => text.push_str(&format!("  already as it was: {}", item.path)),
            (None, action) => text.push_str(&format!("  {action}: {}", item.path)),
        }
    }
    if let Some(own) = &outcome.checkpoint {
        text.push_str(&format!(
            "\nThis rewind is checkpoint {own}: rewind to {own} to undo it. Read a restored file again before editing it."
        ));
    }
    text
}

/// `rewind` as the registry serves it: [`Rewind`] with the checkpoint as its
/// permission subject, marked when the call is a dry run.
pub struct RewindTool {
    inner: Typed<Rewind>,
}

impl std::fmt::Debug for RewindTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RewindTool").finish_non_exhaustive()
    }
}

impl RewindTool {
    /// The tool, rewinding `checkpoints`.
    pub fn new(checkpoints: Checkpoints) -> RewindTool {
        RewindTool {
            inner: Typed::new(Rewind { checkpoints }),
        }
    }
}

impl Tool for RewindTool {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn validate(&self, args: &Value) -> Vec<Violation> {
        self.inner.validate(args)
    }

    /// `cp-7` (as given, `7`, reads `cp-7`), or `cp-7 dry run`.
    fn permission_subject(&self, args: &Value) -> Option<String> {
        let given = args.get("checkpoint")?.as_str()?;
        let id = checkpoint_number(given).map_or_else(
            |_| given.trim().to_string(),
            toolbelt_checkpoint::display_id,
        );
        let dry_run = args.get("dry_run").and_then(Value::as_bool) == Some(true);
        Some(if dry_run {
            format!("{id}{DRY_RUN_SUBJECT}")
        } else {
            id
        })
    }

    fn changes(&self, args: &Value) -> Changes {
        self.inner.changes(args)
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope> {
        self.inner.call(ctx, args)
    }
}
