//! `set_todo_list`: full replacement, reading back, rendering as seed 000 does.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::ErrorCode;

use super::{builtins, call, error_message, success_data, violation_paths};

fn abc() -> Value {
    json!([
        {"title": "A", "status": "Done"},
        {"title": "B", "status": "In Progress"},
        {"title": "C", "status": "Pending"}
    ])
}

#[tokio::test]
async fn a_list_is_rendered_as_seed_000_does() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = call(&registry, "set_todo_list", json!({"todos": abc()})).await;
    assert_eq!(
        success_data(&env),
        &json!({
            "todos": abc(),
            "brief": "- ~~A~~ [Done]\n- **B** [In Progress]\n- C [Pending]\n",
            "message": "Todo list updated: 1 done, 1 in progress, 1 pending",
            "counts": {"pending": 1, "in_progress": 1, "done": 1},
            "updated": true
        })
    );
    assert_eq!(
        env.text,
        "Todo list updated: 1 done, 1 in progress, 1 pending.\n\
         - ~~A~~ [Done]\n- **B** [In Progress]\n- C [Pending]"
    );
}

#[tokio::test]
async fn each_call_replaces_the_whole_list() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);

    let next = json!([{"title": "D", "status": "In Progress"}]);
    let env = call(&registry, "set_todo_list", json!({"todos": next})).await;
    assert_eq!(success_data(&env)["todos"], next);
    assert_eq!(
        success_data(&env)["brief"],
        json!("- **D** [In Progress]\n")
    );

    let env = call(&registry, "set_todo_list", json!({})).await;
    assert_eq!(
        success_data(&env),
        &json!({
            "todos": next,
            "brief": "- **D** [In Progress]\n",
            "message": "Todo list unchanged: 0 done, 1 in progress, 0 pending",
            "counts": {"pending": 0, "in_progress": 1, "done": 0},
            "updated": false
        })
    );
}

#[tokio::test]
async fn reading_a_fresh_list_and_emptying_a_list() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = call(&registry, "set_todo_list", json!({})).await;
    assert_eq!(
        success_data(&env),
        &json!({
            "todos": [],
            "brief": "",
            "message": "Todo list unchanged: empty",
            "counts": {"pending": 0, "in_progress": 0, "done": 0},
            "updated": false
        })
    );
    assert_eq!(env.text, "Todo list unchanged: empty.");

    success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);
    let env = call(&registry, "set_todo_list", json!({"todos": []})).await;
    assert_eq!(
        success_data(&env),
        &json!({
            "todos": [],
            "brief": "",
            "message": "Todo list updated: empty",
            "counts": {"pending": 0, "in_progress": 0, "done": 0},
            "updated": true
        })
    );
    assert_eq!(env.text, "Todo list updated: empty.");
}

#[tokio::test]
async fn null_todos_reads_the_list_like_a_missing_one() {
    // Strict-mode models send every optional argument, as null when unused.
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);
    let env = call(&registry, "set_todo_list", json!({"todos": null})).await;
    assert_eq!(success_data(&env)["todos"], abc());
    assert_eq!(success_data(&env)["updated"], json!(false));
}

#[tokio::test]
async fn counts_follow_the_statuses() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let todos = json!([
        {"title": "one", "status": "Done"},
        {"title": "two", "status": "Done"},
        {"title": "three", "status": "In Progress"},
        {"title": "four", "status": "Pending"},
        {"title": "five", "status": "Pending"},
        {"title": "six", "status": "Pending"}
    ]);
    let env = call(&registry, "set_todo_list", json!({"todos": todos})).await;
    let data = success_data(&env);
    assert_eq!(
        data["counts"],
        json!({"pending": 3, "in_progress": 1, "done": 2})
    );
    assert_eq!(
        data["message"],
        json!("Todo list updated: 2 done, 1 in progress, 3 pending")
    );
}

#[tokio::test]
async fn invalid_todos_list_every_violation_with_its_path_and_change_nothing() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);

    let env = call(
        &registry,
        "set_todo_list",
        json!({"todos": [
            {"title": "ok", "status": "Started"},
            {"title": "", "status": "Done"},
            {"title": "no status"}
        ]}),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams).to_string();
    assert_eq!(
        violation_paths(&env),
        ["todos[0].status", "todos[1].title", "todos[2]"],
        "{message}"
    );
    for needle in [
        "todos[0].status",
        "\"Started\"",
        "todos[1].title",
        "todos[2]",
        "status",
    ] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }

    let env = call(&registry, "set_todo_list", json!({})).await;
    assert_eq!(success_data(&env)["todos"], abc());
}

#[tokio::test]
async fn each_registry_keeps_its_own_list() {
    let (one, two) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let first = builtins(one.path());
    let second = builtins(two.path());
    success_data(&call(&first, "set_todo_list", json!({"todos": abc()})).await);
    let env = call(&second, "set_todo_list", json!({})).await;
    assert_eq!(success_data(&env)["todos"], json!([]));
}
