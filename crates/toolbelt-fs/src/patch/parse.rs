//! [`parse`]: the text of a patch read into a [`Patch`], forgiving the common slips
//! (a heredoc or code fence around it, blank lines, CRLF, padded markers, a first
//! hunk without `@@`, git-style `@@ -12,7 +12,8 @@` headers).

use super::error::{PatchError, shown};
use super::format::{FileOp, Hunk, HunkLine, Patch};

/// The largest patch accepted, in bytes.
pub const MAX_PATCH_BYTES: usize = 1024 * 1024;
/// The most file sections one patch may hold.
pub const MAX_PATCH_FILES: usize = 100;

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const HEADERS_HELP: &str =
    "`*** Add File: <path>`, `*** Delete File: <path>` or `*** Update File: <path>`";

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
