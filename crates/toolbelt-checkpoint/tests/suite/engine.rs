//! A registry with two tools, one that names the path it writes and one that
//! runs a shell command, checkpointed into a temporary state directory.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_checkpoint::{Checkpoints, RewindRequest, Settings, hash_bytes, parse_id};
use toolbelt_core::{
    BoxFuture, Changes, Envelope, Origin, Registry, Session, Tool, ToolContext, ToolSpec,
};
use toolbelt_store::{Location, StoreHandle, get_checkpoint};

/// Writes `content` to `path` (relative to the session's directory).
struct Write(ToolSpec);

impl Tool for Write {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn changes(&self, args: &Value) -> Changes {
        Changes::Paths(vec![PathBuf::from(
            args["path"].as_str().unwrap_or_default(),
        )])
    }
    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            let path = ctx
                .session()
                .cwd()
                .join(args["path"].as_str().unwrap_or_default());
            fs::write(&path, args["content"].as_str().unwrap_or_default()).unwrap();
            Envelope::success(Value::Null, "written")
        })
    }
}

/// Runs `command` with `sh -c` in the session's directory.
struct Shell(ToolSpec);

impl Tool for Shell {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(args["command"].as_str().unwrap_or_default())
                .current_dir(ctx.session().cwd())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let ms = started.elapsed().as_secs_f64() * 1e3;
            Envelope::success(json!({ "ms": ms }), "ran")
        })
    }
}

struct Fixture {
    root: TempDir,
    _state: TempDir,
    registry: Registry,
    checkpoints: Checkpoints,
}

fn fixture(settings: Settings) -> Fixture {
    let root = TempDir::new().unwrap();
    let state = TempDir::new().unwrap();
    let mut registry = Registry::new(Session::new(root.path()).with_state_dir(state.path()));
    registry
        .register(Write(
            ToolSpec::describe("write", "Writes a file.").permission("fs:write"),
        ))
        .unwrap();
    registry
        .register(Shell(
            ToolSpec::describe("sh", "Runs a command.").permission("shell:exec"),
        ))
        .unwrap();
    let store = StoreHandle::lazy(Location::in_state_dir(state.path()));
    let checkpoints = Checkpoints::new(
        settings,
        store,
        state.path(),
        vec![root.path().to_path_buf()],
    );
    registry.set_checkpointer(Some(Arc::new(checkpoints.clone())));
    registry.set_origin(Origin::new("test"));
    Fixture {
        root,
        _state: state,
        registry,
        checkpoints,
    }
}

/// Every path under `root` (`.git` left out) with its kind, mode and content hash
/// or link target.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if rel == ".git" {
                continue;
            }
            let m = fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            let what = if m.file_type().is_symlink() {
                format!("link {}", fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                stack.push(p.clone());
                format!("dir {mode:o}")
            } else {
                format!("file {mode:o} {}", hash_bytes(&fs::read(&p).unwrap()))
            };
            out.insert(rel, what);
        }
    }
    out
}

async fn call(f: &Fixture, tool: &str, args: Value) -> Envelope {
    let env = f.registry.execute(tool, args).await;
    assert!(env.error.is_none(), "{}", env.text);
    env
}

fn rewind_to(id: &str) -> RewindRequest {
    RewindRequest {
        to: parse_id(id).unwrap(),
        origin: Origin::new("test"),
        ..RewindRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_command_s_every_change_is_recorded_and_rewound() {
    let f = fixture(Settings::default());
    let r = f.root.path();
    for (name, text) in [
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        ("c.txt", "c\n"),
        ("e.txt", "1\n"),
        ("f.sh", "#!/bin/sh\n"),
    ] {
        fs::write(r.join(name), text).unwrap();
    }
    fs::create_dir_all(r.join("dir/sub")).unwrap();
    fs::write(r.join("dir/sub/x"), "x").unwrap();
    fs::write(r.join(".gitignore"), "ignored/\n").unwrap();
    fs::create_dir(r.join("ignored")).unwrap();
    fs::write(r.join("ignored/big"), "not kept").unwrap();
    let before = tree(r);

    let first = call(&f, "write", json!({"path": "new.txt", "content": "new"})).await;
    let first_id = first.context.checkpoint.clone().expect("a checkpoint");
    let env = call(
        &f,
        "sh",
        json!({"command": "echo x > a.txt; rm b.txt; mv c.txt d.txt; sed -i s/1/2/ e.txt; chmod +x f.sh; rm -rf dir; echo y > g; rm -rf ignored"}),
    )
    .await;
    let id = env.context.checkpoint.clone().expect("a checkpoint");
    assert_eq!(env.context.checkpoint_problem, None);
    let record = get_checkpoint(f.checkpoints_store().await, parse_id(&id).unwrap())
        .await
        .unwrap()
        .unwrap();
    let changes: Vec<(String, String)> = record
        .files
        .iter()
        .map(|c| (c.path.clone(), c.change.clone()))
        .collect();
    let expect = [
        ("a.txt", "modified"),
        ("b.txt", "deleted"),
        ("c.txt", "deleted"),
        ("d.txt", "renamed"),
        ("dir", "deleted"),
        ("dir/sub", "deleted"),
        ("dir/sub/x", "deleted"),
        ("e.txt", "modified"),
        ("f.sh", "mode"),
        ("g", "created"),
    ];
    assert_eq!(
        changes,
        expect
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect::<Vec<_>>(),
        "the ignored tree is neither recorded nor kept"
    );
    assert_eq!(record.origin, r#"{"front_end":"test"}"#);
    let renamed = record.files.iter().find(|c| c.path == "d.txt").unwrap();
    assert_eq!(renamed.renamed_from.as_deref(), Some("c.txt"));

    let outcome = f.checkpoints.rewind(&rewind_to(&first_id)).await.unwrap();
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    let mut after = tree(r);
    // The ignored tree was never the calls' to keep: it stays gone.
    let mut expected = before.clone();
    expected.retain(|p, _| !p.starts_with("ignored"));
    after.retain(|p, _| !p.starts_with("ignored"));
    assert_eq!(after, expected);
    assert!(!r.join("ignored").exists());

    // The rewind is a checkpoint of its own, and can be undone.
    let own = outcome.checkpoint.clone().unwrap();
    assert_ne!(own, id);
    let undone = f
        .checkpoints
        .undo_rewind(&rewind_to(&first_id))
        .await
        .unwrap();
    assert!(undone.restored > 0);
    assert_eq!(fs::read_to_string(r.join("d.txt")).unwrap(), "c\n");
    assert!(!r.join("c.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_over_the_cap_is_not_captured_and_left_alone() {
    let f = fixture(Settings {
        max_file_bytes: 1024,
        ..Settings::default()
    });
    let r = f.root.path();
    fs::write(r.join("big.bin"), vec![7u8; 4096]).unwrap();
    fs::write(r.join("small.txt"), "small").unwrap();
    let env = call(
        &f,
        "sh",
        json!({"command": "truncate -s 10 big.bin; echo changed > small.txt"}),
    )
    .await;
    let id = env.context.checkpoint.unwrap();
    let record = get_checkpoint(f.checkpoints_store().await, parse_id(&id).unwrap())
        .await
        .unwrap()
        .unwrap();
    let big = record.files.iter().find(|c| c.path == "big.bin").unwrap();
    assert!(!big.captured);
    assert!(
        big.note
            .as_deref()
            .unwrap_or_default()
            .contains("not captured"),
        "{big:?}"
    );
    let outcome = f.checkpoints.rewind(&rewind_to(&id)).await.unwrap();
    assert_eq!(fs::read_to_string(r.join("small.txt")).unwrap(), "small");
    assert_eq!(
        fs::metadata(r.join("big.bin")).unwrap().len(),
        10,
        "left alone"
    );
    assert_eq!(outcome.skipped.len(), 1);
    assert!(
        outcome.skipped[0].1.contains("not captured"),
        "{:?}",
        outcome.skipped
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_refuses_the_rewind_and_changes_nothing() {
    let f = fixture(Settings::default());
    let r = f.root.path();
    let env = call(
        &f,
        "write",
        json!({"path": "a.txt", "content": "by the tool"}),
    )
    .await;
    call(
        &f,
        "write",
        json!({"path": "b.txt", "content": "by the tool"}),
    )
    .await;
    fs::write(r.join("a.txt"), "by hand").unwrap();
    let id = env.context.checkpoint.unwrap();
    let err = f.checkpoints.rewind(&rewind_to(&id)).await.unwrap_err();
    assert!(err.to_string().contains("a.txt"), "{err}");
    assert_eq!(fs::read_to_string(r.join("a.txt")).unwrap(), "by hand");
    assert!(r.join("b.txt").exists());
    let skip = RewindRequest {
        skip_conflicts: true,
        ..rewind_to(&id)
    };
    let outcome = f.checkpoints.rewind(&skip).await.unwrap();
    assert_eq!(fs::read_to_string(r.join("a.txt")).unwrap(), "by hand");
    assert!(!r.join("b.txt").exists());
    assert_eq!(outcome.skipped.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_keeps_the_content_under_the_cap() {
    let cap = 256 * 1024;
    let f = fixture(Settings {
        max_total_bytes: cap,
        ..Settings::default()
    });
    // 40 rewrites of 64 KiB of incompressible content: 2.5 MiB of churn.
    let mut seed = 1u64;
    for i in 0..40 {
        let text: String = (0..64 * 1024)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                char::from(b'a' + (seed % 26) as u8)
            })
            .collect();
        call(
            &f,
            "write",
            json!({"path": format!("f{}.txt", i % 3), "content": text}),
        )
        .await;
    }
    // Pruned as content was kept, without being asked.
    let first = get_checkpoint(f.checkpoints_store().await, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.status, "pruned");
    let collected = f.checkpoints.collect().await.unwrap();
    assert!(collected.kept_bytes <= cap, "{collected:?}");
    let err = f.checkpoints.rewind(&rewind_to("cp-1")).await.unwrap_err();
    assert!(err.to_string().contains("pruned"), "{err}");
}

impl Fixture {
    async fn checkpoints_store(&self) -> &toolbelt_store::Store {
        self.checkpoints.store().await.unwrap()
    }
}

/// The files a checkpoint's child rewinds, and their contents before and after.
const KILLED_FILES: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_killed_midway_is_finished_at_the_next_start() {
    let f = fixture(Settings::default());
    let r = f.root.path();
    for i in 0..KILLED_FILES {
        fs::write(r.join(format!("f{i:03}.txt")), format!("before {i}\n")).unwrap();
    }
    let env = call(
        &f,
        "sh",
        json!({"command": "for f in f*.txt; do echo after >> $f; done"}),
    )
    .await;
    let id = env.context.checkpoint.unwrap();
    let state = f.checkpoints.dir().parent().unwrap().to_path_buf();
    let journal = f.checkpoints.dir().join("rewind.journal");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "engine::rewind_child",
            "--ignored",
            "--nocapture",
        ])
        .env("CHECKPOINT_CHILD_ROOT", r)
        .env("CHECKPOINT_CHILD_STATE", &state)
        .env("CHECKPOINT_CHILD_TO", &id)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the journal is written and some files are back.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let back = |r: &Path| {
        (0..KILLED_FILES)
            .filter(|i| {
                fs::read_to_string(r.join(format!("f{i:03}.txt")))
                    .is_ok_and(|t| !t.contains("after"))
            })
            .count()
    };
    while !(journal.exists() && back(r) >= 5) {
        assert!(
            std::time::Instant::now() < deadline,
            "the child never got going"
        );
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let _ = child.kill();
    child.wait().unwrap();
    let midway = back(r);
    eprintln!("killed with {midway} of {KILLED_FILES} files back");
    // Every file is whole: its content before or after.
    for i in 0..KILLED_FILES {
        let text = fs::read_to_string(r.join(format!("f{i:03}.txt"))).unwrap();
        assert!(
            text == format!("before {i}\n") || text == format!("before {i}\nafter\n"),
            "f{i:03}.txt: {text:?}"
        );
    }
    // The next start finishes it.
    let again = Checkpoints::new(
        Settings::default(),
        StoreHandle::lazy(Location::in_state_dir(&state)),
        &state,
        vec![r.to_path_buf()],
    );
    let finished = again.recover().unwrap();
    assert_eq!(finished, journal.exists() || midway < KILLED_FILES);
    assert_eq!(back(r), KILLED_FILES, "killed with {midway} files back");
    assert!(!journal.exists());
    let leftovers: Vec<_> = fs::read_dir(r)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.contains("toolbelt-rewind").then_some(name)
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The rewind the test above kills: run by it, in a process of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_rewind_killed_midway_is_finished_at_the_next_start"]
async fn rewind_child() {
    let var = |name: &str| PathBuf::from(std::env::var_os(name).unwrap());
    let root = var("CHECKPOINT_CHILD_ROOT");
    let state = var("CHECKPOINT_CHILD_STATE");
    let to = std::env::var("CHECKPOINT_CHILD_TO").unwrap();
    let checkpoints = Checkpoints::new(
        Settings::default(),
        StoreHandle::lazy(Location::in_state_dir(&state)),
        &state,
        vec![root],
    );
    checkpoints.rewind(&rewind_to(&to)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_link_comes_back_as_the_same_link() {
    let f = fixture(Settings::default());
    let r = f.root.path();
    let outside = TempDir::new().unwrap();
    let target = outside.path().join("target.txt");
    fs::write(&target, "outside").unwrap();
    std::os::unix::fs::symlink(&target, r.join("link")).unwrap();
    fs::write(r.join("shared"), "two names").unwrap();
    fs::hard_link(r.join("shared"), r.join("other-name")).unwrap();
    let env = call(
        &f,
        "sh",
        json!({"command": "rm link; echo plain > link; echo more >> shared"}),
    )
    .await;
    let id = env.context.checkpoint.unwrap();
    let outcome = f.checkpoints.rewind(&rewind_to(&id)).await.unwrap();
    assert_eq!(fs::read_link(r.join("link")).unwrap(), target);
    assert_eq!(fs::read_to_string(&target).unwrap(), "outside");
    let skipped: Vec<&str> = outcome.skipped.iter().map(|(p, _)| p.as_str()).collect();
    assert!(skipped.contains(&"shared"), "{:?}", outcome.skipped);
    assert!(
        outcome
            .skipped
            .iter()
            .any(|(_, why)| why.contains("hard link"))
    );
    assert_eq!(
        fs::read_to_string(r.join("shared")).unwrap(),
        "two namesmore\n"
    );
}

/// Runs this suite's test `child` in a user and mount namespace where the state
/// directory is a tmpfs filled to the last byte.
fn on_a_full_disk(child: &str, root: &Path, state: &Path) -> std::process::Output {
    let script = format!(
        "mount -t tmpfs -o size=128k tmpfs {state} && (cat /dev/zero > {state}/fill 2>/dev/null; true) && exec {exe} --exact engine::{child} --ignored --nocapture",
        state = state.display(),
        exe = std::env::current_exe().unwrap().display(),
    );
    std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
        .env("CHECKPOINT_CHILD_ROOT", root)
        .env("CHECKPOINT_CHILD_STATE", state)
        .output()
        .unwrap()
}

#[test]
fn a_full_disk_lets_the_call_run_unless_a_checkpoint_is_required() {
    // A tmpfs of its own needs a user and mount namespace; the shell sandbox's
    // tests need the same, and say so the same way where there is none.
    let namespaces = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !namespaces {
        eprintln!("no user and mount namespaces here: a full disk cannot be made");
        return;
    }
    for child in ["full_disk_child", "full_disk_required_child"] {
        let root = TempDir::new().unwrap();
        let state = TempDir::new().unwrap();
        fs::write(root.path().join("a.txt"), "before").unwrap();
        let out = on_a_full_disk(child, root.path(), state.path());
        assert!(
            out.status.success(),
            "{child}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let expect = if child == "full_disk_child" {
            "after"
        } else {
            "before"
        };
        assert_eq!(
            fs::read_to_string(root.path().join("a.txt")).unwrap(),
            expect
        );
    }
}

async fn full_disk(required: bool) -> Envelope {
    let var = |name: &str| PathBuf::from(std::env::var_os(name).unwrap());
    let (root, state) = (var("CHECKPOINT_CHILD_ROOT"), var("CHECKPOINT_CHILD_STATE"));
    let mut registry = Registry::new(Session::new(&root).with_state_dir(&state));
    registry
        .register(Write(
            ToolSpec::describe("write", "Writes a file.").permission("fs:write"),
        ))
        .unwrap();
    let settings = Settings {
        required,
        ..Settings::default()
    };
    let store = StoreHandle::lazy(Location::in_state_dir(&state));
    let checkpoints = Checkpoints::new(settings, store, &state, vec![root]);
    registry.set_checkpointer(Some(Arc::new(checkpoints)));
    registry
        .execute("write", json!({"path": "a.txt", "content": "after"}))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_full_disk_lets_the_call_run_unless_a_checkpoint_is_required"]
async fn full_disk_child() {
    let env = full_disk(false).await;
    assert!(env.error.is_none(), "{}", env.text);
    assert_eq!(env.context.checkpoint, None);
    assert_eq!(
        env.context.checkpoint_problem.as_deref(),
        Some("checkpoint not taken: no space left on the device")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_full_disk_lets_the_call_run_unless_a_checkpoint_is_required"]
async fn full_disk_required_child() {
    let env = full_disk(true).await;
    let error = env.error.as_ref().expect("refused");
    assert_eq!(error.code, toolbelt_core::ErrorCode::Unavailable);
    assert!(env.text.contains("no space"), "{}", env.text);
}

/// Bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_gigabyte_and_an_ignored_tree_cost_nothing_to_keep() {
    let f = fixture(Settings::default());
    let r = f.root.path();
    // A sparse file of 1 GiB: its size is what the checkpoint sees.
    fs::File::create(r.join("huge.bin"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    fs::write(r.join("small.txt"), "small").unwrap();
    fs::write(r.join(".gitignore"), "build/\n").unwrap();
    // 5,000 ignored files (the walk does not enter an ignored directory, so
    // their number does not matter; making them is slow on some disks).
    for d in 0..50 {
        let dir = r.join(format!("build/d{d}"));
        fs::create_dir_all(&dir).unwrap();
        for i in 0..100 {
            fs::write(dir.join(format!("o{i}")), "object").unwrap();
        }
    }
    // The first walk reads the workspace once.
    call(&f, "sh", json!({"command": "echo warm > warm.txt"})).await;
    let state = f.checkpoints.dir().to_path_buf();
    let kept_before = bytes_under(&state);
    let started = std::time::Instant::now();
    let env = call(
        &f,
        "sh",
        json!({"command": "truncate -s 0 huge.bin; echo changed > small.txt; rm -rf build"}),
    )
    .await;
    // What the checkpoint added to the call: its time less the command's own.
    let overhead = started.elapsed().as_secs_f64() - env.data["ms"].as_f64().unwrap() / 1e3;
    assert!(overhead < 1.0, "{overhead} s");
    let grown = bytes_under(&state) - kept_before;
    assert!(grown < 1 << 20, "the state grew by {grown} bytes");
    let id = env.context.checkpoint.unwrap();
    let record = get_checkpoint(f.checkpoints_store().await, parse_id(&id).unwrap())
        .await
        .unwrap()
        .unwrap();
    let paths: Vec<&str> = record.files.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        ["huge.bin", "small.txt"],
        "the ignored tree is not recorded"
    );
    let huge = &record.files[0];
    assert!(!huge.captured && huge.note.as_deref().unwrap().contains("not captured"));
    let outcome = f.checkpoints.rewind(&rewind_to(&id)).await.unwrap();
    assert_eq!(fs::read_to_string(r.join("small.txt")).unwrap(), "small");
    assert_eq!(
        fs::metadata(r.join("huge.bin")).unwrap().len(),
        0,
        "left alone"
    );
    assert_eq!(outcome.skipped.len(), 1, "{:?}", outcome.skipped);
    assert!(
        !r.join("build").exists(),
        "the ignored tree is not restored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_directory_inside_the_workspace_is_not_walked() {
    let root = TempDir::new().unwrap();
    let state = root.path().join(".state");
    let mut registry = Registry::new(Session::new(root.path()).with_state_dir(&state));
    registry
        .register(Shell(
            ToolSpec::describe("sh", "Runs a command.").permission("shell:exec"),
        ))
        .unwrap();
    let store = StoreHandle::lazy(Location::in_state_dir(&state));
    let checkpoints = Checkpoints::new(
        Settings::default(),
        store,
        &state,
        vec![root.path().to_path_buf()],
    );
    registry.set_checkpointer(Some(Arc::new(checkpoints.clone())));
    for n in 0..2 {
        let env = registry
            .execute("sh", json!({"command": format!("echo {n} > a.txt")}))
            .await;
        let id = env.context.checkpoint.unwrap();
        let record = get_checkpoint(checkpoints.store().await.unwrap(), parse_id(&id).unwrap())
            .await
            .unwrap()
            .unwrap();
        let paths: Vec<&str> = record.files.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            ["a.txt"],
            "the state directory's own files are not changes"
        );
    }
}

/// A process that runs several commands watches the workspace instead of walking
/// it before each: an edit by hand between two commands is still not taken for
/// the second one's, and a rewind of it leaves the edit alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_between_commands_is_not_the_next_command_s() {
    let f = fixture(Settings::default());
    let r = f.root.path();
    fs::create_dir(r.join("src")).unwrap();
    fs::write(r.join("src/hand.txt"), "as it was\n").unwrap();
    // Three commands: the watch is set up and clean from the third on.
    for i in 0..3 {
        call(&f, "sh", json!({"command": format!("echo {i} >> log.txt")})).await;
    }
    for (round, edit) in ["by hand\n", ""].into_iter().enumerate() {
        if edit.is_empty() {
            fs::write(r.join(format!("src/new{round}.txt")), "made by hand\n").unwrap();
        } else {
            fs::write(r.join("src/hand.txt"), edit).unwrap();
        }
        let env = call(&f, "sh", json!({"command": "echo more >> log.txt"})).await;
        let id = env.context.checkpoint.unwrap();
        let record = get_checkpoint(f.checkpoints_store().await, parse_id(&id).unwrap())
            .await
            .unwrap()
            .unwrap();
        let paths: Vec<&str> = record.files.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            ["log.txt"],
            "{round:?}: the edit by hand is not the command's"
        );
        f.checkpoints.rewind(&rewind_to(&id)).await.unwrap();
        assert_eq!(
            fs::read_to_string(r.join("src/hand.txt")).unwrap(),
            "by hand\n",
            "{round:?}"
        );
        if edit.is_empty() {
            assert!(r.join(format!("src/new{round}.txt")).exists());
        }
        // Two more commands: clean again.
        for i in 0..2 {
            call(
                &f,
                "sh",
                json!({"command": format!("echo {i} >> other.txt")}),
            )
            .await;
        }
    }
}
