//! `apply_patch` on real directories: all files or none, the optimistic lock,
//! bytes kept, escapes refused.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{ErrorCode, FileStamps, Registry, Session, Stamp};
use toolbelt_fs::content_hash;

use super::{call, error_message, registry_with, success_data};

/// A workspace with its registry and the session's read stamps.
struct Workspace {
    dir: TempDir,
    root: PathBuf,
    registry: Registry,
    stamps: Arc<FileStamps>,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let session = Session::new(&root);
        let stamps = Arc::clone(session.file_stamps());
        Workspace {
            registry: registry_with(session),
            dir,
            root,
            stamps,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Creates a file and records it as read by the agent.
    fn seen(&self, rel: &str, bytes: &[u8]) {
        self.write(rel, bytes);
        self.mark_read(rel);
    }

    /// Records the file's current content as the agent's last read of it.
    fn mark_read(&self, rel: &str) {
        let path = self.path(rel);
        let bytes = fs::read(&path).unwrap();
        self.stamps
            .record(&path, Stamp::new(content_hash(&bytes), &bytes));
    }

    fn write(&self, rel: &str, bytes: &[u8]) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }

    fn read(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.path(rel)).ok()
    }

    /// Every file under the root (but the state dir), with its content.
    fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, Vec<u8>)>) {
            for entry in fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                if rel.starts_with(".toolbelt") {
                    continue;
                }
                if path.is_dir() {
                    out.push((format!("{rel}/"), Vec::new()));
                    walk(&path, root, out);
                } else {
                    out.push((rel, fs::read(&path).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &self.root, &mut out);
        out.sort();
        out
    }

    async fn patch(&self, patch: &str) -> toolbelt_core::Envelope {
        call(&self.registry, "apply_patch", json!({ "patch": patch })).await
    }
}

fn wrap(body: &str) -> String {
    format!("*** Begin Patch\n{body}\n*** End Patch\n")
}

fn hash(text: &str) -> Value {
    json!(content_hash(text.as_bytes()))
}

#[tokio::test]
async fn add_creates_missing_parent_directories() {
    let ws = Workspace::new();
    let env = ws
        .patch(&wrap("*** Add File: src/deep/er/new.rs\n+fn main() {}\n+"))
        .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "files": [{
                "path": "src/deep/er/new.rs",
                "action": "add",
                "added": 2,
                "removed": 0,
                "content_hash": hash("fn main() {}\n\n"),
            }],
            "dry_run": false,
        })
    );
    assert_eq!(
        env.text,
        "Success. Updated the following files:\nA src/deep/er/new.rs"
    );
    assert_eq!(ws.read("src/deep/er/new.rs").unwrap(), "fn main() {}\n\n");
}

#[tokio::test]
async fn update_with_anchor_then_again_without_rereading() {
    let ws = Workspace::new();
    ws.seen(
        "app.py",
        b"def a():\n    return 1\n\ndef b():\n    return 1\n",
    );
    let env = ws
        .patch(&wrap(
            "*** Update File: app.py\n@@ def b():\n-    return 1\n+    return 2",
        ))
        .await;
    let expected = "def a():\n    return 1\n\ndef b():\n    return 2\n";
    assert_eq!(
        success_data(&env)["files"],
        json!([{"path": "app.py", "action": "update", "added": 1, "removed": 1, "content_hash": hash(expected)}])
    );
    assert_eq!(ws.read("app.py").unwrap(), expected);

    // Our own write refreshed the stamp: a second patch needs no new read.
    let env = ws
        .patch(&wrap(
            "*** Update File: app.py\n@@ def a():\n-    return 1\n+    return 0",
        ))
        .await;
    success_data(&env);
    assert_eq!(
        ws.read("app.py").unwrap(),
        "def a():\n    return 0\n\ndef b():\n    return 2\n"
    );
}

#[tokio::test]
async fn move_renames_and_changes_the_file() {
    let ws = Workspace::new();
    ws.seen("old/name.txt", b"one\ntwo\n");
    let env = ws
        .patch(&wrap(
            "*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n one\n-two\n+deux",
        ))
        .await;
    assert_eq!(
        success_data(&env)["files"],
        json!([{
            "path": "renamed/dir/name.txt",
            "action": "move",
            "moved_from": "old/name.txt",
            "added": 1,
            "removed": 1,
            "content_hash": hash("one\ndeux\n"),
        }])
    );
    assert_eq!(
        env.text,
        "Success. Updated the following files:\nM renamed/dir/name.txt (moved from old/name.txt)"
    );
    assert_eq!(ws.read("old/name.txt"), None);
    assert_eq!(ws.read("renamed/dir/name.txt").unwrap(), "one\ndeux\n");
}

#[tokio::test]
async fn delete_removes_the_file() {
    let ws = Workspace::new();
    ws.seen("obsolete.txt", b"a\nb\n");
    ws.write("keep.txt", b"keep\n");
    let env = ws.patch(&wrap("*** Delete File: obsolete.txt")).await;
    assert_eq!(
        success_data(&env)["files"],
        json!([{"path": "obsolete.txt", "action": "delete", "added": 0, "removed": 2}])
    );
    assert_eq!(
        ws.snapshot(),
        vec![("keep.txt".to_string(), b"keep\n".to_vec())]
    );
}

#[tokio::test]
async fn a_failing_hunk_in_the_third_file_changes_no_file() {
    let ws = Workspace::new();
    ws.seen("a.txt", b"alpha\n");
    ws.seen("b.txt", b"beta\n");
    ws.seen("c.txt", b"gamma\ndelta\n");
    let before = ws.snapshot();
    let env = ws
        .patch(&wrap(
            "*** Add File: created.txt\n+new\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Delete File: b.txt\n*** Update File: c.txt\n@@\n gamma\n-epsilon\n+EPSILON",
        ))
        .await;
    assert_eq!(
        error_message(&env, ErrorCode::InvalidParams),
        "c.txt: 1 of 1 hunk did not match the file.
hunk 1 (patch line 10): these 2 lines were not found at or after line 1:
       | gamma
       | epsilon
  closest: lines 1-2 (1 of 2 equal ignoring whitespace):
      1| gamma
      2| delta
  Read the file again and copy the unchanged (' ') and removed ('-') lines exactly as they are now.
No file was changed."
    );
    assert_eq!(ws.snapshot(), before);
}

#[tokio::test]
async fn dry_run_writes_nothing_and_shows_the_diff() {
    let ws = Workspace::new();
    ws.seen("a.txt", b"one\ntwo\nthree\n");
    ws.seen("m.txt", b"same\n");
    ws.seen("gone.txt", b"bye\n");
    let before = ws.snapshot();
    let env = call(
        &ws.registry,
        "apply_patch",
        json!({
            "patch": wrap("*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** Add File: n.txt\n+hi\n*** Update File: m.txt\n*** Move to: moved.txt\n*** Delete File: gone.txt"),
            "dry_run": true,
        }),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["dry_run"], json!(true));
    assert_eq!(
        data["diff"].as_str().unwrap(),
        "--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
--- a/m.txt
+++ b/moved.txt
(renamed, content unchanged)
--- /dev/null
+++ b/n.txt
@@ -0,0 +1 @@
+hi
"
    );
    assert!(
        env.text.starts_with(
            "Dry run: the patch applies cleanly; nothing was written. It would update:\nM a.txt\nA n.txt\nM moved.txt (moved from m.txt)\nD gone.txt\n\n--- a/a.txt"
        ),
        "{}",
        env.text
    );
    assert_eq!(ws.snapshot(), before);
}

#[tokio::test]
async fn crlf_file_stays_crlf_and_bom_is_kept() {
    let ws = Workspace::new();
    ws.seen("win.txt", b"\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n");
    let env = ws
        .patch(&wrap(
            "*** Update File: win.txt\n@@\n one\n-two\n+TWO\n+two and a half",
        ))
        .await;
    let expected: &[u8] = b"\xEF\xBB\xBFone\r\nTWO\r\ntwo and a half\r\nthree\r\n";
    assert_eq!(
        success_data(&env)["files"][0]["content_hash"],
        json!(content_hash(expected))
    );
    assert_eq!(fs::read(ws.path("win.txt")).unwrap(), expected);
}

#[tokio::test]
async fn escapes_are_refused_and_nothing_appears_outside() {
    let outside = TempDir::new().unwrap();
    let ws = Workspace::new();
    let outside_file = outside.path().join("pwned.txt");
    let cases = [
        wrap("*** Add File: ../pwned.txt\n+x"),
        wrap(&format!("*** Add File: {}\n+x", outside_file.display())),
        wrap("*** Add File: ok.txt\n+x\n*** Update File: ok.txt\n*** Move to: ../../moved.txt"),
    ];
    for patch in cases {
        let env = ws.patch(&patch).await;
        let message = error_message(&env, ErrorCode::AccessDenied);
        assert!(
            message.contains("outside the workspace") || message.contains("leaves the workspace"),
            "{message}"
        );
    }
    assert_eq!(ws.snapshot(), Vec::new());
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!ws.dir.path().parent().unwrap().join("pwned.txt").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn symlink_out_of_the_workspace_is_refused() {
    let outside = TempDir::new().unwrap();
    fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let ws = Workspace::new();
    std::os::unix::fs::symlink(outside.path(), ws.path("link")).unwrap();
    let env = ws
        .patch(&wrap(
            "*** Update File: link/secret.txt\n@@\n-secret\n+owned",
        ))
        .await;
    error_message(&env, ErrorCode::AccessDenied);
    assert_eq!(
        fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret\n"
    );
}

#[tokio::test]
async fn stale_or_unread_files_are_a_conflict() {
    let ws = Workspace::new();
    ws.seen("a.txt", b"one\n");
    ws.write("a.txt", b"one\nchanged behind our back\n");
    let patch = wrap("*** Add File: new.txt\n+x\n*** Update File: a.txt\n@@\n-one\n+uno");
    let env = ws.patch(&patch).await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(
        message.starts_with("a.txt changed since you last read it"),
        "{message}"
    );
    assert_eq!(ws.read("a.txt").unwrap(), "one\nchanged behind our back\n");
    assert_eq!(ws.read("new.txt"), None);

    ws.write("never_read.txt", b"x\n");
    let env = ws.patch(&wrap("*** Delete File: never_read.txt")).await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(message.contains("has not been read yet"), "{message}");
    assert_eq!(ws.read("never_read.txt").unwrap(), "x\n");
}

#[tokio::test]
async fn file_state_errors_have_their_codes() {
    let ws = Workspace::new();
    ws.seen("exists.txt", b"x\n");
    let cases = [
        (
            wrap("*** Add File: exists.txt\n+y"),
            ErrorCode::Conflict,
            "patch line 2: exists.txt already exists. Change it with `*** Update File: exists.txt`, or delete it first in the same patch with `*** Delete File: exists.txt`.\nNo file was changed.",
        ),
        (
            wrap("*** Update File: missing.txt\n@@\n-a\n+b"),
            ErrorCode::NotFound,
            "patch line 2: missing.txt does not exist. To create it, use `*** Add File: <path>` with every line prefixed by '+'.\nNo file was changed.",
        ),
        (
            "*** Begin Patch\n*** Update File: exists.txt\n@@\n-x\n+y\n".to_string(),
            ErrorCode::InvalidParams,
            "patch line 5: the patch must end with `*** End Patch`, found `+y`. If it was cut off, send it again complete.\nNo file was changed.",
        ),
    ];
    for (patch, code, message) in cases {
        let env = ws.patch(&patch).await;
        assert_eq!(error_message(&env, code), message);
    }
    assert_eq!(ws.read("exists.txt").unwrap(), "x\n");
}

#[tokio::test]
async fn binary_files_are_refused_but_may_be_deleted() {
    let ws = Workspace::new();
    ws.seen("blob.bin", b"\x00\x01\x02binary\x00");
    let env = ws
        .patch(&wrap("*** Update File: blob.bin\n@@\n-x\n+y"))
        .await;
    let message = error_message(&env, ErrorCode::BinaryFile);
    assert!(message.starts_with("blob.bin is "), "{message}");
    assert!(ws.path("blob.bin").exists());

    let env = ws.patch(&wrap("*** Delete File: blob.bin")).await;
    success_data(&env);
    assert!(!ws.path("blob.bin").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn one_file_named_two_ways_is_refused() {
    let ws = Workspace::new();
    ws.seen("real.txt", b"a\n");
    std::os::unix::fs::symlink("real.txt", ws.path("alias.txt")).unwrap();
    let env = ws
        .patch(&wrap(
            "*** Update File: real.txt\n@@\n-a\n+b\n*** Update File: alias.txt\n@@\n-b\n+c",
        ))
        .await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(message.contains("are the same file"), "{message}");
    assert_eq!(ws.read("real.txt").unwrap(), "a\n");
}

#[tokio::test]
async fn heredoc_wrapped_patch_applies() {
    let ws = Workspace::new();
    ws.seen("f.txt", b"x\n");
    let env = ws
        .patch("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: f.txt\n@@\n-x\n+y\n*** End Patch\nEOF\n")
        .await;
    success_data(&env);
    assert_eq!(ws.read("f.txt").unwrap(), "y\n");
}

#[tokio::test]
async fn unknown_argument_names_are_refused() {
    let ws = Workspace::new();
    let env = call(
        &ws.registry,
        "apply_patch",
        json!({"input": wrap("*** Add File: a.txt\n+x")}),
    )
    .await;
    error_message(&env, ErrorCode::InvalidParams);
    assert_eq!(ws.read("a.txt"), None);
}

/// The full flow with read_file stamping the file.
#[tokio::test]
async fn read_then_patch() {
    let ws = Workspace::new();
    ws.write("r.txt", b"old\n");
    let env = call(&ws.registry, "read_file", json!({"path": "r.txt"})).await;
    success_data(&env);
    let env = ws
        .patch(&wrap("*** Update File: r.txt\n@@\n-old\n+new"))
        .await;
    success_data(&env);
    assert_eq!(ws.read("r.txt").unwrap(), "new\n");
}
