//! What hooks cost a call: the same calls through the built-in tools on a registry
//! without hooks and on one with hooks, taking turns, reported as medians and the
//! difference.
//!
//! `cargo bench -p toolbelt --bench hooks` (a release build). Cases, each over
//! `read_file` of a small file:
//! - only a hook on `bash` configured (it matches nothing here): the cost of
//!   asking, call by call and in batches of 1,000 (each batch timed whole);
//! - an in-process `context` hook and an in-process `deny` hook that match;
//! - a command hook (`exit 0`) that matches, beside the time the same command
//!   takes on its own.
//!
//! `HOOK_BENCH_RUNS` sets the calls per side (default 1,000).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_core::hooks::CallHooks;
use toolbelt_core::{BatchMode, Registry, Session, ToolCall};
use toolbelt_hooks::{HookEnv, Hooks, HooksConfig, Layer, Source};

fn registry(root: &Path, state: &Path, hooks: Option<&str>) -> Registry {
    let mut registry = Registry::new(Session::new(root).with_state_dir(state));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    if let Some(text) = hooks {
        #[derive(serde::Deserialize)]
        struct File {
            hooks: HooksConfig,
        }
        let file: File = toml::from_str(text).unwrap();
        let env = HookEnv {
            roots: vec![root.to_path_buf()],
            kinds: toolbelt_tools::tool_kinds(&registry),
            ..HookEnv::default()
        };
        let layer = Layer {
            config: file.hooks,
            source: Source::User(root.join("bench.toml")),
        };
        let hooks = Hooks::new(&[layer], env).unwrap();
        registry.set_hooks(Some(Arc::new(hooks) as Arc<dyn CallHooks>));
    }
    registry
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn call(registry: &Registry, denied: bool) -> Duration {
    let t = Instant::now();
    let env = registry
        .execute("read_file", json!({"path": "a.txt"}))
        .await;
    let took = t.elapsed();
    assert_eq!(env.error.is_some(), denied, "{}", env.text);
    took
}

/// `runs` calls on each side in turns (after a warm-up); the medians.
async fn compare(
    with: &Registry,
    without: &Registry,
    runs: usize,
    denied: bool,
) -> (Duration, Duration) {
    for _ in 0..20 {
        call(with, denied).await;
        call(without, false).await;
    }
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        a.push(call(with, denied).await);
        b.push(call(without, false).await);
    }
    (median(a), median(b))
}

fn main() {
    let runs: usize = std::env::var("HOOK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let dir = tempfile::tempdir().unwrap();
    let (root, state) = (dir.path().join("w"), dir.path().join("state"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "hello\n".repeat(20)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cases: [(&str, &str, bool); 4] = [
        (
            "only a bash hook configured",
            "[[hooks.pre_tool_use]]\nmatch = \"bash\"\ncommand = \"exit 0\"\n",
            false,
        ),
        (
            "in-process context hook",
            "[[hooks.post_tool_use]]\nmatch = \"read_file\"\ncontext = \"a note\"\n",
            false,
        ),
        (
            "in-process deny hook",
            "[[hooks.pre_tool_use]]\nmatch = \"read_file\"\ndeny = \"no\"\n",
            true,
        ),
        (
            "command hook (`exit 0`)",
            "[[hooks.pre_tool_use]]\nmatch = \"read_file\"\ncommand = \"exit 0\"\n",
            false,
        ),
    ];
    rt.block_on(async {
        let without = registry(&root, &state, None);
        println!("| case | no hooks (p50) | with the hook (p50) | difference |");
        println!("|---|---|---|---|");
        for (name, config, denied) in cases {
            let with = registry(&root, &state, Some(config));
            // A command hook starts a process per call: fewer runs.
            let n = if name.starts_with("command") {
                runs / 10
            } else {
                runs
            };
            let (a, b) = compare(&with, &without, n, denied).await;
            println!(
                "| {name} | {:.3} ms | {:.3} ms | {:+.3} ms |",
                ms(b),
                ms(a),
                ms(a) - ms(b)
            );
        }
        // The same, as the issue of it puts it: batches of 1,000 `read_file` calls
        // (`toolbelt batch`'s path), each side's batch timed whole, taking turns.
        let with = registry(&root, &state, Some(cases[0].1));
        let calls = || -> Vec<ToolCall> {
            (0..1_000)
                .map(|_| ToolCall::new("read_file", json!({"path": "a.txt"})))
                .collect()
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..12 {
            for (side, times) in [(&with, &mut a), (&without, &mut b)] {
                let t = Instant::now();
                let out = side
                    .execute_batch(calls(), BatchMode::Concurrent { max: 8 })
                    .await;
                assert!(out.iter().all(|e| e.error.is_none()));
                if round >= 2 {
                    times.push(t.elapsed() / 1_000);
                }
            }
        }
        let (a, b) = (median(a), median(b));
        println!(
            "| only a bash hook, a batch of 1,000 (per call) | {:.4} ms | {:.4} ms | {:+.4} ms |",
            ms(b),
            ms(a),
            ms(a) - ms(b)
        );
        // The hook's own run time: the same command, started the same way
        // (`bash -c`), outside toolbelt.
        let own: Vec<Duration> = (0..runs / 10)
            .map(|_| {
                let t = Instant::now();
                std::process::Command::new("bash")
                    .args(["-c", "exit 0"])
                    .status()
                    .unwrap();
                t.elapsed()
            })
            .collect();
        println!(
            "| `bash -c 'exit 0'` on its own | | {:.3} ms | |",
            ms(median(own))
        );
    });
}
