//! `checkpoint_diff`: what one checkpoint's call changed, file by file, with
//! unified diffs (in the text, cut to the output budget like any long result).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_checkpoint::{Checkpoints, FileDiff};
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};

use crate::checkpoints::{CheckpointSummary, checkpoint_number, tool_error};

/// Arguments of `checkpoint_diff`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointDiffParams {
    /// Its id, e.g. `cp-12`.
    #[schemars(length(min = 1))]
    pub checkpoint: String,
}

/// One file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ChangedFile {
    /// The path, relative to the workspace root.
    pub path: String,
    /// `created`, `modified`, `deleted`, `renamed` or `mode`.
    pub change: String,
    /// Where a renamed file was.
    pub renamed_from: Option<String>,
    /// Whether its content before the call is kept (a rewind can restore it).
    pub captured: bool,
    /// Why not, when it is not.
    pub note: Option<String>,
    /// Lines added, by the diff.
    pub added: u64,
    /// Lines removed, by the diff.
    pub removed: u64,
    /// Whether the text has a diff for it (none for binary or uncaptured files).
    pub diff: bool,
}

/// Result of `checkpoint_diff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CheckpointDiffOutput {
    /// The checkpoint, every path listed.
    pub checkpoint: CheckpointSummary,
    /// Its files, by path; their diffs are in the text.
    pub files: Vec<ChangedFile>,
}

/// The `checkpoint_diff` tool.
#[derive(Debug, Clone)]
pub struct CheckpointDiff {
    checkpoints: Checkpoints,
}

impl CheckpointDiff {
    /// The tool, showing `checkpoints`.
    pub fn new(checkpoints: Checkpoints) -> CheckpointDiff {
        CheckpointDiff { checkpoints }
    }
}

impl TypedTool for CheckpointDiff {
    type Params = CheckpointDiffParams;
    type Output = CheckpointDiffOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("checkpoint_diff", include_str!("checkpoint_diff.md"))
            .title("Show Checkpoint Diff")
            .category(Category::Files)
            .permission("checkpoints:read")
            .key_argument("checkpoint")
            .hints(Hints::read_only())
            .example(
                "What cp-7 changed",
                serde_json::json!({"checkpoint": "cp-7"}),
                serde_json::json!({
                    "checkpoint": {
                        "id": "cp-7", "at": "2026-05-04T09:35:40Z", "tool": "edit_file",
                        "origin": "mcp (client claude-code)", "status": "complete",
                        "problem": null, "rewind_of": null, "file_count": 1,
                        "files": ["src/main.rs"]
                    },
                    "files": [{
                        "path": "src/main.rs", "change": "modified", "renamed_from": null,
                        "captured": true, "note": null, "added": 1, "removed": 1, "diff": true
                    }]
                }),
            )
    }

    fn validate(&self, p: &CheckpointDiffParams) -> Vec<Violation> {
        match checkpoint_number(&p.checkpoint) {
            Ok(_) => Vec::new(),
            Err(e) => vec![Violation::new("checkpoint", e.message)],
        }
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        p: CheckpointDiffParams,
    ) -> ToolResult<CheckpointDiffOutput> {
        let id = checkpoint_number(&p.checkpoint)?;
        let (record, diffs) = toolbelt_checkpoint::checkpoint_diff(&self.checkpoints, id)
            .await
            .map_err(tool_error)?;
        let checkpoint = CheckpointSummary::new(&record, usize::MAX);
        let mut text = checkpoint.line();
        if let Some(problem) = &checkpoint.problem {
            text.push_str(&format!("\n{problem}"));
        }
        let files: Vec<ChangedFile> = diffs.iter().map(changed_file).collect();
        for (file, diff) in files.iter().zip(&diffs) {
            text.push_str("\n\n");
            text.push_str(&file_text(file, diff));
        }
        Ok(Reply::new(CheckpointDiffOutput { checkpoint, files }, text))
    }
}

fn changed_file(d: &FileDiff) -> ChangedFile {
    let (added, removed) = d.diff.as_deref().map_or((0, 0), count_lines);
    ChangedFile {
        path: d.path.clone(),
        change: d.change.clone(),
        renamed_from: d.renamed_from.clone(),
        captured: d.captured,
        note: d.note.clone(),
        added,
        removed,
        diff: d.diff.is_some(),
    }
}

/// Lines added and removed by a unified diff (its `---`/`+++` header left out).
fn count_lines(diff: &str) -> (u64, u64) {
    diff.lines().fold((0, 0), |(added, removed), line| {
        if line.starts_with("+++") || line.starts_with("---") {
            (added, removed)
        } else if line.starts_with('+') {
            (added + 1, removed)
        } else if line.starts_with('-') {
            (added, removed + 1)
        } else {
            (added, removed)
        }
    })
}

/// A file's part of the text: its diff, or a line saying why there is none.
fn file_text(file: &ChangedFile, diff: &FileDiff) -> String {
    let what = match &file.renamed_from {
        Some(from) => format!("{} (renamed from {from})", file.path),
        None => file.path.clone(),
    };
    let note = file
        .note
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    match &diff.diff {
        Some(d) => format!("{what}: {}{note}\n{}", file.change, d.trim_end()),
        None if !file.captured => {
            format!(
                "{what}: {}{note}; its content before was not kept",
                file.change
            )
        }
        None if file.change == "mode" => format!("{what}: permissions changed{note}"),
        None if file.change == "renamed" => format!("{what}: renamed{note}, content unchanged"),
        None => format!(
            "{what}: {}{note}; no text diff (empty, binary, or not a regular file)",
            file.change
        ),
    }
}
