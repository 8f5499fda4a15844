//! The store benchmark: tasks created per second through the `create_task` tool
//! (one writer, then eight at once) and `analyze_patterns` over 10,000 reviews, on
//! SQLite and on PostgreSQL. `bench/store/run.sh` starts a PostgreSQL server and
//! prints the table.
//!
//! ```text
//! cargo run --release -p toolbelt-tools --example store_bench -- [TASKS] [REVIEWS] [POSTGRES_URL]
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolbelt_core::{Registry, Session, Status};
use toolbelt_store::{Location, Store, StoreHandle};
use toolbelt_tools::BuiltinOptions;

const WRITERS: usize = 8;
const ANALYZE_RUNS: usize = 7;

fn registry(root: &std::path::Path, store: Store) -> Registry {
    let mut registry = Registry::new(Session::new(root));
    toolbelt_tools::register_builtins_with(
        &mut registry,
        BuiltinOptions {
            store: Some(StoreHandle::open(store)),
            ..BuiltinOptions::default()
        },
    )
    .unwrap();
    registry
}

async fn call(registry: &Registry, tool: &str, args: Value) -> Value {
    let env = registry.execute(tool, args).await;
    assert_eq!(env.status, Status::Success, "{tool}: {env:#?}");
    env.data
}

/// Tasks per second, one writer, `n` tasks.
async fn sequential(registry: &Registry, n: usize, project: &str) -> f64 {
    let started = Instant::now();
    for i in 0..n {
        call(
            registry,
            "create_task",
            json!({"title": format!("task {i}"), "project_id": project, "priority": "medium"}),
        )
        .await;
    }
    n as f64 / started.elapsed().as_secs_f64()
}

/// Tasks per second, eight writers at once, `n` tasks in all.
async fn concurrent(registry: Arc<Registry>, n: usize, project: &str) -> f64 {
    let started = Instant::now();
    let mut handles = Vec::new();
    for w in 0..WRITERS {
        let registry = Arc::clone(&registry);
        let project = project.to_string();
        handles.push(tokio::spawn(async move {
            for i in 0..n / WRITERS {
                call(
                    &registry,
                    "create_task",
                    json!({"title": format!("w{w} task {i}"), "project_id": project}),
                )
                .await;
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    n as f64 / started.elapsed().as_secs_f64()
}

const ENGLISH: &[&str] = &[
    "Shipped the database migration and reviewed two pull requests",
    "Slow morning, the build kept failing on the integration tests",
    "Good focus today: finished the parser and wrote its tests",
    "Too many meetings, little progress on the migration",
    "Paired on the release checklist; the release is on track",
];
const CHINESE: &[&str] = &[
    "今天进展顺利，完成了数据库迁移",
    "上午效率不高，集成测试一直失败",
    "专注的一天，写完了解析器和测试",
    "会议太多，迁移几乎没有进展",
    "和同事一起检查发布清单，发布按计划进行",
];

/// `n` reviews over the 90 days up to 2026-10-31, in both languages.
async fn seed_reviews(registry: &Registry, n: usize) -> Duration {
    let started = Instant::now();
    let base = chrono::NaiveDate::from_ymd_opt(2026, 8, 3).unwrap();
    for i in 0..n {
        let day = base + chrono::Days::new((i % 90) as u64);
        let text = if i % 2 == 0 {
            ENGLISH[i % ENGLISH.len()]
        } else {
            CHINESE[i % CHINESE.len()]
        };
        let tags = [["work", "focus"], ["work", "meetings"], ["health", "focus"]][i % 3];
        call(
            registry,
            "write_review",
            json!({
                "content": format!("{text} ({i})"),
                "type": "daily",
                "tags": tags,
                "mood": (i % 10 + 1) as f64,
                "date": day.format("%Y-%m-%d").to_string(),
            }),
        )
        .await;
    }
    started.elapsed()
}

async fn analyze(registry: &Registry) -> (Duration, Value) {
    let mut times = Vec::new();
    let mut last = Value::Null;
    for _ in 0..ANALYZE_RUNS {
        let started = Instant::now();
        last = call(
            registry,
            "analyze_patterns",
            json!({"time_range": "quarter", "end_date": "2026-10-31"}),
        )
        .await;
        times.push(started.elapsed());
    }
    times.sort();
    (times[times.len() / 2], last)
}

struct Row {
    backend: &'static str,
    sequential: f64,
    concurrent: f64,
    seed: Duration,
    analyze: Duration,
}

async fn run(backend: &'static str, location: Location, tasks: usize, reviews: usize) -> Row {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&location).await.unwrap();
    let registry = Arc::new(registry(dir.path(), store));
    let project = call(&registry, "create_project", json!({"name": "bench"})).await;
    let project = project["id"].as_str().unwrap().to_string();
    let sequential = sequential(&registry, tasks, &project).await;
    let concurrent = concurrent(Arc::clone(&registry), tasks, &project).await;
    let seed = seed_reviews(&registry, reviews).await;
    let (analyze, result) = analyze(&registry).await;
    let shown: String = serde_json::to_string(&result)
        .unwrap()
        .chars()
        .take(400)
        .collect();
    eprintln!("{backend}: analysis of {reviews} reviews: {shown}");
    Row {
        backend,
        sequential,
        concurrent,
        seed,
        analyze,
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tasks: usize = args.first().map_or(2000, |a| a.parse().unwrap());
    let reviews: usize = args.get(1).map_or(10_000, |a| a.parse().unwrap());
    let postgres = args.get(2).cloned();
    let sqlite_dir = tempfile::tempdir().unwrap();
    let mut rows = vec![
        run(
            "SQLite",
            Location::in_state_dir(sqlite_dir.path()),
            tasks,
            reviews,
        )
        .await,
    ];
    if let Some(url) = postgres {
        rows.push(run("PostgreSQL", Location::Postgres(url), tasks, reviews).await);
    }
    println!(
        "| store | create_task, 1 writer (tasks/s) | create_task, {WRITERS} writers (tasks/s) | write_review x {reviews} (s) | analyze_patterns over {reviews} reviews, median of {ANALYZE_RUNS} (ms) |"
    );
    println!("|---|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {:.0} | {:.0} | {:.1} | {:.1} |",
            r.backend,
            r.sequential,
            r.concurrent,
            r.seed.as_secs_f64(),
            r.analyze.as_secs_f64() * 1000.0
        );
    }
}
