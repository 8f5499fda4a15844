//! `multi_edit`: several replacements in one file, applied in order, all or nothing.

use crate::files::after;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::DiagnosticsReport;
use toolbelt_core::human::plural;
use toolbelt_core::{Category, Reply, Subject, ToolContext, ToolResult, ToolSpec, TypedTool};

use crate::files::edits::{EditRequest, LineSpan, OwnedEdit, list_ranges, run};
use crate::workspace::workspace;

/// One replacement of `multi_edit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiEditItem {
    /// The text to replace, as it reads after the edits before this one.
    #[schemars(length(min = 1))]
    pub old_string: String,
    /// The text to put in its place; must differ from old_string.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    #[serde(default)]
    pub replace_all: bool,
}

/// Arguments of `multi_edit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiEditParams {
    /// The file to edit: relative to the working directory, or absolute inside the workspace.
    #[schemars(length(min = 1))]
    pub path: String,
    /// The replacements, applied in order, each to the result of the previous ones.
    #[schemars(length(min = 1))]
    pub edits: Vec<MultiEditItem>,
    /// The content_hash from your last read_file of this file; the edits fail with CONFLICT
    /// if the file is no longer that content. Default: the hash of your last read.
    #[serde(default)]
    pub expected_hash: Option<String>,
    /// Only show the diff the edits would make; the file is not changed. Default false.
    #[serde(default)]
    pub dry_run: bool,
}

/// What one edit of `multi_edit` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MultiEditApplied {
    /// How many places it replaced.
    pub replacements: usize,
    /// How its old_string was found: exact, line_endings, line_number_prefixes,
    /// trailing_whitespace, indentation or typography.
    pub strategy: String,
    /// The lines holding its new text, numbered in the content right after this edit.
    pub lines_changed: Vec<LineSpan>,
}

/// Result of `multi_edit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MultiEditOutput {
    /// The file, as given relative to the working directory when it lies beneath it.
    pub path: String,
    /// Places replaced by all edits together.
    pub replacements: usize,
    /// What each edit did, in order.
    pub edits: Vec<MultiEditApplied>,
    /// Lines added, as counted by the diff.
    pub added_lines: usize,
    /// Lines removed, as counted by the diff.
    pub removed_lines: usize,
    /// Unified diff of the whole change.
    pub diff: String,
    /// The content hash of the file after the edits (of the would-be content with dry_run).
    pub content_hash: String,
    /// True when nothing was written.
    pub dry_run: bool,
    /// The file's problems after the edit (`diagnostics`, `diagnostics_summary`), when
    /// checks are set up.
    #[serde(flatten)]
    pub checks: DiagnosticsReport,
}

/// The `multi_edit` tool.
#[derive(Debug, Default)]
pub struct MultiEdit;

impl TypedTool for MultiEdit {
    type Params = MultiEditParams;
    type Output = MultiEditOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("multi_edit", include_str!("multi_edit.md"))
            .title("Edit File in Several Places")
            .category(Category::Files)
            .subject(Subject::Path)
            .permission("fs:write")
            .hints(crate::files::WRITE_HINTS)
            .key_argument("path")
            .example(
                "Add an import and use it, in one all-or-nothing change",
                json!({
                    "path": "app/main.py",
                    "edits": [
                        {"old_string": "import os\n", "new_string": "import os\nimport sys\n"},
                        {"old_string": "    return 0\n", "new_string": "    sys.exit(0)\n"}
                    ]
                }),
                json!({
                    "path": "app/main.py",
                    "replacements": 2,
                    "edits": [
                        {"replacements": 1, "strategy": "exact", "lines_changed": [{"start": 1, "end": 2}]},
                        {"replacements": 1, "strategy": "exact", "lines_changed": [{"start": 10, "end": 10}]}
                    ],
                    "added_lines": 2,
                    "removed_lines": 1,
                    "diff": "--- a/app/main.py\n+++ b/app/main.py\n@@ -1,4 +1,5 @@\n import os\n+import sys\n \n \n def helper():\n@@ -6,4 +7,4 @@\n \n \n def main():\n-    return 0\n+    sys.exit(0)\n",
                    "content_hash": "491e914a73221022",
                    "dry_run": false
                }),
            )
    }

    /// The file it writes (nothing for a dry run).
    fn changes(&self, args: &serde_json::Value) -> Option<toolbelt_core::Changes> {
        crate::files::path_changes(args)
    }

    async fn call(&self, ctx: &ToolContext, p: MultiEditParams) -> ToolResult<MultiEditOutput> {
        let request = EditRequest {
            path: p.path,
            edits: p
                .edits
                .into_iter()
                .map(|e| OwnedEdit {
                    old_string: e.old_string,
                    new_string: e.new_string,
                    replace_all: e.replace_all,
                })
                .collect(),
            expected_hash: p.expected_hash,
            dry_run: p.dry_run,
            single: false,
        };
        let after = after::of(ctx);
        let done = run(workspace(ctx)?, after.clone(), request).await?;
        let checks = after::collect(&after, done.wrote.as_slice(), &done.notes).await;
        let replacements: usize = done.applied.iter().map(|a| a.replacements).sum();
        let count = done.applied.len();
        let what = format!(
            "{count} {}, {replacements} {}",
            plural(count as u64, "edit"),
            plural(replacements as u64, "replacement")
        );
        let details: String = done
            .applied
            .iter()
            .enumerate()
            .map(|(i, a)| {
                format!(
                    "edits[{i}]: {} {} ({}) at {}\n",
                    a.replacements,
                    plural(a.replacements as u64, "replacement"),
                    a.strategy,
                    list_ranges(&a.lines)
                )
            })
            .collect();
        let mut text = done.summary(&what, &details);
        let edits = done
            .applied
            .iter()
            .map(|a| MultiEditApplied {
                replacements: a.replacements,
                strategy: a.strategy.as_str().to_owned(),
                lines_changed: a.lines.iter().copied().map(LineSpan::from).collect(),
            })
            .collect();
        let out = MultiEditOutput {
            path: done.path,
            replacements,
            edits,
            added_lines: done.added,
            removed_lines: done.removed,
            diff: done.diff,
            content_hash: done.content_hash,
            dry_run: done.dry_run,
            checks,
        };
        out.checks.append_to(&mut text);
        Ok(Reply::new(out, text)
            .stat("edits", count)
            .stat("replacements", replacements))
    }
}
