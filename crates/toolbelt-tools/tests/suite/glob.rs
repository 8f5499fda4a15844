//! `glob` through the registry: every parameter, the text a model reads, the
//! structured data, and the workspace boundary.

use std::os::unix::fs::symlink;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{Category, Envelope, ErrorCode, Registry, Status};

use super::{builtins, call, error_message, success_data};

/// Files listed oldest first: each is 10 s newer than the one before.
const FILES: [&str; 9] = [
    ".gitignore",
    "Cargo.toml",
    "src/main.rs",
    "src/net/http.rs",
    "crates/core/Cargo.toml",
    "target/debug/build.rs",
    ".github/workflows/ci.yml",
    ".env",
    "src/lib.rs",
];

fn project() -> (TempDir, Registry) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let t0 = SystemTime::now() - Duration::from_secs(3600);
    for (i, path) in FILES.iter().enumerate() {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let content = if *path == ".gitignore" {
            "target/\n"
        } else {
            ""
        };
        std::fs::write(&p, content).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(t0 + Duration::from_secs(10 * i as u64))
            .unwrap();
    }
    let registry = builtins(dir.path());
    (dir, registry)
}

async fn glob(registry: &Registry, args: Value) -> Envelope {
    call(registry, "glob", args).await
}

/// The listed paths of a successful call.
async fn paths(registry: &Registry, args: Value) -> Vec<String> {
    let env = glob(registry, args).await;
    success_data(&env)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn newest_first_by_default_with_a_summary_line() {
    let (_dir, registry) = project();
    let env = glob(&registry, json!({"pattern": "*.rs"})).await;
    let data = success_data(&env);
    assert_eq!(
        env.text,
        "src/lib.rs\nsrc/net/http.rs\nsrc/main.rs\nFound 3 files matching \"*.rs\" in . (newest first).\n"
    );
    let first = data["files"][0].clone();
    assert_eq!(first["path"], json!("src/lib.rs"));
    let mtime = SystemTime::now() - Duration::from_secs(3600) + Duration::from_secs(80);
    let expected = mtime.duration_since(UNIX_EPOCH).unwrap().as_secs();
    assert!(
        first["modified_unix"].as_u64().unwrap().abs_diff(expected) <= 2,
        "{first}"
    );
    assert_eq!(
        (data["total"].clone(), data["sort"].clone()),
        (json!(3), json!("modified"))
    );
}

#[tokio::test]
async fn sort_by_path_and_patterns_with_and_without_a_slash() {
    let (_dir, registry) = project();
    assert_eq!(
        paths(&registry, json!({"pattern": "Cargo.toml", "sort": "path"})).await,
        ["Cargo.toml", "crates/core/Cargo.toml"]
    );
    assert_eq!(
        paths(&registry, json!({"pattern": "*.toml", "sort": "path"})).await,
        ["Cargo.toml", "crates/core/Cargo.toml"]
    );
    assert_eq!(
        paths(&registry, json!({"pattern": "src/*.rs", "sort": "path"})).await,
        ["src/lib.rs", "src/main.rs"]
    );
    assert_eq!(
        paths(&registry, json!({"pattern": "src/**/*.rs", "sort": "path"})).await,
        ["src/lib.rs", "src/main.rs", "src/net/http.rs"]
    );
    let env = glob(&registry, json!({"pattern": "*.toml", "sort": "path"})).await;
    assert_eq!(
        success_data(&env)["files"][0],
        json!({"path": "Cargo.toml"}),
        "no mtime when sorted by path"
    );
}

#[tokio::test]
async fn path_is_the_directory_searched() {
    let (_dir, registry) = project();
    assert_eq!(
        paths(&registry, json!({"pattern": "*.rs", "path": "src/net"})).await,
        ["src/net/http.rs"]
    );
    assert_eq!(
        paths(&registry, json!({"pattern": "net/*.rs", "path": "src"})).await,
        ["src/net/http.rs"]
    );
}

#[tokio::test]
async fn an_absolute_pattern_becomes_path_and_pattern() {
    let (dir, registry) = project();
    let pattern = format!(
        "{}/src/**/*.rs",
        dir.path().canonicalize().unwrap().display()
    );
    let env = glob(&registry, json!({"pattern": pattern, "sort": "path"})).await;
    assert_eq!(
        env.text,
        "src/lib.rs\nsrc/main.rs\nsrc/net/http.rs\nFound 3 files matching \"**/*.rs\" in src (by path).\n"
    );
    let env = glob(&registry, json!({"pattern": pattern, "path": "src"})).await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(
        message.contains("is absolute while path is given"),
        "{message}"
    );
}

#[tokio::test]
async fn include_dirs_lists_directories() {
    let (_dir, registry) = project();
    let env = glob(
        &registry,
        json!({"pattern": "*c*", "include_dirs": true, "sort": "path"}),
    )
    .await;
    assert_eq!(
        env.text,
        "crates/\ncrates/core/\nsrc/\nFound 3 entries matching \"*c*\" in . (by path).\n"
    );
    assert_eq!(
        success_data(&env)["files"][0],
        json!({"path": "crates", "is_dir": true})
    );
    assert_eq!(
        paths(&registry, json!({"pattern": "*c*", "sort": "path"})).await,
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn limit_and_offset_page_the_list() {
    let (_dir, registry) = project();
    let env = glob(
        &registry,
        json!({"pattern": "*", "sort": "path", "limit": 2}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(
        (
            data["shown"].clone(),
            data["total"].clone(),
            data["next_offset"].clone()
        ),
        (json!(2), json!(5), json!(2))
    );
    assert!(
        env.text
            .ends_with("Showing 1-2 of 5; continue with offset=2.\n"),
        "{}",
        env.text
    );
    assert_eq!(
        paths(
            &registry,
            json!({"pattern": "*", "sort": "path", "limit": 2, "offset": 2})
        )
        .await,
        ["src/lib.rs", "src/main.rs"]
    );
    assert_eq!(
        paths(&registry, json!({"pattern": "*", "limit": 0}))
            .await
            .len(),
        5
    );
}

#[tokio::test]
async fn gitignore_and_hidden_files_on_request() {
    let (_dir, registry) = project();
    assert_eq!(
        paths(&registry, json!({"pattern": "build.rs"})).await,
        Vec::<String>::new()
    );
    assert_eq!(
        paths(
            &registry,
            json!({"pattern": "build.rs", "respect_gitignore": false})
        )
        .await,
        ["target/debug/build.rs"]
    );
    assert_eq!(
        paths(&registry, json!({"pattern": "*.yml"})).await,
        Vec::<String>::new()
    );
    assert_eq!(
        paths(
            &registry,
            json!({"pattern": "*.yml", "include_hidden": true})
        )
        .await,
        [".github/workflows/ci.yml"]
    );
    assert_eq!(
        paths(&registry, json!({"pattern": ".github/**/*.yml"})).await,
        [".github/workflows/ci.yml"]
    );
}

#[tokio::test]
async fn secret_files_are_not_listed_but_counted() {
    let (_dir, registry) = project();
    let env = glob(&registry, json!({"pattern": ".env"})).await;
    let data = success_data(&env);
    assert_eq!(
        (data["total"].clone(), data["secret_skipped"].clone()),
        (json!(0), json!(1))
    );
    assert!(
        env.text
            .contains("1 secret file (.env, keys, credentials) not listed."),
        "{}",
        env.text
    );
}

#[tokio::test]
async fn nothing_found_says_what_was_skipped() {
    let (_dir, registry) = project();
    let env = glob(&registry, json!({"pattern": "*.java"})).await;
    assert_eq!(env.status, Status::Success);
    assert_eq!(
        env.text,
        "No files in . match \"*.java\". Files excluded by .gitignore and hidden files were skipped \
         (respect_gitignore=false / include_hidden list them).\n"
    );
}

#[tokio::test]
async fn a_bad_pattern_is_invalid_params() {
    let (_dir, registry) = project();
    let env = glob(&registry, json!({"pattern": "src/[a"})).await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(message.starts_with("invalid glob \"src/[a\""), "{message}");
}

#[tokio::test]
async fn a_spent_time_budget_returns_partial_results_or_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    super::wide_tree(dir.path(), "");
    let registry = builtins(dir.path());
    let env = glob(
        &registry,
        json!({"pattern": "*.txt", "timeout_ms": 1, "limit": 0}),
    )
    .await;
    match env.status {
        Status::Partial => {
            assert_eq!(env.data["timed_out"], json!(true));
            assert!(env.text.contains("Timed out after 1 ms"), "{}", env.text);
            assert!(env.data["total"].as_u64().unwrap() < 3000);
        }
        _ => {
            let message = error_message(&env, ErrorCode::Timeout);
            assert!(message.contains("1 ms budget"), "{message}");
        }
    }
}

#[tokio::test]
async fn links_leading_outside_are_not_listed_and_escapes_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("work");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::write(outside.join("secret.rs"), "").unwrap();
    std::fs::write(outside.join("dir/inner.rs"), "").unwrap();
    symlink(outside.join("secret.rs"), root.join("file_link.rs")).unwrap();
    symlink(outside.join("dir"), root.join("dir_link")).unwrap();
    let registry = builtins(&root);
    assert_eq!(
        paths(
            &registry,
            json!({"pattern": "*.rs", "respect_gitignore": false})
        )
        .await,
        ["src/lib.rs"]
    );
    assert_eq!(
        paths(&registry, json!({"pattern": "dir_link/*.rs"})).await,
        Vec::<String>::new()
    );
    assert_eq!(
        paths(
            &registry,
            json!({"pattern": "*link*", "include_dirs": true})
        )
        .await,
        Vec::<String>::new()
    );
    for path in ["..", outside.to_str().unwrap(), "dir_link", "../outside"] {
        let env = glob(&registry, json!({"pattern": "*", "path": path})).await;
        error_message(&env, ErrorCode::AccessDenied);
        assert!(!env.text.contains("inner.rs"), "{path}: {}", env.text);
    }
    let pattern = format!("{}/*.rs", outside.display());
    let env = glob(&registry, json!({"pattern": pattern})).await;
    error_message(&env, ErrorCode::AccessDenied);
}

#[test]
fn spec_is_a_read_only_search_tool_keyed_by_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let tool = registry.get("glob").unwrap();
    let spec = tool.spec();
    assert_eq!(spec.category, Category::Search);
    assert_eq!(spec.permissions, ["fs:read"]);
    assert!(spec.hints.read_only);
    assert_eq!(
        tool.key_argument(&json!({"pattern": "**/*.rs"})),
        Some("**/*.rs".into())
    );
    assert_eq!(
        tool.permission_subject(&json!({"pattern": "*.rs", "path": "src"})),
        Some("src".into())
    );
}

#[tokio::test]
async fn the_examples_hold_on_the_tree_they_describe() {
    let dir = tempfile::tempdir().unwrap();
    let spec = builtins(dir.path()).get("glob").unwrap().spec().clone();
    for example in &spec.examples {
        let tmp = tempfile::tempdir().unwrap();
        for file in example.output["files"].as_array().unwrap() {
            let p = tmp.path().join(file["path"].as_str().unwrap());
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "").unwrap();
            if let Some(secs) = file["modified_unix"].as_u64() {
                let f = std::fs::File::options().write(true).open(&p).unwrap();
                f.set_modified(UNIX_EPOCH + Duration::from_secs(secs))
                    .unwrap();
            }
        }
        let env = glob(&builtins(tmp.path()), example.input.clone()).await;
        assert_eq!(
            success_data(&env),
            &example.output,
            "{}",
            example.description
        );
    }
}
