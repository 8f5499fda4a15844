//! The temporary files of atomic writes a killed `toolbelt` left in the workspace:
//! removed at the next start, and nothing else.

use std::path::Path;
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use tempfile::TempDir;

use super::cli::{envelope, state_dir, toolbelt};

/// How old the planted files are: from a run long gone.
const AGE: Duration = Duration::from_secs(3600);

/// A file at `path` last modified [`AGE`] ago.
fn plant(path: &Path) {
    std::fs::write(path, "left over\n").unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - AGE).unwrap();
}

#[test]
fn a_killed_writes_temp_file_is_removed_at_the_next_start() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(
        dir.path(),
        &[
            "call",
            "write_file",
            r#"{"path": "sub/notes.md", "content": "kept\n"}"#,
            "--json",
        ],
    );
    assert_eq!(envelope(&run)["status"], "success", "{run:#?}");
    // The directory written to is in the journal.
    let journal = state_dir(dir.path()).join("temp-dirs");
    let sub = dir.path().canonicalize().unwrap().join("sub");
    let noted = std::fs::read_to_string(&journal).unwrap();
    assert!(
        noted
            .lines()
            .any(|l| l.ends_with(&format!(" {}", sub.display()))),
        "{noted}"
    );
    // What a SIGKILL mid-write leaves beside the file: the staged new content, and
    // a commit's backup.
    let id = "0123456789abcdef0123456789abcdef";
    let leftovers = [
        sub.join(format!(".tb-{id}.tmp")),
        sub.join(format!(".tb-{id}.bak")),
    ];
    // A user's files that look alike, as old, and a temporary-looking file in a
    // directory toolbelt never wrote to.
    let kept = [
        sub.join(".tb-notes.txt"),
        sub.join(format!(".tb-{}.tmp", id.to_uppercase())),
        sub.join(format!(".tb-{id}.txt")),
        dir.path().join(format!(".tb-{id}.tmp")),
    ];
    for path in leftovers.iter().chain(&kept) {
        plant(path);
    }

    let run = toolbelt(
        dir.path(),
        &["call", "read_file", r#"{"path": "sub/notes.md"}"#, "--json"],
    );
    assert_eq!(envelope(&run)["status"], "success", "{run:#?}");
    for path in &leftovers {
        assert!(!path.exists(), "{} was left", path.display());
    }
    for path in &kept {
        assert_eq!(std::fs::read_to_string(path).unwrap(), "left over\n");
    }
    assert_eq!(
        std::fs::read_to_string(sub.join("notes.md")).unwrap(),
        "kept\n"
    );
    // Swept clean by a run that wrote nothing: the journal is empty again.
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), "");
}
