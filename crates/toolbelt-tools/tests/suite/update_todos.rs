//! `update_todos`: incremental changes by id, all or nothing, stable ids,
//! persistence, and concurrent callers.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use tempfile::TempDir;
use toolbelt_core::ErrorCode;

use super::{builtins, call, error_message, success_data, violation_paths};

async fn seed(registry: &toolbelt_core::Registry) {
    success_data(
        &call(
            registry,
            "set_todo_list",
            json!({"todos": [
                {"title": "A", "status": "Done"},
                {"title": "B", "status": "In Progress"},
                {"title": "C", "status": "Pending"}
            ]}),
        )
        .await,
    );
}

#[tokio::test]
async fn add_update_and_remove_in_one_call() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    seed(&registry).await;
    let env = call(
        &registry,
        "update_todos",
        json!({
            "add": [{"title": "D"}, {"title": "E", "status": "Done"}],
            "update": [{"id": 2, "status": "Done"}, {"id": 3, "title": "C!", "status": "In Progress"}],
            "remove": [1]
        }),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "list": "default",
            "todos": [
                {"id": 2, "title": "B", "status": "Done"},
                {"id": 3, "title": "C!", "status": "In Progress"},
                {"id": 4, "title": "D", "status": "Pending"},
                {"id": 5, "title": "E", "status": "Done"}
            ],
            "brief": "- ~~B~~ [Done]\n- **C!** [In Progress]\n- D [Pending]\n- ~~E~~ [Done]\n",
            "message": "Todo list updated: 2 done, 1 in progress, 1 pending",
            "counts": {"pending": 1, "in_progress": 1, "done": 2},
            "updated": true,
            "changes": {"added": [4, 5], "updated": [2, 3], "removed": [1]}
        })
    );
    assert_eq!(
        env.text,
        "Todo list updated: 2 done, 1 in progress, 1 pending. Changes: added 4, 5; updated 2, 3; removed 1.\n\
         - ~~B~~ [Done] (id 2)\n- **C!** [In Progress] (id 3)\n- D [Pending] (id 4)\n- ~~E~~ [Done] (id 5)"
    );
}

#[tokio::test]
async fn ids_stay_stable_across_set_and_update() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    seed(&registry).await;
    success_data(&call(&registry, "update_todos", json!({"remove": [2]})).await);
    // A full replacement after an update keeps the ids by title; the removed id
    // is not given again.
    let env = call(
        &registry,
        "set_todo_list",
        json!({"todos": [
            {"title": "C", "status": "Done"},
            {"title": "A", "status": "Done"},
            {"title": "B", "status": "Pending"}
        ]}),
    )
    .await;
    assert_eq!(
        success_data(&env)["todos"],
        json!([
            {"id": 3, "title": "C", "status": "Done"},
            {"id": 1, "title": "A", "status": "Done"},
            {"id": 4, "title": "B", "status": "Pending"}
        ])
    );
    let env = call(
        &registry,
        "update_todos",
        json!({"update": [{"id": 4, "status": "Done"}], "add": [{"title": "F"}]}),
    )
    .await;
    assert_eq!(
        success_data(&env)["todos"],
        json!([
            {"id": 3, "title": "C", "status": "Done"},
            {"id": 1, "title": "A", "status": "Done"},
            {"id": 4, "title": "B", "status": "Done"},
            {"id": 5, "title": "F", "status": "Pending"}
        ])
    );
}

#[tokio::test]
async fn unknown_ids_are_all_named_and_nothing_is_applied() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    seed(&registry).await;
    let env = call(
        &registry,
        "update_todos",
        json!({
            "add": [{"title": "D"}],
            "update": [{"id": 7, "status": "Done"}, {"id": 1, "status": "Pending"}],
            "remove": [9]
        }),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "todo list \"default\" has no todo with ids 7, 9; its ids are 1, 2, 3; nothing was changed"
    );
    let env = call(&registry, "set_todo_list", json!({})).await;
    assert_eq!(
        success_data(&env)["todos"],
        json!([
            {"id": 1, "title": "A", "status": "Done"},
            {"id": 2, "title": "B", "status": "In Progress"},
            {"id": 3, "title": "C", "status": "Pending"}
        ])
    );
    // A later addition still gets the next id: the refused call took none.
    let env = call(&registry, "update_todos", json!({"add": [{"title": "D"}]})).await;
    assert_eq!(success_data(&env)["changes"]["added"], json!([4]));
}

#[tokio::test]
async fn an_empty_or_contradictory_request_is_invalid() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    seed(&registry).await;
    for args in [
        json!({}),
        json!({"add": [], "update": [], "remove": []}),
        json!({"add": null, "update": null, "remove": null, "list": null}),
    ] {
        let env = call(&registry, "update_todos", args).await;
        let message = error_message(&env, ErrorCode::InvalidParams);
        assert!(message.contains("nothing to change"), "{message}");
        assert_eq!(violation_paths(&env), [""]);
    }
    let env = call(&registry, "update_todos", json!({"update": [{"id": 1}]})).await;
    error_message(&env, ErrorCode::InvalidParams);
    assert_eq!(violation_paths(&env), ["update[0]"]);

    let env = call(
        &registry,
        "update_todos",
        json!({"update": [{"id": 1, "status": "Done"}], "remove": [1]}),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::InvalidParams),
        "todo 1 is both updated and removed; do one or the other"
    );
    let env = call(
        &registry,
        "update_todos",
        json!({"add": [{"title": "x", "status": "Started"}]}),
    )
    .await;
    error_message(&env, ErrorCode::InvalidParams);
    assert_eq!(violation_paths(&env), ["add[0].status"]);
}

#[tokio::test]
async fn changes_survive_a_restart() {
    let dir = TempDir::new().unwrap();
    {
        let registry = builtins(dir.path());
        seed(&registry).await;
        success_data(
            &call(
                &registry,
                "update_todos",
                json!({"remove": [3], "update": [{"id": 2, "status": "Done"}]}),
            )
            .await,
        );
    }
    let registry = builtins(dir.path());
    let env = call(&registry, "update_todos", json!({"add": [{"title": "D"}]})).await;
    assert_eq!(
        success_data(&env)["todos"],
        json!([
            {"id": 1, "title": "A", "status": "Done"},
            {"id": 2, "title": "B", "status": "Done"},
            {"id": 4, "title": "D", "status": "Pending"}
        ])
    );
}

#[tokio::test]
async fn named_lists_and_workspaces_are_independent() {
    let (one, two) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let first = builtins(one.path());
    let second = builtins(two.path());
    seed(&first).await;
    let env = call(
        &first,
        "update_todos",
        json!({"list": "later", "add": [{"title": "X"}]}),
    )
    .await;
    assert_eq!(success_data(&env)["list"], json!("later"));
    assert_eq!(
        success_data(&env)["todos"],
        json!([{"id": 1, "title": "X", "status": "Pending"}])
    );
    // The other workspace has no todo 1.
    let env = call(&second, "update_todos", json!({"remove": [1]})).await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "todo list \"default\" has no todo with id 1; it is empty; nothing was changed"
    );
    let env = call(&first, "set_todo_list", json!({})).await;
    assert_eq!(success_data(&env)["todos"].as_array().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_additions_all_land_with_distinct_ids() {
    let dir = TempDir::new().unwrap();
    let registry = Arc::new(builtins(dir.path()));
    // Open the store once before the race, as a server does at start.
    success_data(&call(&registry, "set_todo_list", json!({})).await);
    let mut tasks = Vec::new();
    for n in 0..8 {
        let registry = Arc::clone(&registry);
        tasks.push(tokio::spawn(async move {
            let env = call(
                &registry,
                "update_todos",
                json!({"add": [{"title": format!("task {n}")}]}),
            )
            .await;
            success_data(&env)["changes"]["added"].clone()
        }));
    }
    let mut ids = Vec::new();
    for task in tasks {
        let added = task.await.unwrap();
        ids.push(added.as_array().unwrap()[0].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..=8).collect::<Vec<u64>>());
    let env = call(&registry, "set_todo_list", json!({})).await;
    let todos = success_data(&env)["todos"].as_array().unwrap().clone();
    assert_eq!(todos.len(), 8);
    let mut titles: Vec<String> = todos
        .iter()
        .map(|t| t["title"].as_str().unwrap().to_string())
        .collect();
    titles.sort();
    assert_eq!(
        titles,
        (0..8).map(|n| format!("task {n}")).collect::<Vec<_>>()
    );
}
