//! `edit_file`: replaces one string in a file (or every occurrence), with careful
//! matching, an optimistic lock and a diff (the flow of [`super::edits`], shared
//! with `multi_edit`).

use crate::files::after;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::DiagnosticsReport;
use toolbelt_core::human::plural;
use toolbelt_core::{Category, Reply, Subject, ToolContext, ToolResult, ToolSpec, TypedTool};

use crate::files::WRITE_HINTS;
use crate::files::edits::{EditRequest, LineSpan, OwnedEdit, list_ranges, run};
use crate::workspace::workspace;

/// Arguments of `edit_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileParams {
    /// The file to edit: relative to the working directory, or absolute inside the workspace.
    #[schemars(length(min = 1))]
    pub path: String,
    /// The text to replace, copied from the file (without read_file's line-number
    /// prefixes; when every line has one, they are removed for you), with enough
    /// surrounding lines to occur exactly once.
    #[schemars(length(min = 1))]
    pub old_string: String,
    /// The text to put in its place; must differ from old_string. Empty deletes old_string.
    pub new_string: String,
    /// Replace every occurrence of old_string instead of requiring exactly one. Default false.
    #[serde(default)]
    pub replace_all: bool,
    /// The content_hash from your last read_file of this file; the edit fails with CONFLICT
    /// if the file is no longer that content. Default: the hash of your last read.
    #[serde(default)]
    pub expected_hash: Option<String>,
    /// Only show the diff the edit would make; the file is not changed. Default false.
    #[serde(default)]
    pub dry_run: bool,
}

/// Result of `edit_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EditFileOutput {
    /// The file, as given relative to the working directory when it lies beneath it.
    pub path: String,
    /// How many places were replaced.
    pub replacements: usize,
    /// How old_string was found: exact, line_endings, line_number_prefixes,
    /// trailing_whitespace, indentation or typography.
    pub strategy: String,
    /// The lines of the new content holding the new text, one range per replacement.
    pub lines_changed: Vec<LineSpan>,
    /// Lines added, as counted by the diff.
    pub added_lines: usize,
    /// Lines removed, as counted by the diff.
    pub removed_lines: usize,
    /// Unified diff of the change.
    pub diff: String,
    /// The content hash of the file after the edit (of the would-be content with dry_run);
    /// pass it as expected_hash to chain edits.
    pub content_hash: String,
    /// True when nothing was written.
    pub dry_run: bool,
    /// The file's problems after the edit (`diagnostics`, `diagnostics_summary`), when
    /// checks are set up.
    #[serde(flatten)]
    pub checks: DiagnosticsReport,
}

/// The `edit_file` tool.
#[derive(Debug, Default)]
pub struct EditFile;

impl TypedTool for EditFile {
    type Params = EditFileParams;
    type Output = EditFileOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("edit_file", include_str!("edit_file.md"))
            .title("Edit File")
            .category(Category::Files)
            .subject(Subject::Path)
            .permission("fs:write")
            .hints(WRITE_HINTS)
            .key_argument("path")
            .short_arguments(&["replace_all"])
            .example(
                "Rename a variable on one line (after reading the file)",
                json!({
                    "path": "src/main.rs",
                    "old_string": "    let total = 0;",
                    "new_string": "    let mut total = 0;"
                }),
                json!({
                    "path": "src/main.rs",
                    "replacements": 1,
                    "strategy": "exact",
                    "lines_changed": [{"start": 4, "end": 4}],
                    "added_lines": 1,
                    "removed_lines": 1,
                    "diff": "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,7 +1,7 @@\n use std::io;\n \n fn main() {\n-    let total = 0;\n+    let mut total = 0;\n     for i in 0..10 {\n         total += i;\n     }\n",
                    "content_hash": "948a0ac7313b907d",
                    "dry_run": false
                }),
            )
            .example(
                "Preview renaming every call of a function",
                json!({
                    "path": "app/util.py",
                    "old_string": "fetch_user(",
                    "new_string": "load_user(",
                    "replace_all": true,
                    "dry_run": true
                }),
                json!({
                    "path": "app/util.py",
                    "replacements": 2,
                    "strategy": "exact",
                    "lines_changed": [{"start": 8, "end": 8}, {"start": 21, "end": 21}],
                    "added_lines": 2,
                    "removed_lines": 2,
                    "diff": "--- a/app/util.py\n+++ b/app/util.py\n@@ -5,7 +5,7 @@\n # line 5\n # line 6\n def owner(uid):\n-    return fetch_user(uid)\n+    return load_user(uid)\n # line 9\n # line 10\n # line 11\n@@ -18,7 +18,7 @@\n # line 18\n # line 19\n # line 20\n-user = fetch_user(1)\n+user = load_user(1)\n # line 22\n # line 23\n # line 24\n",
                    "content_hash": "5ccddb7f4a9070dd",
                    "dry_run": true
                }),
            )
    }

    /// The file it writes (nothing for a dry run).
    fn changes(&self, args: &serde_json::Value) -> Option<toolbelt_core::Changes> {
        crate::files::path_changes(args)
    }

    async fn call(&self, ctx: &ToolContext, p: EditFileParams) -> ToolResult<EditFileOutput> {
        let request = EditRequest {
            path: p.path,
            edits: vec![OwnedEdit {
                old_string: p.old_string,
                new_string: p.new_string,
                replace_all: p.replace_all,
            }],
            expected_hash: p.expected_hash,
            dry_run: p.dry_run,
            single: true,
        };
        let after = after::of(ctx);
        let done = run(workspace(ctx)?, after.clone(), request).await?;
        let checks = after::collect(&after, done.wrote.as_slice(), &done.notes).await;
        let applied = done.applied.first().cloned();
        let (replacements, strategy, lines) = match applied {
            Some(a) => (a.replacements, a.strategy.as_str().to_owned(), a.lines),
            None => (0, String::new(), Vec::new()),
        };
        let mut text = done.summary(
            &format!(
                "{replacements} {} ({strategy}) at {}",
                plural(replacements as u64, "replacement"),
                list_ranges(&lines)
            ),
            "",
        );
        let out = EditFileOutput {
            path: done.path,
            replacements,
            strategy,
            lines_changed: lines.into_iter().map(LineSpan::from).collect(),
            added_lines: done.added,
            removed_lines: done.removed,
            diff: done.diff,
            content_hash: done.content_hash,
            dry_run: done.dry_run,
            checks,
        };
        out.checks.append_to(&mut text);
        Ok(Reply::new(out, text)
            .stat("replacements", replacements)
            .stat("added_lines", done.added)
            .stat("removed_lines", done.removed))
    }
}
