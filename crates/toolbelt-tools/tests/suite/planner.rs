//! The planner tools (projects, goals, tasks) through a registry, as a model calls
//! them: valid calls, every kind of bad input, cascade deletes, stats, and one run
//! on PostgreSQL.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{Category, ErrorCode, Registry, Session};
use toolbelt_store::testing;
use toolbelt_tools::{BuiltinOptions, StoreHandle, register_builtins_with};
use toolbelt_wire::export::{Format, check_gemini, check_strict, export};

use super::{builtins, call, error_message, success_data, violation_paths};

/// The planner tools, in the order their examples build on each other.
const PLANNER_TOOLS: [&str; 11] = [
    "create_goal",
    "create_project",
    "link_goal_to_project",
    "update_project",
    "create_task",
    "complete_task",
    "get_project",
    "list_projects",
    "list_goals",
    "list_tasks",
    "delete_project",
];

const TIME_FIELDS: [&str; 4] = ["created_at", "updated_at", "completed_at", "linked_at"];

/// `value` with every time the store stamps replaced by `"<time>"` (after checking
/// that it is RFC 3339 in UTC).
fn redact_times(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    if TIME_FIELDS.contains(&k.as_str())
                        && let Some(t) = v.as_str()
                    {
                        assert!(
                            chrono::DateTime::parse_from_rfc3339(t).is_ok() && t.ends_with('Z'),
                            "{k}: {t}"
                        );
                        return (k.clone(), json!("<time>"));
                    }
                    (k.clone(), redact_times(v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_times).collect()),
        v => v.clone(),
    }
}

async fn ok(registry: &Registry, tool: &str, args: Value) -> (Value, String) {
    let env = call(registry, tool, args).await;
    (success_data(&env).clone(), env.text.clone())
}

async fn invalid(registry: &Registry, tool: &str, args: Value) -> (Vec<String>, String) {
    let env = call(registry, tool, args).await;
    let message = error_message(&env, ErrorCode::InvalidParams).to_string();
    (violation_paths(&env), message)
}

async fn not_found(registry: &Registry, tool: &str, args: Value) -> String {
    let env = call(registry, tool, args).await;
    error_message(&env, ErrorCode::NotFound).to_string()
}

#[tokio::test]
async fn specs_have_their_category_permission_and_hints() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    for name in PLANNER_TOOLS {
        let spec = registry.get(name).unwrap().spec().clone();
        let read = name.starts_with("get_") || name.starts_with("list_");
        let category = match name {
            "create_goal" | "link_goal_to_project" | "list_goals" => Category::Goal,
            "create_task" | "complete_task" | "list_tasks" => Category::Task,
            _ => Category::Project,
        };
        assert_eq!(
            (
                spec.category,
                spec.permissions.clone(),
                spec.hints.read_only,
                spec.hints.destructive
            ),
            (
                category,
                vec![if read { "store:read" } else { "store:write" }.to_string()],
                read,
                name == "delete_project"
            ),
            "{name}"
        );
        assert!(!spec.examples.is_empty(), "{name}");
    }
    // The exports every model API takes accept them.
    let specs: Vec<_> = PLANNER_TOOLS
        .iter()
        .map(|n| registry.get(n).unwrap().spec().clone())
        .collect();
    for tool in export(&specs, Format::OpenAiStrict).as_array().unwrap() {
        check_strict(&tool["function"]["parameters"]).unwrap();
    }
    for declaration in export(&specs, Format::Gemini)["functionDeclarations"]
        .as_array()
        .unwrap()
    {
        check_gemini(&declaration["parameters"]).unwrap();
    }
}

/// Every example, run in order on one fresh store, returns what it shows (but the
/// times the store stamps).
#[tokio::test]
async fn examples_are_what_the_tools_return_in_order() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let mut ran = 0;
    for name in PLANNER_TOOLS {
        let spec = registry.get(name).unwrap().spec().clone();
        for example in &spec.examples {
            let env = call(&registry, name, example.input.clone()).await;
            assert_eq!(
                redact_times(success_data(&env)),
                redact_times(&example.output),
                "{name}: {:?}",
                example.description
            );
            ran += 1;
        }
    }
    assert_eq!(ran, 13);
}

#[tokio::test]
async fn projects_are_created_updated_read_and_listed() {
    let dir = TempDir::new().unwrap();
    let r = builtins(dir.path());
    let (goal, text) = ok(
        &r,
        "create_goal",
        json!({"title": "Learn Rust", "stage": "yearly", "deadline": "2028-02-29"}),
    )
    .await;
    assert_eq!(goal["id"], "goal-1");
    // The default store: a SQLite file in the session's state directory.
    assert!(dir.path().join(".toolbelt").join("toolbelt.db").is_file());
    assert_eq!(
        text,
        "Created goal-1\ngoal-1 [yearly, deadline 2028-02-29] Learn Rust\nLink projects to it with link_goal_to_project."
    );

    let (p, text) = ok(&r, "create_project", json!({"name": "  Garden  "})).await;
    assert_eq!(
        redact_times(&p),
        json!({
            "id": "project-1", "name": "Garden", "description": null, "status": "active",
            "goal_ids": [], "created_at": "<time>", "updated_at": "<time>"
        })
    );
    assert_eq!(
        text,
        "Created project-1 \"Garden\" (active); no goals linked (link_goal_to_project links one)."
    );
    let (p2, text) = ok(
        &r,
        "create_project",
        json!({"name": "Book", "status": "paused", "goal_ids": ["goal-1", "Goal-1"]}),
    )
    .await;
    assert_eq!(
        (&p2["status"], &p2["goal_ids"]),
        (&json!("paused"), &json!(["goal-1"]))
    );
    assert_eq!(text, "Created project-2 \"Book\" (paused), serving goal-1.");

    let (u, text) = ok(
        &r,
        "update_project",
        json!({"project_id": "project-1", "updates": {"name": "Garden 2027", "status": "completed", "goal_ids": ["goal-1"]}}),
    )
    .await;
    assert_eq!(
        (&u["name"], &u["status"], &u["goal_ids"]),
        (
            &json!("Garden 2027"),
            &json!("completed"),
            &json!(["goal-1"])
        )
    );
    assert_eq!(
        text,
        "Updated project-1 (name, status, goal_ids):\nproject-1 [completed] Garden 2027 (goals: goal-1)"
    );

    let (got, text) = ok(&r, "get_project", json!({"project_id": "project-2"})).await;
    assert_eq!(got["project"], p2);
    assert_eq!(got.get("stats"), None);
    assert!(
        text.starts_with("project-2 [paused] Book (goals: goal-1)\nCreated "),
        "{text}"
    );

    let (list, text) = ok(&r, "list_projects", json!({})).await;
    assert_eq!(
        (list["total"].clone(), list["next_offset"].clone()),
        (json!(2), Value::Null)
    );
    assert_eq!(
        text,
        "2 projects:\nproject-1 [completed] Garden 2027 (goals: goal-1)\nproject-2 [paused] Book (goals: goal-1)"
    );
    let (list, text) = ok(&r, "list_projects", json!({"limit": 1})).await;
    assert_eq!(
        (list["total"].clone(), list["next_offset"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(
        text,
        "1-1 of 2 projects:\nproject-1 [completed] Garden 2027 (goals: goal-1)\nMore: call again with offset 1."
    );
    let (list, text) = ok(&r, "list_projects", json!({"status": "active"})).await;
    assert_eq!(list["projects"], json!([]));
    assert_eq!(text, "No projects matching status active.");

    let (goals, text) = ok(&r, "list_goals", json!({"project_id": "project-2"})).await;
    assert_eq!(
        goals["goals"][0]["project_ids"],
        json!(["project-1", "project-2"])
    );
    assert_eq!(
        text,
        "1 goal matching project project-2:\ngoal-1 [yearly, deadline 2028-02-29] Learn Rust (projects: project-1, project-2)"
    );
}

#[tokio::test]
async fn linking_twice_says_already_linked() {
    let dir = TempDir::new().unwrap();
    let r = builtins(dir.path());
    ok(&r, "create_goal", json!({"title": "G", "stage": "life"})).await;
    ok(&r, "create_project", json!({"name": "P"})).await;
    let args = json!({"goal_id": "goal-1", "project_id": "project-1"});
    let (first, text) = ok(&r, "link_goal_to_project", args.clone()).await;
    assert_eq!(first["already_linked"], false);
    assert_eq!(text, "Linked goal-1 to project-1.");
    let (second, text) = ok(&r, "link_goal_to_project", args).await;
    assert_eq!(second["already_linked"], true);
    assert_eq!(second["linked_at"], first["linked_at"]);
    assert_eq!(
        text,
        format!(
            "goal-1 and project-1 were already linked (since {}); nothing changed.",
            first["linked_at"].as_str().unwrap()
        )
    );
}

#[tokio::test]
async fn tasks_are_created_completed_and_listed() {
    let dir = TempDir::new().unwrap();
    let r = builtins(dir.path());
    ok(&r, "create_project", json!({"name": "P"})).await;
    let (t, text) = ok(
        &r,
        "create_task",
        json!({"title": "Plant", "project_id": "project-1", "due_date": "2026-03-01"}),
    )
    .await;
    assert_eq!(
        redact_times(&t),
        json!({
            "id": "task-1", "title": "Plant", "description": null, "project_id": "project-1",
            "due_date": "2026-03-01T23:59:59Z", "priority": "medium", "status": "pending",
            "completion_note": null, "completed_at": null,
            "created_at": "<time>", "updated_at": "<time>"
        })
    );
    assert_eq!(
        text,
        "Created task-1\ntask-1 [pending, medium, due 2026-03-01T23:59:59Z] Plant (project-1)\nMark it done with complete_task."
    );
    let (t2, _) = ok(
        &r,
        "create_task",
        json!({"title": "Water", "due_date": "2026-03-05T08:30:00-05:00", "priority": "low"}),
    )
    .await;
    assert_eq!(t2["due_date"], "2026-03-05T13:30:00Z");
    let (t3, _) = ok(
        &r,
        "create_task",
        json!({"title": "Harvest", "priority": "high"}),
    )
    .await;
    assert_eq!(
        (&t3["due_date"], &t3["project_id"]),
        (&Value::Null, &Value::Null)
    );

    let (done, text) = ok(
        &r,
        "complete_task",
        json!({"task_id": "task-1", "completion_note": "all rows"}),
    )
    .await;
    assert_eq!(done["already_completed"], false);
    assert_eq!(done["task"]["status"], "completed");
    assert_eq!(done["task"]["completion_note"], "all rows");
    let at = done["task"]["completed_at"].as_str().unwrap().to_string();
    assert_eq!(
        text,
        format!(
            "Completed task-1\ntask-1 [completed {at}, medium, due 2026-03-01T23:59:59Z] Plant (project-1)"
        )
    );
    let (again, text) = ok(
        &r,
        "complete_task",
        json!({"task_id": "task-1", "completion_note": "changed my mind"}),
    )
    .await;
    assert_eq!(again["already_completed"], true);
    assert_eq!(again["task"], done["task"]);
    assert_eq!(
        text,
        format!(
            "task-1 was already completed at {at}; nothing changed (its note stays: all rows; the new note was not saved)."
        )
    );

    let ids = |v: &Value| -> Vec<String> {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (all, _) = ok(&r, "list_tasks", json!({})).await;
    assert_eq!(
        (ids(&all), all["total"].clone()),
        (
            vec!["task-1".into(), "task-2".into(), "task-3".into()],
            json!(3)
        )
    );
    let (pending, _) = ok(&r, "list_tasks", json!({"status": "pending"})).await;
    assert_eq!(ids(&pending), ["task-2", "task-3"]);
    let (high, _) = ok(&r, "list_tasks", json!({"priority": "high"})).await;
    assert_eq!(ids(&high), ["task-3"]);
    let (of_p1, _) = ok(&r, "list_tasks", json!({"project_id": "project-1"})).await;
    assert_eq!(ids(&of_p1), ["task-1"]);
    // Dates include their whole day; a date-time bound is exact.
    let (march, text) = ok(
        &r,
        "list_tasks",
        json!({"due_after": "2026-03-01", "due_before": "2026-03-05"}),
    )
    .await;
    assert_eq!(ids(&march), ["task-1", "task-2"]);
    assert_eq!(
        text,
        format!(
            "2 tasks matching due from 2026-03-01T00:00:00Z, due by 2026-03-05T23:59:59Z:\n\
             task-1 [completed {at}, medium, due 2026-03-01T23:59:59Z] Plant (project-1)\n\
             task-2 [pending, low, due 2026-03-05T13:30:00Z] Water"
        )
    );
    let (before, _) = ok(
        &r,
        "list_tasks",
        json!({"due_before": "2026-03-05T13:29:59Z"}),
    )
    .await;
    assert_eq!(ids(&before), ["task-1"]);
    let (none, text) = ok(&r, "list_tasks", json!({"offset": 10})).await;
    assert_eq!(
        (none["tasks"].clone(), none["total"].clone()),
        (json!([]), json!(3))
    );
    assert_eq!(
        text,
        "No tasks at offset 10: 3 tasks in all; call again with a smaller offset."
    );
}

#[tokio::test]
async fn stats_count_tasks_rate_and_overdue() {
    let dir = TempDir::new().unwrap();
    let r = builtins(dir.path());
    ok(
        &r,
        "create_goal",
        json!({"title": "Ship", "stage": "quarter", "deadline": "2030-03-31"}),
    )
    .await;
    ok(
        &r,
        "create_goal",
        json!({"title": "Live well", "stage": "life"}),
    )
    .await;
    ok(
        &r,
        "create_project",
        json!({"name": "Release", "goal_ids": ["goal-2", "goal-1"]}),
    )
    .await;
    ok(&r, "create_project", json!({"name": "Other"})).await;
    for (title, project, due) in [
        ("Old and done", "project-1", Some("2020-01-01")),
        ("Late", "project-1", Some("2020-02-01T10:00:00Z")),
        ("Later", "project-1", Some("2020-01-15")),
        ("Future", "project-1", Some("2099-01-01")),
        ("Undated", "project-1", None),
        ("Done too", "project-1", None),
        ("Elsewhere", "project-2", Some("2020-01-01")),
    ] {
        let mut args = json!({"title": title, "project_id": project});
        if let Some(due) = due {
            args["due_date"] = json!(due);
        }
        ok(&r, "create_task", args).await;
    }
    ok(&r, "complete_task", json!({"task_id": "task-1"})).await;
    ok(&r, "complete_task", json!({"task_id": "task-6"})).await;

    let (got, text) = ok(
        &r,
        "get_project",
        json!({"project_id": "project-1", "include_stats": true}),
    )
    .await;
    assert_eq!(
        got["stats"],
        json!({
            "pending": 4,
            "completed": 2,
            "total": 6,
            "completion_rate": 0.333,
            "overdue_count": 2,
            "overdue": [
                {"id": "task-3", "title": "Later", "due_date": "2020-01-15T23:59:59Z"},
                {"id": "task-2", "title": "Late", "due_date": "2020-02-01T10:00:00Z"}
            ],
            "goals": [
                {"id": "goal-1", "title": "Ship", "stage": "quarter", "deadline": "2030-03-31"},
                {"id": "goal-2", "title": "Live well", "stage": "life", "deadline": null}
            ]
        })
    );
    let stats_text = text.split_once("\nTasks:").unwrap().1;
    assert_eq!(
        stats_text,
        " 6 (4 pending, 2 completed), 33.3% complete.\n\
         Overdue: 2\n\
         - task-3 due 2020-01-15T23:59:59Z: Later\n\
         - task-2 due 2020-02-01T10:00:00Z: Late\n\
         Goals:\n\
         - goal-1 [quarter, deadline 2030-03-31] Ship\n\
         - goal-2 [life] Live well"
    );
    ok(&r, "create_project", json!({"name": "Empty"})).await;
    let (got, text) = ok(
        &r,
        "get_project",
        json!({"project_id": "project-3", "include_stats": true}),
    )
    .await;
    assert_eq!(
        got["stats"],
        json!({"pending": 0, "completed": 0, "total": 0, "completion_rate": 0.0,
               "overdue_count": 0, "overdue": [], "goals": []})
    );
    assert!(
        text.ends_with("\nTasks: 0 (0 pending, 0 completed), 0.0% complete.\nOverdue: none.\nGoals: none linked."),
        "{text}"
    );
}

#[tokio::test]
async fn delete_needs_cascade_when_tasks_remain() {
    let dir = TempDir::new().unwrap();
    let r = builtins(dir.path());
    ok(&r, "create_goal", json!({"title": "G", "stage": "life"})).await;
    ok(&r, "create_project", json!({"name": "Keep"})).await;
    ok(&r, "create_project", json!({"name": "Empty"})).await;
    ok(
        &r,
        "create_project",
        json!({"name": "Busy", "goal_ids": ["goal-1"]}),
    )
    .await;
    for i in 0..4 {
        ok(
            &r,
            "create_task",
            json!({"title": format!("t{i}"), "project_id": "project-3"}),
        )
        .await;
    }
    ok(
        &r,
        "create_task",
        json!({"title": "kept", "project_id": "project-1"}),
    )
    .await;
    ok(&r, "complete_task", json!({"task_id": "task-1"})).await;
    ok(&r, "complete_task", json!({"task_id": "task-2"})).await;

    let env = call(&r, "delete_project", json!({"project_id": "project-3"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::Conflict),
        "project-3 still has 4 tasks (2 pending); delete them, move them, or call again with cascade: true"
    );
    ok(&r, "get_project", json!({"project_id": "project-3"})).await;

    let (d, text) = ok(&r, "delete_project", json!({"project_id": "project-2"})).await;
    assert_eq!(
        d,
        json!({"project_id": "project-2", "name": "Empty", "cascade": false,
               "tasks_deleted": 0, "goals_unlinked": 0, "reviews_unlinked": 0})
    );
    assert_eq!(text, "Deleted project-2 \"Empty\" (it had no tasks).");

    let (d, text) = ok(
        &r,
        "delete_project",
        json!({"project_id": "project-3", "cascade": true}),
    )
    .await;
    assert_eq!(
        d,
        json!({"project_id": "project-3", "name": "Busy", "cascade": true,
               "tasks_deleted": 4, "goals_unlinked": 1, "reviews_unlinked": 0})
    );
    assert_eq!(
        text,
        "Deleted project-3 \"Busy\" and its 4 tasks. Unlinked 1 goal; they remain."
    );
    assert_eq!(
        not_found(&r, "get_project", json!({"project_id": "project-3"})).await,
        "no project has the id project-3; list_projects lists the projects and their ids"
    );
    let (tasks, _) = ok(&r, "list_tasks", json!({})).await;
    assert_eq!(tasks["total"], 1);
    assert_eq!(tasks["tasks"][0]["title"], "kept");
    let (goals, _) = ok(&r, "list_goals", json!({})).await;
    assert_eq!(goals["goals"][0]["project_ids"], json!([]));
}

#[tokio::test]
async fn bad_inputs_are_refused_with_the_field_and_what_to_do() {
    let dir = TempDir::new().unwrap();
    let r = builtins(dir.path());
    let prefix = |tool: &str| format!("invalid arguments for {tool} (1 problem):\n- ");

    let cases = [
        (
            "create_project",
            json!({"name": ""}),
            "name",
            "name: \"\" is shorter than 1 character",
        ),
        (
            "create_project",
            json!({"name": " \t\n"}),
            "name",
            "name: is only whitespace; give a name with at least one visible character",
        ),
        (
            "create_project",
            json!({"name": "x", "status": "done"}),
            "status",
            "status: \"done\" is not one of [\"active\", \"paused\", \"completed\", null]",
        ),
        (
            "create_goal",
            json!({"title": "x", "stage": "yearly", "deadline": "2026-02-30"}),
            "deadline",
            "deadline: 2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD",
        ),
        (
            "create_goal",
            json!({"title": "x", "stage": "yearly", "deadline": "tomorrow"}),
            "deadline",
            "deadline: \"tomorrow\" is not a date; write it as YYYY-MM-DD, e.g. 2026-06-30 (work out relative dates such as \"tomorrow\" yourself)",
        ),
        (
            "create_goal",
            json!({"title": "x", "stage": "decade"}),
            "stage",
            "stage: \"decade\" is not one of \"life\", \"yearly\" or \"quarter\"",
        ),
        (
            "create_goal",
            json!({"title": "   ", "stage": "life"}),
            "title",
            "title: is only whitespace; give a title with at least one visible character",
        ),
        (
            "create_task",
            json!({"title": "x", "due_date": "2026-03-01T10:00:00"}),
            "due_date",
            "due_date: 2026-03-01T10:00:00 has no time zone; add one, e.g. 2026-03-01T10:00:00Z for UTC or 2026-03-01T10:00:00+08:00",
        ),
        (
            "create_task",
            json!({"title": "x", "due_date": "tomorrow"}),
            "due_date",
            "due_date: \"tomorrow\" is not a date or date-time; write an RFC 3339 date-time such as 2026-03-01T17:00:00Z, or a date YYYY-MM-DD (work out relative dates such as \"tomorrow\" yourself)",
        ),
        (
            "create_task",
            json!({"title": "x", "due_date": "2026-02-30"}),
            "due_date",
            "due_date: 2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD",
        ),
        (
            "create_task",
            json!({"title": "x", "priority": "urgent"}),
            "priority",
            "priority: \"urgent\" is not one of [\"low\", \"medium\", \"high\", null]",
        ),
        (
            "update_project",
            json!({"project_id": "project-1", "updates": {}}),
            "updates",
            "updates: is empty; give at least one of the fields that can be updated: name, description, status, goal_ids",
        ),
        (
            "update_project",
            json!({"project_id": "project-1", "updates": {"name": "  "}}),
            "updates.name",
            "updates.name: is only whitespace; give a name with at least one visible character",
        ),
        (
            "update_project",
            json!({"project_id": "project-1", "updates": {"state": "paused"}}),
            "updates",
            "updates: Additional properties are not allowed ('state' was unexpected)",
        ),
        (
            "list_tasks",
            json!({"due_after": "2026-13-01"}),
            "due_after",
            "due_after: 2026-13-01 is not a calendar date (there is no month 13); give a real date as YYYY-MM-DD",
        ),
        (
            "list_tasks",
            json!({"status": "done"}),
            "status",
            "status: \"done\" is not one of [\"pending\", \"completed\", null]",
        ),
        (
            "list_projects",
            json!({"limit": 500}),
            "limit",
            "limit: 500 is greater than the maximum of 200",
        ),
        (
            "list_goals",
            json!({"limit": 0}),
            "limit",
            "limit: 0 is less than the minimum of 1",
        ),
    ];
    for (tool, args, path, message) in cases {
        let (paths, got) = invalid(&r, tool, args.clone()).await;
        assert_eq!(paths, [path], "{tool} {args}");
        assert_eq!(got, format!("{}{message}", prefix(tool)), "{tool} {args}");
    }
    // Nothing was written by any of them.
    let (tasks, _) = ok(&r, "list_tasks", json!({})).await;
    assert_eq!(tasks["total"], 0);
}

#[tokio::test]
async fn unknown_and_wrong_kind_ids_are_not_found() {
    let dir = TempDir::new().unwrap();
    let r = builtins(dir.path());
    ok(&r, "create_goal", json!({"title": "G", "stage": "life"})).await;
    ok(&r, "create_project", json!({"name": "P"})).await;
    ok(&r, "create_task", json!({"title": "T"})).await;
    let no_goal = "no goal has the id goal-99; list_goals lists the goals and their ids";
    let no_project =
        "no project has the id project-99; list_projects lists the projects and their ids";
    let no_task = "no task has the id task-99; list_tasks lists the tasks and their ids";
    let task_as_project =
        "\"task-1\" is a task id, not a project id; list_projects lists the projects and their ids";
    let cases = [
        (
            "create_project",
            json!({"name": "x", "goal_ids": ["goal-1", "goal-99"]}),
            no_goal,
        ),
        (
            "update_project",
            json!({"project_id": "project-99", "updates": {"status": "paused"}}),
            no_project,
        ),
        (
            "update_project",
            json!({"project_id": "project-1", "updates": {"goal_ids": ["goal-99"]}}),
            no_goal,
        ),
        (
            "delete_project",
            json!({"project_id": "project-99"}),
            no_project,
        ),
        (
            "get_project",
            json!({"project_id": "project-99", "include_stats": true}),
            no_project,
        ),
        (
            "get_project",
            json!({"project_id": "task-1"}),
            task_as_project,
        ),
        (
            "link_goal_to_project",
            json!({"goal_id": "goal-99", "project_id": "project-1"}),
            no_goal,
        ),
        (
            "link_goal_to_project",
            json!({"goal_id": "goal-1", "project_id": "project-99"}),
            no_project,
        ),
        (
            "list_goals",
            json!({"project_id": "project-99"}),
            no_project,
        ),
        (
            "create_task",
            json!({"title": "x", "project_id": "project-99"}),
            no_project,
        ),
        (
            "create_task",
            json!({"title": "x", "project_id": "task-1"}),
            task_as_project,
        ),
        ("complete_task", json!({"task_id": "task-99"}), no_task),
        (
            "list_tasks",
            json!({"project_id": "project-99"}),
            no_project,
        ),
        (
            "complete_task",
            json!({"task_id": "project-1"}),
            "\"project-1\" is a project id, not a task id; list_tasks lists the tasks and their ids",
        ),
        (
            "get_project",
            json!({"project_id": "banana"}),
            "no project has the id \"banana\": project ids look like \"project-12\"; list_projects lists them",
        ),
    ];
    for (tool, args, message) in cases {
        assert_eq!(
            not_found(&r, tool, args.clone()).await,
            message,
            "{tool} {args}"
        );
    }
    // The failed writes wrote nothing: still one project, its goals unchanged.
    let (projects, _) = ok(&r, "list_projects", json!({})).await;
    assert_eq!(projects["total"], 1);
    assert_eq!(projects["projects"][0]["goal_ids"], json!([]));
    // Ids are read leniently.
    let (got, _) = ok(&r, "get_project", json!({"project_id": "Project-1"})).await;
    assert_eq!(got["project"]["id"], "project-1");
}

#[tokio::test]
async fn the_tools_run_on_postgresql() {
    let pg = testing::postgres().await.unwrap();
    let dir = TempDir::new().unwrap();
    let mut r = Registry::new(Session::new(dir.path()));
    register_builtins_with(
        &mut r,
        BuiltinOptions {
            store: Some(StoreHandle::open(pg.store.clone())),
            ..Default::default()
        },
    )
    .unwrap();
    // The examples, in order, on PostgreSQL.
    for name in PLANNER_TOOLS {
        let spec = r.get(name).unwrap().spec().clone();
        for example in &spec.examples {
            let env = call(&r, name, example.input.clone()).await;
            assert_eq!(
                redact_times(success_data(&env)),
                redact_times(&example.output),
                "{name}: {:?}",
                example.description
            );
        }
    }
    // The SQLite file of the session was never created: every call went to PostgreSQL.
    assert!(!dir.path().join(".toolbelt").join("toolbelt.db").exists());
    ok(&r, "create_project", json!({"name": "P"})).await;
    ok(
        &r,
        "create_task",
        json!({"title": "a", "project_id": "project-2", "due_date": "2020-01-01"}),
    )
    .await;
    ok(
        &r,
        "create_task",
        json!({"title": "b", "project_id": "project-2"}),
    )
    .await;
    ok(&r, "complete_task", json!({"task_id": "task-4"})).await;
    let env = call(&r, "delete_project", json!({"project_id": "project-2"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::Conflict),
        "project-2 still has 2 tasks (1 pending); delete them, move them, or call again with cascade: true"
    );
    let (got, _) = ok(
        &r,
        "get_project",
        json!({"project_id": "project-2", "include_stats": true}),
    )
    .await;
    assert_eq!(
        (
            got["stats"]["total"].clone(),
            got["stats"]["completion_rate"].clone(),
            got["stats"]["overdue"].clone()
        ),
        (
            json!(2),
            json!(0.5),
            json!([{"id": "task-3", "title": "a", "due_date": "2020-01-01T23:59:59Z"}])
        )
    );
    let (d, _) = ok(
        &r,
        "delete_project",
        json!({"project_id": "project-2", "cascade": true}),
    )
    .await;
    assert_eq!(d["tasks_deleted"], 2);
    let (tasks, _) = ok(&r, "list_tasks", json!({})).await;
    assert_eq!(tasks["total"], 0);
}
