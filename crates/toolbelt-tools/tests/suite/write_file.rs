//! `write_file`: every mode, the optimistic lock, encodings, line endings and file
//! modes kept, dry runs.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{ErrorCode, Registry, Session};
use toolbelt_fs::content_hash;

use super::{builtins, call, error_message, registry_with, success_data, violation_paths};

async fn write(registry: &Registry, args: Value) -> toolbelt_core::Envelope {
    call(registry, "write_file", args).await
}

/// Reads `path` through the tool, so that writes to it are allowed.
async fn read(registry: &Registry, path: &str) {
    success_data(&call(registry, "read_file", json!({"path": path})).await);
}

fn bytes(root: &Path, path: &str) -> Vec<u8> {
    fs::read(root.join(path)).unwrap()
}

#[tokio::test]
async fn creates_a_file_and_its_directories() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = write(
        &registry,
        json!({"path": "a/b/new.txt", "content": "hello\nworld\n"}),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "path": "a/b/new.txt", "mode": "overwrite", "created": true, "changed": true,
            "dry_run": false, "bytes": 12, "lines": 2,
            "content_hash": content_hash(b"hello\nworld\n"), "encoding": "utf-8",
            "line_ending": "lf", "created_dirs": ["a", "a/b"],
            "diff": "--- a/b/new.txt\n+++ a/b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
        })
    );
    insta::assert_snapshot!("write_file__created", env.text);
    assert_eq!(bytes(dir.path(), "a/b/new.txt"), b"hello\nworld\n");
}

#[tokio::test]
async fn create_dirs_false_refuses_a_missing_parent() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = write(
        &registry,
        json!({"path": "missing/new.txt", "content": "x", "create_dirs": false}),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "the directory missing does not exist"
    );
    assert!(!dir.path().join("missing").exists());
}

#[tokio::test]
async fn overwriting_an_unread_file_is_a_conflict() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "original\n").unwrap();
    let registry = builtins(dir.path());
    let env = write(&registry, json!({"path": "f.txt", "content": "new\n"})).await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(message.contains("has not been read yet"), "{message}");
    assert_eq!(bytes(dir.path(), "f.txt"), b"original\n");
}

#[tokio::test]
async fn a_stale_read_is_a_conflict_and_the_file_is_unchanged() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "f.txt").await;
    fs::write(dir.path().join("f.txt"), "one\nTWO\n").unwrap();
    let env = write(&registry, json!({"path": "f.txt", "content": "mine\n"})).await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(
        message.starts_with("f.txt changed since you last read it"),
        "{message}"
    );
    assert!(message.contains("-two\n+TWO"), "{message}");
    assert_eq!(bytes(dir.path(), "f.txt"), b"one\nTWO\n");
}

#[tokio::test]
async fn our_own_write_refreshes_the_stamp() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "1\n").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "f.txt").await;
    success_data(&write(&registry, json!({"path": "f.txt", "content": "2\n"})).await);
    success_data(&write(&registry, json!({"path": "f.txt", "content": "3\n"})).await);
    assert_eq!(bytes(dir.path(), "f.txt"), b"3\n");
}

#[tokio::test]
async fn expected_hash_stands_in_for_a_read() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "old\n").unwrap();
    let registry = builtins(dir.path());
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x\n", "expected_hash": "0000000000000000"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(
        message.contains("does not match expected_hash 0000000000000000"),
        "{message}"
    );
    assert_eq!(bytes(dir.path(), "f.txt"), b"old\n");
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x\n", "expected_hash": content_hash(b"old\n")}),
    )
    .await;
    success_data(&env);
    assert_eq!(bytes(dir.path(), "f.txt"), b"x\n");
}

#[tokio::test]
async fn create_new_on_an_existing_file_is_a_conflict() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "keep\n").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "f.txt").await;
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x", "mode": "create_new"}),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::Conflict),
        "f.txt already exists and mode create_new never replaces a file"
    );
    assert_eq!(bytes(dir.path(), "f.txt"), b"keep\n");
    let env = write(
        &registry,
        json!({"path": "g.txt", "content": "x", "mode": "create_new"}),
    )
    .await;
    assert_eq!(success_data(&env)["created"], json!(true));
}

#[tokio::test]
async fn append_needs_no_read_and_warns_when_joining_a_line() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("log.txt"), "a\nb").unwrap();
    let registry = builtins(dir.path());
    let env = write(
        &registry,
        json!({"path": "log.txt", "content": "c\n", "mode": "append"}),
    )
    .await;
    success_data(&env);
    assert!(
        env.text.contains(
            "note: the file did not end with a line break, so the content continues its last line"
        ),
        "{}",
        env.text
    );
    assert_eq!(bytes(dir.path(), "log.txt"), b"a\nbc\n");
    // Never read: the append did not make the file count as read.
    let env = write(&registry, json!({"path": "log.txt", "content": "z"})).await;
    error_message(&env, ErrorCode::Conflict);
    // Appending to a missing file creates it.
    let env = write(
        &registry,
        json!({"path": "new.log", "content": "first\n", "mode": "append"}),
    )
    .await;
    assert_eq!(success_data(&env)["created"], json!(true));
}

#[tokio::test]
async fn insert_before_a_line_and_at_the_end() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "1\n2\n3").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "f.txt").await;
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "1.5", "mode": "insert", "start_line": 2}),
    )
    .await;
    assert_eq!(
        success_data(&env)["diff"],
        json!(
            "--- f.txt\n+++ f.txt\n@@ -1,3 +1,4 @@\n 1\n+1.5\n 2\n 3\n\\ No newline at end of file\n"
        )
    );
    assert_eq!(bytes(dir.path(), "f.txt"), b"1\n1.5\n2\n3");
    // total + 1: after the last line, which gets its missing line break.
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "4\n", "mode": "insert", "start_line": 5}),
    )
    .await;
    success_data(&env);
    assert_eq!(bytes(dir.path(), "f.txt"), b"1\n1.5\n2\n3\n4\n");
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x", "mode": "insert", "start_line": 9}),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::InvalidParams),
        "start_line 9 is past the end: f.txt has 5 lines"
    );
    assert_eq!(
        env.error.as_ref().unwrap().hint.as_deref(),
        Some("insert before a line from 1 to 6")
    );
    // Into a missing file: only before line 1.
    let env = write(
        &registry,
        json!({"path": "fresh.txt", "content": "a", "mode": "insert", "start_line": 1}),
    )
    .await;
    success_data(&env);
    assert_eq!(bytes(dir.path(), "fresh.txt"), b"a");
}

#[tokio::test]
async fn replace_lines_replaces_and_deletes_ranges() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "a\nb\nc\nd\n").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "f.txt").await;
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "B\nC", "mode": "replace_lines", "start_line": 2, "end_line": 3}),
    )
    .await;
    assert_eq!(success_data(&env)["lines"], json!(4));
    assert_eq!(bytes(dir.path(), "f.txt"), b"a\nB\nC\nd\n");
    // One line by default; empty content deletes.
    success_data(
        &write(
            &registry,
            json!({"path": "f.txt", "content": "", "mode": "replace_lines", "start_line": 1}),
        )
        .await,
    );
    assert_eq!(bytes(dir.path(), "f.txt"), b"B\nC\nd\n");
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x", "mode": "replace_lines", "start_line": 3, "end_line": 7}),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::InvalidParams),
        "lines 3-7 are not all in the file: f.txt has 3 lines"
    );
    let env = write(
        &registry,
        json!({"path": "nope.txt", "content": "x", "mode": "replace_lines", "start_line": 1}),
    )
    .await;
    error_message(&env, ErrorCode::NotFound);
}

#[tokio::test]
async fn replacing_the_last_line_keeps_a_missing_final_line_break_missing() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "a\nb").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "f.txt").await;
    success_data(
        &write(
            &registry,
            json!({"path": "f.txt", "content": "B", "mode": "replace_lines", "start_line": 2}),
        )
        .await,
    );
    assert_eq!(bytes(dir.path(), "f.txt"), b"a\nB");
}

#[tokio::test]
async fn line_range_arguments_are_checked_before_anything_runs() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x", "mode": "replace_lines"}),
    )
    .await;
    assert_eq!(violation_paths(&env), ["start_line"]);
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x", "mode": "replace_lines", "start_line": 5, "end_line": 2}),
    )
    .await;
    assert_eq!(violation_paths(&env), ["end_line"]);
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x", "start_line": 2}),
    )
    .await;
    assert_eq!(violation_paths(&env), ["start_line"]);
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "x", "mode": "insert", "start_line": 1, "end_line": 2}),
    )
    .await;
    assert_eq!(violation_paths(&env), ["end_line"]);
    assert!(!dir.path().join("f.txt").exists());
}

#[tokio::test]
async fn crlf_files_stay_crlf_in_every_mode() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    fs::write(dir.path().join("w.txt"), "a\r\nb\r\n").unwrap();
    read(&registry, "w.txt").await;
    for (args, expected) in [
        (
            json!({"mode": "append", "content": "c\n"}),
            &b"a\r\nb\r\nc\r\n"[..],
        ),
        (
            json!({"mode": "insert", "start_line": 1, "content": "0\n"}),
            b"0\r\na\r\nb\r\nc\r\n",
        ),
        (
            json!({"mode": "replace_lines", "start_line": 2, "end_line": 3, "content": "A\nB"}),
            b"0\r\nA\r\nB\r\nc\r\n",
        ),
        (
            json!({"mode": "overwrite", "content": "x\ny\n"}),
            b"x\r\ny\r\n",
        ),
    ] {
        let mut args = args;
        args["path"] = json!("w.txt");
        let env = write(&registry, args.clone()).await;
        assert_eq!(success_data(&env)["line_ending"], json!("crlf"), "{args}");
        assert_eq!(bytes(dir.path(), "w.txt"), expected, "{args}");
    }
}

#[tokio::test]
async fn bom_and_utf16_are_kept() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    fs::write(dir.path().join("bom.txt"), b"\xEF\xBB\xBFold\n").unwrap();
    read(&registry, "bom.txt").await;
    let env = write(&registry, json!({"path": "bom.txt", "content": "new\n"})).await;
    assert_eq!(success_data(&env)["encoding"], json!("utf-8-bom"));
    assert_eq!(bytes(dir.path(), "bom.txt"), b"\xEF\xBB\xBFnew\n");

    let utf16 = |s: &str| {
        let mut out = vec![0xFF, 0xFE];
        for u in s.encode_utf16() {
            out.extend_from_slice(&u.to_le_bytes());
        }
        out
    };
    fs::write(dir.path().join("wide.txt"), utf16("één\r\n")).unwrap();
    read(&registry, "wide.txt").await;
    let env = write(
        &registry,
        json!({"path": "wide.txt", "content": "twee\n", "mode": "append"}),
    )
    .await;
    assert_eq!(success_data(&env)["encoding"], json!("utf-16le"));
    assert_eq!(bytes(dir.path(), "wide.txt"), utf16("één\r\ntwee\r\n"));
}

#[cfg(unix)]
#[tokio::test]
async fn file_mode_survives_an_overwrite() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new().unwrap();
    let script = dir.path().join("run.sh");
    fs::write(&script, "#!/bin/sh\necho old\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let registry = builtins(dir.path());
    read(&registry, "run.sh").await;
    success_data(
        &write(
            &registry,
            json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n"}),
        )
        .await,
    );
    let mode = fs::metadata(&script).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755);
    assert_eq!(bytes(dir.path(), "run.sh"), b"#!/bin/sh\necho new\n");
}

#[tokio::test]
async fn dry_run_shows_the_diff_and_writes_nothing() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "a\nb\nc\n").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "f.txt").await;
    let env = write(
        &registry,
        json!({"path": "f.txt", "content": "a\nB\nc\n", "dry_run": true}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["dry_run"], json!(true));
    assert_eq!(
        data["diff"],
        json!("--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
    );
    insta::assert_snapshot!("write_file__dry_run", env.text);
    assert_eq!(bytes(dir.path(), "f.txt"), b"a\nb\nc\n");
    // A dry run of a new file creates nothing either.
    let env = write(
        &registry,
        json!({"path": "d/new.txt", "content": "x\n", "dry_run": true}),
    )
    .await;
    assert_eq!(success_data(&env)["created_dirs"], json!(["d"]));
    assert!(!dir.path().join("d").exists());
}

#[tokio::test]
async fn identical_content_is_not_rewritten() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("f.txt"), "same\n").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "f.txt").await;
    let env = write(&registry, json!({"path": "f.txt", "content": "same\n"})).await;
    let data = success_data(&env);
    assert_eq!(
        (&data["changed"], &data["diff"]),
        (&json!(false), &Value::Null)
    );
    assert_eq!(
        env.text,
        format!(
            "Unchanged f.txt (1 line, 5 bytes), content_hash {}",
            content_hash(b"same\n")
        )
    );
}

#[tokio::test]
async fn binary_and_lossy_files_are_protected() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("blob.bin"), b"\0\x01\x02binary").unwrap();
    fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
    let registry = builtins(dir.path());
    read(&registry, "blob.bin").await;
    read(&registry, "latin1.txt").await;
    let env = write(&registry, json!({"path": "blob.bin", "content": "text"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::BinaryFile),
        "blob.bin is a binary file (binary data); write_file only changes text files"
    );
    let env = write(
        &registry,
        json!({"path": "latin1.txt", "content": "more", "mode": "append"}),
    )
    .await;
    error_message(&env, ErrorCode::BinaryFile);
    assert_eq!(bytes(dir.path(), "latin1.txt"), b"caf\xe9\n");
    // A whole overwrite replaces it.
    let env = write(
        &registry,
        json!({"path": "latin1.txt", "content": "café\n"}),
    )
    .await;
    success_data(&env);
    assert_eq!(bytes(dir.path(), "latin1.txt"), "café\n".as_bytes());
}

#[tokio::test]
async fn directories_and_escapes_are_refused() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("work");
    fs::create_dir_all(root.join("sub")).unwrap();
    let registry = builtins(&root);
    let env = write(&registry, json!({"path": "sub", "content": "x"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::InvalidParams),
        "sub is a directory; write_file writes files"
    );
    let env = write(&registry, json!({"path": "../evil.txt", "content": "x"})).await;
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
    assert!(!dir.path().join("evil.txt").exists());
}

#[tokio::test]
async fn a_large_diff_is_summarised() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let content: String = (0..1_000).map(|i| format!("line {i}\n")).collect();
    let env = write(&registry, json!({"path": "big.txt", "content": content})).await;
    let data = success_data(&env);
    assert_eq!(data["diff"], Value::Null);
    assert!(
        env.text
            .ends_with("[diff not shown: over 4,000 bytes; use dry_run to preview changes]")
    );
}

#[tokio::test]
async fn the_example_is_what_the_tool_returns() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let spec = registry.get("write_file").unwrap().spec().clone();
    for example in &spec.examples {
        let env = write(&registry, example.input.clone()).await;
        assert_eq!(success_data(&env), &example.output);
    }
}

/// A small model that writes a summary of its change ("edited client.py") over a
/// file it read is stopped: the error shows what would be lost, and the file is
/// unchanged; `overwrite: true` says it is meant.
#[tokio::test]
async fn replacing_a_file_with_much_less_needs_overwrite_true() {
    let dir = TempDir::new().unwrap();
    let original = "import os\n\n\ndef client():\n    return os.getcwd()\n\n\nprint(client())\n";
    fs::write(dir.path().join("client.py"), original).unwrap();
    let big = "x = 1\n".repeat(200);
    fs::write(dir.path().join("big.py"), &big).unwrap();
    let registry = builtins(dir.path());
    read(&registry, "client.py").await;
    read(&registry, "big.py").await;

    // One line for several.
    let env = write(
        &registry,
        json!({"path": "client.py", "content": "edited client.py"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(
        message.starts_with("not written: this would replace client.py (8 lines"),
        "{message}"
    );
    assert!(message.contains("def client():"), "{message}");
    assert!(
        env.error
            .as_ref()
            .unwrap()
            .hint
            .as_deref()
            .unwrap()
            .contains("overwrite: true")
    );
    assert_eq!(bytes(dir.path(), "client.py"), original.as_bytes());

    // Under a tenth of the size, over several lines.
    let env = write(
        &registry,
        json!({"path": "big.py", "content": "x = 2\ny = 3\n"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(message.contains("[... 188 more lines]"), "{message}");
    assert_eq!(bytes(dir.path(), "big.py"), big.as_bytes());

    // Stated: written. A dry run and a same-size rewrite need nothing.
    let env = write(
        &registry,
        json!({"path": "client.py", "content": "print('hi')\n", "dry_run": true}),
    )
    .await;
    success_data(&env);
    let env = write(
        &registry,
        json!({"path": "client.py", "content": "print('hi')\n", "overwrite": true}),
    )
    .await;
    success_data(&env);
    assert_eq!(bytes(dir.path(), "client.py"), b"print('hi')\n");
    let env = write(
        &registry,
        json!({"path": "big.py", "content": "y = 1\n".repeat(150)}),
    )
    .await;
    success_data(&env);
}

/// A small model that replaces a config file with one line is told to read the
/// file and change part of it with edit_file, never to add `overwrite: true`; and
/// `overwrite: true` replaces a file with much less only once the model read it
/// in this run (its own earlier write is not a read). Other callers keep
/// `overwrite: true` as the way to say it is meant.
#[tokio::test]
async fn a_small_model_overwrites_with_much_less_only_a_file_it_read() {
    let original = "[server]\nhost = \"0.0.0.0\"\nport = 8080\n\n[log]\nlevel = \"info\"\nfile = \"app.log\"\n";
    for small in [true, false] {
        let dir = TempDir::new().unwrap();
        let registry = registry_with(Session::new(dir.path()).with_small_model(small));
        // Written by the model itself: it has a stamp, but was not read.
        success_data(
            &write(
                &registry,
                json!({"path": "config.toml", "content": original}),
            )
            .await,
        );
        let short = json!({"path": "config.toml", "content": "port = 9090\n"});

        let env = write(&registry, short.clone()).await;
        let message = error_message(&env, ErrorCode::Conflict);
        assert!(
            message.starts_with("not written: this would replace config.toml (7 lines"),
            "{message}"
        );
        assert!(
            message.contains(
                "To change part of the file, read it with `read_file` and change that part with `edit_file`."
            ),
            "{message}"
        );
        let hint = env.error.as_ref().unwrap().hint.clone().unwrap();
        assert!(
            hint.starts_with(
                "read the file with `read_file`, then change the part you mean with `edit_file`"
            ),
            "{hint}"
        );
        assert_eq!(hint.contains("overwrite"), !small, "{hint}");

        let mut forced = short.clone();
        forced["overwrite"] = json!(true);
        let env = write(&registry, forced.clone()).await;
        if small {
            let message = error_message(&env, ErrorCode::Conflict);
            assert!(
                message
                    .starts_with("not written: overwrite: true would replace config.toml (7 lines"),
                "{message}"
            );
            assert!(
                message.ends_with(
                    "but config.toml has not been read in this run, so its content would be lost unseen"
                ),
                "{message}"
            );
            assert_eq!(
                env.error.as_ref().unwrap().hint.as_deref(),
                Some(
                    "read it with `read_file` first, then change the part you mean with `edit_file`"
                )
            );
            assert_eq!(
                fs::read_to_string(dir.path().join("config.toml")).unwrap(),
                original
            );
            read(&registry, "config.toml").await;
            let env = write(&registry, forced).await;
            success_data(&env);
        } else {
            success_data(&env);
        }
        assert_eq!(
            fs::read_to_string(dir.path().join("config.toml")).unwrap(),
            "port = 9090\n"
        );
    }
}

/// The refusal names read_file and edit_file as the model knows them: under the
/// claude profile, `Read` and `Edit`.
#[tokio::test]
async fn the_refusal_names_the_tools_as_the_profile_exposes_them() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
    let mut registry = registry_with(Session::new(dir.path()).with_small_model(true));
    registry.set_profile(toolbelt_tools::profiles::by_name("claude").unwrap());
    success_data(&call(&registry, "Read", json!({"path": "a.txt"})).await);
    let env = call(&registry, "Write", json!({"path": "a.txt", "content": "x"})).await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(
        message.contains("read it with `Read` and change that part with `Edit`"),
        "{message}"
    );
    assert!(
        env.text
            .contains("then change the part you mean with `Edit`"),
        "{}",
        env.text
    );
    assert!(!env.text.contains("edit_file"), "{}", env.text);
}
