//! `write_file`: create, overwrite, append to, insert into or replace lines of a
//! file, atomically, keeping its encoding and line endings.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::DiagnosticsReport;
use toolbelt_core::human::{human_bytes, plural};
use toolbelt_core::{
    Category, ErrorCode, Reply, Subject, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
    Violation,
};
use toolbelt_fs::text::{self, Encoding, LineEnding, Sniffed};
use toolbelt_fs::{EntryKind, FsError, WorkPath, WriteOptions, content_hash};

use crate::files::after::{self, After, Wrote};
use crate::files::{MAX_EDIT_BYTES, WRITE_HINTS};
use crate::workspace::{Workspace, blocking, workspace};

/// Diffs up to this many bytes are returned with every write (always with `dry_run`).
pub const MAX_INLINE_DIFF_BYTES: usize = 4_000;
/// Most bytes of a diff returned by a dry run.
pub const MAX_DRY_RUN_DIFF_BYTES: usize = 20_000;

/// How `write_file` writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    /// Replace the whole file (create it if missing).
    #[default]
    Overwrite,
    /// Add `content` at the end (create the file if missing).
    Append,
    /// Insert `content` as lines before `start_line`.
    Insert,
    /// Replace lines `start_line`..=`end_line` with `content`.
    ReplaceLines,
    /// Create a new file; fail if it exists.
    CreateNew,
}

impl WriteMode {
    fn as_str(self) -> &'static str {
        match self {
            WriteMode::Overwrite => "overwrite",
            WriteMode::Append => "append",
            WriteMode::Insert => "insert",
            WriteMode::ReplaceLines => "replace_lines",
            WriteMode::CreateNew => "create_new",
        }
    }
}

/// Arguments of `write_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileParams {
    /// The file, relative to the working directory or absolute inside the workspace.
    #[schemars(length(min = 1))]
    pub path: String,
    /// The text to write. Its line breaks are converted to the file's (LF or CRLF).
    pub content: String,
    /// overwrite (default), append, insert, replace_lines or create_new.
    #[serde(default)]
    pub mode: Option<WriteMode>,
    /// insert: the line to insert before (1-based; total lines + 1 appends). replace_lines: the first line replaced.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// replace_lines: the last line replaced, inclusive. Default: start_line.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub end_line: Option<u64>,
    /// Create missing parent directories (inside the workspace). Default true.
    #[serde(default)]
    pub create_dirs: Option<bool>,
    /// The content_hash the file must still have (from read_file); without it the file must be unchanged since you last read it.
    #[serde(default)]
    pub expected_hash: Option<String>,
    /// Show the diff without writing. Default false.
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// Confirms replacing an existing file with much less: under a tenth of its size, or one line for several. Without it such a write is refused as a likely mistake.
    #[serde(default)]
    pub overwrite: Option<bool>,
}

/// Result of `write_file`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WriteFileOutput {
    /// The path, as shown to the model.
    pub path: String,
    /// The mode used.
    pub mode: WriteMode,
    /// True when the file did not exist before.
    pub created: bool,
    /// True when the content differs from before (false: nothing was written).
    pub changed: bool,
    /// True for a dry run: nothing was written.
    pub dry_run: bool,
    /// Size of the new content in bytes.
    pub bytes: u64,
    /// Lines of the new content.
    pub lines: usize,
    /// Content hash of the new content (what a later `expected_hash` should be).
    pub content_hash: String,
    /// Encoding written (the file's own when it existed).
    pub encoding: String,
    /// Line endings of the new content: lf, crlf, mixed or none.
    pub line_ending: String,
    /// Directories created for the file, as shown to the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
    /// The unified diff, when it is small or for a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The file's problems after the write (`diagnostics`, `diagnostics_summary`), when
    /// checks are set up.
    #[serde(flatten)]
    pub checks: DiagnosticsReport,
}

/// The `write_file` tool.
#[derive(Debug, Default)]
pub struct WriteFile;

impl TypedTool for WriteFile {
    type Params = WriteFileParams;
    type Output = WriteFileOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("write_file", include_str!("write_file.md"))
            .title("Write File")
            .category(Category::Files)
            .subject(Subject::Path)
            .permission("fs:write")
            .hints(WRITE_HINTS)
            .key_argument("path")
            .short_arguments(&[])
            .example(
                "Create a new file",
                serde_json::json!({"path": "notes/todo.md", "content": "- ship it\n", "mode": "create_new"}),
                serde_json::json!({
                    "path": "notes/todo.md", "mode": "create_new", "created": true, "changed": true,
                    "dry_run": false, "bytes": 10, "lines": 1, "content_hash": "b5584a5a7a3cd0a2",
                    "encoding": "utf-8", "line_ending": "lf", "created_dirs": ["notes"],
                    "diff": "--- notes/todo.md\n+++ notes/todo.md\n@@ -0,0 +1 @@\n+- ship it\n"
                }),
            )
    }

    fn validate(&self, p: &WriteFileParams) -> Vec<Violation> {
        let mode = p.mode.unwrap_or_default();
        let mut out = Vec::new();
        match mode {
            WriteMode::Insert | WriteMode::ReplaceLines if p.start_line.is_none() => {
                out.push(Violation::new(
                    "start_line",
                    format!("mode {} needs start_line", mode.as_str()),
                ));
            }
            WriteMode::Overwrite | WriteMode::Append | WriteMode::CreateNew => {
                for (field, given) in [("start_line", p.start_line), ("end_line", p.end_line)] {
                    if given.is_some() {
                        out.push(Violation::new(
                            field,
                            format!(
                                "{field} only applies to modes insert and replace_lines, not {}",
                                mode.as_str()
                            ),
                        ));
                    }
                }
            }
            _ => {}
        }
        if mode == WriteMode::Insert && p.end_line.is_some() {
            out.push(Violation::new(
                "end_line",
                "end_line only applies to mode replace_lines; insert puts content before start_line",
            ));
        }
        if let (Some(start), Some(end)) = (p.start_line, p.end_line)
            && end < start
        {
            out.push(Violation::new(
                "end_line",
                format!("end_line {end} is before start_line {start}"),
            ));
        }
        out
    }

    /// The file it writes (nothing for a dry run).
    fn changes(&self, args: &serde_json::Value) -> Option<toolbelt_core::Changes> {
        crate::files::path_changes(args)
    }

    async fn call(&self, ctx: &ToolContext, p: WriteFileParams) -> ToolResult<WriteFileOutput> {
        let ws = workspace(ctx)?;
        let after = after::of(ctx);
        let staged_after = after.clone();
        ws.refresh_stamps([p.path.as_str()]).await;
        let done = blocking(move || write(&ws, &staged_after, p)).await?;
        let mut out = done.out;
        let mut text = done.text;
        out.checks = after::collect(&after, done.wrote.as_slice(), &done.notes).await;
        out.checks.append_to(&mut text);
        let (bytes, lines) = (out.bytes, out.lines);
        Ok(Reply::new(out, text)
            .stat("bytes", bytes)
            .stat("lines", lines))
    }
}

/// The file as it is before the write.
struct Before {
    bytes: Vec<u8>,
    text: String,
    encoding: Encoding,
    ending: LineEnding,
}

/// What a write did, before its problems are collected.
struct Done {
    out: WriteFileOutput,
    text: String,
    wrote: Option<Wrote>,
    notes: Vec<String>,
}

fn write(ws: &Workspace, after: &After, p: WriteFileParams) -> Result<Done, ToolError> {
    let mode = p.mode.unwrap_or_default();
    let dry_run = p.dry_run.unwrap_or(false);
    let create_dirs = p.create_dirs.unwrap_or(true);
    let path = ws.resolve_write(&p.path)?;
    let shown = ws.display(&path);
    let _guard = ws.jail.lock(&path)?;

    let before = match ws.jail.metadata(&path) {
        Ok(meta) if meta.kind == EntryKind::Dir => {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!("{shown} is a directory; write_file writes files"),
            )
            .hint("give the path of a file inside it"));
        }
        Ok(_) => Some(read_before(ws, &path, &shown, mode, &p)?),
        Err(FsError::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    // Appending never loses unseen content, so it needs no prior read; the stamp is
    // refreshed only when the agent's view was current.
    let fresh = match &before {
        Some(b) if mode == WriteMode::Append && p.expected_hash.is_none() => {
            ws.check_fresh(&path, &b.bytes, None).is_ok()
        }
        _ => true,
    };

    if let Some(b) = &before
        && mode == WriteMode::Overwrite
        && !dry_run
        && shrinks(&b.text, &p.content)
    {
        if p.overwrite != Some(true) {
            return Err(shrink_refused(&shown, &b.text, &p.content, ws.small_model));
        }
        if ws.small_model && !ws.was_read(&path) {
            return Err(unread_overwrite_refused(&shown, &b.text, &p.content));
        }
    }
    let (new_text, encoding, note) = match &before {
        Some(b) => (
            merged(b, &p, mode, &shown)?,
            b.encoding,
            joined_note(b, mode, &p.content),
        ),
        None => {
            match mode {
                WriteMode::ReplaceLines => return Err(ws.not_found(&path)),
                WriteMode::Insert if p.start_line != Some(1) => {
                    return Err(ToolError::new(
                        ErrorCode::InvalidParams,
                        format!(
                            "{shown} does not exist, so the only line to insert before is 1, not {}",
                            p.start_line.unwrap_or(0)
                        ),
                    ));
                }
                _ => {}
            }
            (p.content.clone(), Encoding::Utf8, None)
        }
    };
    let old_text = before.as_ref().map(|b| b.text.as_str());
    let staged = after::stage(after, path.abs(), &shown, old_text, new_text)?;
    let new_text = staged.text;
    let new_bytes = text::encode(&new_text, encoding);
    let old_text = old_text.unwrap_or("");
    let changed = before.as_ref().is_none_or(|b| b.bytes != new_bytes);
    let diff = unified_diff(&shown, old_text, &new_text);
    let created_dirs = if before.is_none() {
        missing_dirs(ws, &path)
    } else {
        Vec::new()
    };
    if !created_dirs.is_empty() && !create_dirs {
        return Err(ToolError::new(
            ErrorCode::NotFound,
            format!("the directory {} does not exist", created_dirs[0]),
        )
        .hint("set create_dirs to true to create it, or check the path with list_dir"));
    }

    let hash = if dry_run || !changed {
        content_hash(&new_bytes)
    } else {
        let opts = WriteOptions {
            create_new: before.is_none(),
            create_dirs,
        };
        ws.jail
            .write(&path, &new_bytes, opts)
            .map_err(|e| match e {
                FsError::Exists { .. } => ToolError::new(
                    ErrorCode::Conflict,
                    format!("{shown} was created by someone else while this call ran"),
                )
                .hint("read it, then decide whether to overwrite it"),
                e => e.into(),
            })?;
        if fresh {
            ws.record(&path, &new_bytes)
        } else {
            content_hash(&new_bytes)
        }
    };

    let lines = text::count_lines(&new_text);
    let diff_limit = if dry_run {
        MAX_DRY_RUN_DIFF_BYTES
    } else {
        MAX_INLINE_DIFF_BYTES
    };
    let shown_diff = (changed && (dry_run || diff.len() <= MAX_INLINE_DIFF_BYTES))
        .then(|| cut_diff(&diff, diff_limit));
    let out = WriteFileOutput {
        path: shown,
        mode,
        created: before.is_none(),
        changed,
        dry_run,
        bytes: new_bytes.len() as u64,
        lines,
        content_hash: hash,
        encoding: encoding.as_str().to_string(),
        line_ending: text::line_ending(&new_text).as_str().to_string(),
        created_dirs,
        diff: shown_diff,
        checks: DiagnosticsReport::default(),
    };
    let text = summary(&out, before.as_ref(), note.as_deref());
    let wrote = (!dry_run && changed).then(|| Wrote {
        file: path.abs().to_path_buf(),
        shown: out.path.clone(),
        old: before.map(|b| b.text),
        new: new_text,
    });
    Ok(Done {
        out,
        text,
        wrote,
        notes: staged.notes,
    })
}

/// The lines of the old content an error about a shrinking write shows.
const LOST_LINES_SHOWN: usize = 12;

/// Whether replacing `old` with `new` is a likely mistake: `new` is under a tenth
/// of its size, or one line for several. Most often it is a model that wrote a
/// summary of its change ("edited client.py") as the file's content.
fn shrinks(old: &str, new: &str) -> bool {
    let old_lines = old.lines().filter(|l| !l.trim().is_empty()).count();
    let new_lines = new.lines().filter(|l| !l.trim().is_empty()).count();
    let tenth = !old.trim().is_empty() && new.trim().len() * 10 < old.trim().len();
    let one_for_many = old_lines >= 2 && new_lines <= 1;
    tenth || one_for_many
}

/// "replace client.py (8 lines, 120 B) with 1 line (16 B)".
fn replacing(shown: &str, old: &str, new: &str) -> String {
    let (total, added) = (old.lines().count(), new.lines().count());
    format!(
        "replace {shown} ({total} {}, {}) with {added} {} ({})",
        plural(total as u64, "line"),
        human_bytes(old.len() as u64),
        plural(added as u64, "line"),
        human_bytes(new.len() as u64),
    )
}

/// The refusal of a write that [`shrinks`] the file without `overwrite: true`: it
/// shows what would be lost and points to `edit_file`. Only for a model that is not
/// small does it say that `overwrite: true` replaces the file anyway (a small model
/// takes that as the next step, and loses the file).
fn shrink_refused(shown: &str, old: &str, new: &str, small_model: bool) -> ToolError {
    let total = old.lines().count();
    let mut shown_old = String::new();
    for (i, line) in old.lines().take(LOST_LINES_SHOWN).enumerate() {
        shown_old.push_str(&format!("{:>6}\t{}\n", i + 1, line));
    }
    if total > LOST_LINES_SHOWN {
        shown_old.push_str(&format!("[... {} more lines]\n", total - LOST_LINES_SHOWN));
    }
    let hint = if small_model {
        "read the file with `read_file`, then change the part you mean with `edit_file` (old_string copied exactly from the file)"
    } else {
        "read the file with `read_file`, then change the part you mean with `edit_file`; only if the whole file should become this short content, call `write_file` again with overwrite: true"
    };
    ToolError::new(
        ErrorCode::Conflict,
        format!(
            "not written: this would {}, and its content would be lost. To change part of the file, read it with `read_file` and change that part with `edit_file`. What it holds now:\n{shown_old}",
            replacing(shown, old, new),
        ),
    )
    .hint(hint)
}

/// The refusal, for a small model, of `overwrite: true` on a file it has not read
/// in this session: what the file holds would be lost unseen.
fn unread_overwrite_refused(shown: &str, old: &str, new: &str) -> ToolError {
    ToolError::new(
        ErrorCode::Conflict,
        format!(
            "not written: overwrite: true would {}, but {shown} has not been read in this run, so its content would be lost unseen",
            replacing(shown, old, new),
        ),
    )
    .hint("read it with `read_file` first, then change the part you mean with `edit_file`")
}

/// Reads the existing file and checks it may be changed by `mode`.
fn read_before(
    ws: &Workspace,
    path: &WorkPath,
    shown: &str,
    mode: WriteMode,
    p: &WriteFileParams,
) -> Result<Before, ToolError> {
    if mode == WriteMode::CreateNew {
        return Err(ToolError::new(
            ErrorCode::Conflict,
            format!("{shown} already exists and mode create_new never replaces a file"),
        )
        .hint("read it first and use mode overwrite to replace it, or pick another path"));
    }
    let bytes = ws.jail.read(path, MAX_EDIT_BYTES)?;
    match text::sniff(&bytes) {
        Sniffed::Text => {}
        Sniffed::Image { mime } => return Err(binary_error(shown, &format!("{mime} image"))),
        Sniffed::Binary { description } => return Err(binary_error(shown, &description)),
    }
    let decoded = text::decode(&bytes);
    if decoded.lossy && mode != WriteMode::Overwrite {
        return Err(ToolError::new(
            ErrorCode::BinaryFile,
            format!(
                "{shown} is not valid text in any supported encoding, so mode {} would change bytes you have not seen",
                mode.as_str()
            ),
        )
        .hint("only a full overwrite (mode overwrite, with the whole new content) can replace it"));
    }
    if mode != WriteMode::Append || p.expected_hash.is_some() {
        ws.check_fresh(path, &bytes, p.expected_hash.as_deref())?;
    }
    let ending = text::line_ending(&decoded.text);
    Ok(Before {
        bytes,
        text: decoded.text,
        encoding: decoded.encoding,
        ending,
    })
}

fn binary_error(shown: &str, description: &str) -> ToolError {
    ToolError::new(
        ErrorCode::BinaryFile,
        format!("{shown} is a binary file ({description}); write_file only changes text files"),
    )
    .hint("write the text to another path")
}

/// The new text of an existing file.
fn merged(
    b: &Before,
    p: &WriteFileParams,
    mode: WriteMode,
    shown: &str,
) -> Result<String, ToolError> {
    let content = text::apply_line_ending(&p.content, b.ending);
    let eol = if b.ending == LineEnding::CrLf {
        "\r\n"
    } else {
        "\n"
    };
    match mode {
        WriteMode::Overwrite | WriteMode::CreateNew => Ok(content.into_owned()),
        WriteMode::Append => Ok(format!("{}{content}", b.text)),
        WriteMode::Insert | WriteMode::ReplaceLines => {
            let mut lines: Vec<&str> = b.text.split_inclusive('\n').collect();
            let total = lines.len();
            let start = usize::try_from(p.start_line.unwrap_or(1)).unwrap_or(usize::MAX);
            let (from, to) = if mode == WriteMode::Insert {
                if start > total + 1 {
                    return Err(range_error(
                        shown,
                        total,
                        format!("start_line {start} is past the end"),
                        format!("insert before a line from 1 to {}", total + 1),
                    ));
                }
                (start - 1, start - 1)
            } else {
                let end = p
                    .end_line
                    .map_or(start, |e| usize::try_from(e).unwrap_or(usize::MAX));
                if end > total || start > total {
                    return Err(range_error(
                        shown,
                        total,
                        format!("lines {start}-{end} are not all in the file"),
                        format!(
                            "replace lines within 1-{total}; insert appends at {}",
                            total + 1
                        ),
                    ));
                }
                (start - 1, end)
            };
            let last_unterminated = lines.last().is_some_and(|l| !l.ends_with('\n'));
            let mut block = content.into_owned();
            if !block.is_empty() && !block.ends_with('\n') {
                block.push_str(eol);
            }
            // Inserting after a last line without a line break: give it one.
            let mut fixed_last = String::new();
            if from == total
                && last_unterminated
                && let Some(last) = lines.pop()
            {
                fixed_last = format!("{last}{eol}");
            }
            let mut out = String::with_capacity(b.text.len() + block.len() + 2);
            for l in &lines[..from.min(lines.len())] {
                out.push_str(l);
            }
            out.push_str(&fixed_last);
            out.push_str(&block);
            let rest = &lines[to.min(lines.len())..];
            for l in rest {
                out.push_str(l);
            }
            // Replacing through a last line that had no line break keeps it without one.
            if mode == WriteMode::ReplaceLines
                && to == total
                && last_unterminated
                && !p.content.ends_with('\n')
                && out.ends_with(eol)
            {
                out.truncate(out.len() - eol.len());
            }
            Ok(out)
        }
    }
}

fn range_error(shown: &str, total: usize, what: String, fix: String) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidParams,
        format!(
            "{what}: {shown} has {} {}",
            text::group(total),
            plural(total as u64, "line")
        ),
    )
    .hint(fix)
}

/// A note when appended content was joined to a last line without a line break.
fn joined_note(b: &Before, mode: WriteMode, content: &str) -> Option<String> {
    (mode == WriteMode::Append
        && !b.text.is_empty()
        && !b.text.ends_with('\n')
        && !content.starts_with(['\n', '\r']))
    .then(|| {
        "note: the file did not end with a line break, so the content continues its last line"
            .to_string()
    })
}

/// Directories that do not exist yet above `path`, highest first, as shown to the model.
fn missing_dirs(ws: &Workspace, path: &WorkPath) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = path.abs().parent();
    while let Some(dir) = at {
        let Ok(wp) = ws.jail.lexical(&ws.cwd, &dir.to_string_lossy()) else {
            break;
        };
        if ws.jail.exists(&wp) {
            break;
        }
        out.push(ws.display(&wp));
        at = dir.parent();
    }
    out.reverse();
    out
}

fn unified_diff(shown: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(shown, shown)
        .to_string()
}

fn cut_diff(diff: &str, max_bytes: usize) -> String {
    if diff.len() <= max_bytes {
        return diff.to_string();
    }
    let mut end = max_bytes;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let cut = diff[..end].rfind('\n').map_or(end, |i| i + 1);
    let rest = text::count_lines(&diff[cut..]);
    format!(
        "{}... [diff cut: {} more {}]\n",
        &diff[..cut],
        text::group(rest),
        plural(rest as u64, "line")
    )
}

fn summary(out: &WriteFileOutput, before: Option<&Before>, note: Option<&str>) -> String {
    let lines = format!(
        "{} {}, {} {}",
        text::group(out.lines),
        plural(out.lines as u64, "line"),
        text::group(usize::try_from(out.bytes).unwrap_or(usize::MAX)),
        plural(out.bytes, "byte")
    );
    let verb = match (out.dry_run, out.changed) {
        (_, false) => "Unchanged",
        (true, _) => "Dry run, nothing written: would write",
        (false, _) if out.created => "Created",
        (false, _) => match out.mode {
            WriteMode::Append => "Appended to",
            WriteMode::Insert => "Inserted into",
            WriteMode::ReplaceLines => "Replaced lines in",
            WriteMode::Overwrite | WriteMode::CreateNew => "Overwrote",
        },
    };
    let mut text = format!("{verb} {} ({lines}", out.path);
    if let Some(b) = before {
        let old_lines = text::count_lines(&b.text);
        if old_lines != out.lines {
            text.push_str(&format!(", was {}", text::group(old_lines)));
        }
        if b.encoding != Encoding::Utf8 || b.ending == LineEnding::CrLf {
            text.push_str(&format!(
                "; kept {} {}",
                b.encoding.as_str(),
                b.ending.as_str()
            ));
        }
    }
    text.push_str(&format!("), content_hash {}", out.content_hash));
    if out.changed && !out.dry_run && !out.created_dirs.is_empty() {
        text.push_str(&format!(
            "\ncreated {} {}",
            if out.created_dirs.len() == 1 {
                "directory"
            } else {
                "directories"
            },
            out.created_dirs.join(", ")
        ));
    }
    if let Some(note) = note {
        text.push('\n');
        text.push_str(note);
    }
    if let Some(diff) = &out.diff {
        text.push('\n');
        text.push_str(diff);
    } else if out.changed {
        text.push_str("\n[diff not shown: over 4,000 bytes; use dry_run to preview changes]");
    }
    text
}
