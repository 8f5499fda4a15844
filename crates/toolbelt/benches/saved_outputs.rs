//! `read_output` of a 10 MB saved output from its spill file and from the store
//! (PostgreSQL), pages per second, and what keeping it in the store adds to the
//! call that saved it.
//!
//! `cargo bench -p toolbelt --bench saved_outputs` (a release build), or
//! `bench/saved-outputs/run.sh`, which starts a throwaway PostgreSQL server when
//! `TOOLBELT_TEST_DATABASE_URL` names none. Two registries with the built-in tools
//! and their own state directories share a store: `bash` on the first makes a
//! 10 MB output (saved to its spill file and the store); `read_output` on the
//! first reads the file, on the second the store. The same pages are read from
//! each, in turns, after a warm-up: pages of 2,000 lines (held to 24,000 bytes)
//! from the start, from offsets spread over the output, and from the end.
//! `SAVED_BENCH_PAGES` sets the pages of each case and side (default 200).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolbelt_core::output::SavedOutputs;
use toolbelt_core::{Registry, Session};
use toolbelt_store::{StoreOutputs, testing};

/// A 10 MiB build log, lines of 40-90 bytes.
const COMMAND: &str = "awk 'BEGIN { n = 0; for (i = 1; n < 10485760; i++) { \
     l = sprintf(\"2026-11-28T06:%02d:%02d INFO worker[%d] processed batch %d of the build (%d ms)\", \
     (i / 60) % 60, i % 60, i % 8, i, i * 7 % 1000); print l; n += length(l) + 1 } }'";

fn registry(root: &Path, state: &Path, saved: Option<Arc<dyn SavedOutputs>>) -> Registry {
    let mut session = Session::new(root).with_state_dir(state);
    if let Some(saved) = saved {
        session = session.with_saved_outputs(saved);
    }
    let mut registry = Registry::new(session);
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    registry
}

async fn run(registry: &Registry, tool: &str, args: Value) -> (Duration, Value) {
    let t = Instant::now();
    let env = registry.execute(tool, args).await;
    let took = t.elapsed();
    assert!(env.error.is_none(), "{}", env.text);
    assert!(
        env.context.extra.get("output_warning").is_none(),
        "{:?}",
        env.context.extra
    );
    (took, env.data)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Reads the page at each offset on both registries, in turns: the pages per
/// second of each (from the median page) and whether the pages were the same.
async fn compare(file: &Registry, store: &Registry, id: &str, offsets: &[i64]) -> (f64, f64) {
    let page = |offset: i64| json!({ "output_id": id, "offset": offset, "limit": 2_000 });
    for &offset in offsets.iter().take(5) {
        run(file, "read_output", page(offset)).await;
        run(store, "read_output", page(offset)).await;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &offset in offsets {
        let (t_file, from_file) = run(file, "read_output", page(offset)).await;
        let (t_store, from_store) = run(store, "read_output", page(offset)).await;
        assert_eq!(from_file, from_store, "offset {offset}");
        a.push(t_file);
        b.push(t_store);
    }
    (1.0 / median(a).as_secs_f64(), 1.0 / median(b).as_secs_f64())
}

fn main() {
    let pages: usize = std::env::var("SAVED_BENCH_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let db = testing::postgres().await.unwrap();
        let outputs = || {
            Some(Arc::new(StoreOutputs::new(db.store.clone(), "/bench")) as Arc<dyn SavedOutputs>)
        };
        let plain = registry(&root, &dir.path().join("plain"), None);
        let saving = registry(&root, &dir.path().join("a"), outputs());
        let reading = registry(&root, &dir.path().join("b"), outputs());

        // The call that saves: without the store, then with it, in turns.
        let bash = json!({ "command": COMMAND, "timeout": 120 });
        let (mut without, mut with) = (Vec::new(), Vec::new());
        let mut id = String::new();
        for _ in 0..5 {
            without.push(run(&plain, "bash", bash.clone()).await.0);
            let (took, data) = run(&saving, "bash", bash.clone()).await;
            with.push(took);
            id = data["output_id"].as_str().unwrap().to_string();
        }
        let (total_bytes, total_lines) = {
            let (_, data) = run(&reading, "read_output", json!({ "output_id": id })).await;
            (
                data["total_bytes"].as_u64().unwrap(),
                data["total_lines"].as_u64().unwrap(),
            )
        };
        println!(
            "a {total_bytes}-byte output of {total_lines} lines; `bash` making it: {:.1} ms \
             with the spill file alone, {:.1} ms with the store too (medians of 5)",
            ms(median(without)),
            ms(median(with))
        );
        println!();
        println!("| pages from | pages | file (pages/s) | store (pages/s) |");
        println!("|---|---:|---:|---:|");
        let lines = i64::try_from(total_lines).unwrap();
        let start: Vec<i64> = vec![1; pages];
        let spread: Vec<i64> = (0..pages as i64)
            .map(|i| 1 + (i * 7_919 * 1_000) % lines)
            .collect();
        let end: Vec<i64> = vec![-2_000; pages];
        for (case, offsets) in [
            ("the start", start),
            ("offsets spread over it", spread),
            ("the end", end),
        ] {
            let (file, store) = compare(&saving, &reading, &id, &offsets).await;
            println!("| {case} | {pages} | {file:.0} | {store:.0} |");
        }
    });
}
