//! `edit_file`: replaces one string in a file (or every occurrence), with careful
//! matching, an optimistic lock and a diff. The flow is shared with `multi_edit`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolbelt_core::human::plural;
use toolbelt_core::{
    Category, ErrorCode, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_fs::diff::{DEFAULT_CONTEXT_LINES, FileDiff};
use toolbelt_fs::edit::{
    Applied, Edit, EditError, LineRange, MultiEditError, NearMatch, apply_edits,
};
use toolbelt_fs::text::{Sniffed, decode, encode, sniff};
use toolbelt_fs::{FsError, WorkPath, WriteOptions, content_hash};

use crate::files::{MAX_EDIT_BYTES, WRITE_HINTS, Workspace, blocking, workspace};

/// Most lines of the diff snippet in a result's text (the full diff is in `data.diff`).
const MAX_SNIPPET_LINES: usize = 60;

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

/// A 1-based inclusive range of lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LineSpan {
    /// First line.
    pub start: usize,
    /// Last line.
    pub end: usize,
}

impl From<LineRange> for LineSpan {
    fn from(r: LineRange) -> Self {
        LineSpan {
            start: r.start,
            end: r.end,
        }
    }
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
            .permission("fs:write")
            .hints(WRITE_HINTS)
            .key_argument("path")
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
        let done = run(workspace(ctx)?, request).await?;
        let applied = done.applied.first().cloned();
        let (replacements, strategy, lines) = match applied {
            Some(a) => (a.replacements, a.strategy.as_str().to_owned(), a.lines),
            None => (0, String::new(), Vec::new()),
        };
        let text = done.summary(
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
        };
        Ok(Reply::new(out, text)
            .stat("replacements", replacements)
            .stat("added_lines", done.added)
            .stat("removed_lines", done.removed))
    }
}

/// One replacement as received from the model.
#[derive(Debug, Clone)]
pub(crate) struct OwnedEdit {
    pub old_string: String,
    pub new_string: String,
    pub replace_all: bool,
}

/// An edit call, for `edit_file` (`single`) or `multi_edit`.
#[derive(Debug)]
pub(crate) struct EditRequest {
    pub path: String,
    pub edits: Vec<OwnedEdit>,
    pub expected_hash: Option<String>,
    pub dry_run: bool,
    /// Errors speak of one edit, not of `edits[i]`.
    pub single: bool,
}

/// What an edit call did.
#[derive(Debug)]
pub(crate) struct Done {
    pub path: String,
    pub applied: Vec<Applied>,
    pub added: usize,
    pub removed: usize,
    pub diff: String,
    pub snippet: String,
    pub content_hash: String,
    pub dry_run: bool,
}

impl Done {
    /// The result text: what happened, `details` (lines ending in LF), then the diff snippet.
    pub fn summary(&self, what: &str, details: &str) -> String {
        let head = if self.dry_run {
            format!(
                "Dry run, {} not changed. The edit would make {what}, +{} -{} lines:",
                self.path, self.added, self.removed
            )
        } else {
            format!(
                "Edited {}: {what}, +{} -{} lines. content_hash is now {}.",
                self.path, self.added, self.removed, self.content_hash
            )
        };
        format!("{head}\n{details}{}", self.snippet)
    }
}

/// Resolve, lock, read, check, edit, write, record: the shared flow.
pub(crate) async fn run(ws: Workspace, request: EditRequest) -> Result<Done, ToolError> {
    blocking(move || {
        let p = ws.resolve(&request.path)?;
        let _guard = ws.jail.lock(&p)?;
        let bytes = read_existing(&ws, &p)?;
        let shown = ws.display(&p);
        match sniff(&bytes) {
            Sniffed::Text => {}
            Sniffed::Image { mime } => {
                return Err(binary(&shown, &format!("an image ({mime})"), bytes.len()));
            }
            Sniffed::Binary { description } => {
                return Err(binary(&shown, &description, bytes.len()));
            }
        }
        let decoded = decode(&bytes);
        if decoded.lossy {
            return Err(ToolError::new(
                ErrorCode::BinaryFile,
                format!(
                    "{shown} is not valid UTF-8 or UTF-16, so editing it could change bytes \
                     that cannot be shown; it was left unchanged"
                ),
            )
            .hint("edit it with a tool made for its encoding, or rewrite it whole with write_file")
            .data(json!({ "path": shown })));
        }
        ws.check_fresh(&p, &bytes, request.expected_hash.as_deref())?;
        let edits: Vec<Edit<'_>> = request
            .edits
            .iter()
            .map(|e| Edit {
                old_string: &e.old_string,
                new_string: &e.new_string,
                replace_all: e.replace_all,
            })
            .collect();
        let outcome = apply_edits(&decoded.text, &edits)
            .map_err(|e| edit_error(&shown, e, request.single))?;
        let new_bytes = encode(&outcome.text, decoded.encoding);
        let diff = FileDiff::new(&decoded.text, &outcome.text);
        let stats = diff.stats();
        let unified = diff.unified(&shown, DEFAULT_CONTEXT_LINES);
        let snippet = diff.snippet(DEFAULT_CONTEXT_LINES, MAX_SNIPPET_LINES);
        let hash = if request.dry_run {
            content_hash(&new_bytes)
        } else {
            ws.jail.write(&p, &new_bytes, WriteOptions::default())?;
            ws.record(&p, &new_bytes)
        };
        Ok(Done {
            path: shown,
            applied: outcome.applied,
            added: stats.added,
            removed: stats.removed,
            diff: unified,
            snippet,
            content_hash: hash,
            dry_run: request.dry_run,
        })
    })
    .await
}

/// The file's bytes; a missing file is NOT_FOUND pointing to write_file.
fn read_existing(ws: &Workspace, p: &WorkPath) -> Result<Vec<u8>, ToolError> {
    match ws.jail.read(p, MAX_EDIT_BYTES) {
        Ok(bytes) => Ok(bytes),
        Err(FsError::NotFound { .. }) => {
            let mut err = ws.not_found(p);
            err.message
                .push_str("; edits change existing files, so use write_file to create it");
            Err(err)
        }
        Err(e) => Err(e.into()),
    }
}

fn binary(shown: &str, what: &str, size: usize) -> ToolError {
    ToolError::new(
        ErrorCode::BinaryFile,
        format!("{shown} is {what}, {size} bytes; only text files can be edited"),
    )
    .data(json!({ "path": shown, "size": size }))
}

/// An engine error as a tool error: INVALID_PARAMS with the diagnostics in `data`.
fn edit_error(shown: &str, err: MultiEditError, single: bool) -> ToolError {
    let message = if single {
        format!("{shown}: {}", err.source)
    } else {
        format!("{shown}: {err}")
    };
    let mut data = match &err.source {
        EditError::Ambiguous {
            count,
            lines,
            strategy,
        } => json!({
            "reason": "ambiguous",
            "count": count,
            "lines": lines,
            "strategy": strategy.as_str(),
        }),
        EditError::NotFound { closest } => json!({
            "reason": "not_found",
            "closest": closest.as_ref().map(near_json),
        }),
        EditError::EmptyOldString => json!({ "reason": "empty_old_string" }),
        EditError::Identical => json!({ "reason": "identical" }),
        EditError::NoChange { lines } => json!({ "reason": "no_change", "lines": lines }),
        _ => json!({ "reason": "other" }),
    };
    if let Value::Object(map) = &mut data {
        map.insert("path".to_owned(), json!(shown));
        if !single {
            map.insert("edit_index".to_owned(), json!(err.index));
        }
    }
    let hint = match &err.source {
        EditError::NotFound { .. } => {
            Some("read_file the region again and copy old_string from it exactly")
        }
        EditError::NoChange { .. } => Some("read_file to see the current text"),
        _ => None,
    };
    let mut out = ToolError::new(ErrorCode::InvalidParams, message).data(data);
    if let Some(hint) = hint {
        out = out.hint(hint);
    }
    out
}

fn near_json(near: &NearMatch) -> Value {
    json!({
        "start_line": near.start_line,
        "end_line": near.end_line,
        "similarity": (near.similarity * 1000.0).round() / 1000.0,
        "snippet": near.snippet,
        "differences": near.differences,
    })
}

/// "line 4" or "lines 4-6, 10".
pub(crate) fn list_ranges(lines: &[LineRange]) -> String {
    let single = matches!(lines, [only] if only.start == only.end);
    let listed = lines
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if single {
        format!("line {listed}")
    } else {
        format!("lines {listed}")
    }
}
