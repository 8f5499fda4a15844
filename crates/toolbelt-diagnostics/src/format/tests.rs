use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::lint::tests::leftovers;

/// Every async test's bound.
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

const OLD: &str = "a=1\nb=2\nc=3\n";
const STAGED: &str = "a=1\nb=5\nc=3\n";

fn formatter(argv: &[&str], scope: Scope) -> Formatter {
    Formatter::new(argv.iter().map(|a| a.to_string()).collect(), scope)
}

/// A directory with `main.py` (holding [`OLD`]).
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("main.py");
    std::fs::write(&file, OLD).unwrap();
    (dir, file)
}

async fn format(f: &Formatter, file: &Path, old: Option<&str>, staged: &str) -> Formatted {
    tokio::time::timeout(TEST_TIMEOUT, run(f, file, old, staged))
        .await
        .unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn stdin_formatter_with_scope_file_and_changed_lines() {
    let (_dir, file) = workspace();
    let spaced = ["sh", "-c", "sed 's/=/ = /'"];
    let whole = format(&formatter(&spaced, Scope::File), &file, Some(OLD), STAGED).await;
    assert_eq!(
        whole,
        Formatted {
            text: "a = 1\nb = 5\nc = 3\n".to_string(),
            note: None
        }
    );
    let changed = format(
        &formatter(&spaced, Scope::ChangedLines),
        &file,
        Some(OLD),
        STAGED,
    )
    .await;
    assert_eq!(changed.text, "a=1\nb = 5\nc=3\n");
    assert_eq!(changed.note, None);
}

#[tokio::test]
async fn temp_file_formatter_beside_the_file_is_removed_after() {
    let (dir, file) = workspace();
    let log = tempfile::tempdir().unwrap();
    let log_file = log.path().join("seen");
    let script = format!(
        "dirname \"$1\" > '{log}'; basename \"$1\" >> '{log}'; sed -i 's/b=/B = /' \"$1\"",
        log = log_file.display()
    );
    let f = formatter(&["sh", "-c", &script, "sh", "{path}"], Scope::ChangedLines);
    let out = format(&f, &file, Some(OLD), STAGED).await;
    assert_eq!(out.text, "a=1\nB = 5\nc=3\n");
    assert_eq!(out.note, None);
    let seen = std::fs::read_to_string(&log_file).unwrap();
    let (seen_dir, seen_name) = seen.trim().split_once('\n').unwrap();
    assert_eq!(Path::new(seen_dir), dir.path());
    assert!(
        seen_name.starts_with(".main.fmt-") && seen_name.ends_with(".py"),
        "{seen_name}"
    );
    assert_eq!(names(dir.path()), ["main.py"]);
}

#[tokio::test]
async fn a_new_file_in_a_new_directory_runs_in_the_nearest_existing_one() {
    let (dir, _) = workspace();
    let file = dir.path().join("new/deeper/mod.py");
    let f = formatter(
        &["sh", "-c", "sed -i 's/x/X/' \"$1\"", "sh", "{path}"],
        Scope::ChangedLines,
    );
    let out = format(&f, &file, None, "x = 1\n").await;
    assert_eq!(out.text, "X = 1\n");
    assert_eq!(names(dir.path()), ["main.py"]);
}

#[tokio::test]
async fn name_placeholder_is_the_real_path() {
    let (_dir, file) = workspace();
    let f = formatter(
        &["sh", "-c", "echo \"# $1\"; cat", "sh", "{name}"],
        Scope::File,
    );
    let out = format(&f, &file, Some(OLD), STAGED).await;
    assert_eq!(out.text, format!("# {}\n{STAGED}", file.display()));
}

#[tokio::test]
async fn a_failing_formatter_leaves_the_text_with_a_note() {
    let (_dir, file) = workspace();
    let f = formatter(
        &["sh", "-c", "echo 'error: cannot parse' >&2; exit 1"],
        Scope::File,
    );
    let out = format(&f, &file, Some(OLD), STAGED).await;
    assert_eq!(
        out,
        Formatted {
            text: STAGED.to_string(),
            note: Some(
                "formatter `sh` exited 1 (error: cannot parse); the content was written unformatted"
                    .to_string()
            ),
        }
    );
}

#[tokio::test]
async fn a_formatter_printing_nothing_leaves_the_text() {
    let (_dir, file) = workspace();
    let f = formatter(&["sh", "-c", "cat > /dev/null"], Scope::File);
    let out = format(&f, &file, Some(OLD), STAGED).await;
    assert_eq!(out.text, STAGED);
    assert_eq!(
        out.note.as_deref(),
        Some("formatter `sh` printed nothing; the content was written unformatted")
    );
    // A blank text may well format to nothing.
    let out = format(&f, &file, Some(OLD), "\n").await;
    assert_eq!((out.text.as_str(), out.note), ("", None));
}

#[tokio::test]
async fn a_missing_formatter_is_noted() {
    let (_dir, file) = workspace();
    let f = formatter(&["no-such-formatter-9132", "{path}"], Scope::File);
    let out = format(&f, &file, Some(OLD), STAGED).await;
    assert_eq!(out.text, STAGED);
    assert_eq!(
        out.note.as_deref(),
        Some(
            "formatter `no-such-formatter-9132` not found on PATH (install it, or fix its command); the content was written unformatted"
        )
    );
    let out = format(&formatter(&[], Scope::File), &file, Some(OLD), STAGED).await;
    assert!(out.note.unwrap().contains("has an empty command"));
}

#[tokio::test]
async fn a_formatter_past_its_timeout_leaves_no_process() {
    let (_dir, file) = workspace();
    let marker = "100.123";
    let mut f = formatter(&["sh", "-c", &format!("sleep {marker}")], Scope::File);
    f.timeout = Duration::from_millis(500);
    let out = format(&f, &file, Some(OLD), STAGED).await;
    assert_eq!(out.text, STAGED);
    assert_eq!(
        out.note.as_deref(),
        Some("formatter `sh` timed out after 500 ms; the content was written unformatted")
    );
    assert_eq!(leftovers(marker), Vec::<u32>::new());
}

#[tokio::test]
async fn a_temp_file_formatter_past_its_timeout_leaves_no_file() {
    let (dir, file) = workspace();
    let marker = "100.321";
    let script = format!("sleep {marker}; sed -i 's/b/B/' \"$1\"");
    let mut f = formatter(&["sh", "-c", &script, "sh", "{path}"], Scope::File);
    f.timeout = Duration::from_millis(500);
    let out = format(&f, &file, Some(OLD), STAGED).await;
    assert_eq!(out.text, STAGED);
    assert!(out.note.unwrap().contains("timed out after 500 ms"));
    assert_eq!(leftovers(marker), Vec::<u32>::new());
    assert_eq!(names(dir.path()), ["main.py"]);
}

#[test]
fn scope_reads_its_two_names() {
    assert_eq!("changed-lines".parse::<Scope>(), Ok(Scope::ChangedLines));
    assert_eq!("file".parse::<Scope>(), Ok(Scope::File));
    assert_eq!(Scope::default(), Scope::ChangedLines);
    let err = "lines".parse::<Scope>().unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unknown formatter scope `lines`: use \"changed-lines\"")
    );
    let scope: Scope = serde_json::from_str("\"file\"").unwrap();
    assert_eq!(scope, Scope::File);
    let err = serde_json::from_str::<Scope>("\"all\"").unwrap_err();
    assert!(
        err.to_string().contains("unknown formatter scope `all`"),
        "{err}"
    );
    assert_eq!(
        serde_json::to_string(&Scope::ChangedLines).unwrap(),
        "\"changed-lines\""
    );
}

/// A Python file with two unformatted statements, and the edit of the second.
const RUFF_OLD: &str = "x = [1,2]\n\ndef f():\n    return 1\n";
const RUFF_STAGED: &str = "x = [1,2]\n\ndef f():\n    return {'a':1}\n";

#[tokio::test]
async fn real_ruff_with_scope_file_and_changed_lines() {
    let Some(ruff) = crate::testing::ruff() else {
        return;
    };
    let (dir, file) = workspace();
    let in_place = [
        ruff.as_str(),
        "format",
        "--isolated",
        "--no-cache",
        "{path}",
    ];
    let whole = format(
        &formatter(&in_place, Scope::File),
        &file,
        Some(RUFF_OLD),
        RUFF_STAGED,
    )
    .await;
    assert_eq!(whole.note, None);
    assert_eq!(
        whole.text,
        "x = [1, 2]\n\n\ndef f():\n    return {\"a\": 1}\n"
    );
    let changed = format(
        &formatter(&in_place, Scope::ChangedLines),
        &file,
        Some(RUFF_OLD),
        RUFF_STAGED,
    )
    .await;
    assert_eq!(changed.note, None);
    assert_eq!(
        changed.text,
        "x = [1,2]\n\ndef f():\n    return {\"a\": 1}\n"
    );
    let stdin = [
        ruff.as_str(),
        "format",
        "--isolated",
        "--no-cache",
        "--stdin-filename",
        "{name}",
        "-",
    ];
    let piped = format(
        &formatter(&stdin, Scope::File),
        &file,
        Some(RUFF_OLD),
        RUFF_STAGED,
    )
    .await;
    assert_eq!(piped, whole);
    let broken = format(
        &formatter(&in_place, Scope::File),
        &file,
        Some(RUFF_OLD),
        "def f(:\n",
    )
    .await;
    assert_eq!(broken.text, "def f(:\n");
    assert!(
        broken
            .note
            .unwrap()
            .starts_with("formatter `ruff` exited 2 (")
    );
    assert_eq!(names(dir.path()), ["main.py"]);
}

#[tokio::test]
async fn a_formatter_leaving_a_background_process_leaves_none() {
    let (_dir, file) = workspace();
    let marker = "100.555";
    let script = format!("sleep {marker} > /dev/null 2>&1 & sed 's/=/ = /'");
    let f = formatter(&["sh", "-c", &script], Scope::File);
    let out = format(&f, &file, Some(OLD), STAGED).await;
    assert_eq!(out.text, "a = 1\nb = 5\nc = 3\n");
    assert_eq!(leftovers(marker), Vec::<u32>::new());
}
