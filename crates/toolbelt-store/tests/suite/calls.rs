//! The call log: a registry's calls written by [`CallLogWriter`] and read back.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{
    CallLog, CallOptions, CallRecord, Envelope, ErrorCode, Registry, Reply, Session, ToolCall,
    ToolError, ToolSpec,
};
use toolbelt_store::{CallEntry, CallFilter, CallLogWriter, recent_calls, testing};

const SECRET: &str = "hunter2-very-secret";

fn registry(writer: &CallLogWriter) -> Registry {
    let mut registry = Registry::new(Session::new(std::env::temp_dir()));
    registry
        .register_fn(
            ToolSpec::new(
                "lookup",
                "Looks a name up.",
                json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "password": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": false
                }),
            ),
            |_ctx, args| async move {
                if args["name"] == "missing" {
                    return Err(ToolError::new(ErrorCode::NotFound, "no such name"));
                }
                Ok(Reply::new(json!({"found": args["name"]}), "found it"))
            },
        )
        .unwrap();
    registry.set_call_log(Some(Arc::new(writer.clone())));
    registry
}

/// A writer on `store` for `workspace`: journalling its records in a new
/// directory (returned with it), or keeping them in memory.
fn writer(
    store: &toolbelt_store::Store,
    workspace: &str,
    journaled: bool,
) -> (CallLogWriter, Option<tempfile::TempDir>) {
    if !journaled {
        return (CallLogWriter::start(store.clone(), workspace), None);
    }
    let dir = tempfile::tempdir().unwrap();
    let writer = CallLogWriter::start_journaled(store.clone(), workspace, dir.path()).unwrap();
    (writer, Some(dir))
}

async fn run(registry: &Registry, tool: &str, args: serde_json::Value, id: &str) -> Envelope {
    tokio::time::timeout(
        Duration::from_secs(10),
        registry.execute_call(
            ToolCall::new(tool, args).with_id(id),
            CallOptions::default(),
        ),
    )
    .await
    .unwrap()
}

/// Fresh stores of both backends, each with whether its writer journals: every
/// case once with records in memory, once journalled.
async fn both_ways() -> Vec<(testing::TestStore, bool)> {
    let mut out = Vec::new();
    for journaled in [false, true] {
        for t in testing::both().await.unwrap() {
            out.push((t, journaled));
        }
    }
    out
}

fn all() -> CallFilter {
    CallFilter {
        tail: 100,
        tool: None,
    }
}

fn bytes_out(env: &Envelope) -> i64 {
    (env.text.len() + serde_json::to_string(&env.data).unwrap().len()) as i64
}

#[tokio::test]
async fn a_registry_logs_exact_rows_with_secrets_redacted() {
    for (t, journaled) in both_ways().await {
        let (writer, _dir) = writer(&t.store, "/work/project", journaled);
        let registry = registry(&writer);
        let before = toolbelt_store::now_ms();
        let ok = run(
            &registry,
            "lookup",
            json!({"name": "ada", "password": SECRET}),
            "c1",
        )
        .await;
        assert!(ok.is_ok(), "{ok:#?}");
        let missing = run(&registry, "lookup", json!({"name": "missing"}), "c2").await;
        let unknown = run(
            &registry,
            "lookpu",
            json!({"query": format!("Bearer {SECRET}")}),
            "c3",
        )
        .await;
        let invalid = run(
            &registry,
            "lookup",
            json!({"nmae": "ada", "password": SECRET}),
            "c4",
        )
        .await;
        let after = toolbelt_store::now_ms();
        tokio::time::timeout(Duration::from_secs(10), writer.flush())
            .await
            .unwrap();

        let rows = recent_calls(&t.store, &all()).await.unwrap();
        assert_eq!(rows.len(), 4);
        for row in &rows {
            assert!(
                (before..=after).contains(&row.at_ms),
                "{} not in {before}..={after}",
                row.at_ms
            );
            let whole = serde_json::to_string(row).unwrap();
            assert!(!whole.contains(SECRET), "{whole}");
            assert!(!whole.contains("hunter2"), "{whole}");
        }
        let entry = |i: usize,
                     env: &Envelope,
                     tool: &str,
                     id: &str,
                     args: &str,
                     status: &str,
                     code: Option<&str>| CallEntry {
            id: rows[i].id,
            at_ms: rows[i].at_ms,
            tool: tool.into(),
            call_id: id.into(),
            args: args.into(),
            status: status.into(),
            error_code: code.map(str::to_string),
            duration_ms: env.stats.time_ms as i64,
            bytes_out: bytes_out(env),
            workspace: "/work/project".into(),
            origin: None,
            checkpoint: None,
            hooks: None,
        };
        assert_eq!(
            rows,
            vec![
                entry(
                    0,
                    &ok,
                    "lookup",
                    "c1",
                    r#"{"name":"ada","password":"[redacted]"}"#,
                    "success",
                    None
                ),
                entry(
                    1,
                    &missing,
                    "lookup",
                    "c2",
                    r#"{"name":"missing"}"#,
                    "error",
                    Some("NOT_FOUND")
                ),
                entry(
                    2,
                    &unknown,
                    "lookpu",
                    "c3",
                    r#"{"query":"Bearer [redacted]"}"#,
                    "error",
                    Some("UNKNOWN_TOOL")
                ),
                entry(
                    3,
                    &invalid,
                    "lookup",
                    "c4",
                    r#"{"nmae":"ada","password":"[redacted]"}"#,
                    "error",
                    Some("INVALID_PARAMS")
                ),
            ]
        );
        assert!(rows.windows(2).all(|w| w[0].id < w[1].id));
    }
}

fn record(n: usize, tool: &str) -> CallRecord {
    CallRecord {
        at_ms: 1_700_000_000_000 + n as i64,
        tool: tool.into(),
        call_id: format!("call-{n}"),
        args: format!(r#"{{"n":{n}}}"#),
        status: "success".into(),
        error_code: None,
        duration_ms: n as u64,
        bytes_out: 10 * n as u64,
        ..CallRecord::default()
    }
}

#[tokio::test]
async fn tail_and_tool_filters_return_the_latest_oldest_first() {
    for t in testing::both().await.unwrap() {
        let writer = CallLogWriter::start(t.store.clone(), "/w");
        for n in 0..30 {
            writer.record(record(n, if n % 3 == 0 { "grep" } else { "read_file" }));
        }
        writer.flush().await;

        let last5 = recent_calls(
            &t.store,
            &CallFilter {
                tail: 5,
                tool: None,
            },
        )
        .await
        .unwrap();
        let ids: Vec<String> = last5.iter().map(|e| e.call_id.clone()).collect();
        assert_eq!(ids, ["call-25", "call-26", "call-27", "call-28", "call-29"]);
        assert_eq!(
            last5[0],
            CallEntry {
                id: last5[0].id,
                at_ms: 1_700_000_000_025,
                tool: "read_file".into(),
                call_id: "call-25".into(),
                args: r#"{"n":25}"#.into(),
                status: "success".into(),
                error_code: None,
                duration_ms: 25,
                bytes_out: 250,
                workspace: "/w".into(),
                origin: None,
                checkpoint: None,
                hooks: None,
            }
        );

        let greps = recent_calls(
            &t.store,
            &CallFilter {
                tail: 3,
                tool: Some("grep".into()),
            },
        )
        .await
        .unwrap();
        let ids: Vec<String> = greps.iter().map(|e| e.call_id.clone()).collect();
        assert_eq!(ids, ["call-21", "call-24", "call-27"]);

        let none = recent_calls(
            &t.store,
            &CallFilter {
                tail: 10,
                tool: Some("bash".into()),
            },
        )
        .await
        .unwrap();
        assert_eq!(none, vec![]);
        let zero = recent_calls(
            &t.store,
            &CallFilter {
                tail: 0,
                tool: None,
            },
        )
        .await
        .unwrap();
        assert_eq!(zero, vec![]);
        assert_eq!(recent_calls(&t.store, &all()).await.unwrap().len(), 30);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_waits_for_every_batch_and_nothing_is_lost_across_a_restart() {
    for (t, journaled) in both_ways().await {
        let (writer, _dir) = writer(&t.store, "/w", journaled);
        // More than one batch, from several clones at once.
        let clones: Vec<CallLogWriter> = (0..4).map(|_| writer.clone()).collect();
        for (c, w) in clones.iter().enumerate() {
            for n in 0..150 {
                w.record(record(c * 1000 + n, "think"));
            }
        }
        tokio::time::timeout(Duration::from_secs(30), writer.flush())
            .await
            .unwrap();
        t.store.close().await;

        let reopened = toolbelt_store::Store::open(&t.location).await.unwrap();
        let rows = recent_calls(
            &reopened,
            &CallFilter {
                tail: 1000,
                tool: None,
            },
        )
        .await
        .unwrap();
        assert_eq!(rows.len(), 600);
        // Each clone's records keep their order.
        let first_clone: Vec<String> = rows
            .iter()
            .filter(|r| r.duration_ms < 1000)
            .map(|r| r.call_id.clone())
            .collect();
        let expected: Vec<String> = (0..150).map(|n| format!("call-{n}")).collect();
        assert_eq!(first_clone, expected);
    }
}

/// A store that cannot be written never fails a call, and a flush still ends.
#[tokio::test]
async fn a_failing_store_never_fails_calls_and_flush_still_returns() {
    let t = testing::sqlite().await.unwrap();
    let writer = CallLogWriter::start(t.store.clone(), "/w");
    let registry = registry(&writer);
    t.store.close().await;
    let env = run(&registry, "lookup", json!({"name": "ada"}), "c1").await;
    assert_eq!(env.data, json!({"found": "ada"}));
    // The write fails; flush still returns.
    tokio::time::timeout(Duration::from_secs(10), writer.flush())
        .await
        .unwrap();
    // Records after the failure are still taken.
    let reopened = toolbelt_store::Store::open(&t.location).await.unwrap();
    let writer = CallLogWriter::start(reopened.clone(), "/w");
    writer.record(record(1, "think"));
    writer.flush().await;
    let rows = recent_calls(&reopened, &all()).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].call_id, "call-1");
}

/// Calls older than the retention, counted back from the newest record written,
/// leave the log; the others stay.
#[tokio::test]
async fn calls_older_than_the_retention_are_removed_as_new_ones_arrive() {
    for t in testing::both().await.unwrap() {
        let writer = CallLogWriter::start(t.store.clone(), "/w");
        let base = 1_700_000_000_000_i64;
        for (n, at) in [
            (1, base),
            (2, base + toolbelt_store::CALL_LOG_RETENTION_MS / 2),
        ] {
            let mut r = record(n, "think");
            r.at_ms = at;
            writer.record(r);
            writer.flush().await;
        }
        let all = |store: toolbelt_store::Store| async move {
            recent_calls(
                &store,
                &CallFilter {
                    tail: 100,
                    tool: None,
                },
            )
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.call_id)
            .collect::<Vec<_>>()
        };
        assert_eq!(all(t.store.clone()).await, ["call-1", "call-2"]);
        // A call just past the retention after the first one: the first goes.
        let mut r = record(3, "think");
        r.at_ms = base + toolbelt_store::CALL_LOG_RETENTION_MS + 1;
        writer.record(r);
        writer.flush().await;
        assert_eq!(all(t.store.clone()).await, ["call-2", "call-3"]);
    }
}

/// A burst of calls is written as one batch once the first has waited
/// CALL_LOG_LINGER, without a flush; nothing is written before that.
#[tokio::test]
async fn a_burst_is_written_after_the_linger_without_a_flush() {
    for journaled in [false, true] {
        a_burst_is_written_after_the_linger(journaled).await;
    }
}

async fn a_burst_is_written_after_the_linger(journaled: bool) {
    let t = testing::sqlite().await.unwrap();
    let (writer, _dir) = writer(&t.store, "/w", journaled);
    let started = tokio::time::Instant::now();
    for n in 0..20 {
        writer.record(record(n, "think"));
    }
    // Before the linger has passed, the burst is still waiting.
    tokio::time::sleep(toolbelt_store::CALL_LOG_LINGER / 4).await;
    let early = recent_calls(&t.store, &all()).await.unwrap();
    if started.elapsed() < toolbelt_store::CALL_LOG_LINGER {
        assert_eq!(early.len(), 0, "written before the linger");
    }
    let deadline = started + Duration::from_secs(10);
    let rows = loop {
        let rows = recent_calls(&t.store, &all()).await.unwrap();
        if !rows.is_empty() || tokio::time::Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // All at once: one transaction held the whole burst.
    assert_eq!(rows.len(), 20);
    assert!(started.elapsed() >= toolbelt_store::CALL_LOG_LINGER);
}

/// The nice value of each of this process's SQLite worker threads.
#[cfg(target_os = "linux")]
fn sqlite_worker_nice() -> Vec<i64> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let Some((name, rest)) = stat.split_once(" (").and_then(|(_, s)| s.rsplit_once(") "))
        else {
            continue;
        };
        if name.starts_with("sqlx-sqlite-wor") {
            // Fields from the 3rd on; the nice value is the 19th.
            out.push(rest.split(' ').nth(16).unwrap().parse().unwrap());
        }
    }
    out
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_log_writes_at_a_lower_priority_than_the_calls() {
    let t = testing::sqlite().await.unwrap();
    let writer = CallLogWriter::start(t.store.clone(), "/w");
    let registry = registry(&writer);
    assert!(
        run(&registry, "lookup", json!({"name": "ada"}), "n1")
            .await
            .is_ok()
    );
    tokio::time::timeout(Duration::from_secs(10), writer.flush())
        .await
        .unwrap();
    let nice = sqlite_worker_nice();
    assert!(nice.contains(&10), "SQLite workers' nice values: {nice:?}");
    assert_eq!(recent_calls(&t.store, &all()).await.unwrap().len(), 1);
}
