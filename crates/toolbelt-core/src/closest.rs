//! Did-you-mean: the known names closest to a name that is not known.
//!
//! One scorer for every suggestion toolbelt makes (tools, parameters, skills,
//! files): Jaro-Winkler similarity of the names without case and punctuation, plus
//! a bonus when one contains the other.
//!
//! ```
//! use toolbelt_core::closest::{STRONG_MATCH, closest};
//!
//! let known = ["read_file", "write_file", "grep"];
//! let found = closest("ReadFile", known, 2);
//! assert_eq!(found[0].name, "read_file");
//! assert!(found[0].score >= STRONG_MATCH);
//! assert_eq!(found.len(), 2);
//! ```

/// A score at or above which a name is offered as "did you mean".
pub const STRONG_MATCH: f64 = 0.8;

/// A known name and how close it is to the name asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Match<'a> {
    /// The known name.
    pub name: &'a str,
    /// Jaro-Winkler similarity in `0.0..=1.0`, plus 0.2 when one name contains the
    /// other: at most 1.2.
    pub score: f64,
}

/// The `n` names of `candidates` closest to `name`, best first (ties by name).
/// Names are compared lowercased and without characters other than letters and
/// digits, so `ReadFile`, `read-file` and `read_file` are the same.
pub fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<Match<'a>> {
    let want = normalize(name);
    let mut scored: Vec<Match<'a>> = candidates
        .into_iter()
        .map(|candidate| {
            let c = normalize(candidate);
            let mut score = strsim::jaro_winkler(&want, &c);
            if !want.is_empty() && (c.contains(&want) || want.contains(&c)) {
                score += 0.2;
            }
            Match {
                name: candidate,
                score,
            }
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.name.cmp(b.name)));
    scored.truncate(n);
    scored
}

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_first_ties_by_name_at_most_n() {
        let names = ["glob", "grep", "git_grep", "read_file"];
        let found: Vec<&str> = closest("grpe", names, 3).iter().map(|m| m.name).collect();
        assert_eq!(found[0], "grep");
        assert_eq!(found.len(), 3);
        assert!(closest("x", names, 0).is_empty());
        assert!(closest("x", [], 3).is_empty());
        let tie = closest("zz", ["b", "a"], 2);
        assert_eq!((tie[0].name, tie[1].name), ("a", "b"));
    }

    #[test]
    fn containment_and_punctuation_do_not_hide_a_name() {
        let found = closest("file", ["read_file", "bash"], 1);
        assert_eq!(found[0].name, "read_file");
        let plain = strsim::jaro_winkler("file", "readfile");
        assert!((found[0].score - (plain + 0.2)).abs() < 1e-9);
        assert!(closest("Read-File", ["read_file"], 1)[0].score >= STRONG_MATCH);
    }
}
