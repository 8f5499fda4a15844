//! The edit flow `edit_file` and `multi_edit` share: resolve, lock, read, check
//! freshness, apply the replacements, write, record; and the engine's errors as
//! the model reads them.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use toolbelt_core::{ErrorCode, ToolError};
use toolbelt_fs::diff::{DEFAULT_CONTEXT_LINES, FileDiff};
use toolbelt_fs::edit::{
    Applied, Edit, EditError, LineRange, MultiEditError, NearMatch, apply_edits,
};
use toolbelt_fs::text::{Sniffed, decode, encode, sniff};
use toolbelt_fs::{FsError, WorkPath, WriteOptions, content_hash};

use crate::files::MAX_EDIT_BYTES;
use crate::files::after::{self, After, Wrote};
use crate::workspace::{Workspace, blocking};

/// Most lines of the diff snippet in a result's text (the full diff is in `data.diff`).
const MAX_SNIPPET_LINES: usize = 60;

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
    /// The write, for collecting its problems (none for a dry run).
    pub wrote: Option<Wrote>,
    /// The pipeline's notes (a formatter that failed).
    pub notes: Vec<String>,
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

/// Resolve, lock, read, check, edit, stage (format, syntax check), write, record:
/// the shared flow.
pub(crate) async fn run(
    ws: Workspace,
    after: After,
    request: EditRequest,
) -> Result<Done, ToolError> {
    ws.refresh_stamps([request.path.as_str()]).await;
    blocking(move || {
        let p = ws.resolve_write(&request.path)?;
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
        let staged = after::stage(&after, p.abs(), &shown, Some(&decoded.text), outcome.text)?;
        let new_bytes = encode(&staged.text, decoded.encoding);
        let diff = FileDiff::new(&decoded.text, &staged.text);
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
            wrote: (!request.dry_run).then(|| Wrote {
                file: p.abs().to_path_buf(),
                shown: ws.display(&p),
                old: Some(decoded.text.clone()),
                new: staged.text.clone(),
            }),
            notes: staged.notes,
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
        format!("{shown}: {}", toolbelt_core::error_chain(&err))
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
