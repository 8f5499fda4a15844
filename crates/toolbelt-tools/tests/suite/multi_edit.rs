//! `multi_edit` on real files in a temporary workspace, called through the registry.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::json;
use tempfile::TempDir;
use toolbelt_core::ErrorCode;
use toolbelt_fs::content_hash;

use super::{builtins, call, error_message, success_data};

fn put(dir: &Path, name: &str, bytes: &[u8]) -> String {
    fs::write(dir.join(name), bytes).unwrap();
    content_hash(bytes)
}

const SOURCE: &str = "import os\n\ndef main():\n    path = os.getcwd()\n    return 0\n";

#[tokio::test]
async fn applies_every_edit_in_order() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "main.py", SOURCE.as_bytes());
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "multi_edit",
        json!({
            "path": "main.py",
            "expected_hash": hash,
            "edits": [
                {"old_string": "import os\n", "new_string": "import os\nimport sys\n"},
                // Sees the text as the first edit left it.
                {"old_string": "import sys\n\n", "new_string": "import sys\n\nVERSION = 1\n\n"},
                {"old_string": "os.", "new_string": "os.path.", "replace_all": true},
                {"old_string": "  return 0", "new_string": "  sys.exit(0)"}
            ]
        }),
    )
    .await;
    let after = "import os\nimport sys\n\nVERSION = 1\n\ndef main():\n    path = os.path.getcwd()\n    sys.exit(0)\n";
    assert_eq!(
        fs::read_to_string(dir.path().join("main.py")).unwrap(),
        after
    );
    let data = success_data(&env);
    assert_eq!(
        data["edits"],
        json!([
            {"replacements": 1, "strategy": "exact", "lines_changed": [{"start": 1, "end": 2}]},
            {"replacements": 1, "strategy": "exact", "lines_changed": [{"start": 2, "end": 5}]},
            {"replacements": 1, "strategy": "exact", "lines_changed": [{"start": 7, "end": 7}]},
            {"replacements": 1, "strategy": "exact", "lines_changed": [{"start": 8, "end": 8}]}
        ])
    );
    assert_eq!(data["replacements"], json!(4));
    assert_eq!(data["content_hash"], json!(content_hash(after.as_bytes())));
    assert_eq!(
        (data["added_lines"].clone(), data["removed_lines"].clone()),
        (json!(5), json!(2))
    );
    insta::assert_snapshot!(
        "multi_edit_text",
        env.text.replace(&content_hash(after.as_bytes()), "[hash]")
    );
}

#[tokio::test]
async fn a_failing_third_edit_leaves_the_file_unchanged() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "main.py", SOURCE.as_bytes());
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "multi_edit",
        json!({
            "path": "main.py",
            "expected_hash": hash,
            "edits": [
                {"old_string": "import os", "new_string": "import sys"},
                {"old_string": "return 0", "new_string": "return 1"},
                // Gone: the first edit replaced it.
                {"old_string": "import os", "new_string": "import pathlib"}
            ]
        }),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(
        message.starts_with("main.py: edits[2] failed, so none of the edits was applied"),
        "{message}"
    );
    assert_eq!(env.data["edit_index"], json!(2));
    assert_eq!(env.data["reason"], json!("not_found"));
    assert_eq!(
        fs::read_to_string(dir.path().join("main.py")).unwrap(),
        SOURCE
    );
}

#[tokio::test]
async fn an_edit_that_no_longer_finds_its_text_names_its_index() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "main.py", SOURCE.as_bytes());
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "multi_edit",
        json!({
            "path": "main.py",
            "expected_hash": hash,
            "edits": [
                {"old_string": "return 0", "new_string": "return 1"},
                {"old_string": "return 0", "new_string": "return 2"}
            ]
        }),
    )
    .await;
    error_message(&env, ErrorCode::InvalidParams);
    assert_eq!(env.data["edit_index"], json!(1));
    assert_eq!(env.data["reason"], json!("not_found"));
    assert_eq!(env.data["closest"]["start_line"], json!(5));
    assert_eq!(
        fs::read_to_string(dir.path().join("main.py")).unwrap(),
        SOURCE
    );
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "main.py", SOURCE.as_bytes());
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "multi_edit",
        json!({
            "path": "main.py",
            "expected_hash": hash,
            "dry_run": true,
            "edits": [{"old_string": "return 0", "new_string": "return 1"}]
        }),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["dry_run"], json!(true));
    assert_eq!(
        data["diff"],
        json!(
            "--- a/main.py\n+++ b/main.py\n@@ -2,4 +2,4 @@\n \n def main():\n     path = os.getcwd()\n-    return 0\n+    return 1\n"
        )
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("main.py")).unwrap(),
        SOURCE
    );
}

#[tokio::test]
async fn a_stale_view_is_a_conflict() {
    let dir = TempDir::new().unwrap();
    let hash = put(dir.path(), "main.py", SOURCE.as_bytes());
    fs::write(
        dir.path().join("main.py"),
        format!("{SOURCE}# edited elsewhere\n"),
    )
    .unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "multi_edit",
        json!({
            "path": "main.py",
            "expected_hash": hash,
            "edits": [{"old_string": "return 0", "new_string": "return 1"}]
        }),
    )
    .await;
    error_message(&env, ErrorCode::Conflict);
    assert_eq!(
        fs::read_to_string(dir.path().join("main.py")).unwrap(),
        format!("{SOURCE}# edited elsewhere\n")
    );
}

#[tokio::test]
async fn an_empty_edit_list_is_invalid() {
    let dir = TempDir::new().unwrap();
    put(dir.path(), "main.py", SOURCE.as_bytes());
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "multi_edit",
        json!({"path": "main.py", "edits": []}),
    )
    .await;
    error_message(&env, ErrorCode::InvalidParams);
}

#[tokio::test]
async fn a_missing_file_is_not_found() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "multi_edit",
        json!({"path": "nope.py", "edits": [{"old_string": "a", "new_string": "b"}]}),
    )
    .await;
    error_message(&env, ErrorCode::NotFound);
}
