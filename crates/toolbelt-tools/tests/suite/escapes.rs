//! Every file tool against the same escapes: nothing outside the workspace is
//! read, listed, searched or changed.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{Envelope, ErrorCode, Registry, Status};

use super::{builtins, call};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    registry: Registry,
}

const SECRET: &str = "TOP-SECRET-CONTENT\n";

/// `<tmp>/work` is the workspace, with `file_link` -> `<tmp>/outside/secret.txt`,
/// `dir_link` -> `<tmp>/outside/dir` and a relative `rel_link` -> `../outside/secret.txt`.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("work");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn inside() {}\n").unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(outside.join("dir/inner.txt"), SECRET).unwrap();
    symlink(outside.join("secret.txt"), root.join("file_link")).unwrap();
    symlink(outside.join("dir"), root.join("dir_link")).unwrap();
    symlink("../outside/secret.txt", root.join("rel_link")).unwrap();
    let registry = builtins(&root);
    Fixture {
        _tmp: tmp,
        root,
        outside,
        registry,
    }
}

impl Fixture {
    fn outside_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.outside.join("secret.txt")).unwrap(),
            SECRET
        );
        assert_eq!(
            std::fs::read_to_string(self.outside.join("dir/inner.txt")).unwrap(),
            SECRET
        );
        let names: Vec<String> = std::fs::read_dir(self.outside.join("dir"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["inner.txt"]);
    }
}

/// Paths that lead outside, each in its own way.
fn escaping_paths(f: &Fixture) -> Vec<String> {
    vec![
        "../outside/secret.txt".into(),
        f.outside.join("secret.txt").display().to_string(),
        format!("{}2/secret.txt", f.root.display()),
        "file_link".into(),
        "rel_link".into(),
        "dir_link/inner.txt".into(),
        "dir_link/new.txt".into(),
        "src/../../outside/secret.txt".into(),
    ]
}

#[track_caller]
fn refused(env: &Envelope, what: &str) {
    assert_eq!(
        env.status,
        Status::Error,
        "{what} was not refused: {env:#?}"
    );
    let code = env.error.as_ref().unwrap().code;
    assert!(
        matches!(code, ErrorCode::AccessDenied | ErrorCode::NotFound),
        "{what}: unexpected {code:?}: {}",
        env.text
    );
    assert!(
        !env.text.contains("TOP-SECRET"),
        "{what} leaked: {}",
        env.text
    );
    assert!(
        !env.data.to_string().contains("TOP-SECRET"),
        "{what} leaked data"
    );
}

#[tokio::test]
async fn read_file_refuses_every_escape() {
    let f = fixture();
    for path in escaping_paths(&f) {
        let env = call(&f.registry, "read_file", json!({"path": path})).await;
        refused(&env, &format!("read_file {path}"));
    }
}

#[tokio::test]
async fn write_file_refuses_every_escape() {
    let f = fixture();
    for path in escaping_paths(&f) {
        for mode in ["overwrite", "append", "create_new"] {
            let args =
                json!({"path": path, "content": "pwned\n", "mode": mode, "create_dirs": true});
            let env = call(&f.registry, "write_file", args).await;
            refused(&env, &format!("write_file {mode} {path}"));
        }
    }
    f.outside_untouched();
    // The links themselves are still links.
    assert!(
        f.root
            .join("file_link")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
}

#[tokio::test]
async fn edit_file_refuses_every_escape() {
    let f = fixture();
    for path in escaping_paths(&f) {
        let args = json!({
            "path": path,
            "old_string": "TOP-SECRET-CONTENT",
            "new_string": "pwned",
            "expected_hash": toolbelt_fs::content_hash(SECRET.as_bytes()),
        });
        let env = call(&f.registry, "edit_file", args).await;
        refused(&env, &format!("edit_file {path}"));
    }
    f.outside_untouched();
}

fn texts_of(env: &Envelope) -> String {
    format!("{}\n{}", env.text, env.data)
}

#[tokio::test]
async fn grep_never_searches_outside() {
    let f = fixture();
    // Over the whole workspace: the links are not followed, with or without ignore files.
    for args in [
        json!({"pattern": "TOP-SECRET"}),
        json!({"pattern": "TOP-SECRET", "include_ignored": true, "include_hidden": true}),
        json!({"pattern": "TOP-SECRET", "output_mode": "files_with_matches"}),
    ] {
        let env = call(&f.registry, "grep", args.clone()).await;
        assert_ne!(env.status, Status::Error, "{}", env.text);
        assert_eq!(env.data["match_count"], json!(0), "{args}: {}", env.text);
        assert_eq!(env.data["total"], json!(0), "{args}: {}", env.text);
        assert!(
            !env.text.contains("secret.txt") && !env.text.contains("inner.txt"),
            "{}",
            env.text
        );
    }
    // Pointed at the escapes directly: refused.
    for path in escaping_paths(&f) {
        if path.ends_with("new.txt") {
            continue;
        }
        let env = call(&f.registry, "grep", json!({"pattern": "TOP", "path": path})).await;
        refused(&env, &format!("grep in {path}"));
    }
    for path in ["dir_link", "..", "/"] {
        let env = call(&f.registry, "grep", json!({"pattern": "TOP", "path": path})).await;
        refused(&env, &format!("grep in {path}"));
    }
}

#[tokio::test]
async fn glob_never_lists_outside() {
    let f = fixture();
    for args in [
        json!({"pattern": "**/inner.txt"}),
        json!({"pattern": "**/*.txt", "respect_gitignore": false, "include_hidden": true}),
        json!({"pattern": "*", "include_dirs": true}),
    ] {
        let env = call(&f.registry, "glob", args.clone()).await;
        assert_ne!(env.status, Status::Error, "{}", env.text);
        let found: Vec<&str> = env.data["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert!(
            found
                .iter()
                .all(|p| !p.contains("inner.txt") && !p.contains("secret.txt")),
            "{args}: {found:?}"
        );
    }
    for path in ["dir_link", "..", "/", "../outside"] {
        let env = call(&f.registry, "glob", json!({"pattern": "*", "path": path})).await;
        refused(&env, &format!("glob in {path}"));
    }
}

#[tokio::test]
async fn list_dir_never_lists_outside() {
    let f = fixture();
    let env = call(&f.registry, "list_dir", json!({"path": ".", "depth": 5})).await;
    assert_eq!(env.status, Status::Success, "{}", env.text);
    assert!(!texts_of(&env).contains("inner.txt"), "{}", env.text);
    for path in ["dir_link", "..", "../outside", "/"] {
        let env = call(&f.registry, "list_dir", json!({"path": path})).await;
        refused(&env, &format!("list_dir {path}"));
    }
}

#[tokio::test]
async fn apply_patch_refuses_every_escape() {
    let f = fixture();
    for path in escaping_paths(&f) {
        let patch = format!("*** Begin Patch\n*** Add File: {path}\n+pwned\n*** End Patch\n");
        let env = call(&f.registry, "apply_patch", json!({"patch": patch})).await;
        assert_eq!(
            env.status,
            Status::Error,
            "apply_patch add {path}: {env:#?}"
        );
        let patch = format!(
            "*** Begin Patch\n*** Update File: {path}\n@@\n-TOP-SECRET-CONTENT\n+pwned\n*** End Patch\n"
        );
        let env = call(&f.registry, "apply_patch", json!({"patch": patch})).await;
        assert_eq!(
            env.status,
            Status::Error,
            "apply_patch update {path}: {env:#?}"
        );
        assert!(!env.text.contains("TOP-SECRET-CONTENT\n+"), "{}", env.text);
    }
    f.outside_untouched();
}

#[tokio::test]
async fn a_fifo_is_refused_within_a_second() {
    let f = fixture();
    let fifo = f.root.join("pipe");
    make_fifo(&fifo);
    let started = std::time::Instant::now();
    let env = call(&f.registry, "read_file", json!({"path": "pipe"})).await;
    assert_eq!(env.status, Status::Error, "{env:#?}");
    assert!(env.text.contains("FIFO"), "{}", env.text);
    let env = call(
        &f.registry,
        "write_file",
        json!({"path": "pipe", "content": "x", "expected_hash": "0000000000000000"}),
    )
    .await;
    assert_eq!(env.status, Status::Error, "{env:#?}");
    let env = call(&f.registry, "grep", json!({"pattern": "x"})).await;
    assert_ne!(env.status, Status::Error, "{}", env.text);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

fn make_fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}
