//! Only new problems: the problems before a change and after it, compared by
//! checker, code and message, and by line shifted through the change's diff.
//!
//! An after-problem is "already there" when a before-problem with the same
//! checker, code and message sits on the line that became its line; failing that,
//! when one with the same checker, code and message is left over and the
//! after-problem is on a line the change did not touch (the same problem moved in
//! a way the line map does not follow). Everything else after is new; every
//! before-problem left over was fixed.

use std::collections::HashMap;

use similar::{ChangeTag, TextDiff};
use toolbelt_core::Diagnostic;

/// What a change did to a file's problems.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compared {
    /// The problems after the change, each marked `new` or not, in order.
    pub after: Vec<Diagnostic>,
    /// How many of them are new.
    pub new: usize,
    /// Problems before that are gone.
    pub fixed: usize,
    /// Problems before that are still there.
    pub already_there: usize,
}

/// How the lines of the old text map to the new one.
struct LineMap {
    /// Old line (1-based) to new line, for lines the change kept.
    old_to_new: HashMap<u32, u32>,
    /// New lines (1-based) the change kept.
    kept_new: std::collections::HashSet<u32>,
}

impl LineMap {
    fn new(old: &str, new: &str) -> LineMap {
        let diff = TextDiff::from_lines(old, new);
        let mut old_to_new = HashMap::new();
        let mut kept_new = std::collections::HashSet::new();
        for change in diff.iter_all_changes() {
            if change.tag() == ChangeTag::Equal
                && let (Some(o), Some(n)) = (change.old_index(), change.new_index())
            {
                let (o, n) = (line_no(o), line_no(n));
                old_to_new.insert(o, n);
                kept_new.insert(n);
            }
        }
        LineMap {
            old_to_new,
            kept_new,
        }
    }
}

fn line_no(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

/// The identity of a problem apart from where it is.
fn key(d: &Diagnostic) -> (&str, Option<&str>, &str) {
    (d.source.as_str(), d.code.as_deref(), d.message.as_str())
}

/// Compares `before` (problems of `old`) with `after` (problems of `new`).
/// `old` None: there was no file, so everything after is new.
pub fn compare(
    before: &[Diagnostic],
    after: Vec<Diagnostic>,
    old: Option<&str>,
    new: &str,
) -> Compared {
    let Some(old) = old else {
        let after: Vec<Diagnostic> = after
            .into_iter()
            .map(|mut d| {
                d.new = true;
                d
            })
            .collect();
        let new = after.len();
        return Compared {
            after,
            new,
            fixed: 0,
            already_there: 0,
        };
    };
    let map = LineMap::new(old, new);
    let mut used = vec![false; before.len()];
    let mut matched = vec![false; after.len()];
    // Exact: same identity on the line it moved to.
    for (i, d) in after.iter().enumerate() {
        let found = before.iter().enumerate().position(|(j, b)| {
            !used[j] && key(b) == key(d) && map.old_to_new.get(&b.line) == Some(&d.line)
        });
        if let Some(j) = found {
            used[j] = true;
            matched[i] = true;
        }
    }
    // Moved: same identity, on a line the change did not touch.
    for (i, d) in after.iter().enumerate() {
        if matched[i] || !map.kept_new.contains(&d.line) {
            continue;
        }
        let found = (0..before.len()).find(|&j| !used[j] && key(&before[j]) == key(d));
        if let Some(j) = found {
            used[j] = true;
            matched[i] = true;
        }
    }
    let already_there = matched.iter().filter(|m| **m).count();
    let fixed = used.iter().filter(|u| !**u).count();
    let after: Vec<Diagnostic> = after
        .into_iter()
        .zip(matched)
        .map(|(mut d, m)| {
            d.new = !m;
            d
        })
        .collect();
    let new = after.iter().filter(|d| d.new).count();
    Compared {
        after,
        new,
        fixed,
        already_there,
    }
}

#[cfg(test)]
mod tests {
    use toolbelt_core::Severity;
    use toolbelt_core::diagnostics::Position;

    use super::*;

    fn d(line: u32, message: &str) -> Diagnostic {
        Diagnostic {
            path: "x.py".into(),
            line,
            col: 1,
            end: Position { line, col: 2 },
            severity: Severity::Error,
            code: Some("E".into()),
            source: "t".into(),
            message: message.into(),
            new: false,
        }
    }

    #[test]
    fn an_old_problem_shifted_by_inserted_lines_is_already_there() {
        let old = "a\nb\nc\nbad\n";
        let new = "x\ny\na\nb\nc\nbad\n";
        let c = compare(&[d(4, "m")], vec![d(6, "m")], Some(old), new);
        assert_eq!((c.new, c.fixed, c.already_there), (0, 0, 1));
        assert!(!c.after[0].new);
    }

    #[test]
    fn a_new_problem_with_the_same_message_on_an_edited_line_is_new() {
        let old = "ok\nbad\n";
        let new = "broken\nbad\n";
        let c = compare(&[d(2, "m")], vec![d(1, "m"), d(2, "m")], Some(old), new);
        assert_eq!((c.new, c.fixed, c.already_there), (1, 0, 1));
        assert!(c.after[0].new);
        assert!(!c.after[1].new);
    }

    #[test]
    fn a_fixed_problem_is_counted() {
        let old = "bad\nok\n";
        let new = "good\nok\n";
        let c = compare(&[d(1, "m")], vec![], Some(old), new);
        assert_eq!((c.new, c.fixed, c.already_there), (0, 1, 0));
    }

    #[test]
    fn a_new_file_has_only_new_problems() {
        let c = compare(&[], vec![d(1, "m")], None, "bad\n");
        assert_eq!((c.new, c.fixed, c.already_there), (1, 0, 0));
    }
}
