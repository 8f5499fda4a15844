//! `set_todo_list`: full replacement, reading back, rendering as a todo list,
//! stable ids, and lists kept in the store per workspace and per name.

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

fn abc_with_ids() -> Value {
    json!([
        {"id": 1, "title": "A", "status": "Done"},
        {"id": 2, "title": "B", "status": "In Progress"},
        {"id": 3, "title": "C", "status": "Pending"}
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
            "list": "default",
            "todos": abc_with_ids(),
            "brief": "- ~~A~~ [Done]\n- **B** [In Progress]\n- C [Pending]\n",
            "message": "Todo list updated: 1 done, 1 in progress, 1 pending",
            "counts": {"pending": 1, "in_progress": 1, "done": 1},
            "updated": true
        })
    );
    assert_eq!(
        env.text,
        "Todo list updated: 1 done, 1 in progress, 1 pending.\n\
         - ~~A~~ [Done] (id 1)\n- **B** [In Progress] (id 2)\n- C [Pending] (id 3)"
    );
}

#[tokio::test]
async fn each_call_replaces_the_whole_list() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);

    let next = json!([{"title": "D", "status": "In Progress"}]);
    let env = call(&registry, "set_todo_list", json!({"todos": next})).await;
    let expected = json!([{"id": 4, "title": "D", "status": "In Progress"}]);
    assert_eq!(success_data(&env)["todos"], expected);
    assert_eq!(
        success_data(&env)["brief"],
        json!("- **D** [In Progress]\n")
    );

    let env = call(&registry, "set_todo_list", json!({})).await;
    assert_eq!(
        success_data(&env),
        &json!({
            "list": "default",
            "todos": expected,
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
            "list": "default",
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
            "list": "default",
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
    let env = call(
        &registry,
        "set_todo_list",
        json!({"todos": null, "list": null}),
    )
    .await;
    assert_eq!(success_data(&env)["todos"], abc_with_ids());
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
            {"title": "no status"},
            {"id": 0, "title": "zero", "status": "Done"}
        ]}),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams).to_string();
    assert_eq!(
        violation_paths(&env),
        [
            "todos[0].status",
            "todos[1].title",
            "todos[2]",
            "todos[3].id"
        ],
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
    assert_eq!(success_data(&env)["todos"], abc_with_ids());
}

#[tokio::test]
async fn ids_are_kept_by_id_or_by_title_and_never_reused() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);

    // B renamed by its id, C matched by its title, A dropped, E new.
    let env = call(
        &registry,
        "set_todo_list",
        json!({"todos": [
            {"title": "C", "status": "In Progress"},
            {"id": 2, "title": "B, renamed", "status": "Done"},
            {"title": "E", "status": "Pending"}
        ]}),
    )
    .await;
    assert_eq!(
        success_data(&env)["todos"],
        json!([
            {"id": 3, "title": "C", "status": "In Progress"},
            {"id": 2, "title": "B, renamed", "status": "Done"},
            {"id": 4, "title": "E", "status": "Pending"}
        ])
    );

    // A comes back: a new id, 1 is not reused.
    let env = call(
        &registry,
        "set_todo_list",
        json!({"todos": [{"title": "A", "status": "Pending"}]}),
    )
    .await;
    assert_eq!(
        success_data(&env)["todos"],
        json!([{"id": 5, "title": "A", "status": "Pending"}])
    );
}

#[tokio::test]
async fn an_unknown_id_is_not_found_and_changes_nothing() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);
    let env = call(
        &registry,
        "set_todo_list",
        json!({"todos": [
            {"id": 1, "title": "A", "status": "Done"},
            {"id": 8, "title": "X", "status": "Pending"},
            {"id": 9, "title": "Y", "status": "Pending"}
        ]}),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "todo list \"default\" has no todo with ids 8, 9; its ids are 1, 2, 3; nothing was changed"
    );
    assert_eq!(
        env.error.as_ref().unwrap().hint.as_deref(),
        Some("call set_todo_list without todos to read the list with its ids")
    );
    let env = call(&registry, "set_todo_list", json!({})).await;
    assert_eq!(success_data(&env)["todos"], abc_with_ids());
}

#[tokio::test]
async fn lists_survive_a_restart() {
    let dir = TempDir::new().unwrap();
    {
        let registry = builtins(dir.path());
        success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);
    }
    // A new registry over the same workspace opens the same store file.
    let registry = builtins(dir.path());
    let env = call(&registry, "set_todo_list", json!({})).await;
    assert_eq!(success_data(&env)["todos"], abc_with_ids());
    let env = call(
        &registry,
        "set_todo_list",
        json!({"todos": [{"title": "B", "status": "Done"}]}),
    )
    .await;
    assert_eq!(
        success_data(&env)["todos"],
        json!([{"id": 2, "title": "B", "status": "Done"}])
    );
}

#[tokio::test]
async fn each_workspace_keeps_its_own_list() {
    let (one, two) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let first = builtins(one.path());
    let second = builtins(two.path());
    success_data(&call(&first, "set_todo_list", json!({"todos": abc()})).await);
    let env = call(&second, "set_todo_list", json!({})).await;
    assert_eq!(success_data(&env)["todos"], json!([]));
}

#[tokio::test]
async fn named_lists_are_independent() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    success_data(&call(&registry, "set_todo_list", json!({"todos": abc()})).await);
    let env = call(
        &registry,
        "set_todo_list",
        json!({"list": "release", "todos": [{"title": "Tag", "status": "Pending"}]}),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "list": "release",
            "todos": [{"id": 1, "title": "Tag", "status": "Pending"}],
            "brief": "- Tag [Pending]\n",
            "message": "Todo list updated: 0 done, 0 in progress, 1 pending",
            "counts": {"pending": 1, "in_progress": 0, "done": 0},
            "updated": true
        })
    );
    let env = call(&registry, "set_todo_list", json!({"list": "default"})).await;
    assert_eq!(success_data(&env)["todos"], abc_with_ids());
    let env = call(&registry, "set_todo_list", json!({"list": "other"})).await;
    assert_eq!(success_data(&env)["todos"], json!([]));
}

#[tokio::test]
async fn list_names_have_1_to_64_characters() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    for bad in [String::new(), "x".repeat(65)] {
        let env = call(&registry, "set_todo_list", json!({"list": bad})).await;
        error_message(&env, ErrorCode::InvalidParams);
        assert_eq!(violation_paths(&env), ["list"]);
    }
    let env = call(&registry, "set_todo_list", json!({"list": "é".repeat(64)})).await;
    assert_eq!(success_data(&env)["list"], json!("é".repeat(64)));
}
