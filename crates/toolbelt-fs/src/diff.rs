//! Unified diffs of text changes.
//!
//! [`FileDiff`] compares two versions of a text line by line (line terminators
//! included, so a change of line ending shows) and renders the result as a
//! unified diff ([`FileDiff::unified`]), as a compact numbered snippet for tool
//! results ([`FileDiff::snippet`]), or as counts ([`FileDiff::stats`]).
//!
//! ```
//! use toolbelt_fs::diff::{DiffStats, FileDiff};
//!
//! let diff = FileDiff::new("a\nb\nc\n", "a\nB\nc\n");
//! assert_eq!(diff.stats(), DiffStats { added: 1, removed: 1 });
//! assert_eq!(
//!     diff.unified("src/x.txt", 1),
//!     "--- a/src/x.txt\n+++ b/src/x.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
//! );
//! ```

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, DiffTag, capture_diff_slices_deadline, group_diff_ops};

/// Context lines around each change when the caller has no preference.
pub const DEFAULT_CONTEXT_LINES: usize = 3;
/// Time after which the diff algorithm settles for a correct but longer diff.
pub const DIFF_TIMEOUT: Duration = Duration::from_secs(2);
/// Marker written after a last line that has no line terminator.
const NO_NEWLINE_MARKER: &str = "\\ No newline at end of file";

/// How many lines a change adds and removes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DiffStats {
    /// Lines only in the new text.
    pub added: usize,
    /// Lines only in the old text.
    pub removed: usize,
}

/// A line diff between two texts, computed once and rendered on demand.
#[derive(Debug, Clone)]
pub struct FileDiff<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    ops: Vec<DiffOp>,
}

impl<'a> FileDiff<'a> {
    /// Diffs `old` against `new` (Myers, bounded by [`DIFF_TIMEOUT`]).
    pub fn new(old: &'a str, new: &'a str) -> Self {
        let old: Vec<&str> = old.split_inclusive('\n').collect();
        let new: Vec<&str> = new.split_inclusive('\n').collect();
        let deadline = Instant::now().checked_add(DIFF_TIMEOUT);
        let ops = capture_diff_slices_deadline(Algorithm::Myers, &old, &new, deadline);
        FileDiff { old, new, ops }
    }

    /// Whether the texts are equal.
    pub fn is_empty(&self) -> bool {
        self.ops.iter().all(|op| op.tag() == DiffTag::Equal)
    }

    /// Lines added and removed.
    pub fn stats(&self) -> DiffStats {
        let mut stats = DiffStats::default();
        for op in &self.ops {
            stats.removed += op.old_range().len();
            stats.added += op.new_range().len();
            if op.tag() == DiffTag::Equal {
                stats.removed -= op.old_range().len();
                stats.added -= op.new_range().len();
            }
        }
        stats
    }

    /// A unified diff with `--- a/{path}` / `+++ b/{path}` headers and
    /// `context_lines` lines of context; empty when the texts are equal.
    pub fn unified(&self, path: &str, context_lines: usize) -> String {
        self.unified_labeled(&format!("a/{path}"), &format!("b/{path}"), context_lines)
    }

    /// A unified diff with the given header labels (`/dev/null` for a created or
    /// deleted file); empty when the texts are equal.
    pub fn unified_labeled(
        &self,
        old_label: &str,
        new_label: &str,
        context_lines: usize,
    ) -> String {
        if self.is_empty() {
            return String::new();
        }
        let mut out = format!("--- {old_label}\n+++ {new_label}\n");
        for group in group_diff_ops(self.ops.clone(), context_lines) {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let _ = writeln!(
                out,
                "@@ -{} +{} @@",
                hunk_range(old_range.start, old_range.len()),
                hunk_range(new_range.start, new_range.len())
            );
            for op in &group {
                let (tag, old, new) = op.as_tag_tuple();
                match tag {
                    DiffTag::Equal => {
                        for line in &self.old[old] {
                            push_unified(&mut out, ' ', line);
                        }
                    }
                    DiffTag::Delete | DiffTag::Insert | DiffTag::Replace => {
                        for line in &self.old[old] {
                            push_unified(&mut out, '-', line);
                        }
                        for line in &self.new[new] {
                            push_unified(&mut out, '+', line);
                        }
                    }
                }
            }
        }
        out
    }

    /// A compact view for tool results: each hunk as numbered lines, `-` with the
    /// old line number, `+` and context with the new one, hunks separated by `...`,
    /// at most `max_lines` lines (then a count of what was left out). Empty when the
    /// texts are equal.
    pub fn snippet(&self, context_lines: usize, max_lines: usize) -> String {
        let mut rows: Vec<(char, usize, &str)> = Vec::new();
        let groups = group_diff_ops(self.ops.clone(), context_lines);
        for (g, group) in groups.iter().enumerate() {
            if g > 0 {
                rows.push(('.', 0, ""));
            }
            for op in group {
                let (tag, old, new) = op.as_tag_tuple();
                if tag == DiffTag::Equal {
                    for (i, line) in new.clone().zip(&self.new[new]) {
                        rows.push((' ', i + 1, line));
                    }
                    continue;
                }
                for (i, line) in old.clone().zip(&self.old[old]) {
                    rows.push(('-', i + 1, line));
                }
                for (i, line) in new.clone().zip(&self.new[new]) {
                    rows.push(('+', i + 1, line));
                }
            }
        }
        let width = rows
            .iter()
            .map(|r| r.1)
            .max()
            .unwrap_or(0)
            .to_string()
            .len();
        let mut out = String::new();
        for (tag, number, line) in rows.iter().take(max_lines) {
            if *tag == '.' {
                out.push_str("...\n");
            } else {
                let _ = writeln!(out, "{tag} {number:>width$} {}", strip_terminator(line));
            }
        }
        if rows.len() > max_lines {
            let left_out = rows[max_lines..]
                .iter()
                .filter(|r| r.0 == '+' || r.0 == '-')
                .count();
            let stats = self.stats();
            let _ = writeln!(
                out,
                "... {left_out} more changed lines not shown (+{} -{} in all)",
                stats.added, stats.removed
            );
        }
        out
    }
}

/// `start,len` of a unified hunk header (1-based; `start` is the line before an
/// empty range, as diff(1) writes it).
fn hunk_range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

fn strip_terminator(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

fn push_unified(out: &mut String, tag: char, line: &str) {
    out.push(tag);
    out.push_str(strip_terminator(line));
    out.push('\n');
    if !line.ends_with('\n') {
        out.push_str(NO_NEWLINE_MARKER);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn equal_texts_give_nothing() {
        let diff = FileDiff::new("a\nb\n", "a\nb\n");
        assert!(diff.is_empty());
        assert_eq!(diff.stats(), DiffStats::default());
        assert_eq!(diff.unified("x", 3), "");
        assert_eq!(diff.snippet(3, 50), "");
    }

    #[test]
    fn unified_with_two_hunks_and_context() {
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let new = old
            .replace("line 3\n", "line three\n")
            .replace("line 17\n", "line 17\nline 17.5\n");
        let diff = FileDiff::new(&old, &new);
        assert_eq!(
            diff.stats(),
            DiffStats {
                added: 2,
                removed: 1
            }
        );
        insta::assert_snapshot!(diff.unified("src/lib.rs", 2), @r"
        --- a/src/lib.rs
        +++ b/src/lib.rs
        @@ -1,5 +1,5 @@
         line 1
         line 2
        -line 3
        +line three
         line 4
         line 5
        @@ -16,4 +16,5 @@
         line 16
         line 17
        +line 17.5
         line 18
         line 19
        ");
        assert_eq!(
            diff.snippet(1, 40),
            "   2 line 2\n-  3 line 3\n+  3 line three\n   4 line 4\n...\n  17 line 17\n+ 18 line 17.5\n  19 line 18\n"
        );
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let diff = FileDiff::new("a\nb", "a\nc");
        insta::assert_snapshot!(diff.unified("f", 3), @r"
        --- a/f
        +++ b/f
        @@ -1,2 +1,2 @@
         a
        -b
        \ No newline at end of file
        +c
        \ No newline at end of file
        ");
    }

    #[test]
    fn created_file_and_labels() {
        let diff = FileDiff::new("", "one\ntwo\n");
        assert_eq!(
            diff.stats(),
            DiffStats {
                added: 2,
                removed: 0
            }
        );
        assert_eq!(
            diff.unified_labeled("/dev/null", "b/new.txt", 3),
            "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        );
    }

    #[test]
    fn crlf_lines_render_without_carriage_returns_but_count_ending_changes() {
        let diff = FileDiff::new("a\r\nb\r\n", "a\r\nb\n");
        assert_eq!(
            diff.stats(),
            DiffStats {
                added: 1,
                removed: 1
            }
        );
        assert_eq!(
            diff.unified("f", 0),
            "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n+b\n"
        );
    }

    #[test]
    fn snippet_is_capped_with_a_count() {
        let new: String = (1..=30).map(|i| format!("n{i}\n")).collect();
        let diff = FileDiff::new("", &new);
        assert_eq!(
            diff.snippet(3, 4),
            "+  1 n1\n+  2 n2\n+  3 n3\n+  4 n4\n... 26 more changed lines not shown (+30 -0 in all)\n"
        );
    }
}
