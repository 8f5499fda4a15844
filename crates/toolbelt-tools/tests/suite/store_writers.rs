//! Many writers on one SQLite file through the tools: no busy error reaches a tool.

use std::sync::Arc;

use serde_json::json;
use tempfile::TempDir;
use toolbelt_core::{Registry, Session, Status};
use toolbelt_store::{Location, StoreHandle};
use toolbelt_tools::BuiltinOptions;

const WRITERS: usize = 8;
const OPERATIONS: usize = 500;

/// Eight registries, each with its own connection pool on the same SQLite file (as
/// eight server processes would have), make 500 calls each at once: tasks created
/// and completed, todos added. Every call succeeds and the counts are exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_500_calls_each_on_one_sqlite_file() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("shared.db");
    let registry = |db: &std::path::Path| {
        let mut registry = Registry::new(Session::new(dir.path()));
        toolbelt_tools::register_builtins_with(
            &mut registry,
            BuiltinOptions {
                store: Some(StoreHandle::lazy(Location::Sqlite(db.to_path_buf()))),
                ..BuiltinOptions::default()
            },
        )
        .unwrap();
        Arc::new(registry)
    };
    let first = registry(&db);
    let env = first
        .execute("create_project", json!({"name": "shared"}))
        .await;
    assert_eq!(env.status, Status::Success, "{env:#?}");

    let mut handles = Vec::new();
    for w in 0..WRITERS {
        let registry = registry(&db);
        handles.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            let mut created: Vec<String> = Vec::new();
            for i in 0..OPERATIONS {
                let (tool, args) = match i % 5 {
                    // Every fifth call completes the writer's newest task: a
                    // read-then-write transaction.
                    4 => (
                        "complete_task",
                        json!({"task_id": created.pop().unwrap_or_default()}),
                    ),
                    3 => (
                        "update_todos",
                        json!({"list": format!("writer-{w}"), "add": [{"title": format!("todo {i}")}]}),
                    ),
                    _ => (
                        "create_task",
                        json!({"title": format!("w{w} #{i}"), "project_id": "project-1"}),
                    ),
                };
                let env = registry.execute(tool, args).await;
                if env.status != Status::Success {
                    failures.push(format!("{tool}: {:?}", env.error));
                } else if tool == "create_task" {
                    created.push(env.data["id"].as_str().unwrap().to_string());
                }
            }
            failures
        }));
    }
    for h in handles {
        let failures = h.await.unwrap();
        assert!(failures.is_empty(), "{failures:#?}");
    }
    let per_writer_tasks = OPERATIONS / 5 * 3;
    let env = first
        .execute("list_tasks", json!({"project_id": "project-1", "limit": 1}))
        .await;
    assert_eq!(
        env.data["total"],
        json!(WRITERS * per_writer_tasks),
        "{env:#?}"
    );
    let env = first
        .execute(
            "list_tasks",
            json!({"project_id": "project-1", "status": "completed", "limit": 1}),
        )
        .await;
    assert_eq!(env.data["total"], json!(WRITERS * OPERATIONS / 5));
    for w in 0..WRITERS {
        let env = first
            .execute("set_todo_list", json!({"list": format!("writer-{w}")}))
            .await;
        assert_eq!(env.data["todos"].as_array().unwrap().len(), OPERATIONS / 5);
    }
}
