//! The `*** Begin Patch` envelope: parsing, hunk application and planning.
//!
//! The format is the one GPT models are trained to write for `apply_patch`:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: src/new.rs
//! +pub fn hello() {}
//! *** Delete File: src/old.rs
//! *** Update File: src/lib.rs
//! *** Move to: src/core.rs
//! @@ fn main() {
//! -    let x = 1;
//! +    let x = 2;
//!      run(x);
//! *** End of File
//! *** End Patch
//! ```
//!
//! Three steps, all pure (no file system access):
//! - [`parse`] turns the text into a [`Patch`]; syntax errors name the patch line and
//!   say how to fix it. Common slips are forgiven: a heredoc wrapper
//!   (`apply_patch <<'EOF' ... EOF`), a code fence, blank lines around the envelope,
//!   CRLF line ends, padded markers, a first hunk without `@@`, git-style
//!   `@@ -12,7 +12,8 @@` headers.
//! - [`apply_hunks`] applies the hunks of one `*** Update File` section to a text:
//!   each hunk is found after its `@@` anchors and after the previous hunk, trying
//!   exact lines first, then ignoring trailing whitespace, then surrounding
//!   whitespace, then typographic punctuation. The text's line endings (CRLF stays
//!   CRLF) and its final-newline state are kept; unchanged lines keep their bytes.
//! - [`plan`] runs every section against the current files (read through a
//!   closure) and returns every resulting file before anything is written, so a
//!   caller can commit all files or none.
//!
//! ```
//! use std::path::{Path, PathBuf};
//! use toolbelt_fs::patch::{self, PathScope};
//!
//! let patch = patch::parse(
//!     "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n*** End Patch\n",
//! )?;
//! let scope = PathScope::new("/w", vec![PathBuf::from("/w")]);
//! let plan = patch::plan(&patch, &scope, |path: &Path| {
//!     Ok::<_, std::convert::Infallible>((path == Path::new("/w/a.txt")).then(|| "one\ntwo\n".to_string()))
//! })?;
//! assert_eq!(plan.files[0].after.as_deref(), Some("uno\ntwo\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// The largest patch accepted, in bytes.
pub const MAX_PATCH_BYTES: usize = 1024 * 1024;
/// The most file sections one patch may hold.
pub const MAX_PATCH_FILES: usize = 100;
/// How many lines of a hunk or of the file an error message shows at most.
const MAX_SHOWN_LINES: usize = 12;
/// Lines longer than this are cut in error messages, in chars.
const MAX_SHOWN_LINE_CHARS: usize = 200;
/// The least similarity (0..1) for a single line to be offered as "closest".
const MIN_CLOSEST_SIMILARITY: f64 = 0.5;

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const HEADERS_HELP: &str =
    "`*** Add File: <path>`, `*** Delete File: <path>` or `*** Update File: <path>`";

/// A parsed patch: its file sections in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The file sections, in the order they appear.
    pub ops: Vec<FileOp>,
}

/// One file section of a patch. `line` is the 1-based patch line of its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// `*** Add File: path` followed by `+` lines: create a file.
    Add {
        /// The path as written in the patch.
        path: String,
        /// The new file's text (`\n` line ends, a final newline unless empty).
        contents: String,
        /// Patch line of the header.
        line: usize,
    },
    /// `*** Delete File: path`: remove a file.
    Delete {
        /// The path as written in the patch.
        path: String,
        /// Patch line of the header.
        line: usize,
    },
    /// `*** Update File: path`, optionally `*** Move to: path`, then hunks.
    Update {
        /// The path as written in the patch.
        path: String,
        /// The new path when the file is also renamed.
        move_to: Option<String>,
        /// The changes, in file order (may be empty for a pure rename).
        hunks: Vec<Hunk>,
        /// Patch line of the header.
        line: usize,
    },
}

impl FileOp {
    /// The path named in the section header.
    #[must_use]
    pub fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. }
            | FileOp::Delete { path, .. }
            | FileOp::Update { path, .. } => path,
        }
    }

    /// The 1-based patch line of the section header.
    #[must_use]
    pub fn line(&self) -> usize {
        match self {
            FileOp::Add { line, .. }
            | FileOp::Delete { line, .. }
            | FileOp::Update { line, .. } => *line,
        }
    }
}

/// One change inside an `*** Update File` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// `@@ text` anchors, in order: each is a line of the file that must come
    /// before the hunk (each one after the previous). Empty for a bare `@@`.
    pub anchors: Vec<String>,
    /// The hunk's lines, in order.
    pub lines: Vec<HunkLine>,
    /// `*** End of File` followed the hunk: its old lines end the file.
    pub end_of_file: bool,
    /// The 1-based patch line where the hunk starts (its first `@@` or line).
    pub line: usize,
}

impl Hunk {
    /// The lines the hunk expects in the file (context and removed lines).
    #[must_use]
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    /// The lines the hunk leaves in the file (context and added lines).
    #[must_use]
    pub fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Add(t) => Some(t.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }
}

/// One line of a hunk, without its prefix character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` text`: a line that stays.
    Context(String),
    /// `-text`: a line that goes.
    Remove(String),
    /// `+text`: a line that comes.
    Add(String),
}

/// How loosely a hunk's lines had to be compared to be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchTier {
    /// Byte for byte.
    Exact,
    /// Ignoring whitespace at the end of lines.
    TrailingWhitespace,
    /// Ignoring whitespace at both ends of lines.
    Whitespace,
    /// Ignoring whitespace, with typographic dashes, quotes and spaces read as ASCII.
    Punctuation,
}

impl MatchTier {
    const ALL: [MatchTier; 4] = [
        MatchTier::Exact,
        MatchTier::TrailingWhitespace,
        MatchTier::Whitespace,
        MatchTier::Punctuation,
    ];

    fn normalize(self, s: &str) -> Cow<'_, str> {
        match self {
            MatchTier::Exact => Cow::Borrowed(s),
            MatchTier::TrailingWhitespace => Cow::Borrowed(s.trim_end()),
            MatchTier::Whitespace => Cow::Borrowed(s.trim()),
            MatchTier::Punctuation => Cow::Owned(crate::text::fold_typography_str(s.trim())),
        }
    }
}

/// Where one hunk was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HunkMatch {
    /// 1-based hunk number within its file section.
    pub hunk: usize,
    /// 1-based line of the original text where the hunk's old lines start (for a
    /// pure insertion: the line before which the new lines go).
    pub line: usize,
    /// How loosely it matched.
    pub tier: MatchTier,
}

/// The result of [`apply_hunks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The new text.
    pub text: String,
    /// Lines added (`+` lines of all hunks).
    pub added: usize,
    /// Lines removed (`-` lines of all hunks).
    pub removed: usize,
    /// Where each hunk went, in hunk order.
    pub matches: Vec<HunkMatch>,
}

/// A region of a file shown as the nearest miss of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// 1-based first line.
    pub start_line: usize,
    /// The file's lines there.
    pub lines: Vec<String>,
    /// How many of the hunk's expected lines are equal (ignoring whitespace).
    pub equal: usize,
}

/// Why one hunk could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// An `@@` anchor line was not found.
    AnchorNotFound {
        /// The anchor text.
        anchor: String,
        /// The 1-based line the search started at.
        from_line: usize,
        /// The most similar line after `from_line`: (1-based line, text).
        closest: Option<(usize, String)>,
    },
    /// The hunk's context and removed lines were not found.
    LinesNotFound {
        /// The lines the hunk expects.
        expected: Vec<String>,
        /// The 1-based line the search started at.
        from_line: usize,
        /// They do occur, but before `from_line` (hunks out of order): 1-based line.
        earlier_at: Option<usize>,
        /// The nearest region of the file.
        closest: Option<Region>,
    },
}

/// One hunk that could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkFailure {
    /// 1-based hunk number within its file section.
    pub hunk: usize,
    /// 1-based patch line of the hunk.
    pub line: usize,
    /// What went wrong.
    pub kind: FailureKind,
}

/// Everything that can be wrong with a patch. Display is a message for the model
/// saying what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The patch text is over [`MAX_PATCH_BYTES`].
    #[error(
        "the patch is {bytes} bytes; the limit is {max_bytes} bytes. Split it into several smaller patches."
    )]
    TooLarge {
        /// Size of the patch.
        bytes: usize,
        /// The limit.
        max_bytes: usize,
    },
    /// The patch has more than [`MAX_PATCH_FILES`] file sections.
    #[error(
        "the patch has {files} file sections; the limit is {max_files}. Split it into several patches."
    )]
    TooManyFiles {
        /// File sections in the patch.
        files: usize,
        /// The limit.
        max_files: usize,
    },
    /// The text is not a well-formed patch.
    #[error("patch line {line}: {message}")]
    Syntax {
        /// 1-based patch line.
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A path is empty, escapes the workspace or lies outside it.
    #[error("patch line {line}: {reason}")]
    BadPath {
        /// The path as written.
        path: String,
        /// 1-based patch line.
        line: usize,
        /// Why it is refused.
        reason: String,
    },
    /// `*** Add File` names a file that exists.
    #[error(
        "patch line {line}: {path} already exists. Change it with `*** Update File: {path}`, or delete it first in the same patch with `*** Delete File: {path}`."
    )]
    AlreadyExists {
        /// The path as written.
        path: String,
        /// 1-based patch line.
        line: usize,
    },
    /// `*** Move to` names a file that exists.
    #[error(
        "patch line {line}: cannot move to {path}: it already exists. Delete it first in the same patch with `*** Delete File: {path}`, or choose another name."
    )]
    DestinationExists {
        /// The destination as written.
        path: String,
        /// 1-based patch line.
        line: usize,
    },
    /// `*** Update File` or `*** Delete File` names a file that does not exist.
    #[error("patch line {line}: {path} does not exist. {hint}")]
    Missing {
        /// The path as written.
        path: String,
        /// 1-based patch line.
        line: usize,
        /// What to do instead.
        hint: &'static str,
    },
    /// Hunks of one file section do not fit the file.
    #[error("{}", render_mismatch(path, *hunks, failures))]
    Mismatch {
        /// The file, as written in the patch.
        path: String,
        /// How many hunks the section has.
        hunks: usize,
        /// Every hunk that failed.
        failures: Vec<HunkFailure>,
    },
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// Parses a patch.
///
/// # Errors
/// [`PatchError::TooLarge`] over [`MAX_PATCH_BYTES`], [`PatchError::TooManyFiles`]
/// over [`MAX_PATCH_FILES`] sections, [`PatchError::Syntax`] (with the patch line and
/// a fix) for a missing `*** Begin Patch` / `*** End Patch`, an unknown `***` line,
/// an empty path, a hunk line without a ` `/`-`/`+` prefix, a hunk with no lines, an
/// update with no hunks, or no file sections at all.
pub fn parse(patch: &str) -> Result<Patch, PatchError> {
    if patch.len() > MAX_PATCH_BYTES {
        return Err(PatchError::TooLarge {
            bytes: patch.len(),
            max_bytes: MAX_PATCH_BYTES,
        });
    }
    let patch = patch.strip_prefix('\u{feff}').unwrap_or(patch);
    let all: Vec<(usize, &str)> = patch
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
        .collect();
    let lines = unwrap_envelope(trim_blank(&all));
    let Some(&(first_no, first)) = lines.first() else {
        return Err(syntax(
            1,
            "the patch is empty. Write `*** Begin Patch`, then file sections, then `*** End Patch`.",
        ));
    };
    if first.trim() != BEGIN_PATCH {
        let hint = if looks_like_unified_diff(lines) {
            " This looks like a unified diff; apply_patch takes its own format: `*** Update File: <path>`, then `@@` and lines starting with ' ', '-' or '+'."
        } else {
            ""
        };
        return Err(syntax(
            first_no,
            format!(
                "the patch must start with `{BEGIN_PATCH}`, found `{}`.{hint}",
                shown(first.trim())
            ),
        ));
    }
    let (last_no, last) = lines[lines.len() - 1];
    if lines.len() < 2 || last.trim() != END_PATCH {
        return Err(syntax(
            last_no,
            format!(
                "the patch must end with `{END_PATCH}`, found `{}`. If it was cut off, send it again complete.",
                shown(last.trim())
            ),
        ));
    }
    let mut parser = Parser {
        lines: &lines[1..lines.len() - 1],
        pos: 0,
    };
    let ops = parser.ops()?;
    if ops.is_empty() {
        return Err(syntax(
            last_no,
            format!(
                "the patch has no file sections. Put {HEADERS_HELP} sections between `{BEGIN_PATCH}` and `{END_PATCH}`."
            ),
        ));
    }
    if ops.len() > MAX_PATCH_FILES {
        return Err(PatchError::TooManyFiles {
            files: ops.len(),
            max_files: MAX_PATCH_FILES,
        });
    }
    Ok(Patch { ops })
}

fn syntax(line: usize, message: impl Into<String>) -> PatchError {
    PatchError::Syntax {
        line,
        message: message.into(),
    }
}

fn trim_blank<'a, 'b>(lines: &'a [(usize, &'b str)]) -> &'a [(usize, &'b str)] {
    let start = lines
        .iter()
        .position(|(_, l)| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|(_, l)| !l.trim().is_empty())
        .map_or(start, |i| i + 1);
    &lines[start..end.max(start)]
}

/// Strips wrappers models put around a patch: a heredoc (`apply_patch <<'EOF'` ...
/// `EOF`) and a Markdown code fence, in either nesting.
fn unwrap_envelope<'a, 'b>(mut lines: &'a [(usize, &'b str)]) -> &'a [(usize, &'b str)] {
    loop {
        let (Some(&(_, first)), Some(&(_, last))) = (lines.first(), lines.last()) else {
            return lines;
        };
        if lines.len() < 2 {
            return lines;
        }
        let unwrapped = match heredoc_delimiter(first) {
            Some(delimiter) if last.trim() == delimiter => true,
            _ => first.trim_start().starts_with("```") && last.trim() == "```",
        };
        if !unwrapped {
            return lines;
        }
        lines = trim_blank(&lines[1..lines.len() - 1]);
    }
}

/// `apply_patch <<'EOF'`, `<<EOF`, `<<-"EOF"` -> `EOF`.
fn heredoc_delimiter(line: &str) -> Option<&str> {
    let mut t = line.trim();
    for command in ["apply_patch", "applypatch"] {
        if let Some(rest) = t.strip_prefix(command) {
            t = rest.trim_start();
        }
    }
    let t = t.strip_prefix("<<")?;
    let t = t.strip_prefix('-').unwrap_or(t).trim_start();
    let (word, rest) = match t.chars().next()? {
        quote @ ('\'' | '"') => {
            let inner = &t[1..];
            let end = inner.find(quote)?;
            (&inner[..end], &inner[end + 1..])
        }
        _ => {
            let end = t
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(t.len());
            (&t[..end], &t[end..])
        }
    };
    (!word.is_empty() && rest.trim().is_empty()).then_some(word)
}

fn looks_like_unified_diff(lines: &[(usize, &str)]) -> bool {
    lines.iter().take(5).any(|(_, l)| {
        l.starts_with("diff --git ") || l.starts_with("--- ") || l.starts_with("+++ ")
    })
}

/// A `***` line.
#[derive(Debug, PartialEq, Eq)]
enum Marker<'a> {
    Add(&'a str),
    Delete(&'a str),
    Update(&'a str),
    MoveTo(&'a str),
    EndOfFile,
    Begin,
    End,
    Unknown,
}

/// Reads a trimmed line as a marker; `None` when it does not start with `***`.
/// Keywords are matched ignoring ASCII case and the spacing around them.
fn marker(trimmed: &str) -> Option<Marker<'_>> {
    let rest = trimmed.strip_prefix("***")?.trim_start();
    let keyword = |word: &str| -> Option<&str> {
        let head = rest.get(..word.len())?;
        head.eq_ignore_ascii_case(word).then(|| &rest[word.len()..])
    };
    let path = |header: &'static str| -> Option<&str> {
        Some(keyword(header)?.trim_start().strip_prefix(':')?.trim())
    };
    let whole = |word: &str| keyword(word).is_some_and(|tail| tail.trim().is_empty());
    Some(if let Some(p) = path("Add File") {
        Marker::Add(p)
    } else if let Some(p) = path("Delete File") {
        Marker::Delete(p)
    } else if let Some(p) = path("Update File") {
        Marker::Update(p)
    } else if let Some(p) = path("Move to") {
        Marker::MoveTo(p)
    } else if whole("End of File") {
        Marker::EndOfFile
    } else if whole("Begin Patch") {
        Marker::Begin
    } else if whole("End Patch") {
        Marker::End
    } else {
        Marker::Unknown
    })
}

/// Text shortened for an error message.
fn shown(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(MAX_SHOWN_LINE_CHARS) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

struct Parser<'a, 'b> {
    lines: &'a [(usize, &'b str)],
    pos: usize,
}

impl<'b> Parser<'_, 'b> {
    fn peek(&self) -> Option<(usize, &'b str)> {
        self.lines.get(self.pos).copied()
    }

    fn skip_blank(&mut self) {
        while self.peek().is_some_and(|(_, l)| l.trim().is_empty()) {
            self.pos += 1;
        }
    }

    /// The next non-blank line from the current position, without consuming.
    fn next_non_blank(&self) -> Option<(usize, &'b str)> {
        self.lines[self.pos.min(self.lines.len())..]
            .iter()
            .find(|(_, l)| !l.trim().is_empty())
            .copied()
    }

    /// Whether only blank lines remain before the end or the next `***` marker
    /// (other than `*** End of File`).
    fn blank_ends_section(&self) -> bool {
        self.next_non_blank().is_none_or(|(_, l)| {
            !l.starts_with(['+', '-', '@'])
                && marker(l.trim()).is_some_and(|m| m != Marker::EndOfFile && m != Marker::Unknown)
        })
    }

    fn ops(&mut self) -> Result<Vec<FileOp>, PatchError> {
        let mut ops = Vec::new();
        loop {
            self.skip_blank();
            let Some((no, raw)) = self.peek() else {
                return Ok(ops);
            };
            let trimmed = raw.trim();
            let op = match marker(trimmed) {
                Some(Marker::Add(path)) => self.add(no, path)?,
                Some(Marker::Delete(path)) => self.delete(no, path)?,
                Some(Marker::Update(path)) => self.update(no, path)?,
                Some(Marker::MoveTo(_)) => {
                    return Err(syntax(
                        no,
                        "`*** Move to: <path>` must come right after the `*** Update File: <path>` line of the file to move.",
                    ));
                }
                Some(Marker::EndOfFile) => {
                    return Err(syntax(
                        no,
                        "`*** End of File` must follow the last line of a hunk in an `*** Update File` section.",
                    ));
                }
                Some(Marker::Begin) => {
                    return Err(syntax(
                        no,
                        format!(
                            "a second `{BEGIN_PATCH}`; send one patch with all file sections inside a single `{BEGIN_PATCH}` ... `{END_PATCH}`."
                        ),
                    ));
                }
                Some(Marker::End) => {
                    return Err(syntax(
                        no,
                        format!(
                            "`{END_PATCH}` before the end of the patch; it must be the last line, once."
                        ),
                    ));
                }
                Some(Marker::Unknown) => {
                    return Err(syntax(
                        no,
                        format!(
                            "unknown marker `{}`. A file section starts with {HEADERS_HELP}; inside an update, `*** Move to: <path>` and `*** End of File` are allowed.",
                            shown(trimmed)
                        ),
                    ));
                }
                None => {
                    return Err(syntax(
                        no,
                        format!(
                            "expected a file section header ({HEADERS_HELP}), found `{}`. Every change must be inside a file section.",
                            shown(trimmed)
                        ),
                    ));
                }
            };
            ops.push(op);
        }
    }

    fn header_path(no: usize, path: &str, header: &str) -> Result<String, PatchError> {
        if path.is_empty() {
            return Err(PatchError::BadPath {
                path: String::new(),
                line: no,
                reason: format!(
                    "`*** {header}:` has no path; write the file's path after the colon."
                ),
            });
        }
        Ok(path.to_string())
    }

    fn add(&mut self, no: usize, path: &str) -> Result<FileOp, PatchError> {
        let path = Self::header_path(no, path, "Add File")?;
        self.pos += 1;
        let mut contents: Vec<&str> = Vec::new();
        while let Some((line_no, raw)) = self.peek() {
            if let Some(text) = raw.strip_prefix('+') {
                contents.push(text);
                self.pos += 1;
            } else if raw.trim().is_empty() {
                // A blank line between `+` lines is an empty line whose `+` was
                // forgotten; before the next section it is a separator.
                if self
                    .next_non_blank()
                    .is_some_and(|(_, l)| l.starts_with('+'))
                {
                    contents.push("");
                }
                self.pos += 1;
            } else if marker(raw.trim()) == Some(Marker::EndOfFile) {
                self.pos += 1;
            } else if marker(raw.trim()).is_some() {
                break;
            } else {
                return Err(syntax(
                    line_no,
                    format!(
                        "every line of a new file starts with '+', found `{}` in `*** Add File: {path}`. Put '+' in front of it ('+' alone for an empty line).",
                        shown(raw)
                    ),
                ));
            }
        }
        let mut text = contents.join("\n");
        if !contents.is_empty() {
            text.push('\n');
        }
        Ok(FileOp::Add {
            path,
            contents: text,
            line: no,
        })
    }

    fn delete(&mut self, no: usize, path: &str) -> Result<FileOp, PatchError> {
        let path = Self::header_path(no, path, "Delete File")?;
        self.pos += 1;
        if let Some((line_no, raw)) = self.next_non_blank()
            && marker(raw.trim()).is_none()
        {
            return Err(syntax(
                line_no,
                format!(
                    "`*** Delete File: {path}` takes no lines, found `{}`. To change the file instead, use `*** Update File: {path}`.",
                    shown(raw)
                ),
            ));
        }
        Ok(FileOp::Delete { path, line: no })
    }

    fn update(&mut self, no: usize, path: &str) -> Result<FileOp, PatchError> {
        let path = Self::header_path(no, path, "Update File")?;
        self.pos += 1;
        let mut move_to = None;
        if let Some((move_no, raw)) = self.next_non_blank()
            && let Some(Marker::MoveTo(dest)) = marker(raw.trim())
        {
            move_to = Some(Self::header_path(move_no, dest, "Move to")?);
            self.skip_blank();
            self.pos += 1;
        }

        let mut hunks: Vec<Hunk> = Vec::new();
        let mut current = HunkBuilder::default();
        while let Some((line_no, raw)) = self.peek() {
            let trimmed = raw.trim();
            if raw.starts_with('*') || (raw.starts_with(' ') && trimmed.starts_with("***")) {
                match marker(trimmed) {
                    Some(Marker::EndOfFile) => {
                        if current.lines.is_empty() {
                            return Err(syntax(
                                line_no,
                                "`*** End of File` must follow the lines of a hunk; this hunk has none.",
                            ));
                        }
                        current.end_of_file = true;
                        self.pos += 1;
                        current.finish(&mut hunks)?;
                        continue;
                    }
                    Some(Marker::Unknown) if raw.starts_with(' ') => {}
                    Some(_) => break,
                    None if raw.starts_with(' ') => {}
                    None => {
                        return Err(syntax(
                            line_no,
                            format!(
                                "a hunk line must start with ' ' (unchanged), '-' (removed) or '+' (added), found `{}`.",
                                shown(raw)
                            ),
                        ));
                    }
                }
            }
            if let Some(after) = raw.strip_prefix("@@") {
                if !current.lines.is_empty() {
                    current.finish(&mut hunks)?;
                }
                current.start.get_or_insert(line_no);
                if let Some(anchor) = anchor_text(after) {
                    current.anchors.push(anchor.to_string());
                }
                self.pos += 1;
                continue;
            }
            let line = match raw.chars().next() {
                None => {
                    // Blank lines before a hunk or before the next section separate;
                    // elsewhere they are empty unchanged lines.
                    if current.start.is_none() || self.blank_ends_section() {
                        self.pos += 1;
                        continue;
                    }
                    HunkLine::Context(String::new())
                }
                Some(' ') => HunkLine::Context(raw[1..].to_string()),
                Some('-') => HunkLine::Remove(raw[1..].to_string()),
                Some('+') => HunkLine::Add(raw[1..].to_string()),
                Some(_) => {
                    return Err(syntax(
                        line_no,
                        format!(
                            "a hunk line must start with ' ' (unchanged), '-' (removed) or '+' (added), found `{}`. If the line is unchanged, add a space in front of it.",
                            shown(raw)
                        ),
                    ));
                }
            };
            current.start.get_or_insert(line_no);
            current.lines.push(line);
            self.pos += 1;
        }
        if current.start.is_some() || !current.lines.is_empty() {
            current.finish(&mut hunks)?;
        }
        if hunks.is_empty() && move_to.is_none() {
            return Err(syntax(
                no,
                format!(
                    "`*** Update File: {path}` has no hunks. Follow it with `@@` and lines starting with ' ' (unchanged), '-' (removed) or '+' (added)."
                ),
            ));
        }
        Ok(FileOp::Update {
            path,
            move_to,
            hunks,
            line: no,
        })
    }
}

/// The anchor after `@@`; `None` for a bare `@@` or a git-style range header.
fn anchor_text(after: &str) -> Option<&str> {
    let mut text = after.trim();
    // `@@ -12,7 +12,8 @@ fn main()` -> `fn main()`.
    if let Some((ranges, rest)) = text.split_once("@@") {
        let mut parts = ranges.split_whitespace();
        let is_range = |p: Option<&str>, sign: char| {
            p.and_then(|p| p.strip_prefix(sign)).is_some_and(|r| {
                !r.is_empty()
                    && r.split(',')
                        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        };
        if is_range(parts.next(), '-') && is_range(parts.next(), '+') && parts.next().is_none() {
            text = rest.trim();
        }
    }
    (!text.is_empty()).then_some(text)
}

#[derive(Default)]
struct HunkBuilder {
    anchors: Vec<String>,
    lines: Vec<HunkLine>,
    end_of_file: bool,
    start: Option<usize>,
}

impl HunkBuilder {
    fn finish(&mut self, hunks: &mut Vec<Hunk>) -> Result<(), PatchError> {
        let taken = std::mem::take(self);
        let line = taken.start.unwrap_or(0);
        if taken.lines.is_empty() {
            return Err(syntax(
                line,
                "this hunk has no lines. After `@@`, write the lines starting with ' ' (unchanged), '-' (removed) or '+' (added).",
            ));
        }
        hunks.push(Hunk {
            anchors: taken.anchors,
            lines: taken.lines,
            end_of_file: taken.end_of_file,
            line,
        });
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Applying hunks to one text
// ---------------------------------------------------------------------------

/// A line of the original text with its ending (`"\n"`, `"\r\n"` or `""` for an
/// unterminated last line).
#[derive(Debug, Clone, Copy)]
struct SrcLine<'a> {
    text: &'a str,
    eol: &'a str,
}

fn split_lines(text: &str) -> Vec<SrcLine<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(i) => {
                let (line, eol) = if i > 0 && rest.as_bytes()[i - 1] == b'\r' {
                    (&rest[..i - 1], &rest[i - 1..=i])
                } else {
                    (&rest[..i], &rest[i..=i])
                };
                out.push(SrcLine { text: line, eol });
                rest = &rest[i + 1..];
            }
            None => {
                out.push(SrcLine {
                    text: rest,
                    eol: "",
                });
                rest = "";
            }
        }
    }
    out
}

/// The ending new lines get: CRLF when most lines end so, else LF.
fn dominant_eol(lines: &[SrcLine<'_>]) -> &'static str {
    let crlf = lines.iter().filter(|l| l.eol == "\r\n").count();
    let lf = lines.iter().filter(|l| l.eol == "\n").count();
    if crlf > lf { "\r\n" } else { "\n" }
}

/// Applies the hunks of one `*** Update File` section to `text`.
///
/// Each hunk is placed after the previous one: its `@@` anchors are found in order
/// (each a whole line, compared ever more loosely, finally as a line prefix), then
/// its old lines (context and removed) with the [`MatchTier`] cascade. A hunk with
/// `end_of_file` prefers the end of the text. A hunk without old lines inserts its
/// lines after its last anchor, or at the end of the text when it has none.
/// Unchanged lines keep their bytes; new lines get the text's dominant line ending;
/// the final-newline state is kept. `path` only names the file in errors.
///
/// # Errors
/// [`PatchError::Mismatch`] listing every hunk that could not be placed, with the
/// lines expected and the closest region of the text.
pub fn apply_hunks(path: &str, text: &str, hunks: &[Hunk]) -> Result<Applied, PatchError> {
    let src = split_lines(text);
    let lines: Vec<&str> = src.iter().map(|l| l.text).collect();
    let mut placed: Vec<(usize, usize, Vec<HunkLine>)> = Vec::new();
    let mut matches = Vec::new();
    let mut failures = Vec::new();
    let mut cursor = 0usize;
    for (index, hunk) in hunks.iter().enumerate() {
        match place(&lines, hunk, cursor) {
            Ok((start, old_len, tier, body)) => {
                matches.push(HunkMatch {
                    hunk: index + 1,
                    line: start + 1,
                    tier,
                });
                cursor = start + old_len;
                placed.push((start, old_len, body));
            }
            Err(kind) => failures.push(HunkFailure {
                hunk: index + 1,
                line: hunk.line,
                kind,
            }),
        }
    }
    if !failures.is_empty() {
        return Err(PatchError::Mismatch {
            path: path.to_string(),
            hunks: hunks.len(),
            failures,
        });
    }

    let eol = dominant_eol(&src);
    let mut out: Vec<(&str, &str)> = Vec::with_capacity(src.len());
    let mut next = 0usize;
    let (mut added, mut removed) = (0, 0);
    for (start, old_len, body) in &placed {
        out.extend(src[next..*start].iter().map(|l| (l.text, l.eol)));
        let mut at = *start;
        for line in body {
            match line {
                HunkLine::Context(_) => {
                    let kept = src[at];
                    out.push((kept.text, kept.eol));
                    at += 1;
                }
                HunkLine::Remove(_) => {
                    removed += 1;
                    at += 1;
                }
                HunkLine::Add(new) => {
                    added += 1;
                    out.push((new.as_str(), ""));
                }
            }
        }
        next = start + old_len;
    }
    out.extend(src[next..].iter().map(|l| (l.text, l.eol)));

    let final_newline = text.is_empty() || text.ends_with('\n');
    let mut result = String::with_capacity(text.len() + 64);
    let count = out.len();
    for (i, (line, ending)) in out.into_iter().enumerate() {
        result.push_str(line);
        if i + 1 < count || final_newline {
            result.push_str(if ending.is_empty() { eol } else { ending });
        }
    }
    Ok(Applied {
        text: result,
        added,
        removed,
        matches,
    })
}

/// Finds where a hunk goes: (start, old line count, tier, the hunk lines used).
fn place(
    lines: &[&str],
    hunk: &Hunk,
    cursor: usize,
) -> Result<(usize, usize, MatchTier, Vec<HunkLine>), FailureKind> {
    let mut from = cursor;
    let mut anchor_at = None;
    for anchor in &hunk.anchors {
        match seek_anchor(lines, anchor, from) {
            Some(i) => {
                anchor_at = Some(i);
                from = i + 1;
            }
            None => {
                return Err(FailureKind::AnchorNotFound {
                    anchor: anchor.clone(),
                    from_line: from + 1,
                    closest: closest_line(lines, anchor, from),
                });
            }
        }
    }

    let mut body: Vec<HunkLine> = hunk.lines.clone();
    let old_of = |body: &[HunkLine]| -> Vec<String> {
        body.iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.clone()),
                HunkLine::Add(_) => None,
            })
            .collect()
    };
    let mut old = old_of(&body);
    if old.is_empty() {
        let at = match anchor_at {
            Some(i) if !hunk.end_of_file => i + 1,
            _ => lines.len(),
        };
        return Ok((at, 0, MatchTier::Exact, body));
    }

    // The old lines may repeat the last anchor line, so search from it.
    let search_from = anchor_at.unwrap_or(from);
    loop {
        if let Some((start, tier)) = seek_lines(lines, &old, search_from, hunk.end_of_file) {
            return Ok((start, old.len(), tier, body));
        }
        // Blank context lines at the end are often a stray separator or the final
        // newline written out: retry without them.
        if body.last() == Some(&HunkLine::Context(String::new())) {
            body.pop();
            old = old_of(&body);
            if !old.is_empty() {
                continue;
            }
        }
        break;
    }

    let expected = old_of(&hunk.lines);
    let earlier_at = seek_lines(lines, &expected, 0, false)
        .map(|(i, _)| i)
        .filter(|&i| i < search_from)
        .map(|i| i + 1);
    Err(FailureKind::LinesNotFound {
        closest: closest_region(lines, &expected, search_from),
        expected,
        from_line: search_from + 1,
        earlier_at,
    })
}

/// The first index at or after `from` where the anchor is a line: whole-line
/// matches through the tiers, then the line starting with the anchor (ignoring
/// whitespace and typographic punctuation), as `@@ fn run` for `fn run(x: u8) {`.
fn seek_anchor(lines: &[&str], anchor: &str, from: usize) -> Option<usize> {
    let tail = lines.get(from..)?;
    for tier in MatchTier::ALL {
        let want = tier.normalize(anchor);
        if let Some(i) = tail.iter().position(|l| tier.normalize(l) == want) {
            return Some(from + i);
        }
    }
    let want = MatchTier::Punctuation.normalize(anchor);
    if want.is_empty() {
        return None;
    }
    tail.iter()
        .position(|l| {
            MatchTier::Punctuation
                .normalize(l)
                .starts_with(want.as_ref())
        })
        .map(|i| from + i)
}

/// The first start at or after `from` where `pattern` matches, trying each tier
/// over the whole range before the next. With `eof`, the end of the text is tried
/// first at every tier.
fn seek_lines(
    lines: &[&str],
    pattern: &[String],
    from: usize,
    eof: bool,
) -> Option<(usize, MatchTier)> {
    if pattern.len() > lines.len() || from > lines.len() - pattern.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    for tier in MatchTier::ALL {
        let want: Vec<Cow<'_, str>> = pattern.iter().map(|p| tier.normalize(p)).collect();
        let at = |start: usize| {
            want.iter()
                .zip(&lines[start..])
                .all(|(w, l)| tier.normalize(l) == *w)
        };
        if eof && at(last_start) {
            return Some((last_start, tier));
        }
        if let Some(start) = (from..=last_start).find(|&s| at(s)) {
            return Some((start, tier));
        }
    }
    None
}

/// The window after `from` (or anywhere, when nothing after it is close) with the
/// most lines equal to the pattern's (ignoring whitespace and punctuation); when no
/// line is equal, the single line most similar to the pattern's first non-blank
/// line.
fn closest_region(lines: &[&str], pattern: &[String], from: usize) -> Option<Region> {
    if lines.is_empty() || pattern.is_empty() {
        return None;
    }
    let norm = |s: &str| MatchTier::Punctuation.normalize(s).into_owned();
    let file: Vec<String> = lines.iter().map(|l| norm(l)).collect();
    let want: Vec<String> = pattern.iter().map(|p| norm(p)).collect();
    let width = want.len().min(file.len());
    let last_start = file.len() - width;
    let score = |start: usize| {
        want.iter()
            .zip(&file[start..start + width])
            .filter(|(w, l)| !w.is_empty() && w == l)
            .count()
    };
    let best_in = |range: std::ops::RangeInclusive<usize>| {
        range
            .map(|s| (score(s), s))
            .filter(|(n, _)| *n > 0)
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
    };
    let best = best_in(from.min(last_start)..=last_start).or_else(|| best_in(0..=last_start));
    let region = |start: usize, equal: usize| Region {
        start_line: start + 1,
        lines: lines[start..start + width]
            .iter()
            .map(|l| (*l).to_string())
            .collect(),
        equal,
    };
    if let Some((equal, start)) = best {
        return Some(region(start, equal));
    }
    let first = pattern.iter().find(|p| !p.trim().is_empty())?;
    let (line, _) = closest_line(lines, first, 0)?;
    let start = (line - 1).min(last_start);
    Some(region(start, 0))
}

/// The line at or after `from` most similar to `target` (1-based number, text),
/// when similar enough.
fn closest_line(lines: &[&str], target: &str, from: usize) -> Option<(usize, String)> {
    let clip = |s: &str| -> String {
        MatchTier::Punctuation
            .normalize(s)
            .chars()
            .take(MAX_SHOWN_LINE_CHARS)
            .collect()
    };
    let want = clip(target);
    if want.is_empty() {
        return None;
    }
    let scan = |from: usize| {
        lines
            .iter()
            .enumerate()
            .skip(from)
            .map(|(i, l)| (strsim::normalized_levenshtein(&clip(l), &want), i))
            .filter(|(sim, _)| *sim >= MIN_CLOSEST_SIMILARITY)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
    };
    scan(from)
        .or_else(|| scan(0))
        .map(|(_, i)| (i + 1, lines[i].to_string()))
}

fn render_mismatch(path: &str, hunks: usize, failures: &[HunkFailure]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{path}: {} of {hunks} hunk{} did not match the file.",
        failures.len(),
        if hunks == 1 { "" } else { "s" }
    );
    for failure in failures {
        let _ = write!(
            out,
            "\nhunk {} (patch line {}): ",
            failure.hunk, failure.line
        );
        match &failure.kind {
            FailureKind::AnchorNotFound {
                anchor,
                from_line,
                closest,
            } => {
                let _ = write!(
                    out,
                    "the anchor `@@ {}` is not a line of the file at or after line {from_line}.",
                    shown(anchor)
                );
                if let Some((line, text)) = closest {
                    let _ = write!(out, " Closest: line {line} `{}`.", shown(text));
                }
                out.push_str(
                    " Copy the anchor from a line of the file as it is now, or use a bare `@@`.",
                );
            }
            FailureKind::LinesNotFound {
                expected,
                from_line,
                earlier_at,
                closest,
            } => {
                if let Some(at) = earlier_at {
                    let _ = write!(
                        out,
                        "its lines are at line {at}, before the previous hunk or anchor (searched from line {from_line}). Hunks must be in file order: reorder them."
                    );
                    continue;
                }
                let _ = write!(
                    out,
                    "these {} line{} were not found at or after line {from_line}:",
                    expected.len(),
                    if expected.len() == 1 { "" } else { "s" }
                );
                push_lines(&mut out, expected.iter().map(|l| (None, l.as_str())));
                match closest {
                    Some(region) => {
                        let end = region.start_line + region.lines.len() - 1;
                        let _ = write!(
                            out,
                            "\n  closest: lines {}-{end} ({} of {} equal ignoring whitespace):",
                            region.start_line,
                            region.equal,
                            expected.len()
                        );
                        push_lines(
                            &mut out,
                            region
                                .lines
                                .iter()
                                .enumerate()
                                .map(|(i, l)| (Some(region.start_line + i), l.as_str())),
                        );
                    }
                    None => out.push_str("\n  nothing similar is in the file."),
                }
                out.push_str(
                    "\n  Read the file again and copy the unchanged (' ') and removed ('-') lines exactly as they are now.",
                );
            }
        }
    }
    out
}

fn push_lines<'a>(
    out: &mut String,
    lines: impl ExactSizeIterator<Item = (Option<usize>, &'a str)>,
) {
    let total = lines.len();
    for (i, (number, line)) in lines.enumerate() {
        if i == MAX_SHOWN_LINES {
            let _ = write!(out, "\n    … {} more", total - MAX_SHOWN_LINES);
            break;
        }
        let _ = match number {
            Some(n) => write!(out, "\n  {n:>5}| {}", shown(line)),
            None => write!(out, "\n       | {}", shown(line)),
        };
    }
}

// ---------------------------------------------------------------------------
// Planning a whole patch
// ---------------------------------------------------------------------------

/// Where patch paths live: relative paths are joined to `cwd`; every path, once
/// `.` and `..` are folded, must lie under one of `roots`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathScope {
    /// The directory relative paths start from (absolute).
    pub cwd: PathBuf,
    /// The directories every path must lie in (absolute).
    pub roots: Vec<PathBuf>,
}

impl PathScope {
    /// A scope with `cwd` and `roots`.
    #[must_use]
    pub fn new(cwd: impl Into<PathBuf>, roots: Vec<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            roots,
        }
    }

    /// The absolute, lexically folded path of `raw`.
    ///
    /// # Errors
    /// A [`ScopeError`] (its message is for the model) when `raw` is empty, holds a
    /// NUL byte, climbs out of the roots with `..`, or is an absolute path
    /// elsewhere.
    ///
    /// # Security
    /// Lexical only: symlinks are not followed, so the result must still be opened
    /// through a confined resolver (the jail), which refuses the rest.
    pub fn locate(&self, raw: &str) -> Result<PathBuf, ScopeError> {
        if raw.is_empty() {
            return Err(ScopeError::Empty);
        }
        if raw.contains('\0') {
            return Err(ScopeError::Nul {
                path: raw.to_string(),
            });
        }
        let given = Path::new(raw);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.cwd.join(given)
        };
        let mut folded = PathBuf::new();
        let mut climbed_out = false;
        for component in joined.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => folded.push(component),
                Component::CurDir => {}
                Component::ParentDir => {
                    if folded.parent().is_some() {
                        folded.pop();
                    } else {
                        climbed_out = true;
                    }
                }
                Component::Normal(part) => folded.push(part),
            }
        }
        if self.roots.iter().any(|root| folded.starts_with(root)) && !climbed_out {
            return Ok(folded);
        }
        let (path, roots) = (raw.to_string(), self.roots.clone());
        Err(if given.is_absolute() {
            ScopeError::Outside { path, roots }
        } else {
            ScopeError::ClimbsOut { path, roots }
        })
    }

    /// `abs` relative to `cwd` when beneath it, else absolute.
    #[must_use]
    pub fn display(&self, abs: &Path) -> String {
        abs.strip_prefix(&self.cwd).map_or_else(
            |_| abs.display().to_string(),
            |rel| rel.display().to_string(),
        )
    }
}

/// What a file section does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A new file.
    Add,
    /// Changed in place.
    Update,
    /// Removed.
    Delete,
    /// Renamed (and possibly changed).
    Move,
}

impl Action {
    /// The lowercase name: `add`, `update`, `delete`, `move`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Add => "add",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::Move => "move",
        }
    }
}

/// One file section, as planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpResult {
    /// What the section does.
    pub action: Action,
    /// The file's absolute path (the destination for a move).
    pub path: PathBuf,
    /// `path` for people: relative to the cwd when beneath it.
    pub display: String,
    /// For a move: the source's absolute path.
    pub moved_from: Option<PathBuf>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// Where each hunk went (updates and moves).
    pub matches: Vec<HunkMatch>,
}

/// The net effect of a patch on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEffect {
    /// The absolute path.
    pub path: PathBuf,
    /// `path` for people: relative to the cwd when beneath it.
    pub display: String,
    /// The text before the patch (`None`: the file did not exist).
    pub before: Option<String>,
    /// The text after the patch (`None`: the file is deleted).
    pub after: Option<String>,
    /// The existing file whose text `after` derives from: the file itself when
    /// updated, the source of a move; `None` for new text from `*** Add File`.
    /// A caller keeps that file's encoding and BOM.
    pub derived_from: Option<PathBuf>,
}

/// Every change a patch makes, computed before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// One entry per file section, in patch order.
    pub ops: Vec<OpResult>,
    /// The net change per file (files the patch leaves as they were are left
    /// out), sorted by path.
    pub files: Vec<FileEffect>,
}

/// Why [`plan`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError<E> {
    /// The patch does not fit the files.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// Reading a file failed.
    #[error("{0}")]
    Read(E),
}

impl Patch {
    /// Every distinct file the patch touches (sources and move destinations),
    /// resolved in `scope`, sorted.
    ///
    /// # Errors
    /// [`PatchError::BadPath`] for a path that is empty or outside the scope.
    pub fn paths(&self, scope: &PathScope) -> Result<Vec<PathBuf>, PatchError> {
        let mut out = Vec::new();
        for op in &self.ops {
            out.push(scope.resolve_at(op.path(), op.line())?);
            if let FileOp::Update {
                move_to: Some(dest),
                line,
                ..
            } = op
            {
                out.push(scope.resolve_at(dest, *line)?);
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

impl PathScope {
    /// [`PathScope::locate`] for the path `raw` written on patch line `line`.
    ///
    /// # Errors
    /// [`PatchError::BadPath`] with the [`ScopeError`] as its reason.
    pub fn resolve_at(&self, raw: &str, line: usize) -> Result<PathBuf, PatchError> {
        self.locate(raw).map_err(|e| PatchError::BadPath {
            path: raw.to_string(),
            line,
            reason: e.to_string(),
        })
    }
}

/// Why [`PathScope::locate`] refuses a path; the message is for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScopeError {
    /// The path is empty.
    #[error("empty path")]
    Empty,
    /// The path holds a NUL byte.
    #[error("path {path:?} contains a NUL byte")]
    Nul {
        /// The path as written.
        path: String,
    },
    /// An absolute path outside every root.
    #[error(
        "{path} is outside the workspace ({}); use a path inside it",
        shown_roots(roots)
    )]
    Outside {
        /// The path as written.
        path: String,
        /// The roots of the scope.
        roots: Vec<PathBuf>,
    },
    /// A relative path that climbs out of the roots with `..`.
    #[error(
        "{path} leaves the workspace ({}) through `..`; use a path inside it",
        shown_roots(roots)
    )]
    ClimbsOut {
        /// The path as written.
        path: String,
        /// The roots of the scope.
        roots: Vec<PathBuf>,
    },
}

/// `roots` as a model reads them: `/a, /b`.
fn shown_roots(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug)]
struct Slot {
    display: String,
    before: Option<String>,
    after: Option<String>,
    derived_from: Option<PathBuf>,
}

fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// Plans a patch against the current files: every section is applied in order to
/// an in-memory view (a later section sees the earlier ones' results), so every
/// hunk of every file is checked before anything is written.
///
/// `read` returns a file's current text, `None` when it does not exist; it is
/// called at most once per path, with the resolved absolute path.
///
/// # Errors
/// [`PlanError::Patch`]: a path outside `scope`, `*** Add File` of an existing
/// file, an update or delete of a missing file, a move onto an existing file, or
/// hunks that do not match ([`PatchError::Mismatch`]). [`PlanError::Read`]: `read`
/// failed.
pub fn plan<E>(
    patch: &Patch,
    scope: &PathScope,
    mut read: impl FnMut(&Path) -> Result<Option<String>, E>,
) -> Result<Plan, PlanError<E>> {
    let mut slots: BTreeMap<PathBuf, Slot> = BTreeMap::new();
    let mut load = |slots: &mut BTreeMap<PathBuf, Slot>, path: &Path| -> Result<(), PlanError<E>> {
        if !slots.contains_key(path) {
            let before = read(path).map_err(PlanError::Read)?;
            slots.insert(
                path.to_path_buf(),
                Slot {
                    display: scope.display(path),
                    derived_from: before.as_ref().map(|_| path.to_path_buf()),
                    after: before.clone(),
                    before,
                },
            );
        }
        Ok(())
    };

    let mut ops = Vec::with_capacity(patch.ops.len());
    for op in &patch.ops {
        let path = scope.resolve_at(op.path(), op.line())?;
        load(&mut slots, &path)?;
        let display = scope.display(&path);
        let current = slots.get(&path).and_then(|s| s.after.clone());
        let result = match op {
            FileOp::Add { contents, line, .. } => {
                if current.is_some() {
                    return Err(PatchError::AlreadyExists {
                        path: display,
                        line: *line,
                    }
                    .into());
                }
                set(&mut slots, &path, Some(contents.clone()), None);
                OpResult {
                    action: Action::Add,
                    path,
                    display,
                    moved_from: None,
                    added: line_count(contents),
                    removed: 0,
                    matches: Vec::new(),
                }
            }
            FileOp::Delete { line, .. } => {
                let Some(current) = current else {
                    return Err(PatchError::Missing {
                        path: display,
                        line: *line,
                        hint: "There is nothing to delete: remove this section.",
                    }
                    .into());
                };
                set(&mut slots, &path, None, None);
                OpResult {
                    action: Action::Delete,
                    path,
                    display,
                    moved_from: None,
                    added: 0,
                    removed: line_count(&current),
                    matches: Vec::new(),
                }
            }
            FileOp::Update {
                move_to,
                hunks,
                line,
                ..
            } => {
                let Some(current) = current else {
                    return Err(PatchError::Missing {
                        path: display,
                        line: *line,
                        hint: "To create it, use `*** Add File: <path>` with every line prefixed by '+'.",
                    }
                    .into());
                };
                let applied = apply_hunks(&display, &current, hunks)?;
                let derived = slots.get(&path).and_then(|s| s.derived_from.clone());
                let dest = match move_to {
                    Some(dest) => Some(scope.resolve_at(dest, *line)?).filter(|d| *d != path),
                    None => None,
                };
                match dest {
                    Some(dest) => {
                        load(&mut slots, &dest)?;
                        let dest_display = scope.display(&dest);
                        if slots.get(&dest).is_some_and(|s| s.after.is_some()) {
                            return Err(PatchError::DestinationExists {
                                path: dest_display,
                                line: *line,
                            }
                            .into());
                        }
                        set(&mut slots, &path, None, None);
                        set(&mut slots, &dest, Some(applied.text), derived);
                        OpResult {
                            action: Action::Move,
                            path: dest,
                            display: dest_display,
                            moved_from: Some(path),
                            added: applied.added,
                            removed: applied.removed,
                            matches: applied.matches,
                        }
                    }
                    None => {
                        set(&mut slots, &path, Some(applied.text), derived);
                        OpResult {
                            action: Action::Update,
                            path,
                            display,
                            moved_from: None,
                            added: applied.added,
                            removed: applied.removed,
                            matches: applied.matches,
                        }
                    }
                }
            }
        };
        ops.push(result);
    }

    let files = slots
        .into_iter()
        .filter(|(_, s)| s.before != s.after)
        .map(|(path, s)| FileEffect {
            path,
            display: s.display,
            before: s.before,
            after: s.after,
            derived_from: s.derived_from,
        })
        .collect();
    Ok(Plan { ops, files })
}

fn set(
    slots: &mut BTreeMap<PathBuf, Slot>,
    path: &Path,
    after: Option<String>,
    derived_from: Option<PathBuf>,
) {
    if let Some(slot) = slots.get_mut(path) {
        slot.after = after;
        slot.derived_from = derived_from;
    }
}

#[cfg(test)]
#[path = "patch_tests.rs"]
mod tests;
