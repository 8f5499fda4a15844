//! The store as the binary uses it: a bad database stops a server at start and is
//! left untouched; what the tools store survives a restart.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `toolbelt <args> --root <root>` with standard input closed.
fn toolbelt(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(args)
        .arg("--root")
        .arg(root)
        .env_remove("TOOLBELT_ROOT")
        .env_remove("TOOLBELT_STATE_DIR")
        .env_remove("TOOLBELT_CONFIG")
        .env_remove("TOOLBELT_DATABASE_URL")
        .env_remove("TOOLBELT_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The bytes of every file in `dir`.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    all.sort();
    all
}

/// Runs the servers against the store in `root` and checks each refuses to start,
/// says `expected`, and leaves the state directory as it was.
fn servers_refuse(root: &Path, expected: &[&str]) {
    let state = root.join(".toolbelt");
    let before = files(&state);
    for args in [
        &["mcp"][..],
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--token",
            "a-token-for-the-test",
        ][..],
    ] {
        let out = toolbelt(root, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for e in expected {
            assert!(stderr.contains(e), "{args:?}: {e:?} not in {stderr}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(files(&state) == before, "{args:?} touched the store");
    }
}

#[test]
fn a_corrupt_store_stops_the_servers_at_start_and_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".toolbelt")).unwrap();
    std::fs::write(
        dir.path().join(".toolbelt/toolbelt.db"),
        b"not a database, a text file in its place\n".repeat(200),
    )
    .unwrap();
    servers_refuse(
        dir.path(),
        &["the store cannot be opened", "is corrupt", "left untouched"],
    );
}

#[test]
fn a_newer_store_stops_the_servers_at_start_and_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // A store made by this build (a server creates it at start, then stops at the
    // end of its input), then marked as written by a future schema.
    toolbelt(dir.path(), &["mcp"]);
    let db = dir.path().join(".toolbelt/toolbelt.db");
    assert!(db.is_file());
    let out = Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=DELETE'); c.execute('PRAGMA user_version=42'); c.commit(); c.close()",
        )
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    servers_refuse(
        dir.path(),
        &["schema version 42", "upgrade toolbelt", "left untouched"],
    );
    // doctor says so too, and fails.
    let out = toolbelt(dir.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("schema version 42"));
}
