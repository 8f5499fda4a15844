//! [`apply_hunks`]: the hunks of one `*** Update File` section spliced into a
//! text, keeping its line endings and unchanged bytes.

use super::error::{HunkFailure, PatchError};
use super::format::{Hunk, HunkLine};
use super::matching::{MatchTier, place};

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
