//! The string-replacement engine behind edit_file and multi_edit.
//!
//! [`apply_edit`] replaces `old_string` by `new_string` in a decoded text; [`apply_edits`]
//! applies a sequence in order, all or nothing. Matching is exact first; when that
//! finds nothing, a fixed cascade of careful normalisations runs ([`Strategy`]), and
//! each of them must still give exactly one match (or, with `replace_all`, is used for
//! every match it gives). A match is never silently ambiguous: several candidates
//! give [`EditError::Ambiguous`] with their line numbers; none gives
//! [`EditError::NotFound`] with the closest region and what differs.
//!
//! Every byte outside the replaced spans is kept, and line endings are adapted to the
//! file: a CRLF file edited with LF strings stays CRLF.
//!
//! ```
//! use toolbelt_fs::edit::{Edit, Strategy, apply_edit};
//!
//! let text = "fn main() {\r\n\tprintln!(\"hi\");\r\n}\r\n";
//! // Written with LF and spaces, as models often do.
//! let edit = Edit::new("fn main() {\n    println!(\"hi\");\n", "fn main() {\n    println!(\"hello\");\n");
//! let outcome = apply_edit(text, edit)?;
//! assert_eq!(outcome.text, "fn main() {\r\n\tprintln!(\"hello\");\r\n}\r\n");
//! assert_eq!(outcome.applied.strategy, Strategy::Indentation);
//! # Ok::<(), toolbelt_fs::edit::EditError>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use std::ops::Range;

use similar::{Algorithm, DiffOp, capture_diff_slices};

use crate::text::fold_typography;

/// Most lines shown in the numbered snippet of a not-found diagnostic.
pub const MAX_SNIPPET_LINES: usize = 40;
/// Longest line, in characters, shown in a snippet or a difference.
pub const MAX_SHOWN_LINE_CHARS: usize = 160;
/// Most line pairs compared when looking for the closest region; past it only
/// windows anchored on a matching line are scored.
const MAX_SIMILARITY_PAIRS: usize = 100_000;
/// Most anchored windows scored when the text is too large to score every window.
const MAX_ANCHORED_WINDOWS: usize = 2_000;
/// Windows kept from the cheap first line scan when no line matches at all.
const FALLBACK_WINDOWS: usize = 16;
/// Longest text, in characters, compared by edit distance for the reported similarity.
const MAX_DISTANCE_CHARS: usize = 4_000;
/// Most differing lines quoted in a not-found diagnostic.
const MAX_QUOTED_DIFFERENCES: usize = 3;
/// Most line numbers listed per difference or per ambiguity.
const MAX_LISTED_LINES: usize = 20;
/// Tab widths, in columns, tried when relating tab and space indentation.
const TAB_WIDTHS_COLUMNS: [usize; 5] = [4, 8, 2, 3, 1];
/// Tab width, in columns, used when neither side indents with tabs.
const DEFAULT_TAB_WIDTH_COLUMNS: usize = 4;

/// One replacement: `old_string` becomes `new_string`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edit<'a> {
    /// The text to find; must not be empty.
    pub old_string: &'a str,
    /// The text to put in its place; must differ from `old_string`.
    pub new_string: &'a str,
    /// Replace every match instead of requiring exactly one.
    pub replace_all: bool,
}

impl<'a> Edit<'a> {
    /// A single-match replacement.
    pub const fn new(old_string: &'a str, new_string: &'a str) -> Self {
        Edit {
            old_string,
            new_string,
            replace_all: false,
        }
    }

    /// The same replacement applied to every match.
    pub const fn all(self) -> Self {
        Edit {
            replace_all: true,
            ..self
        }
    }
}

/// How `old_string` was found. Tried in this order; each one includes the
/// normalisations before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Strategy {
    /// Found byte for byte.
    Exact,
    /// Found after reading line endings as LF on both sides (LF strings against a CRLF file).
    LineEndings,
    /// Found after removing line-number prefixes copied from read output (`    12\t`, `12→`, `12| `).
    LineNumberPrefixes,
    /// Found line by line, ignoring trailing whitespace.
    TrailingWhitespace,
    /// Found line by line with the indentation shifted uniformly (tabs and spaces related
    /// by one tab width); `new_string` was re-indented by the same shift.
    Indentation,
    /// Found after folding typographic quotes, dashes and non-breaking spaces to ASCII;
    /// the file's typographic style was kept in the new text.
    Typography,
}

impl Strategy {
    /// The snake_case name used in tool results.
    pub const fn as_str(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::LineEndings => "line_endings",
            Strategy::LineNumberPrefixes => "line_number_prefixes",
            Strategy::TrailingWhitespace => "trailing_whitespace",
            Strategy::Indentation => "indentation",
            Strategy::Typography => "typography",
        }
    }

    /// How the strategy compares, as a phrase.
    const fn phrase(self) -> &'static str {
        match self {
            Strategy::Exact => "compared exactly",
            Strategy::LineEndings => "reading LF as CRLF",
            Strategy::LineNumberPrefixes => "after removing line-number prefixes",
            Strategy::TrailingWhitespace => "ignoring trailing whitespace",
            Strategy::Indentation => "allowing a uniform indentation shift",
            Strategy::Typography => "folding typographic quotes, dashes and spaces",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A 1-based, inclusive range of lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LineRange {
    /// First line.
    pub start: usize,
    /// Last line (equal to `start` for one line, or for a deletion).
    pub end: usize,
}

impl fmt::Display for LineRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.start == self.end {
            write!(f, "{}", self.start)
        } else {
            write!(f, "{}-{}", self.start, self.end)
        }
    }
}

/// What one edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// How many places were replaced (1 unless `replace_all`).
    pub replacements: usize,
    /// How `old_string` was found.
    pub strategy: Strategy,
    /// The lines holding the new text, one range per replacement, numbered in the
    /// text right after this edit.
    pub lines: Vec<LineRange>,
}

/// The result of [`apply_edit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditOutcome {
    /// The whole new text.
    pub text: String,
    /// What the edit did.
    pub applied: Applied,
}

/// The result of [`apply_edits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiEditOutcome {
    /// The whole new text after every edit.
    pub text: String,
    /// What each edit did, in order.
    pub applied: Vec<Applied>,
}

/// The region of the text closest to an `old_string` that was not found.
#[derive(Debug, Clone, PartialEq)]
pub struct NearMatch {
    /// First line of the region (1-based).
    pub start_line: usize,
    /// Last line of the region (1-based, inclusive).
    pub end_line: usize,
    /// Similarity of the region to `old_string`, 0.0 to 1.0 (normalised edit distance).
    pub similarity: f64,
    /// The region with line numbers, in read output style (`{n:>6}\t{line}`).
    pub snippet: String,
    /// What differs, one sentence each ("tabs in the file, spaces in old_string (lines 3-4)").
    pub differences: Vec<String>,
}

/// Why an edit was refused. Messages are written for the model and say what to do next.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// `old_string` is empty.
    #[error(
        "old_string is empty; it must quote the text to replace. To create a file or \
         replace its whole content, use write_file"
    )]
    EmptyOldString,
    /// `old_string` and `new_string` are the same.
    #[error("old_string and new_string are identical, so the edit would change nothing")]
    Identical,
    /// Several places match and `replace_all` is false.
    #[error(
        "old_string matches {count} places{qualifier}, at lines {lines}; include more \
         surrounding lines to make it unique, or set replace_all to true to replace all of them",
        qualifier = qualifier(*.strategy),
        lines = list_lines(.lines)
    )]
    Ambiguous {
        /// How many places match.
        count: usize,
        /// The 1-based first line of every candidate.
        lines: Vec<usize>,
        /// The strategy that found them.
        strategy: Strategy,
    },
    /// Nothing matches, even after normalisation.
    #[error("{}", not_found_message(.closest.as_ref()))]
    NotFound {
        /// The closest region, when the text is not empty.
        closest: Option<NearMatch>,
    },
    /// The match was found but replacing it leaves the text as it was.
    #[error(
        "the text at line {lines} already reads as new_string once the file's whitespace and \
         line endings are kept, so nothing would change; read the file again to see its \
         current content",
        lines = list_lines(.lines)
    )]
    NoChange {
        /// The 1-based first line of every place matched.
        lines: Vec<usize>,
    },
}

/// A failed edit of [`apply_edits`]; no edit of the sequence is applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("edits[{index}] failed, so none of the edits was applied")]
pub struct MultiEditError {
    /// 0-based index of the failing edit.
    pub index: usize,
    /// Why it failed.
    #[source]
    pub source: EditError,
}

/// How a strategy compared, in parentheses; nothing for an exact comparison.
fn qualifier(strategy: Strategy) -> String {
    match strategy {
        Strategy::Exact => String::new(),
        other => format!(" ({})", other.phrase()),
    }
}

fn list_lines(lines: &[usize]) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().take(MAX_LISTED_LINES).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{line}");
    }
    if lines.len() > MAX_LISTED_LINES {
        let _ = write!(out, " and {} more", lines.len() - MAX_LISTED_LINES);
    }
    out
}

fn not_found_message(closest: Option<&NearMatch>) -> String {
    let Some(near) = closest else {
        return "old_string was not found: the file is empty. Use write_file to give it content"
            .to_owned();
    };
    let mut out = format!(
        "old_string was not found in the file. The closest region is lines {}-{} \
         (similarity {:.0}%):\n{}",
        near.start_line,
        near.end_line,
        near.similarity * 100.0,
        near.snippet
    );
    if !near.differences.is_empty() {
        out.push_str("\nDifferences:");
        for difference in &near.differences {
            let _ = write!(out, "\n- {difference}");
        }
    }
    out.push_str(
        "\nCopy old_string exactly from the file (read_file shows the current text), \
         without the line-number prefixes, and try again.",
    );
    out
}

/// Applies one replacement to `text`.
///
/// `text` is the decoded file content and may use any line endings; the result keeps
/// every byte outside the replaced spans, and the replacement takes the line ending
/// of the place it lands in.
///
/// # Errors
/// [`EditError::EmptyOldString`], [`EditError::Identical`], [`EditError::Ambiguous`]
/// (several matches without `replace_all`), [`EditError::NotFound`] (with the closest
/// region) and [`EditError::NoChange`] (the result would equal `text`).
pub fn apply_edit(text: &str, edit: Edit<'_>) -> Result<EditOutcome, EditError> {
    if edit.old_string.is_empty() {
        return Err(EditError::EmptyOldString);
    }
    if edit.old_string == edit.new_string {
        return Err(EditError::Identical);
    }
    let plan = locate(text, edit)?;
    let mut matches = plan.matches;
    if !edit.replace_all && matches.len() > 1 {
        return Err(EditError::Ambiguous {
            count: matches.len(),
            lines: start_lines(text, &matches),
            strategy: plan.strategy,
        });
    }
    keep_disjoint(&mut matches);
    let replacements: Vec<String> = matches
        .iter()
        .map(|m| render(text, m, &plan.render))
        .collect();
    let (new_text, lines) = splice(text, &matches, &replacements);
    if new_text == text {
        return Err(EditError::NoChange {
            lines: start_lines(text, &matches),
        });
    }
    Ok(EditOutcome {
        text: new_text,
        applied: Applied {
            replacements: matches.len(),
            strategy: plan.strategy,
            lines,
        },
    })
}

/// Applies `edits` in order, each to the result of the previous one; all or nothing.
///
/// # Errors
/// The first failing edit, as a [`MultiEditError`] naming its 0-based index; `text`
/// is then left as it was by the caller (nothing is applied).
pub fn apply_edits(text: &str, edits: &[Edit<'_>]) -> Result<MultiEditOutcome, MultiEditError> {
    let mut current = text.to_owned();
    let mut applied = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let outcome =
            apply_edit(&current, *edit).map_err(|source| MultiEditError { index, source })?;
        current = outcome.text;
        applied.push(outcome.applied);
    }
    Ok(MultiEditOutcome {
        text: current,
        applied,
    })
}

// ---------------------------------------------------------------------------------
// Matching

/// One matched place: the byte span in the text and, per line of the model's
/// `old_string`, the span of the text it matched (content and line terminator).
#[derive(Debug, Clone)]
struct Match {
    span: Range<usize>,
    segments: Vec<Segment>,
    shift: Option<IndentShift>,
}

#[derive(Debug, Clone)]
struct Segment {
    content: Range<usize>,
    terminator: Option<Range<usize>>,
}

/// Everything needed to write the replacement of a match.
#[derive(Debug)]
struct RenderPlan {
    strategy: Strategy,
    /// `new_string` as the model wrote it (used by the exact strategy).
    new_raw: String,
    /// `old_string` lines after line-ending folding and prefix removal.
    old_lines: Vec<String>,
    /// `new_string` lines after the same treatment.
    new_lines: Vec<String>,
    new_ends_with_newline: bool,
    /// The file's most common line ending, for places without one of their own.
    default_eol: &'static str,
    /// The model wrote typographic quotes in `old_string`: (double, single).
    old_curly: (bool, bool),
}

#[derive(Debug)]
struct Plan {
    strategy: Strategy,
    matches: Vec<Match>,
    render: RenderPlan,
}

fn locate(text: &str, edit: Edit<'_>) -> Result<Plan, EditError> {
    let old = edit.old_string;
    let file_has_crlf = text.contains("\r\n");
    let default_eol = dominant_eol(text);

    let old_folded = old.replace("\r\n", "\n");
    let (needle, stripped) = match strip_line_number_prefixes(&old_folded, true) {
        Some(stripped) => (stripped, true),
        None => (old_folded.clone(), false),
    };
    let mut new_folded = edit.new_string.replace("\r\n", "\n");
    if stripped && let Some(new_stripped) = strip_line_number_prefixes(&new_folded, false) {
        new_folded = new_stripped;
    }
    let (old_lines, _) = split_lines(&needle);
    let (new_lines, new_ends_with_newline) = split_lines(&new_folded);
    let plan = |strategy: Strategy, matches: Vec<Match>, lines: &[&str], needle: &str| Plan {
        strategy,
        matches,
        render: RenderPlan {
            strategy,
            new_raw: edit.new_string.to_owned(),
            old_lines: lines.iter().map(|l| (*l).to_owned()).collect(),
            new_lines: new_lines.iter().map(|l| (*l).to_owned()).collect(),
            new_ends_with_newline,
            default_eol,
            old_curly: (
                needle.contains(['\u{201C}', '\u{201D}', '\u{201E}', '\u{201F}']),
                needle.contains(['\u{2018}', '\u{2019}', '\u{201A}', '\u{201B}']),
            ),
        },
    };

    // 1. Exact. Skipped when LF strings meet a CRLF file: a bare LF could then match
    // the second half of a CRLF and split it.
    if !(file_has_crlf && has_bare_lf(old)) {
        let matches = exact_matches(text, old);
        if !matches.is_empty() {
            let (raw_lines, _) = split_lines(old);
            return Ok(plan(Strategy::Exact, matches, &raw_lines, old));
        }
    }

    let (folded_old_lines, _) = split_lines(&old_folded);
    let mut eol_view: Option<View> = None;
    // 2. Line endings.
    if file_has_crlf && old_folded.contains('\n') {
        let view = eol_view.get_or_insert_with(|| View::build(text, false));
        let matches = view_matches(view, &old_folded);
        if !matches.is_empty() {
            return Ok(plan(
                Strategy::LineEndings,
                matches,
                &folded_old_lines,
                &old_folded,
            ));
        }
    }
    // 3. Line-number prefixes.
    if stripped {
        let view = eol_view.get_or_insert_with(|| View::build(text, false));
        let matches = view_matches(view, &needle);
        if !matches.is_empty() {
            return Ok(plan(
                Strategy::LineNumberPrefixes,
                matches,
                &old_lines,
                &needle,
            ));
        }
    }
    drop(eol_view);

    let file_lines = FileLine::all(text);
    let (needle_lines, needle_ends_with_newline) = split_lines(&needle);
    let line_mode = |indentation: bool, typography: bool| LineMode {
        indentation,
        typography,
        ends_with_newline: needle_ends_with_newline,
    };
    if needle_lines.iter().any(|l| !l.trim().is_empty()) {
        // 4. Trailing whitespace.
        let matches = line_matches(text, &file_lines, &needle_lines, line_mode(false, false));
        if !matches.is_empty() {
            return Ok(plan(
                Strategy::TrailingWhitespace,
                matches,
                &old_lines,
                &needle,
            ));
        }
        // 5. Indentation.
        let matches = line_matches(text, &file_lines, &needle_lines, line_mode(true, false));
        if !matches.is_empty() {
            return Ok(plan(Strategy::Indentation, matches, &old_lines, &needle));
        }
    }
    // 6. Typography: as a substring first, then line by line with the indentation shift.
    if needle.chars().any(|c| fold_typography(c).is_some())
        || text.chars().any(|c| fold_typography(c).is_some())
    {
        let view = View::build(text, true);
        let folded: String = needle
            .chars()
            .map(|c| fold_typography(c).unwrap_or(c))
            .collect();
        let matches = view_matches(&view, &folded);
        if !matches.is_empty() {
            return Ok(plan(Strategy::Typography, matches, &old_lines, &needle));
        }
        if needle_lines.iter().any(|l| !l.trim().is_empty()) {
            let matches = line_matches(text, &file_lines, &needle_lines, line_mode(true, true));
            if !matches.is_empty() {
                return Ok(plan(Strategy::Typography, matches, &old_lines, &needle));
            }
        }
    }
    Err(EditError::NotFound {
        closest: closest_region(text, &file_lines, &needle_lines),
    })
}

fn exact_matches(text: &str, needle: &str) -> Vec<Match> {
    find_all(text, needle)
        .map(|start| Match {
            span: start..start + needle.len(),
            segments: Vec::new(),
            shift: None,
        })
        .collect()
}

/// Every start of `needle` in `hay`, overlapping ones included (`"aa"` occurs twice in
/// `"aaa"`), so that ambiguity is never hidden.
fn find_all<'h>(hay: &'h str, needle: &'h str) -> impl Iterator<Item = usize> + 'h {
    let mut from = 0;
    std::iter::from_fn(move || {
        let start = from + hay.get(from..)?.find(needle)?;
        from = start + hay[start..].chars().next().map_or(1, char::len_utf8);
        Some(start)
    })
}

/// A bare LF: one not preceded by CR.
fn has_bare_lf(s: &str) -> bool {
    let bytes = s.as_bytes();
    memchr::memchr_iter(b'\n', bytes).any(|i| i == 0 || bytes[i - 1] != b'\r')
}

/// Lines of `s` split on LF, without terminators, and whether `s` ends with LF.
/// An empty string has no lines.
fn split_lines(s: &str) -> (Vec<&str>, bool) {
    if s.is_empty() {
        return (Vec::new(), false);
    }
    let ends = s.ends_with('\n');
    let body = if ends { &s[..s.len() - 1] } else { s };
    (body.split('\n').collect(), ends)
}

/// The text's most common line ending (LF on a tie or without any).
fn dominant_eol(text: &str) -> &'static str {
    let bytes = text.as_bytes();
    let (mut crlf, mut lf) = (0usize, 0usize);
    for i in memchr::memchr_iter(b'\n', bytes) {
        if i > 0 && bytes[i - 1] == b'\r' {
            crlf += 1;
        } else {
            lf += 1;
        }
    }
    if crlf > lf { "\r\n" } else { "\n" }
}

/// A normalised copy of a text with a map back to the original byte offsets.
/// CRLF always folds to LF; with `typography`, quotes, dashes and spaces fold to ASCII.
/// Each folded character is one piece, so every boundary maps back exactly.
#[derive(Debug)]
struct View {
    text: String,
    pieces: Vec<Piece>,
    original_len: usize,
}

#[derive(Debug, Clone, Copy)]
struct Piece {
    norm: usize,
    original: usize,
    verbatim: bool,
}

impl View {
    fn build(original: &str, typography: bool) -> View {
        let mut text = String::with_capacity(original.len());
        let mut pieces: Vec<Piece> = Vec::new();
        let mut chars = original.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let folded = if c == '\r' && matches!(chars.peek(), Some((_, '\n'))) {
                chars.next();
                Some('\n')
            } else if typography {
                fold_typography(c)
            } else {
                None
            };
            match folded {
                Some(f) => {
                    pieces.push(Piece {
                        norm: text.len(),
                        original: i,
                        verbatim: false,
                    });
                    text.push(f);
                }
                None => {
                    if !pieces.last().is_some_and(|p| p.verbatim) {
                        pieces.push(Piece {
                            norm: text.len(),
                            original: i,
                            verbatim: true,
                        });
                    }
                    text.push(c);
                }
            }
        }
        View {
            text,
            pieces,
            original_len: original.len(),
        }
    }

    /// The original offset of a character boundary of the normalised text.
    fn to_original(&self, norm: usize) -> usize {
        if norm >= self.text.len() {
            return self.original_len;
        }
        let index = self.pieces.partition_point(|p| p.norm <= norm);
        match index.checked_sub(1).and_then(|i| self.pieces.get(i)) {
            Some(p) if p.verbatim => p.original + (norm - p.norm),
            Some(p) => p.original,
            None => norm,
        }
    }
}

/// Non-overlapping matches of a normalised needle in a view, with each line of the
/// needle mapped back to the original text.
fn view_matches(view: &View, needle: &str) -> Vec<Match> {
    if needle.is_empty() {
        return Vec::new();
    }
    let (lines, _) = split_lines(needle);
    find_all(&view.text, needle)
        .map(|start| {
            let found = needle;
            let mut segments = Vec::with_capacity(lines.len());
            let mut offset = start;
            for line in &lines {
                let content_end = offset + line.len();
                let has_terminator = view.text.as_bytes().get(content_end) == Some(&b'\n')
                    && content_end < start + found.len();
                let content = view.to_original(offset)..view.to_original(content_end);
                let terminator = has_terminator
                    .then(|| view.to_original(content_end)..view.to_original(content_end + 1));
                segments.push(Segment {
                    content,
                    terminator,
                });
                offset = content_end + 1;
            }
            Match {
                span: view.to_original(start)..view.to_original(start + found.len()),
                segments,
                shift: None,
            }
        })
        .collect()
}

/// One line of the file: `start..content_end` is the content, `content_end..end` the terminator.
#[derive(Debug, Clone, Copy)]
struct FileLine {
    start: usize,
    content_end: usize,
    end: usize,
}

impl FileLine {
    fn all(text: &str) -> Vec<FileLine> {
        let bytes = text.as_bytes();
        let mut lines = Vec::new();
        let mut start = 0;
        for i in memchr::memchr_iter(b'\n', bytes) {
            let content_end = if i > start && bytes[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            lines.push(FileLine {
                start,
                content_end,
                end: i + 1,
            });
            start = i + 1;
        }
        if start < bytes.len() {
            lines.push(FileLine {
                start,
                content_end: bytes.len(),
                end: bytes.len(),
            });
        }
        lines
    }

    fn content<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.content_end]
    }
}

#[derive(Debug, Clone, Copy)]
struct LineMode {
    indentation: bool,
    typography: bool,
    ends_with_newline: bool,
}

/// A uniform indentation shift: file width = model width + `delta_columns`, widths
/// counted with tabs of `tab_width` columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IndentShift {
    tab_width: usize,
    delta_columns: isize,
    file_uses_tabs: bool,
}

/// Whole-line matches of `needle` (every candidate, overlapping ones included).
fn line_matches(text: &str, file: &[FileLine], needle: &[&str], mode: LineMode) -> Vec<Match> {
    let n = needle.len();
    if n == 0 || n > file.len() {
        return Vec::new();
    }
    let file_tabs_majority = uses_tabs_mostly(text, file);
    let mut out = Vec::new();
    'windows: for i in 0..=file.len() - n {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for (k, wanted) in needle.iter().enumerate() {
            let got = file[i + k].content(text);
            if !mode.indentation {
                if !same_text(got.trim_end(), wanted.trim_end(), mode.typography) {
                    continue 'windows;
                }
                continue;
            }
            let got_blank = got.trim().is_empty();
            let wanted_blank = wanted.trim().is_empty();
            if got_blank || wanted_blank {
                if got_blank == wanted_blank {
                    continue;
                }
                continue 'windows;
            }
            let (got_indent, got_rest) = split_indent(got);
            let (wanted_indent, wanted_rest) = split_indent(wanted);
            if !same_text(got_rest.trim_end(), wanted_rest.trim_end(), mode.typography) {
                continue 'windows;
            }
            pairs.push((got_indent, wanted_indent));
        }
        let last = file[i + n - 1];
        if mode.ends_with_newline && last.end == last.content_end {
            continue;
        }
        let shift = if mode.indentation {
            let Some((tab_width, delta_columns)) = find_shift(&pairs) else {
                continue;
            };
            let window_tabs = pairs.iter().any(|(f, _)| f.contains('\t'));
            let window_spaces = pairs.iter().any(|(f, _)| !f.is_empty());
            Some(IndentShift {
                tab_width,
                delta_columns,
                file_uses_tabs: window_tabs || (!window_spaces && file_tabs_majority),
            })
        } else {
            None
        };
        let segments = (0..n)
            .map(|k| {
                let line = file[i + k];
                let terminated = k + 1 < n || mode.ends_with_newline;
                Segment {
                    content: line.start..line.content_end,
                    terminator: (terminated && line.end > line.content_end)
                        .then_some(line.content_end..line.end),
                }
            })
            .collect();
        let end = if mode.ends_with_newline {
            last.end
        } else {
            last.content_end
        };
        out.push(Match {
            span: file[i].start..end,
            segments,
            shift,
        });
    }
    out
}

fn same_text(a: &str, b: &str, typography: bool) -> bool {
    if typography {
        a.chars()
            .map(|c| fold_typography(c).unwrap_or(c))
            .eq(b.chars().map(|c| fold_typography(c).unwrap_or(c)))
    } else {
        a == b
    }
}

/// Leading spaces and tabs, and the rest.
fn split_indent(line: &str) -> (&str, &str) {
    let rest = line.trim_start_matches([' ', '\t']);
    (&line[..line.len() - rest.len()], rest)
}

fn indent_width(indent: &str, tab_width: usize) -> usize {
    indent
        .chars()
        .map(|c| if c == '\t' { tab_width } else { 1 })
        .sum()
}

/// The tab width and column delta relating every (file, model) indentation pair, if any.
fn find_shift(pairs: &[(&str, &str)]) -> Option<(usize, isize)> {
    let any_tab = pairs
        .iter()
        .any(|(f, m)| f.contains('\t') || m.contains('\t'));
    let widths: &[usize] = if any_tab {
        &TAB_WIDTHS_COLUMNS
    } else {
        &[DEFAULT_TAB_WIDTH_COLUMNS]
    };
    widths.iter().find_map(|&tab_width| {
        let mut delta: Option<isize> = None;
        for (f, m) in pairs {
            let d =
                width_isize(indent_width(f, tab_width)) - width_isize(indent_width(m, tab_width));
            if *delta.get_or_insert(d) != d {
                return None;
            }
        }
        Some((tab_width, delta.unwrap_or(0)))
    })
}

fn width_isize(width: usize) -> isize {
    isize::try_from(width).unwrap_or(isize::MAX)
}

/// Whether more indented lines of the text start with a tab than with a space.
fn uses_tabs_mostly(text: &str, file: &[FileLine]) -> bool {
    let (mut tabs, mut spaces) = (0usize, 0usize);
    for line in file {
        match text.as_bytes().get(line.start) {
            Some(b'\t') => tabs += 1,
            Some(b' ') => spaces += 1,
            _ => {}
        }
    }
    tabs > spaces
}

/// Line-number prefix styles of read output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PrefixStyle {
    /// `    12\tcode` (cat -n).
    Tab,
    /// `    12→code`.
    Arrow,
    /// `12| code`.
    Pipe,
    /// `12: code` or `L12: code`.
    Colon,
}

/// Parses one line's prefix: (style, number, rest). A line that is only a number (its
/// content was empty and the separator trimmed) has no style of its own.
fn parse_prefix(line: &str) -> Option<(Option<PrefixStyle>, u64, &str)> {
    let trimmed = line.trim_start_matches(' ');
    let (after_l, had_l) = match trimmed.strip_prefix('L') {
        Some(rest) => (rest, true),
        None => (trimmed, false),
    };
    let digits_len = after_l.bytes().take_while(u8::is_ascii_digit).count();
    if digits_len == 0 || digits_len > 9 {
        return None;
    }
    let number: u64 = after_l[..digits_len].parse().ok()?;
    let rest = &after_l[digits_len..];
    if rest.trim().is_empty() && !rest.contains('\t') {
        // "  12", "12|", "12:" — an empty line whose separator was trimmed.
        let tail = rest.trim();
        return match tail {
            "" | "|" | ":" | "→" => Some((None, number, "")),
            _ => None,
        };
    }
    let (style, content) = if had_l {
        (PrefixStyle::Colon, rest.strip_prefix(": ")?)
    } else if let Some(c) = rest.strip_prefix('\t') {
        (PrefixStyle::Tab, c)
    } else if let Some(c) = rest.strip_prefix('→') {
        (PrefixStyle::Arrow, c)
    } else if let Some(c) = rest.strip_prefix("| ") {
        (PrefixStyle::Pipe, c)
    } else if let Some(c) = rest.strip_prefix(": ") {
        (PrefixStyle::Colon, c)
    } else {
        return None;
    };
    Some((Some(style), number, content))
}

/// Removes read-output line-number prefixes when every line carries one of the same
/// style (and, with `consecutive`, numbered one after another). `s` uses LF.
fn strip_line_number_prefixes(s: &str, consecutive: bool) -> Option<String> {
    let (lines, ends_with_newline) = split_lines(s);
    if lines.is_empty() {
        return None;
    }
    let mut style: Option<PrefixStyle> = None;
    let mut first: Option<u64> = None;
    let mut out = String::with_capacity(s.len());
    for (k, line) in lines.iter().enumerate() {
        let (line_style, number, content) = parse_prefix(line)?;
        if let Some(line_style) = line_style
            && *style.get_or_insert(line_style) != line_style
        {
            return None;
        }
        let first = *first.get_or_insert(number);
        if consecutive && number != first + k as u64 {
            return None;
        }
        if k > 0 {
            out.push('\n');
        }
        out.push_str(content);
    }
    style?;
    if ends_with_newline {
        out.push('\n');
    }
    Some(out)
}

// ---------------------------------------------------------------------------------
// Writing the replacement

fn render(text: &str, m: &Match, plan: &RenderPlan) -> String {
    let eol = m
        .segments
        .iter()
        .find_map(|s| s.terminator.clone())
        .map(|t| &text[t])
        .or_else(|| first_eol(&text[m.span.clone()]))
        .unwrap_or(plan.default_eol);
    if plan.strategy == Strategy::Exact {
        return with_eol(&plan.new_raw, eol);
    }
    let region = &text[m.span.clone()];
    let style = if plan.strategy == Strategy::Typography {
        QuoteStyle {
            double: curly_style(region, plan.old_curly.0, ['\u{201C}', '\u{201D}']),
            single: curly_style(region, plan.old_curly.1, ['\u{2018}', '\u{2019}']),
        }
    } else {
        QuoteStyle {
            double: QuoteRule::Keep,
            single: QuoteRule::Keep,
        }
    };
    let old: Vec<&str> = plan.old_lines.iter().map(String::as_str).collect();
    let new: Vec<&str> = plan.new_lines.iter().map(String::as_str).collect();
    let ops = capture_diff_slices(Algorithm::Myers, &old, &new);
    let last = new.len();
    let mut out = String::new();
    let terminate = |out: &mut String, k: usize, own: Option<&str>| {
        if k + 1 < last || plan.new_ends_with_newline {
            out.push_str(own.unwrap_or(eol));
        }
    };
    for op in ops {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for t in 0..len {
                    match m.segments.get(old_index + t) {
                        Some(segment) => {
                            out.push_str(&text[segment.content.clone()]);
                            let own = segment.terminator.clone().map(|r| &text[r]);
                            terminate(&mut out, new_index + t, own);
                        }
                        None => {
                            out.push_str(new[new_index + t]);
                            terminate(&mut out, new_index + t, None);
                        }
                    }
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            }
            | DiffOp::Replace {
                new_index, new_len, ..
            } => {
                for (k, line) in new.iter().enumerate().skip(new_index).take(new_len) {
                    out.push_str(&style.apply(&reindent(line, m.shift)));
                    terminate(&mut out, k, None);
                }
            }
            DiffOp::Delete { .. } => {}
        }
    }
    out
}

fn first_eol(s: &str) -> Option<&'static str> {
    let i = s.find('\n')?;
    Some(if i > 0 && s.as_bytes()[i - 1] == b'\r' {
        "\r\n"
    } else {
        "\n"
    })
}

/// `s` with every line break written as `eol`.
fn with_eol(s: &str, eol: &str) -> String {
    if !s.contains('\n') {
        return s.to_owned();
    }
    let folded = s.replace("\r\n", "\n");
    if eol == "\n" {
        folded
    } else {
        folded.replace('\n', eol)
    }
}

fn reindent(line: &str, shift: Option<IndentShift>) -> String {
    let Some(shift) = shift else {
        return line.to_owned();
    };
    if line.trim().is_empty() {
        return String::new();
    }
    let (indent, rest) = split_indent(line);
    let width = width_isize(indent_width(indent, shift.tab_width)) + shift.delta_columns;
    let width = usize::try_from(width.max(0)).unwrap_or(0);
    let mut out = String::with_capacity(width + rest.len());
    if shift.file_uses_tabs {
        out.extend(std::iter::repeat_n('\t', width / shift.tab_width));
        out.extend(std::iter::repeat_n(' ', width % shift.tab_width));
    } else {
        out.extend(std::iter::repeat_n(' ', width));
    }
    out.push_str(rest);
    out
}

/// What to do with one kind of quote in new lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuoteRule {
    /// Leave as written.
    Keep,
    /// Straight quotes become curly (the file uses curly ones here).
    Curly([char; 2]),
    /// Curly quotes become straight (the file uses straight ones, the model wrote curly).
    Straight,
}

fn curly_style(region: &str, model_wrote_curly: bool, pair: [char; 2]) -> QuoteRule {
    if region.contains(pair) {
        QuoteRule::Curly(pair)
    } else if model_wrote_curly {
        QuoteRule::Straight
    } else {
        QuoteRule::Keep
    }
}

#[derive(Debug, Clone, Copy)]
struct QuoteStyle {
    double: QuoteRule,
    single: QuoteRule,
}

impl QuoteStyle {
    fn apply(&self, line: &str) -> String {
        let mut out = String::with_capacity(line.len());
        let mut previous: Option<char> = None;
        for c in line.chars() {
            let (style, straight) = match c {
                '"' | '\u{201C}' | '\u{201D}' => (self.double, '"'),
                '\'' | '\u{2018}' | '\u{2019}' => (self.single, '\''),
                _ => (QuoteRule::Keep, c),
            };
            let written = match style {
                QuoteRule::Keep => c,
                QuoteRule::Straight => straight,
                QuoteRule::Curly([open, close]) if c == straight => {
                    let opening = previous
                        .is_none_or(|p| p.is_whitespace() || "([{<-\u{2013}\u{2014}".contains(p));
                    if opening { open } else { close }
                }
                QuoteRule::Curly(_) => c,
            };
            out.push(written);
            previous = Some(c);
        }
        out
    }
}

/// Keeps the earliest of overlapping matches (line matches may overlap).
fn keep_disjoint(matches: &mut Vec<Match>) {
    let mut end = 0;
    let mut first = true;
    matches.retain(|m| {
        if first || m.span.start >= end {
            first = false;
            end = m.span.end;
            true
        } else {
            false
        }
    });
}

/// Replaces each match (sorted, disjoint) and returns the new text and the line range
/// of every replacement in it.
fn splice(text: &str, matches: &[Match], replacements: &[String]) -> (String, Vec<LineRange>) {
    let mut out = String::with_capacity(text.len());
    let mut lines = Vec::with_capacity(matches.len());
    let mut newlines_before = 0usize;
    let mut copied_to = 0;
    for (m, replacement) in matches.iter().zip(replacements) {
        let kept = &text[copied_to..m.span.start];
        newlines_before += count_newlines(kept);
        out.push_str(kept);
        let start = newlines_before + 1;
        let body = replacement.strip_suffix('\n').unwrap_or(replacement);
        lines.push(LineRange {
            start,
            end: start + count_newlines(body),
        });
        newlines_before += count_newlines(replacement);
        out.push_str(replacement);
        copied_to = m.span.end;
    }
    out.push_str(&text[copied_to..]);
    (out, lines)
}

fn count_newlines(s: &str) -> usize {
    memchr::memchr_iter(b'\n', s.as_bytes()).count()
}

/// The 1-based line of every match start.
fn start_lines(text: &str, matches: &[Match]) -> Vec<usize> {
    let mut line = 1;
    let mut counted_to = 0;
    matches
        .iter()
        .map(|m| {
            line += count_newlines(&text[counted_to..m.span.start]);
            counted_to = m.span.start;
            line
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// Diagnostics for a miss

/// Whitespace runs collapsed, ends trimmed, typography folded: the key lines are
/// compared by when looking for the closest region.
fn loose_key(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for word in line.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().map(|c| fold_typography(c).unwrap_or(c)));
    }
    out
}

fn line_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    strsim::sorensen_dice(a, b)
}

fn closest_region(text: &str, file: &[FileLine], needle: &[&str]) -> Option<NearMatch> {
    if file.is_empty() || needle.is_empty() {
        return None;
    }
    let n = needle.len().min(file.len());
    let windows = file.len() - n + 1;
    let file_keys: Vec<String> = file.iter().map(|l| loose_key(l.content(text))).collect();
    let needle_keys: Vec<String> = needle.iter().map(|l| loose_key(l)).collect();

    let candidates: Vec<usize> = if windows.saturating_mul(n) <= MAX_SIMILARITY_PAIRS {
        (0..windows).collect()
    } else {
        anchored_windows(&file_keys, &needle_keys, windows)
    };
    let score = |i: usize| -> f64 {
        let total: f64 = (0..n)
            .map(|k| line_similarity(&file_keys[i + k], &needle_keys[k]))
            .sum();
        total / n as f64
    };
    let mut best: Option<(usize, f64)> = None;
    for i in candidates {
        let s = score(i);
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((i, s));
        }
    }
    let (start, loose_score) = best?;
    let window = &file[start..start + n];
    let window_text: Vec<&str> = window.iter().map(|l| l.content(text)).collect();
    let joined_file = window_text.join("\n");
    let joined_needle = needle.join("\n");
    let similarity = if joined_file.chars().count() <= MAX_DISTANCE_CHARS
        && joined_needle.chars().count() <= MAX_DISTANCE_CHARS
    {
        strsim::normalized_levenshtein(&joined_file, &joined_needle)
    } else {
        loose_score
    };
    let mut snippet = String::new();
    for (k, line) in window_text.iter().enumerate().take(MAX_SNIPPET_LINES) {
        if k > 0 {
            snippet.push('\n');
        }
        let _ = write!(snippet, "{:>6}\t{}", start + k + 1, shorten(line));
    }
    if n > MAX_SNIPPET_LINES {
        let _ = write!(snippet, "\n… {} more lines", n - MAX_SNIPPET_LINES);
    }
    Some(NearMatch {
        start_line: start + 1,
        end_line: start + n,
        similarity,
        snippet,
        differences: differences(&window_text, needle, start + 1),
    })
}

/// Windows holding at least one line equal (loosely) to a line of the needle at the
/// same offset; without any, the windows whose first line best resembles the needle's
/// first non-blank line.
fn anchored_windows(file_keys: &[String], needle_keys: &[String], windows: usize) -> Vec<usize> {
    let mut by_key: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, key) in needle_keys.iter().enumerate() {
        if !key.is_empty() {
            by_key.entry(key.as_str()).or_default().push(k);
        }
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    'scan: for (j, key) in file_keys.iter().enumerate() {
        if let Some(offsets) = by_key.get(key.as_str()) {
            for &k in offsets {
                if let Some(i) = j.checked_sub(k)
                    && i < windows
                    && seen.insert(i)
                {
                    out.push(i);
                    if out.len() >= MAX_ANCHORED_WINDOWS {
                        break 'scan;
                    }
                }
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    let Some((k, first)) = needle_keys
        .iter()
        .enumerate()
        .find(|(_, key)| !key.is_empty())
    else {
        return (0..windows.min(FALLBACK_WINDOWS)).collect();
    };
    let mut scored: Vec<(usize, f64)> = (k..file_keys.len().min(windows + k))
        .map(|j| (j - k, line_similarity(&file_keys[j], first)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
        .into_iter()
        .take(FALLBACK_WINDOWS)
        .map(|(i, _)| i)
        .collect()
}

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_SHOWN_LINE_CHARS {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(MAX_SHOWN_LINE_CHARS).collect();
    out.push('…');
    out
}

/// Line numbers as compact ranges after "line" or "lines": "line 3", "lines 3-5, 9".
fn ranges(lines: &[usize]) -> String {
    let single = lines.len() == 1;
    let mut out = String::from(if single { "line " } else { "lines " });
    let mut i = 0;
    let mut groups = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        if groups > 0 {
            out.push_str(", ");
        }
        if groups == MAX_LISTED_LINES {
            out.push('…');
            break;
        }
        if i == j {
            let _ = write!(out, "{}", lines[i]);
        } else {
            let _ = write!(out, "{}-{}", lines[i], lines[j]);
        }
        groups += 1;
        i = j + 1;
    }
    out
}

/// What differs between the closest region and the needle, one sentence per kind.
fn differences(window: &[&str], needle: &[&str], first_line: usize) -> Vec<String> {
    let mut tabs_in_file = Vec::new();
    let mut tabs_in_old = Vec::new();
    let mut width_lines = Vec::new();
    let mut trailing_in_file = Vec::new();
    let mut trailing_in_old = Vec::new();
    let mut typography = Vec::new();
    let mut differing = Vec::new();
    for (k, (got, wanted)) in window.iter().zip(needle).enumerate() {
        let line = first_line + k;
        let (got_indent, got_rest) = split_indent(got);
        let (wanted_indent, wanted_rest) = split_indent(wanted);
        let got_trailing = got_rest.len() != got_rest.trim_end().len();
        let wanted_trailing = wanted_rest.len() != wanted_rest.trim_end().len();
        if got_trailing && !wanted_trailing {
            trailing_in_file.push(line);
        } else if wanted_trailing && !got_trailing {
            trailing_in_old.push(line);
        }
        let (got_core, wanted_core) = (got_rest.trim_end(), wanted_rest.trim_end());
        if got_core != wanted_core {
            if same_text(got_core, wanted_core, true) {
                let pair = got_core
                    .chars()
                    .zip(wanted_core.chars())
                    .find(|(a, b)| a != b);
                typography.push((line, pair));
            } else {
                differing.push((line, *got, *wanted));
            }
            continue;
        }
        if got_core.is_empty() || got_indent == wanted_indent {
            continue;
        }
        if got_indent.contains('\t') && !wanted_indent.contains('\t') {
            tabs_in_file.push(line);
        } else if wanted_indent.contains('\t') && !got_indent.contains('\t') {
            tabs_in_old.push(line);
        } else {
            width_lines.push((line, got_indent.len(), wanted_indent.len()));
        }
    }
    let mut out = Vec::new();
    if needle.len() > window.len() {
        out.push(format!(
            "old_string has {} lines but the file only has {}",
            needle.len(),
            window.len()
        ));
    }
    if !tabs_in_file.is_empty() {
        out.push(format!(
            "tabs in the file, spaces in old_string (indentation of {}); copy the \
             indentation as it is, or it is re-indented for you only when the shift is the \
             same on every line",
            ranges(&tabs_in_file)
        ));
    }
    if !tabs_in_old.is_empty() {
        out.push(format!(
            "spaces in the file, tabs in old_string (indentation of {})",
            ranges(&tabs_in_old)
        ));
    }
    if let Some(&(first, file_width, old_width)) = width_lines.first() {
        let lines: Vec<usize> = width_lines.iter().map(|(l, _, _)| *l).collect();
        out.push(format!(
            "indentation differs on {} (line {}: {} characters in the file, {} in \
             old_string) and not by the same amount on every line",
            ranges(&lines),
            first,
            file_width,
            old_width
        ));
    }
    if !trailing_in_file.is_empty() {
        out.push(format!(
            "trailing whitespace in the file that old_string lacks ({})",
            ranges(&trailing_in_file)
        ));
    }
    if !trailing_in_old.is_empty() {
        out.push(format!(
            "trailing whitespace in old_string that the file lacks ({})",
            ranges(&trailing_in_old)
        ));
    }
    if let Some((line, pair)) = typography.first() {
        let lines: Vec<usize> = typography.iter().map(|(l, _)| *l).collect();
        let detail = match pair {
            Some((file_char, old_char)) => {
                format!(" (line {line}: {file_char:?} in the file, {old_char:?} in old_string)")
            }
            None => String::new(),
        };
        out.push(format!(
            "typographic quotes, dashes or spaces differ on {}{detail}",
            ranges(&lines)
        ));
    }
    for (line, got, wanted) in differing.iter().take(MAX_QUOTED_DIFFERENCES) {
        out.push(format!(
            "line {line} differs: the file has {:?}, old_string has {:?}",
            shorten(got),
            shorten(wanted)
        ));
    }
    if differing.len() > MAX_QUOTED_DIFFERENCES {
        out.push(format!(
            "{} more lines differ",
            differing.len() - MAX_QUOTED_DIFFERENCES
        ));
    }
    out
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
