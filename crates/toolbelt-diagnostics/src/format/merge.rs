//! Keeping only the formatter's changes to the lines an edit changed.
//!
//! Two line diffs: the edit's (old -> staged) gives the edited ranges, in the
//! staged text's lines; the formatter's (staged -> formatted) gives its hunks (runs
//! of changed lines between unchanged ones). Each hunk takes the formatter's
//! lines when it overlaps an edited range and keeps the staged ones otherwise.
//!
//! **Hunks** are split further where a formatter only respaced lines: within a
//! run of changed lines, a staged line and a formatted line that are the same but
//! for whitespace after their indentation (`a=1` and `a = 1`, a final newline
//! added) pair up as a hunk of their own, so that a formatter that respaces every
//! line does not make one hunk of the file. Lines whose indentation changed, and
//! lines split or joined, stay together in one hunk: taking part of a reindented
//! block, or of a reflowed statement, would break the code.
//!
//! **Overlap**, with staged line ranges `[a, b)` for a hunk and `[s, e)` for an
//! edit: two non-empty ranges overlap when they share a line (`a < e && s < b`).
//! An empty range is a point between lines (lines inserted by the formatter
//! before staged line `a`; lines the edit deleted before staged line `s`); it
//! overlaps a range it touches, edges included (`a <= e && s <= b`): lines the
//! formatter inserts right before, inside or right after an edited range are
//! kept, and a formatter hunk beside a deletion is kept.
//!
//! **Line endings**: the formatted text is first given the staged text's style
//! (that of its first line end, `\r\n` or `\n`); a text without a line end leaves
//! the formatter's style. Lines are compared with their line ends, so a final
//! newline the formatter adds (or removes) is a change of the last line.

use std::ops::Range;
use std::time::Duration;

use similar::{Algorithm, DiffOp, DiffTag, TextDiff};

/// Most time a line diff may take before it settles for a coarser answer.
const DIFF_TIMEOUT: Duration = Duration::from_secs(1);

/// Of the formatter's changes (`staged` -> `formatted`), keeps only the hunks that
/// overlap the lines this edit changed (`old` -> `staged`, in the staged text's
/// lines; `None`: a new file, all changed). The module `format::merge` says what
/// overlapping means and how line endings are kept.
pub fn keep_changed_lines(old: Option<&str>, staged: &str, formatted: &str) -> String {
    let formatted = with_line_ends_of(staged, formatted);
    let staged_lines = lines(staged);
    let formatted_lines = lines(&formatted);
    let edited = edited_ranges(old, &staged_lines);
    let diff = diff(&staged_lines, &formatted_lines);
    let mut out = String::with_capacity(formatted.len().max(staged.len()));
    let hunks = hunks(diff.ops())
        .into_iter()
        .flat_map(|h| respaced(h, &staged_lines, &formatted_lines));
    for hunk in hunks {
        let take_formatted = hunk.changed && edited.iter().any(|e| overlaps(&hunk.staged, e));
        let kept = if take_formatted {
            &formatted_lines[hunk.formatted]
        } else {
            &staged_lines[hunk.staged]
        };
        kept.iter().for_each(|line| out.push_str(line));
    }
    out
}

/// A run of the formatter's diff: unchanged lines, or changed ones between them.
#[derive(Debug)]
struct Hunk {
    /// Its lines in the staged text.
    staged: Range<usize>,
    /// Its lines in the formatted text.
    formatted: Range<usize>,
    /// False for unchanged lines.
    changed: bool,
}

/// The ops of a diff as hunks: each unchanged run alone, consecutive changed ops
/// joined.
fn hunks(ops: &[DiffOp]) -> Vec<Hunk> {
    let mut hunks: Vec<Hunk> = Vec::new();
    for op in ops {
        let changed = op.tag() != DiffTag::Equal;
        match hunks.last_mut() {
            Some(last) if changed && last.changed => {
                last.staged.end = op.old_range().end;
                last.formatted.end = op.new_range().end;
            }
            _ => hunks.push(Hunk {
                staged: op.old_range(),
                formatted: op.new_range(),
                changed,
            }),
        }
    }
    hunks
}

/// `hunk` split where it pairs lines that differ only in spacing (see the
/// [module](self)); an unchanged hunk, or one that only inserts or deletes, as it is.
fn respaced(hunk: Hunk, staged: &[&str], formatted: &[&str]) -> Vec<Hunk> {
    if !hunk.changed || hunk.staged.is_empty() || hunk.formatted.is_empty() {
        return vec![hunk];
    }
    let staged_keys: Vec<String> = staged[hunk.staged.clone()]
        .iter()
        .map(|l| spacing_key(l))
        .collect();
    let formatted_keys: Vec<String> = formatted[hunk.formatted.clone()]
        .iter()
        .map(|l| spacing_key(l))
        .collect();
    let staged_refs: Vec<&str> = staged_keys.iter().map(String::as_str).collect();
    let formatted_refs: Vec<&str> = formatted_keys.iter().map(String::as_str).collect();
    let (s0, f0) = (hunk.staged.start, hunk.formatted.start);
    let mut out = Vec::new();
    for sub in hunks(diff(&staged_refs, &formatted_refs).ops()) {
        let at_staged = s0 + sub.staged.start..s0 + sub.staged.end;
        let at_formatted = f0 + sub.formatted.start..f0 + sub.formatted.end;
        if sub.changed {
            out.push(Hunk {
                staged: at_staged,
                formatted: at_formatted,
                changed: true,
            });
            continue;
        }
        // The same but for spacing: one hunk per pair of lines.
        out.extend(at_staged.zip(at_formatted).map(|(s, f)| Hunk {
            staged: s..s + 1,
            formatted: f..f + 1,
            changed: staged[s] != formatted[f],
        }));
    }
    out
}

/// What a line is but for spacing: its indentation, then its characters other
/// than whitespace (the line end included).
fn spacing_key(line: &str) -> String {
    let body = line.trim_start_matches([' ', '\t']);
    let indent = &line[..line.len() - body.len()];
    let mut key = String::with_capacity(line.len());
    key.push_str(indent);
    key.push('\0');
    key.extend(body.chars().filter(|c| !c.is_whitespace()));
    key
}

/// The staged lines the edit changed: each changed run of the edit's diff, in
/// staged lines (empty where lines were only deleted); all of them for a new file.
fn edited_ranges(old: Option<&str>, staged_lines: &[&str]) -> Vec<Range<usize>> {
    let Some(old) = old else {
        return std::iter::once(0..staged_lines.len()).collect();
    };
    let old_lines = lines(old);
    hunks(diff(&old_lines, staged_lines).ops())
        .into_iter()
        .filter(|h| h.changed)
        .map(|h| h.formatted)
        .collect()
}

/// Whether a formatter hunk (`hunk`) overlaps an edited range (`edit`), both in
/// staged lines; see the [module](self).
fn overlaps(hunk: &Range<usize>, edit: &Range<usize>) -> bool {
    if !hunk.is_empty() && !edit.is_empty() {
        hunk.start < edit.end && edit.start < hunk.end
    } else {
        hunk.start <= edit.end && edit.start <= hunk.end
    }
}

/// A line diff of two texts split by [`lines`].
fn diff<'a>(old: &[&'a str], new: &[&'a str]) -> TextDiff<'a, 'a, str> {
    TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_TIMEOUT)
        .diff_slices(old, new)
}

/// `text`'s lines, each with its line end (the last may have none).
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// `formatted` with the line ends of `staged` (that of its first line), or as it
/// is when `staged` has no line end.
fn with_line_ends_of(staged: &str, formatted: &str) -> String {
    let Some(first_end) = staged.find('\n') else {
        return formatted.to_string();
    };
    let crlf = staged[..first_end].ends_with('\r');
    let lf = formatted.replace("\r\n", "\n");
    if crlf { lf.replace('\n', "\r\n") } else { lf }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
