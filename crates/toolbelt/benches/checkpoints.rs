//! What checkpoints cost a call: the same calls through the built-in tools with
//! checkpoints on and off, taking turns, reported as medians and the difference.
//!
//! `cargo bench -p toolbelt --bench checkpoints` (a release build). Cases:
//! `edit_file` on a 1 KiB file; a bash append in a repository of 10,000 and of
//! 100,000 files (the stat index walked before and after); a read-only bash
//! command (no walk). `CHECKPOINT_BENCH_RUNS` sets the runs per side (default 30).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolbelt_checkpoint::{Checkpoints, Settings};
use toolbelt_core::{Registry, Session};
use toolbelt_store::{Location, StoreHandle};

struct Side {
    registry: Registry,
    _state: tempfile::TempDir,
}

fn side(root: &Path, on: bool) -> Side {
    let state = tempfile::tempdir().unwrap();
    let mut registry = Registry::new(Session::new(root).with_state_dir(state.path()));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    if on {
        let store = StoreHandle::lazy(Location::in_state_dir(state.path()));
        let cp = Checkpoints::new(
            Settings::default(),
            store,
            state.path(),
            vec![root.to_path_buf()],
        );
        registry.set_checkpointer(Some(Arc::new(cp)));
    }
    Side {
        registry,
        _state: state,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A tree of `n` small files, 100 to a directory, committed to git.
fn repository(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        let sub = dir.path().join(format!("d{:04}", i / 100));
        if i % 100 == 0 {
            fs::create_dir_all(&sub).unwrap();
        }
        fs::write(
            sub.join(format!("f{i}.txt")),
            format!("line {i}\n").repeat(8),
        )
        .unwrap();
    }
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
    };
    git(&["init", "-q"]);
    dir
}

async fn run(registry: &Registry, tool: &str, args: Value) -> Duration {
    let t = Instant::now();
    let env = registry.execute(tool, args).await;
    let took = t.elapsed();
    assert!(env.error.is_none(), "{tool}: {}", env.text);
    took
}

/// Runs `case` on both sides in turns (after a warm-up each) and prints the medians.
async fn compare(
    name: &str,
    on: &Side,
    off: &Side,
    runs: usize,
    case: impl Fn(usize) -> (&'static str, Value),
) {
    for s in [on, off] {
        for i in 0..2 {
            let (tool, args) = case(i);
            run(&s.registry, tool, args).await;
        }
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let (tool, args) = case(i + 2);
        a.push(run(&on.registry, tool, args.clone()).await);
        b.push(run(&off.registry, tool, args).await);
    }
    let (a, b) = (median(a), median(b));
    println!(
        "| {name} | {:.3} ms | {:.3} ms | {:+.3} ms |",
        b.as_secs_f64() * 1e3,
        a.as_secs_f64() * 1e3,
        (a.as_secs_f64() - b.as_secs_f64()) * 1e3
    );
}

fn main() {
    let runs: usize = std::env::var("CHECKPOINT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!("| case | checkpoints off (p50) | on (p50) | overhead |");
        println!("|---|---|---|---|");
        // edit_file on a 1 KiB file: each side its own copy, read once first.
        let small = tempfile::tempdir().unwrap();
        let (d_on, d_off) = (small.path().join("on"), small.path().join("off"));
        for d in [&d_on, &d_off] {
            fs::create_dir_all(d).unwrap();
            fs::write(d.join("a.txt"), format!("{}\nTOKEN0\n", "x".repeat(1016))).unwrap();
        }
        let (on, off) = (side(&d_on, true), side(&d_off, false));
        for s in [&on, &off] {
            run(&s.registry, "read_file", json!({"path": "a.txt"})).await;
        }
        compare("edit_file, 1 KiB file", &on, &off, runs * 5, |i| {
            (
                "edit_file",
                json!({"path": "a.txt", "old_string": format!("TOKEN{i}"), "new_string": format!("TOKEN{}", i + 1)}),
            )
        })
        .await;
        compare("bash, read-only (`ls`)", &on, &off, runs * 5, |_| {
            ("bash", json!({"command": "ls"}))
        })
        .await;
        for n in [10_000, 100_000] {
            let (r_on, r_off) = (repository(n), repository(n));
            let (on, off) = (side(r_on.path(), true), side(r_off.path(), false));
            compare(&format!("bash append, {n} files"), &on, &off, runs, |_| {
                ("bash", json!({"command": "echo x >> log.txt"}))
            })
            .await;
        }
    });
}
