//! Where a hunk goes in a text: its `@@` anchors, then its old lines, compared ever
//! more loosely ([`MatchTier`]); when it goes nowhere, the closest region of the
//! text, for the message.

use std::borrow::Cow;

use super::error::{FailureKind, MAX_SHOWN_LINE_CHARS, Region};
use super::format::{Hunk, HunkLine};

/// The least similarity (0..1) for a single line to be offered as "closest".
const MIN_CLOSEST_SIMILARITY: f64 = 0.5;

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

/// Finds where a hunk goes: (start, old line count, tier, the hunk lines used).
pub(super) fn place(
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
