//! Where state lives: outside the workspace by default (a read-only call leaves the
//! workspace byte for byte as it was), a workspace's existing `.toolbelt/` store
//! kept, `doctor` saying where and why, the serve token 0600 and never inside a
//! root, and hidden from sandboxed commands.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::cli::{command, envelope, state_dir, stdout_json, toolbelt};

/// Every entry below `dir`: its kind, mode, size, modification time and bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (u32, i64, i64, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let bytes = if meta.is_file() {
                std::fs::read(&path).unwrap()
            } else {
                Vec::new()
            };
            if meta.is_dir() {
                stack.push(path.clone());
            }
            out.insert(
                path.strip_prefix(dir).unwrap().to_path_buf(),
                (meta.mode(), meta.mtime(), meta.mtime_nsec(), bytes),
            );
        }
    }
    out
}

#[test]
fn a_read_only_grep_leaves_the_workspace_byte_for_byte_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("src/deep/lib.rs"), "pub fn main_helper() {}\n").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    let before = (tree(root), std::fs::metadata(root).unwrap().mtime_nsec());
    let run = toolbelt(
        root,
        &["call", "grep", r#"{"pattern": "fn main"}"#, "--json"],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(envelope(&run)["data"]["match_count"], 2, "{}", run.stdout);
    let after = (tree(root), std::fs::metadata(root).unwrap().mtime_nsec());
    assert_eq!(before, after);
    assert!(!root.join(".toolbelt").exists());
    // The call was logged, in the user's state directory.
    assert!(state_dir(root).join("toolbelt.db").is_file());
}

#[test]
fn doctor_says_where_state_lives_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let report = stdout_json(&toolbelt(dir.path(), &["doctor", "--json"]));
    assert_eq!(report["state_dir"], json!(state_dir(dir.path())));
    assert_eq!(report["state_source"], "user");
    let text = toolbelt(dir.path(), &["doctor"]).stdout;
    assert!(
        text.contains(&format!(
            "state dir: {} (default: outside the workspace)",
            state_dir(dir.path()).display()
        )),
        "{text}"
    );
    let elsewhere = dir.path().join("elsewhere");
    let report = stdout_json(&toolbelt(
        dir.path(),
        &[
            "--state-dir",
            elsewhere.to_str().unwrap(),
            "doctor",
            "--json",
        ],
    ));
    assert_eq!(report["state_dir"], json!(elsewhere));
    assert_eq!(report["state_source"], "explicit");
}

#[test]
fn an_existing_workspace_store_is_still_used() {
    let dir = tempfile::tempdir().unwrap();
    let inside = dir.path().join(".toolbelt");
    // A workspace set up by an earlier version: its state in .toolbelt/.
    let run = toolbelt(
        dir.path(),
        &[
            "--state-dir",
            inside.to_str().unwrap(),
            "call",
            "create_project",
            r#"{"name": "kept across the move"}"#,
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(inside.join("toolbelt.db").is_file());
    let run = toolbelt(dir.path(), &["call", "list_projects", "{}"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout.contains("kept across the move"),
        "{}",
        run.stdout
    );
    let report = stdout_json(&toolbelt(dir.path(), &["doctor", "--json"]));
    assert_eq!(report["state_dir"], json!(inside));
    assert_eq!(report["state_source"], "workspace");
    assert!(!state_dir(dir.path()).exists());
}

/// Starts `toolbelt serve` on a free port with a generated token, waits until it
/// listens, and stops it; returns what it printed.
fn serve_once(root: &Path, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["serve", "--bind", "127.0.0.1:0"]);
    let mut child = command(root, &all)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut printed = String::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if line.starts_with("token: ") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    printed
}

#[test]
fn the_serve_token_is_0600_and_never_inside_a_root() {
    let dir = tempfile::tempdir().unwrap();
    let printed = serve_once(dir.path(), &[]);
    let file = state_dir(dir.path()).join("serve-token");
    let token = std::fs::read_to_string(&file).unwrap();
    assert!(
        printed.contains(&format!("token: {}", token.trim())),
        "{printed}"
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!dir.path().join(".toolbelt").exists());

    // State inside the workspace: the token still goes outside it.
    let inside = dir.path().join(".toolbelt");
    serve_once(dir.path(), &["--state-dir", inside.to_str().unwrap()]);
    assert!(!inside.join("serve-token").exists());
    assert!(file.is_file());
}

#[test]
fn a_sandboxed_command_cannot_read_the_serve_token() {
    let dir = tempfile::tempdir().unwrap();
    let sandboxed = ["--sandbox", "workspace-write"];
    let mut probe = sandboxed.to_vec();
    probe.extend(["doctor", "--json"]);
    let report = stdout_json(&toolbelt(dir.path(), &probe));
    if report["ok"] != true || report["sandbox"]["support"]["mount_namespace"] != true {
        eprintln!("skipping: workspace-write with a mount namespace is not enforced here");
        return;
    }
    serve_once(dir.path(), &[]);
    let token = state_dir(dir.path()).join("serve-token");
    assert!(token.is_file());
    std::fs::write(dir.path().join("notes.txt"), "readable\n").unwrap();
    let cat = |path: &Path| {
        let mut args = sandboxed.to_vec();
        let call = json!({"command": format!("cat {}", path.display())}).to_string();
        args.extend(["call", "bash", &call, "--json"]);
        envelope(&toolbelt(dir.path(), &args))
    };
    let env = cat(&token);
    assert_eq!(env["status"], "error", "{env:#}");
    assert_eq!(env["data"]["stdout"], "", "{env:#}");
    // Nor any other workspace's state, while the workspace reads as usual.
    let env = cat(&token
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("*/serve-token"));
    assert_eq!(env["status"], "error", "{env:#}");
    let env = cat(&dir.path().join("notes.txt"));
    assert_eq!(env["data"]["stdout"], "readable\n", "{env:#}");
    // Without a sandbox the file is there to read: the sandbox is what hides it.
    let call = json!({"command": format!("cat {}", token.display())}).to_string();
    let plain = envelope(&toolbelt(dir.path(), &["call", "bash", &call, "--json"]));
    assert_eq!(plain["status"], "success", "{plain:#}");
}
