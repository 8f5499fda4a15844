//! `list_dir`: the tree in text, the paths in JSON, and every parameter.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::ErrorCode;

use super::{builtins, call, error_message, success_data};

/// A small project with a .gitignore, hidden files and a dependency directory.
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    let root = dir.path();
    for d in ["src/util", "docs", "node_modules/pkg", ".github"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (f, content) in [
        (".gitignore", "*.log\n"),
        (".github/ci.yml", "on: push\n"),
        ("Cargo.toml", "[package]\n"),
        ("README.md", "# demo\n"),
        ("debug.log", "noise\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/util/mod.rs", "\n"),
        ("docs/guide.md", "guide\n"),
        ("node_modules/pkg/index.js", "1\n"),
    ] {
        fs::write(root.join(f), content).unwrap();
    }
    dir
}

async fn list(root: &Path, args: Value) -> toolbelt_core::Envelope {
    call(&builtins(root), "list_dir", args).await
}

#[tokio::test]
async fn lists_the_working_directory_by_default() {
    let dir = project();
    let env = list(dir.path(), json!({})).await;
    insta::assert_snapshot!("list_dir__default", env.text);
    let data = success_data(&env);
    assert_eq!(
        (
            &data["path"],
            &data["total_entries"],
            &data["dirs"],
            &data["files"]
        ),
        (&json!("."), &json!(5), &json!(3), &json!(2))
    );
}

#[tokio::test]
async fn depth_two_as_text_and_json() {
    let dir = project();
    let env = list(dir.path(), json!({"path": ".", "depth": 2})).await;
    insta::assert_snapshot!("list_dir__depth_2", env.text);
    let data = success_data(&env);
    assert_eq!(
        data["entries"],
        json!([
            "docs/",
            "docs/guide.md",
            "node_modules/",
            "src/",
            "src/util/",
            "src/main.rs",
            "Cargo.toml",
            "README.md"
        ])
    );
    assert_eq!(data["collapsed"], json!(["node_modules/"]));
    assert_eq!(data.get("sizes"), None);
    assert_eq!(data.get("symlinks"), None);
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_are_entries_with_their_targets() {
    let dir = project();
    std::os::unix::fs::symlink("src/main.rs", dir.path().join("docs/main-link")).unwrap();
    let env = list(dir.path(), json!({"path": "docs"})).await;
    let data = success_data(&env);
    assert_eq!(data["entries"], json!(["guide.md", "main-link"]));
    assert_eq!(data["symlinks"], json!({"main-link": "src/main.rs"}));
    assert!(
        env.text.contains("main-link -> src/main.rs"),
        "{}",
        env.text
    );
}

#[tokio::test]
async fn hidden_and_ignored_entries_on_request() {
    let dir = project();
    let env = list(
        dir.path(),
        json!({"show_hidden": true, "respect_gitignore": false}),
    )
    .await;
    assert_eq!(
        env.text,
        "📁 ./
├── 📁 .github/
├── 📁 docs/
├── 📁 node_modules/ (not expanded)
├── 📁 src/
├── .gitignore
├── Cargo.toml
├── debug.log
└── README.md
[8 entries: 4 directories, 4 files]"
    );
}

#[tokio::test]
async fn pattern_dirs_only_and_sizes() {
    let dir = project();
    let env = list(
        dir.path(),
        json!({"path": "src", "depth": 3, "pattern": "*.rs", "sizes": true}),
    )
    .await;
    assert_eq!(
        env.text,
        "📁 src/
├── 📁 util/
│   └── mod.rs (1 B)
└── main.rs (13 B)
[3 entries: 1 directory, 2 files]"
    );
    assert_eq!(
        success_data(&env)["entries"],
        json!(["util/", "util/mod.rs", "main.rs"])
    );
    assert_eq!(
        success_data(&env)["sizes"],
        json!({"main.rs": 13, "util/mod.rs": 1})
    );
    let env = list(dir.path(), json!({"depth": 3, "dirs_only": true})).await;
    assert_eq!(
        env.text,
        "📁 ./
├── 📁 docs/
├── 📁 node_modules/ (not expanded)
└── 📁 src/
    └── 📁 util/
[4 entries: 4 directories, 0 files]"
    );
}

#[tokio::test]
async fn offset_and_limit_page_through_entries() {
    let dir = project();
    let env = list(dir.path(), json!({"depth": 3, "limit": 3})).await;
    let data = success_data(&env);
    assert_eq!(
        (&data["shown"], &data["total_entries"], &data["next_offset"]),
        (&json!(3), &json!(9), &json!(4))
    );
    assert!(
        env.text.ends_with(
            "[9 entries: 4 directories, 5 files; showing 3 of 9; continue with offset=4]"
        ),
        "{}",
        env.text
    );
    let env = list(dir.path(), json!({"depth": 3, "offset": 6, "limit": 2})).await;
    insta::assert_snapshot!("list_dir__page", env.text);
}

#[tokio::test]
async fn errors_say_what_to_do() {
    let dir = project();
    let env = list(dir.path(), json!({"path": "README.md"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::InvalidParams),
        "README.md is a regular file, not a directory"
    );
    let env = list(dir.path(), json!({"path": "srcs"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "srcs does not exist"
    );
    assert_eq!(
        env.error.as_ref().unwrap().hint.as_deref(),
        Some("did you mean src?")
    );
    // A swapped pair of letters in a short name is still recognised.
    let env = list(dir.path(), json!({"path": "scr"})).await;
    assert_eq!(
        env.error.as_ref().unwrap().hint.as_deref(),
        Some("did you mean src?")
    );
    let env = list(dir.path(), json!({"pattern": "[oops"})).await;
    assert!(
        error_message(&env, ErrorCode::InvalidParams).starts_with("invalid pattern \"[oops\""),
        "{env:?}"
    );
    let env = list(dir.path(), json!({"path": ".."})).await;
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
    let env = list(dir.path(), json!({"depth": 0})).await;
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
}

#[tokio::test]
async fn the_example_is_what_the_tool_returns() {
    let dir = TempDir::new().unwrap();
    fs::create_dir(dir.path().join("src")).unwrap();
    for f in ["src/main.rs", "Cargo.toml", "README.md"] {
        fs::write(dir.path().join(f), "").unwrap();
    }
    let registry = builtins(dir.path());
    let spec = registry.get("list_dir").unwrap().spec().clone();
    for example in &spec.examples {
        let env = call(&registry, "list_dir", example.input.clone()).await;
        assert_eq!(success_data(&env), &example.output);
    }
}
