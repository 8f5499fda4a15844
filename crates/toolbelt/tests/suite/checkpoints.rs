//! `toolbelt checkpoints` and `toolbelt rewind`: every call that changes files gets
//! a checkpoint, and a rewind puts the tree back as it was: contents, modes, the
//! set of paths, links; `.git` is never touched.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use super::cli::{Run, command, finish, stdout_json};

/// A workspace root and its state directory, side by side in a temporary
/// directory (so that the state is not in the workspace).
struct Ws {
    dir: TempDir,
    root: PathBuf,
    state: PathBuf,
}

/// What is at each path under a root (`.git` left out): kind, mode, content hash
/// or link target.
type Tree = BTreeMap<String, String>;

impl Ws {
    fn new(git: bool) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let state = dir.path().join("state");
        std::fs::create_dir(&root).unwrap();
        let ws = Ws { dir, root, state };
        if git {
            ws.git(&["init", "-q"]);
        }
        ws
    }

    /// `toolbelt <args>` in the root, with its state directory, checkpoints on and
    /// standard input not a terminal.
    fn tb_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = command(&self.root, args);
        c.env("TOOLBELT_STATE_DIR", &self.state)
            .env_remove("TOOLBELT_CHECKPOINTS")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        let run = finish(c.spawn().unwrap(), args);
        assert!(
            !run.stderr.contains("panicked"),
            "toolbelt {args:?} panicked:\n{}",
            run.stderr
        );
        run
    }

    fn tb(&self, args: &[&str]) -> Run {
        self.tb_env(args, &[])
    }

    /// `toolbelt call TOOL ARGS --json`, which must succeed.
    fn call(&self, tool: &str, args: &Value) -> Value {
        let run = self.tb(&["call", tool, &args.to_string(), "--json"]);
        assert_eq!(
            run.code, 0,
            "{tool} {args}:\n{}\n{}",
            run.stdout, run.stderr
        );
        stdout_json(&run)
    }

    /// The workspace's checkpoints, oldest first.
    fn checkpoints(&self) -> Vec<Value> {
        let run = self.tb(&["checkpoints", "list", "--limit", "1000", "--json"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let mut list = stdout_json(&run).as_array().unwrap().clone();
        list.reverse();
        list
    }

    /// `checkpoints show ID --json`.
    fn show(&self, id: &str) -> Value {
        let run = self.tb(&["checkpoints", "show", id, "--json"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        stdout_json(&run)
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn chmod(&self, rel: &str, mode: u32) {
        std::fs::set_permissions(self.root.join(rel), std::fs::Permissions::from_mode(mode))
            .unwrap();
    }

    fn tree(&self) -> Tree {
        let mut out = Tree::new();
        walk(&self.root, &self.root, &mut out, true);
        out
    }

    /// Every file under `.git` with its content hash, every directory and link.
    fn git_tree(&self) -> Tree {
        let mut out = Tree::new();
        let git = self.root.join(".git");
        walk(&git, &git, &mut out, false);
        out
    }

    /// `git ARGS` in the root, which must succeed; its standard output.
    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args([
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&self.root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git must be installed for these tests");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `rewind ARGS`, which must succeed.
    fn rewind(&self, args: &[&str]) -> Run {
        let mut all = vec!["rewind"];
        all.extend_from_slice(args);
        let run = self.tb(&all);
        assert_eq!(
            run.code, 0,
            "rewind {args:?}:\n{}\n{}",
            run.stdout, run.stderr
        );
        run
    }
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn walk(base: &Path, dir: &Path, out: &mut Tree, skip_git: bool) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path
            .strip_prefix(base)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if skip_git && rel == ".git" {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        let ft = meta.file_type();
        let what = if ft.is_symlink() {
            format!("link -> {}", std::fs::read_link(&path).unwrap().display())
        } else if ft.is_dir() {
            walk(base, &path, out, skip_git);
            format!("dir {mode:o}")
        } else {
            format!("file {mode:o} {}", sha(&std::fs::read(&path).unwrap()))
        };
        out.insert(rel, what);
    }
}

/// The paths of a `show --json`: path -> change (`renamed from X` for a rename).
fn changes(shown: &Value) -> BTreeMap<String, String> {
    shown["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let change = f["change"].as_str().unwrap();
            let change = match f["renamed_from"].as_str() {
                Some(from) => format!("{change} from {from}"),
                None => change.to_string(),
            };
            (f["path"].as_str().unwrap().to_string(), change)
        })
        .collect()
}

fn ids(list: &[Value]) -> Vec<String> {
    list.iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
        .collect()
}

/// Acceptance 1: each file tool's call through `toolbelt call` gets one
/// checkpoint with its paths and origin `cli`; a rewind to the first puts every
/// file's content and mode, and the set of paths, back.
fn file_tools_then_rewind(git: bool) {
    let ws = Ws::new(git);
    ws.write("edit.txt", "alpha\nbeta\ngamma\n");
    ws.write("multi.txt", "one\ntwo\nthree\n");
    ws.write("upd.txt", "u1\nu2\nu3\n");
    ws.write("del.txt", "gone\n");
    ws.write("mv.txt", "m1\nm2\nm3\n");
    ws.chmod("mv.txt", 0o755);
    ws.write("sub/keep.txt", "keep\n");
    if git {
        ws.git(&["add", "-A"]);
        ws.git(&["commit", "-q", "-m", "start"]);
    }
    let before = ws.tree();

    ws.call(
        "write_file",
        &json!({"path": "new.txt", "content": "new\n"}),
    );
    ws.call("read_file", &json!({"path": "edit.txt"}));
    ws.call(
        "edit_file",
        &json!({"path": "edit.txt", "old_string": "beta", "new_string": "BETA"}),
    );
    ws.call("read_file", &json!({"path": "multi.txt"}));
    ws.call(
        "multi_edit",
        &json!({"path": "multi.txt", "edits": [
            {"old_string": "one", "new_string": "ONE"},
            {"old_string": "three", "new_string": "THREE"},
        ]}),
    );
    for path in ["upd.txt", "del.txt", "mv.txt"] {
        ws.call("read_file", &json!({"path": path}));
    }
    let patch = "*** Begin Patch\n\
                 *** Add File: added/a.txt\n\
                 +added\n\
                 *** Update File: upd.txt\n\
                 @@\n u1\n-u2\n+U2\n u3\n\
                 *** Delete File: del.txt\n\
                 *** Update File: mv.txt\n\
                 *** Move to: moved/mv.txt\n\
                 @@\n m1\n-m2\n+M2\n m3\n\
                 *** End Patch\n";
    ws.call("apply_patch", &json!({"patch": patch}));

    let list = ws.checkpoints();
    let tools: Vec<&str> = list.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        ["write_file", "edit_file", "multi_edit", "apply_patch"],
        "one checkpoint per mutating call, none for read_file: {list:#?}"
    );
    for c in &list {
        assert_eq!(c["origin"], json!({"front_end": "cli"}), "{c:#}");
        assert_eq!(c["origin_text"], "cli");
        assert_eq!(c["status"], "complete", "{c:#}");
    }
    let shown: Vec<BTreeMap<String, String>> =
        ids(&list).iter().map(|id| changes(&ws.show(id))).collect();
    assert_eq!(shown[0], map(&[("new.txt", "created")]));
    assert_eq!(shown[1], map(&[("edit.txt", "modified")]));
    assert_eq!(shown[2], map(&[("multi.txt", "modified")]));
    let patched = &shown[3];
    assert_eq!(patched["added/a.txt"], "created", "{patched:#?}");
    assert_eq!(patched["upd.txt"], "modified", "{patched:#?}");
    assert_eq!(patched["del.txt"], "deleted", "{patched:#?}");
    assert!(
        patched["moved/mv.txt"] == "created" || patched["moved/mv.txt"] == "renamed from mv.txt",
        "{patched:#?}"
    );
    assert_ne!(ws.tree(), before);

    let first = list[0]["id"].as_str().unwrap();
    let run = ws.rewind(&[first, "--yes"]);
    assert!(
        run.stdout.contains("toolbelt rewind --undo"),
        "{}",
        run.stdout
    );
    assert_eq!(
        ws.tree(),
        before,
        "every file's content and mode, and the set of paths, as before {first}"
    );
    if git {
        // The tree matches the commit again.
        assert_eq!(ws.git(&["status", "--porcelain"]), "");
    }
}

#[test]
fn file_tools_checkpoint_each_call_and_rewind_in_git() {
    file_tools_then_rewind(true);
}

#[test]
fn file_tools_checkpoint_each_call_and_rewind_without_git() {
    file_tools_then_rewind(false);
}

/// Acceptance 2: one shell command's every kind of change is one checkpoint, and
/// the rewind restores all of it; a command that only reads makes none.
#[test]
fn a_shell_command_is_one_checkpoint_and_rewinds_whole() {
    let ws = Ws::new(true);
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");
    ws.write("c.txt", "c\n");
    ws.write("e.txt", "1\n");
    ws.write("f.sh", "#!/bin/sh\n");
    ws.chmod("f.sh", 0o644);
    ws.write("dir/inner.txt", "inner\n");
    ws.write("still.txt", "still\n");
    ws.git(&["add", "-A"]);
    ws.git(&["commit", "-q", "-m", "start"]);
    let before = ws.tree();

    let command = "echo x > a.txt; rm b.txt; mv c.txt d.txt; sed -i s/1/2/ e.txt; \
                   chmod +x f.sh; rm -rf dir; python3 -c 'open(\"g\",\"w\").write(\"y\")'";
    ws.call("bash", &json!({"command": command}));
    let list = ws.checkpoints();
    assert_eq!(list.len(), 1, "{list:#?}");
    let id = list[0]["id"].as_str().unwrap();
    let shown = ws.show(id);
    assert_eq!(shown["tool"], "bash");
    assert_eq!(
        changes(&shown),
        map(&[
            ("a.txt", "modified"),
            ("b.txt", "deleted"),
            ("d.txt", "renamed from c.txt"),
            ("dir", "deleted"),
            ("dir/inner.txt", "deleted"),
            ("e.txt", "modified"),
            ("f.sh", "mode"),
            ("g", "created"),
        ])
    );
    let renamed = shown["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "d.txt")
        .unwrap();
    assert_eq!(
        renamed["before"]["kind"], "file",
        "a rename shows its source's state: {renamed:#}"
    );

    ws.rewind(&[id, "--yes"]);
    assert_eq!(ws.tree(), before, "dir and its file included");
    assert_eq!(ws.git(&["status", "--porcelain"]), "");

    let count = ws.checkpoints().len();
    // `rg` finds nothing (exit 1): the envelope may be an error; only the
    // checkpoints matter.
    ws.tb(&[
        "call",
        "bash",
        &json!({"command": "rg foo; git status"}).to_string(),
    ]);
    assert_eq!(
        ws.checkpoints().len(),
        count,
        "a command that only reads makes no checkpoint"
    );
}

/// Acceptance 3: a file changed by hand after toolbelt wrote it is a conflict:
/// the rewind refuses, naming it, and changes nothing; `--skip-conflicts`
/// rewinds the others; `--undo` takes that rewind back.
#[test]
fn a_file_changed_by_hand_is_a_conflict() {
    let ws = Ws::new(false);
    ws.write("x.txt", "x1\nx2\n");
    ws.write("y.txt", "y1\n");
    let before = ws.tree();
    ws.call("read_file", &json!({"path": "x.txt"}));
    ws.call(
        "edit_file",
        &json!({"path": "x.txt", "old_string": "x2", "new_string": "X2"}),
    );
    ws.call(
        "bash",
        &json!({"command": "echo y2 >> y.txt; echo z > z.txt"}),
    );
    std::fs::write(ws.root.join("x.txt"), "by hand\n").unwrap();
    let first = ws.checkpoints()[0]["id"].as_str().unwrap().to_string();
    let edited = ws.tree();

    let refused = ws.tb(&["rewind", &first, "--yes"]);
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("  x.txt\n") && !refused.stderr.contains("y.txt"),
        "names the conflicting file: {}",
        refused.stderr
    );
    assert!(
        refused.stdout.contains("CONFLICT  x.txt"),
        "{}",
        refused.stdout
    );
    assert_eq!(ws.tree(), edited, "nothing changed");

    let run = ws.rewind(&[&first, "--yes", "--skip-conflicts"]);
    assert!(
        run.stdout.contains("x.txt: changed outside toolbelt"),
        "{}",
        run.stdout
    );
    let mut expected = before.clone();
    expected.insert("x.txt".into(), edited["x.txt"].clone());
    assert_eq!(
        ws.tree(),
        expected,
        "the others rewound, x.txt as the hand left it"
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("x.txt")).unwrap(),
        "by hand\n"
    );

    ws.rewind(&["--undo", "--yes"]);
    assert_eq!(ws.tree(), edited, "as before the rewind");
}

/// Acceptance 4: `.git` is never touched, whatever the calls and rewinds.
#[test]
fn git_is_untouched_by_checkpoints_and_rewinds() {
    let ws = Ws::new(true);
    ws.write("tracked.txt", "0\n");
    ws.write("src/lib.rs", "fn a() {}\n");
    ws.git(&["add", "-A"]);
    ws.git(&["commit", "-q", "-m", "one"]);
    ws.git(&["tag", "v1"]);
    ws.git(&["branch", "side"]);
    ws.write("src/lib.rs", "fn a() { todo!() }\n");
    ws.git(&["stash", "-q"]);
    ws.write("untracked.txt", "u\n");
    // git reads first (a status refreshes the index), then the hashes.
    let git_view = |ws: &Ws| {
        [
            ws.git(&["status", "--porcelain=2"]),
            ws.git(&["stash", "list"]),
            ws.git(&["show-ref"]),
        ]
    };
    let seen = git_view(&ws);
    let hashed = ws.git_tree();
    let before = ws.tree();

    let mut calls = Vec::new();
    for i in 0..34 {
        calls.push(json!({"tool": "write_file", "params": {"path": format!("gen/f{i}.txt"), "content": format!("{i}\n")}}));
        calls.push(
            json!({"tool": "bash", "params": {"command": format!("echo {i} >> tracked.txt")}}),
        );
        calls.push(json!({"tool": "bash", "params": {"command": format!("mkdir -p d{i} && echo {i} > d{i}/x && rm -f gen/f{i}.txt")}}));
    }
    let batch = ws.dir.path().join("calls.json");
    std::fs::write(&batch, Value::Array(calls).to_string()).unwrap();
    let run = ws.tb(&["batch", batch.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let list = ws.checkpoints();
    assert_eq!(list.len(), 102, "{:#?}", &list[..3]);
    assert!(list.iter().all(|c| c["origin"]["front_end"] == "batch"));
    let ids = ids(&list);

    ws.rewind(&[&ids[15], "--yes"]);
    ws.rewind(&["--undo", "--yes"]);
    ws.rewind(&[&ids[0], "--yes"]);
    assert_eq!(ws.tree(), before, "the work tree as before the calls");
    assert_eq!(ws.git_tree(), hashed, "every file under .git as it was");
    assert_eq!(git_view(&ws), seen);
}

/// Acceptance 5: a symbolic link a command replaced by a file comes back as the
/// same link, its target (outside the workspace) untouched; a file with a hard
/// link is not captured, and the rewind leaves it alone and says so (also when it
/// was changed by hand since).
#[test]
fn links_come_back_and_hard_links_are_left_alone() {
    let ws = Ws::new(false);
    let outside = ws.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let target = outside.join("target.txt");
    std::fs::write(&target, "target\n").unwrap();
    std::os::unix::fs::symlink(&target, ws.root.join("link")).unwrap();
    ws.write("h.txt", "hard\n");
    std::fs::hard_link(ws.root.join("h.txt"), outside.join("h-link")).unwrap();
    ws.write("plain.txt", "plain\n");
    let before = ws.tree();

    ws.call(
        "bash",
        &json!({"command": "rm link && echo replaced > link; echo more >> h.txt; echo p2 >> plain.txt"}),
    );
    assert!(ws.root.join("link").symlink_metadata().unwrap().is_file());
    // Changed by hand too: a conflict, but one the rewind leaves alone anyway
    // (not captured), so it does not stop the rewind.
    std::fs::write(ws.root.join("h.txt"), "hard\nmore\nby hand\n").unwrap();
    let list = ws.checkpoints();
    let id = list[0]["id"].as_str().unwrap();
    let shown = ws.show(id);
    let paths = shown["paths"].as_array().unwrap();
    let link = paths.iter().find(|f| f["path"] == "link").unwrap();
    assert_eq!(link["before"]["kind"], "symlink", "{link:#}");
    assert_eq!(link["before"]["link"], target.to_str().unwrap());
    assert_eq!(link["after"]["kind"], "file");
    let hard = paths.iter().find(|f| f["path"] == "h.txt").unwrap();
    assert_eq!(hard["captured"], false, "{hard:#}");
    assert!(
        hard["note"].as_str().unwrap().contains("hard link"),
        "{hard:#}"
    );

    let run = ws.rewind(&[id, "--yes", "--json"]);
    let outcome = stdout_json(&run);
    assert_eq!(outcome["done"], true);
    let skipped: Vec<&str> = outcome["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["h.txt"], "{outcome:#}");
    let mut expected = before.clone();
    expected.insert("h.txt".into(), ws.tree()["h.txt"].clone());
    assert_eq!(ws.tree(), expected, "the link back, h.txt left alone");
    assert_eq!(std::fs::read_link(ws.root.join("link")).unwrap(), target);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "target\n");
    assert_eq!(
        std::fs::read_to_string(ws.root.join("h.txt")).unwrap(),
        "hard\nmore\nby hand\n"
    );
}

/// Acceptance 6: `--dry-run` changes nothing; so does a rewind that cannot ask
/// (no --yes, standard input not a terminal), a bad id, an unknown one, and
/// checkpoints turned off.
#[test]
fn a_dry_run_and_refusals_change_nothing() {
    let ws = Ws::new(false);
    ws.write("a.txt", "a\n");
    ws.call(
        "bash",
        &json!({"command": "echo b >> a.txt; rm a.txt; echo n > n.txt"}),
    );
    let after = ws.tree();
    let list = ws.checkpoints();
    let id = list[0]["id"].as_str().unwrap();

    let dry = ws.rewind(&[id, "--dry-run"]);
    assert!(dry.stdout.contains("restore  a.txt"), "{}", dry.stdout);
    assert!(dry.stdout.contains("remove   n.txt"), "{}", dry.stdout);
    assert!(dry.stdout.contains("nothing was changed"), "{}", dry.stdout);
    assert_eq!(ws.tree(), after);

    let unasked = ws.tb(&["rewind", id]);
    assert_eq!(unasked.code, 2, "{}", unasked.stderr);
    assert!(unasked.stdout.contains("restore  a.txt"), "the plan first");
    assert!(unasked.stderr.contains("--yes"), "{}", unasked.stderr);
    assert_eq!(ws.tree(), after);

    let bad = ws.tb(&["rewind", "yesterday", "--yes"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("not a checkpoint id"), "{}", bad.stderr);
    let unknown = ws.tb(&["rewind", "cp-999", "--yes"]);
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no checkpoint cp-999"),
        "{}",
        unknown.stderr
    );
    let off = ws.tb_env(&["rewind", id, "--yes"], &[("TOOLBELT_CHECKPOINTS", "off")]);
    assert_eq!(off.code, 1, "{}", off.stderr);
    assert!(
        off.stderr.contains("TOOLBELT_CHECKPOINTS"),
        "{}",
        off.stderr
    );
    assert_eq!(ws.tree(), after);
    assert_eq!(ws.checkpoints().len(), list.len(), "no rewind was recorded");
}
