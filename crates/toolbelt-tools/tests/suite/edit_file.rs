//! `edit_file` on real files in a temporary workspace, called through the registry.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{ErrorCode, Registry, Status};
use toolbelt_fs::content_hash;

use super::{builtins, call, error_message, success_data};

/// Writes `bytes` to `name` in `dir` and returns their content hash.
fn put(dir: &Path, name: &str, bytes: &[u8]) -> String {
    fs::write(dir.join(name), bytes).unwrap();
    content_hash(bytes)
}

async fn edit(registry: &Registry, args: Value) -> toolbelt_core::Envelope {
    call(registry, "edit_file", args).await
}

#[tokio::test]
async fn replaces_once_and_returns_the_diff_and_new_hash() {
    let dir = TempDir::new().unwrap();
    let old = "fn main() {\n    let total = 0;\n    println!(\"{total}\");\n}\n";
    let hash = put(dir.path(), "main.rs", old.as_bytes());
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "main.rs", "old_string": "    let total = 0;", "new_string": "    let total = 1;", "expected_hash": hash}),
    )
    .await;
    let new = old.replace("total = 0", "total = 1");
    assert_eq!(fs::read_to_string(dir.path().join("main.rs")).unwrap(), new);
    assert_eq!(
        success_data(&env),
        &json!({
            "path": "main.rs",
            "replacements": 1,
            "strategy": "exact",
            "lines_changed": [{"start": 2, "end": 2}],
            "added_lines": 1,
            "removed_lines": 1,
            "diff": "--- a/main.rs\n+++ b/main.rs\n@@ -1,4 +1,4 @@\n fn main() {\n-    let total = 0;\n+    let total = 1;\n     println!(\"{total}\");\n }\n",
            "content_hash": content_hash(new.as_bytes()),
            "dry_run": false
        })
    );
    insta::assert_snapshot!(
        "edit_file_text",
        env.text.replace(&content_hash(new.as_bytes()), "[hash]")
    );
    assert_eq!(env.stats.counters.get("replacements"), Some(&json!(1)));
}

#[tokio::test]
async fn a_file_never_read_is_a_conflict_and_stays_unchanged() {
    let dir = TempDir::new().unwrap();
    put(dir.path(), "a.txt", b"alpha\n");
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "alpha", "new_string": "beta"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(message.contains("has not been read"), "{message}");
    assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"alpha\n");
}

#[tokio::test]
async fn our_own_write_refreshes_the_stamp_and_a_change_behind_our_back_is_a_conflict() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "a.txt", b"one\ntwo\n");
    let registry = builtins(dir.path());
    let first = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "one", "new_string": "ONE", "expected_hash": hash}),
    )
    .await;
    success_data(&first);
    // No expected_hash: the stamp of our own write is used.
    let second = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "two", "new_string": "TWO"}),
    )
    .await;
    success_data(&second);
    assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"ONE\nTWO\n");
    // Someone else changes the file: the stale view is refused, the file left alone.
    fs::write(dir.path().join("a.txt"), b"ONE\nTWO\nthree\n").unwrap();
    let stale = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "ONE", "new_string": "1"}),
    )
    .await;
    let message = error_message(&stale, ErrorCode::Conflict);
    assert!(
        message.contains("changed since you last read it"),
        "{message}"
    );
    assert!(
        message.contains("+three"),
        "the error says what changed: {message}"
    );
    assert_eq!(
        fs::read(dir.path().join("a.txt")).unwrap(),
        b"ONE\nTWO\nthree\n"
    );
}

#[tokio::test]
async fn a_wrong_expected_hash_is_a_conflict() {
    let dir = TempDir::new().unwrap();
    put(dir.path(), "a.txt", b"x\n");
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "x", "new_string": "y", "expected_hash": "0000000000000000"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(
        message.contains("does not match expected_hash"),
        "{message}"
    );
    assert_eq!(env.data["current_hash"], json!(content_hash(b"x\n")));
    assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"x\n");
}

#[tokio::test]
async fn replace_all_replaces_every_occurrence() {
    let dir = TempDir::new().unwrap();
    let hash = put(
        dir.path(),
        "u.py",
        b"a = get(1)\nb = get(2)\nc = 3\nd = get(4)\n",
    );
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "u.py", "old_string": "get(", "new_string": "fetch(", "replace_all": true, "expected_hash": hash}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["replacements"], json!(3));
    assert_eq!(
        data["lines_changed"],
        json!([{"start": 1, "end": 1}, {"start": 2, "end": 2}, {"start": 4, "end": 4}])
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("u.py")).unwrap(),
        "a = fetch(1)\nb = fetch(2)\nc = 3\nd = fetch(4)\n"
    );
}

#[tokio::test]
async fn several_matches_without_replace_all_list_their_lines() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "u.py", b"x = 1\ny\nx = 1\n");
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "u.py", "old_string": "x = 1", "new_string": "x = 2", "expected_hash": hash}),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(
        message.contains("matches 2 places, at lines 1, 3"),
        "{message}"
    );
    assert_eq!(
        env.data,
        json!({"reason": "ambiguous", "count": 2, "lines": [1, 3], "strategy": "exact", "path": "u.py"})
    );
    assert_eq!(
        fs::read(dir.path().join("u.py")).unwrap(),
        b"x = 1\ny\nx = 1\n"
    );
}

#[tokio::test]
async fn not_found_gives_the_closest_region_and_what_differs() {
    let dir = TempDir::new().unwrap();
    let hash = put(
        dir.path(),
        "m.go",
        b"package m\n\nfunc f() {\n\tif ok {\n\t\treturn\n\t}\n}\n",
    );
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "m.go", "old_string": "    if ok {\n    return\n    }", "new_string": "x", "expected_hash": hash}),
    )
    .await;
    error_message(&env, ErrorCode::InvalidParams);
    assert_eq!(env.data["reason"], json!("not_found"));
    let closest = &env.data["closest"];
    assert_eq!(
        (closest["start_line"].clone(), closest["end_line"].clone()),
        (json!(4), json!(6))
    );
    assert_eq!(
        closest["snippet"],
        json!("     4\t\tif ok {\n     5\t\t\treturn\n     6\t\t}")
    );
    assert!(
        closest["differences"][0]
            .as_str()
            .unwrap()
            .starts_with("tabs in the file, spaces in old_string"),
        "{closest}"
    );
    insta::assert_snapshot!("edit_file_not_found", env.error.as_ref().unwrap().message);
}

#[tokio::test]
async fn identical_strings_are_invalid() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "a.txt", b"x\n");
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "x", "new_string": "x", "expected_hash": hash}),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(message.contains("identical"), "{message}");
    assert_eq!(env.data["reason"], json!("identical"));
}

#[tokio::test]
async fn an_empty_old_string_is_invalid() {
    let dir = TempDir::new().unwrap();
    put(dir.path(), "a.txt", b"x\n");
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "", "new_string": "y"}),
    )
    .await;
    error_message(&env, ErrorCode::InvalidParams);
    assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"x\n");
}

#[tokio::test]
async fn a_missing_file_is_not_found_and_points_to_write_file() {
    let dir = TempDir::new().unwrap();
    put(dir.path(), "notes.txt", b"x\n");
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "note.txt", "old_string": "x", "new_string": "y"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::NotFound);
    assert!(message.contains("use write_file to create it"), "{message}");
    assert_eq!(
        env.error.as_ref().unwrap().hint.as_deref(),
        Some("did you mean notes.txt?")
    );
}

#[tokio::test]
async fn binary_and_undecodable_files_are_refused() {
    let dir = TempDir::new().unwrap();
    let png = put(dir.path(), "i.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let junk = put(dir.path(), "j.txt", b"caf\xe9 \xff\xfe\xfd ok\n");
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "i.png", "old_string": "PNG", "new_string": "GIF", "expected_hash": png}),
    )
    .await;
    error_message(&env, ErrorCode::BinaryFile);
    let env = edit(
        &registry,
        json!({"path": "j.txt", "old_string": "ok", "new_string": "ko", "expected_hash": junk}),
    )
    .await;
    let message = error_message(&env, ErrorCode::BinaryFile);
    assert!(message.contains("not valid UTF-8"), "{message}");
    assert_eq!(
        fs::read(dir.path().join("j.txt")).unwrap(),
        b"caf\xe9 \xff\xfe\xfd ok\n"
    );
}

#[tokio::test]
async fn dry_run_returns_the_diff_and_leaves_the_file_and_stamp_alone() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "a.txt", b"red\ngreen\n");
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "red", "new_string": "blue", "dry_run": true, "expected_hash": hash}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["dry_run"], json!(true));
    assert_eq!(data["content_hash"], json!(content_hash(b"blue\ngreen\n")));
    assert_eq!(
        data["diff"],
        json!("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-red\n+blue\n green\n")
    );
    assert!(
        env.text.starts_with("Dry run, a.txt not changed."),
        "{}",
        env.text
    );
    assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"red\ngreen\n");
    // The dry run did not stamp the file as read.
    let env = edit(
        &registry,
        json!({"path": "a.txt", "old_string": "red", "new_string": "blue"}),
    )
    .await;
    error_message(&env, ErrorCode::Conflict);
}

#[tokio::test]
async fn crlf_file_edited_with_lf_strings_stays_crlf_and_byte_identical_around() {
    let dir = TempDir::new().unwrap();
    let before = "header\r\nfn a() {\r\n    1\r\n}\r\n\r\ntrailer \r\n";
    let hash = put(dir.path(), "w.rs", before.as_bytes());
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "w.rs", "old_string": "fn a() {\n    1\n}\n", "new_string": "fn a() {\n    2\n    3\n}\n", "expected_hash": hash}),
    )
    .await;
    assert_eq!(success_data(&env)["strategy"], json!("line_endings"));
    let after = fs::read(dir.path().join("w.rs")).unwrap();
    assert_eq!(
        String::from_utf8(after).unwrap(),
        "header\r\nfn a() {\r\n    2\r\n    3\r\n}\r\n\r\ntrailer \r\n"
    );
}

#[tokio::test]
async fn utf8_bom_and_file_mode_survive() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("run.sh");
    let hash = put(dir.path(), "run.sh", b"\xef\xbb\xbf#!/bin/sh\necho hi\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "run.sh", "old_string": "echo hi", "new_string": "echo hello", "expected_hash": hash}),
    )
    .await;
    success_data(&env);
    assert_eq!(
        fs::read(&path).unwrap(),
        b"\xef\xbb\xbf#!/bin/sh\necho hello\n"
    );
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o751
    );
}

#[tokio::test]
async fn utf16_files_are_edited_in_utf16() {
    let dir = TempDir::new().unwrap();
    let utf16 = |s: &str| -> Vec<u8> {
        let mut out = vec![0xff, 0xfe];
        for unit in s.encode_utf16() {
            out.extend_from_slice(&unit.to_le_bytes());
        }
        out
    };
    let hash = put(dir.path(), "w.txt", &utf16("größe = 1\r\n"));
    let registry = builtins(dir.path());
    let env = edit(
        &registry,
        json!({"path": "w.txt", "old_string": "größe = 1", "new_string": "größe = 2", "expected_hash": hash}),
    )
    .await;
    success_data(&env);
    assert_eq!(
        fs::read(dir.path().join("w.txt")).unwrap(),
        utf16("größe = 2\r\n")
    );
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused() {
    let outside = TempDir::new().unwrap();
    let dir = TempDir::new().unwrap();
    let hash = put(outside.path(), "secret.txt", b"keep\n");
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    let registry = builtins(dir.path());
    let absolute = outside.path().join("secret.txt").display().to_string();
    for path in ["../secret.txt", absolute.as_str(), "link.txt"] {
        let env = edit(
            &registry,
            json!({"path": path, "old_string": "keep", "new_string": "lost", "expected_hash": hash}),
        )
        .await;
        assert_eq!(env.status, Status::Error, "{path}: {env:#?}");
        assert_ne!(
            env.error_code(),
            Some(ErrorCode::Internal),
            "{path}: {env:#?}"
        );
    }
    assert_eq!(
        fs::read(outside.path().join("secret.txt")).unwrap(),
        b"keep\n"
    );
}

#[tokio::test]
async fn a_hard_link_to_an_outside_file_is_replaced_not_written_through() {
    let base = TempDir::new().unwrap();
    let outside = base.path().join("outside");
    let root = base.path().join("root");
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(&root).unwrap();
    let hash = put(&outside, "shared.txt", b"original\n");
    fs::hard_link(outside.join("shared.txt"), root.join("shared.txt")).unwrap();
    let registry = builtins(&root);
    let env = edit(
        &registry,
        json!({"path": "shared.txt", "old_string": "original", "new_string": "changed", "expected_hash": hash}),
    )
    .await;
    success_data(&env);
    assert_eq!(fs::read(root.join("shared.txt")).unwrap(), b"changed\n");
    assert_eq!(fs::read(outside.join("shared.txt")).unwrap(), b"original\n");
}

/// Eight tasks read the same content, then all edit their own line with its hash:
/// exactly one wins, the others get CONFLICT, and the file holds only the winner's edit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simultaneous_edits_from_one_read_let_exactly_one_through() {
    const TASKS: usize = 8;
    let dir = TempDir::new().unwrap();
    let initial: String = (0..TASKS).map(|i| format!("slot {i}: empty\n")).collect();
    let hash = put(dir.path(), "shared.txt", initial.as_bytes());
    let registry = Arc::new(builtins(dir.path()));
    let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
    let handles: Vec<_> = (0..TASKS)
        .map(|i| {
            let (registry, barrier, hash) =
                (Arc::clone(&registry), Arc::clone(&barrier), hash.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let env = call(
                    &registry,
                    "edit_file",
                    json!({
                        "path": "shared.txt",
                        "old_string": format!("slot {i}: empty"),
                        "new_string": format!("slot {i}: done"),
                        "expected_hash": hash,
                    }),
                )
                .await;
                (i, env)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for handle in handles {
        let (i, env) = handle.await.unwrap();
        if env.status == Status::Success {
            winners.push(i);
        } else {
            assert_eq!(env.error_code(), Some(ErrorCode::Conflict), "{env:#?}");
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let winner = winners[0];
    let expected = initial.replace(
        &format!("slot {winner}: empty"),
        &format!("slot {winner}: done"),
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("shared.txt")).unwrap(),
        expected
    );
}

/// Eight tasks each change their own line of one file, each time reading the file
/// and passing its hash, retrying on CONFLICT: every edit lands, none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_with_retries_never_lose_an_update() {
    const TASKS: usize = 8;
    const MAX_ATTEMPTS: usize = 200;
    let dir = TempDir::new().unwrap();
    let initial: String = (0..TASKS).map(|i| format!("slot {i}: empty\n")).collect();
    put(dir.path(), "shared.txt", initial.as_bytes());
    let registry = Arc::new(builtins(dir.path()));
    let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
    let mut handles = Vec::new();
    for i in 0..TASKS {
        let registry = Arc::clone(&registry);
        let barrier = Arc::clone(&barrier);
        let path = dir.path().join("shared.txt");
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            for _ in 0..MAX_ATTEMPTS {
                let bytes = fs::read(&path).unwrap();
                let env = call(
                    &registry,
                    "edit_file",
                    json!({
                        "path": "shared.txt",
                        "old_string": format!("slot {i}: empty"),
                        "new_string": format!("slot {i}: done by task {i}"),
                        "expected_hash": content_hash(&bytes),
                    }),
                )
                .await;
                if env.status == Status::Success {
                    return;
                }
                assert_eq!(env.error_code(), Some(ErrorCode::Conflict), "{env:#?}");
            }
            panic!("task {i} never got its edit in");
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    let expected: String = (0..TASKS)
        .map(|i| format!("slot {i}: done by task {i}\n"))
        .collect();
    assert_eq!(
        fs::read_to_string(dir.path().join("shared.txt")).unwrap(),
        expected
    );
}

/// The files the examples of `edit_file` and `multi_edit` were written against.
pub(super) fn example_files(dir: &Path) {
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(
        dir.join("src/main.rs"),
        "use std::io;\n\nfn main() {\n    let total = 0;\n    for i in 0..10 {\n        total += i;\n    }\n}\n",
    )
    .unwrap();
    let util: String = (1..=24)
        .map(|n| match n {
            7 => "def owner(uid):\n".to_owned(),
            8 => "    return fetch_user(uid)\n".to_owned(),
            21 => "user = fetch_user(1)\n".to_owned(),
            _ => format!("# line {n}\n"),
        })
        .collect();
    fs::write(dir.join("app/util.py"), util).unwrap();
    fs::write(
        dir.join("app/main.py"),
        "import os\n\n\ndef helper():\n    pass\n\n\ndef main():\n    return 0\n",
    )
    .unwrap();
}

/// Every example of the editing tools is what the tool returns on [`example_files`]
/// (stamped with expected_hash, as a read would do).
#[tokio::test]
async fn examples_are_what_the_tools_return() {
    for name in ["edit_file", "multi_edit"] {
        let probe = TempDir::new().unwrap();
        let spec = builtins(probe.path()).get(name).unwrap().spec().clone();
        for example in &spec.examples {
            let dir = TempDir::new().unwrap();
            example_files(dir.path());
            let registry = builtins(dir.path());
            let path = example.input["path"].as_str().unwrap();
            let mut input = example.input.clone();
            input["expected_hash"] = json!(content_hash(&fs::read(dir.path().join(path)).unwrap()));
            let env = call(&registry, name, input).await;
            assert_eq!(
                success_data(&env),
                &example.output,
                "{name}: {:?}",
                example.description
            );
        }
    }
}
