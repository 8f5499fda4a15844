//! What a change did to the other open documents of its server: each one's
//! answer when the change was sent against the answer published after it for
//! the same content.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use toolbelt_core::diagnostics::Diagnostic;

use super::docs::{Answered, Baseline, Baselines};
use super::server::Server;
use super::{OtherFile, shown_as};

/// At most this many other documents are listed for one change.
pub const MAX_OTHER_FILES: usize = 20;

/// How long after the changed file's own answer a server seen publishing again
/// for documents it had answered may take to do so for the other documents.
pub const OTHERS_GRACE: Duration = Duration::from_millis(150);

/// The documents of `baselines` whose problems the server published anew
/// since the change, with different problems. When `answered` (the changed
/// file's answer is there), waits up to [`OTHERS_GRACE`] (never past
/// `deadline`) for a server that publishes again, else not at all.
pub(super) async fn others(
    server: &Server,
    baselines: &Baselines,
    answered: bool,
    deadline: Instant,
) -> Vec<OtherFile> {
    if baselines.docs.is_empty() {
        return Vec::new();
    }
    if answered {
        let until = deadline.min(Instant::now() + OTHERS_GRACE);
        server.wait_others(baselines, until).await;
    }
    let changed: Vec<(&Baseline, Answered)> = server.shared.read(|s| {
        baselines
            .docs
            .iter()
            .filter_map(|b| {
                let after = s.docs.since(&b.uri, b.answer.version, baselines.mark)?;
                Some((b, after))
            })
            .filter(|(b, after)| !same(&b.answer.diagnostics, &after.diagnostics))
            .take(MAX_OTHER_FILES)
            .collect()
    });
    changed
        .into_iter()
        .filter_map(|(b, after)| {
            let file = b.uri.to_file_path().ok()?;
            let path = file.display().to_string();
            Some(OtherFile {
                before: shown_as(b.answer.diagnostics.clone(), &path),
                after: shown_as(after.diagnostics, &path),
                file,
            })
        })
        .collect()
}

/// Whether `a` and `b` hold the same problems, in any order.
fn same(a: &[Diagnostic], b: &[Diagnostic]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut counts: HashMap<&Diagnostic, isize> = HashMap::new();
    for d in a {
        *counts.entry(d).or_default() += 1;
    }
    for d in b {
        *counts.entry(d).or_default() -= 1;
    }
    counts.values().all(|&n| n == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_core::diagnostics::{Position, Severity};

    fn problem(message: &str) -> Diagnostic {
        Diagnostic {
            path: String::new(),
            line: 1,
            col: 1,
            end: Position { line: 1, col: 2 },
            severity: Severity::Error,
            code: None,
            source: "fake".into(),
            message: message.into(),
            new: false,
        }
    }

    #[test]
    fn the_same_problems_in_another_order_are_the_same() {
        let (x, y) = (problem("x"), problem("y"));
        assert!(same(&[x.clone(), y.clone()], &[y.clone(), x.clone()]));
        assert!(!same(&[x.clone(), x.clone()], &[x.clone(), y]));
        assert!(!same(std::slice::from_ref(&x), &[]));
        assert!(same(&[], &[]));
    }
}
