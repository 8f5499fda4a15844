use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;

proptest! {
    /// The byte comparison gives exactly `Path`'s component order on walk-made paths.
    #[test]
    fn cmp_paths_is_path_order(
        a in proptest::collection::vec("[a-c./_-]{1,3}", 1..4),
        b in proptest::collection::vec("[a-c./_-]{1,3}", 1..4),
    ) {
        let norm = |parts: &[String]| -> PathBuf {
            let mut p = PathBuf::from("/root");
            for part in parts {
                for name in part.split('/').filter(|n| !n.is_empty() && *n != "." && *n != "..") {
                    p.push(name);
                }
            }
            p
        };
        let (a, b) = (norm(&a), norm(&b));
        prop_assert_eq!(cmp_paths(&a, &b), a.cmp(&b), "{} vs {}", a.display(), b.display());
    }
}

#[test]
fn sort_by_path_puts_a_directory_before_a_dotted_sibling() {
    let mut v = vec![
        PathBuf::from("/r/a.b"),
        PathBuf::from("/r/a/z"),
        PathBuf::from("/r/a-b"),
        PathBuf::from("/r/a"),
    ];
    sort_by_path(&mut v, |p| p);
    assert_eq!(
        v,
        ["/r/a", "/r/a/z", "/r/a-b", "/r/a.b"]
            .map(PathBuf::from)
            .to_vec()
    );
}

#[test]
fn display_path_is_relative_beneath_the_base() {
    assert_eq!(
        display_path(Path::new("/w/src/a.rs"), Path::new("/w")),
        "src/a.rs"
    );
    assert_eq!(display_path(Path::new("/w"), Path::new("/w")), ".");
    assert_eq!(
        display_path(Path::new("/w2/a.rs"), Path::new("/w")),
        "/w2/a.rs"
    );
}

#[test]
fn budget_reports_cancellation_before_the_deadline() {
    assert_eq!(Budget::unlimited().check(), None);
    let past = Instant::now() - Duration::from_millis(5);
    assert_eq!(
        Budget::unlimited().with_deadline(past).check(),
        Some(Stop::TimedOut)
    );
    let flag = Arc::new(AtomicBool::new(true));
    assert_eq!(
        Budget::unlimited()
            .with_deadline(past)
            .with_cancel(flag)
            .check(),
        Some(Stop::Cancelled)
    );
    assert_eq!(
        Budget::unlimited()
            .with_time_limit(Duration::from_secs(60))
            .check(),
        None
    );
}

#[test]
fn unknown_file_types_suggest_by_extension_and_name() {
    let err = |name: &str| types(&[name.to_owned()]).unwrap_err().to_string();
    assert!(
        err("rs").contains("did you mean one of: rust"),
        "{}",
        err("rs")
    );
    assert!(
        err("golang").contains("did you mean one of: go"),
        "{}",
        err("golang")
    );
    assert!(
        err("nosuchtype").contains("rust, py, js"),
        "{}",
        err("nosuchtype")
    );
    assert!(file_type_names().iter().any(|n| n == "rust"));
}

#[test]
fn thread_count_is_capped() {
    assert_eq!(thread_count(3), 3);
    assert_eq!(thread_count(100), MAX_THREADS);
    assert!(thread_count(0) >= 1);
}
