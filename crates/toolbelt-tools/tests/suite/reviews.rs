//! `write_review`, `list_reviews`, `analyze_patterns`: called as a model calls them,
//! on a fresh store; the analysis of the store's English and Chinese fixture is
//! checked against the figures worked out by hand.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{ErrorCode, Registry, Session};
use toolbelt_store::testing::{self, TestStore};
use toolbelt_tools::{BuiltinOptions, StoreHandle, register_builtins_with};

use super::{call, error_message, success_data, violation_paths};

const FIXTURE: &str = include_str!("../../../toolbelt-store/tests/fixtures/reviews/reviews.json");

/// A registry whose tools share a fresh SQLite store.
async fn setup() -> (Registry, TestStore, TempDir) {
    let dir = TempDir::new().unwrap();
    let t = testing::sqlite().await.unwrap();
    let mut registry = Registry::new(Session::new(dir.path()));
    register_builtins_with(
        &mut registry,
        BuiltinOptions {
            store: Some(StoreHandle::open(t.store.clone())),
            ..BuiltinOptions::default()
        },
    )
    .unwrap();
    (registry, t, dir)
}

fn ms(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .timestamp_millis()
}

/// Writes the fixture through `write_review`, oldest first.
async fn load_fixture(registry: &Registry) {
    let rows: Vec<Value> = serde_json::from_str(FIXTURE).unwrap();
    for (i, r) in rows.iter().enumerate() {
        let mut args = r.clone();
        if args["mood"].is_null() {
            args.as_object_mut().unwrap().remove("mood");
        }
        let env = call(registry, "write_review", args).await;
        assert_eq!(success_data(&env)["id"], json!(format!("review-{}", i + 1)));
    }
}

#[tokio::test]
async fn the_fixture_is_analysed_as_computed_by_hand() {
    let (registry, t, _dir) = setup().await;
    load_fixture(&registry).await;
    for (title, created, completed) in [
        (
            "before, done inside",
            "2026-02-12T10:00:00+08:00",
            Some("2026-02-20T10:00:00+08:00"),
        ),
        (
            "inside, done inside",
            "2026-02-15T10:00:00+08:00",
            Some("2026-03-01T10:00:00+08:00"),
        ),
        ("inside, open", "2026-02-25T10:00:00+08:00", None),
        (
            "inside, done after",
            "2026-03-10T10:00:00+08:00",
            Some("2026-03-15T01:00:00+08:00"),
        ),
        ("after", "2026-03-15T00:30:00+08:00", None),
    ] {
        sqlx::query(
            "INSERT INTO tasks (title, priority, status, completed_at, created_at, updated_at) VALUES ($1, 'medium', 'pending', $2, $3, $3)",
        )
        .bind(title)
        .bind(completed.map(ms))
        .bind(ms(created))
        .execute(t.store.pool())
        .await
        .unwrap();
    }
    let env = call(
        &registry,
        "analyze_patterns",
        json!({"time_range": "month", "end_date": "2026-03-14", "utc_offset": "+08:00"}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["reviews"], json!(13));
    assert_eq!(
        data["mood"],
        json!({
            "count": 12,
            "average": 6.83,
            "trend": {"slope_per_day": 0.089, "direction": "rising"},
            "by_weekday": [
                {"weekday": "Monday", "count": 4, "average": 5.88},
                {"weekday": "Tuesday", "count": 2, "average": 5.75},
                {"weekday": "Wednesday", "count": 2, "average": 7.25},
                {"weekday": "Thursday", "count": 1, "average": 8.5},
                {"weekday": "Friday", "count": 2, "average": 7.5},
                {"weekday": "Saturday", "count": 1, "average": 9.0},
                {"weekday": "Sunday", "count": 0, "average": null}
            ]
        })
    );
    assert_eq!(
        data["tags"],
        json!([
            {"tag": "work", "count": 9, "mean_mood": 6.72},
            {"tag": "health", "count": 4, "mean_mood": 6.75},
            {"tag": "reflection", "count": 3, "mean_mood": 7.83}
        ])
    );
    let texts = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|w| {
                format!(
                    "{}:{}:{}",
                    w["text"].as_str().unwrap(),
                    w["reviews"],
                    w["occurrences"]
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        texts(&data["themes"]["words"]),
        [
            "review:4:5",
            "code:4:4",
            "database:4:4",
            "migration:4:4",
            "morning:4:4",
            "进展:4:4",
            "顺利:4:4",
            "run:3:3",
            "数据库:3:3",
            "迁移:3:3"
        ]
    );
    assert_eq!(
        texts(&data["themes"]["phrases"]),
        [
            "code review:4:4",
            "database migration:4:4",
            "进展顺利:4:4",
            "morning run:3:3",
            "数据库迁移:3:3",
            "团队沟通:2:2",
            "沟通顺畅:2:2"
        ]
    );
    assert_eq!(
        data["tasks"],
        json!({"created": 3, "completed": 2, "completion_ratio": 0.67})
    );
    assert_eq!(
        data["streaks"],
        json!({
            "current": 1, "longest": 6, "longest_start": "2026-03-02", "longest_end": "2026-03-07",
            "days_with_review": 13, "days_in_range": 30
        })
    );
    assert_eq!(
        env.text,
        "Patterns of the last 30 days (2026-02-13 to 2026-03-14, UTC+08:00): 13 reviews.
- Mood: average 6.83 over 12 reviews, rising (+0.089/day); by weekday: Mon 5.88, Tue 5.75, Wed 7.25, Thu 8.5, Fri 7.5, Sat 9.
- Tags: work ×9 (mood 6.72), health ×4 (mood 6.75), reflection ×3 (mood 7.83).
- Themes: review (4), code (4), database (4), migration (4), morning (4), 进展 (4), 顺利 (4), run (3), 数据库 (3), 迁移 (3).
- Phrases: code review (4), database migration (4), 进展顺利 (4), morning run (3), 数据库迁移 (3), 团队沟通 (2), 沟通顺畅 (2).
- Tasks: 3 created, 2 completed (ratio 0.67).
- Streaks: current 1 day, longest 6 (2026-03-02 to 2026-03-07); reviews on 13 of 30 days."
    );

    // Only the sections asked for.
    let env = call(
        &registry,
        "analyze_patterns",
        json!({"time_range": "week", "categories": ["tasks", "tags"], "end_date": "2026-03-07", "utc_offset": "+08:00"}),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "time_range": "week",
            "start_date": "2026-03-01",
            "end_date": "2026-03-07",
            "utc_offset": "+08:00",
            "days": 7,
            "reviews": 6,
            "tags": [
                {"tag": "work", "count": 3, "mean_mood": 6.83},
                {"tag": "health", "count": 2, "mean_mood": 7.0},
                {"tag": "reflection", "count": 1, "mean_mood": 9.0}
            ],
            "tasks": {"created": 0, "completed": 1, "completion_ratio": null}
        })
    );
    assert_eq!(
        env.text,
        "Patterns of the last 7 days (2026-03-01 to 2026-03-07, UTC+08:00): 6 reviews.
- Tags: work ×3 (mood 6.83), health ×2 (mood 7), reflection ×1 (mood 9).
- Tasks: 0 created, 1 completed."
    );
}

#[tokio::test]
async fn reviews_are_written_and_listed() {
    let (registry, t, _dir) = setup().await;
    let project: i64 = sqlx::query_scalar(
        "INSERT INTO projects (name, status, created_at, updated_at) VALUES ('Migration', 'active', 0, 0) RETURNING id",
    )
    .fetch_one(t.store.pool())
    .await
    .unwrap();
    let env = call(
        &registry,
        "write_review",
        json!({
            "content": "Migrated the users table.\nTomorrow: the orders table.",
            "type": "weekly",
            "tags": ["Work", " work ", "db"],
            "linked_project_ids": [format!("project-{project}")],
            "mood": 7.5,
            "date": "2026-03-04T21:30:00+08:00"
        }),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "id": "review-1",
            "content": "Migrated the users table.\nTomorrow: the orders table.",
            "type": "weekly",
            "tags": ["Work", "db"],
            "linked_project_ids": ["project-1"],
            "mood": 7.5,
            "date": "2026-03-04T13:30:00Z"
        })
    );
    assert_eq!(
        env.text,
        "Saved review-1 (weekly, 2026-03-04T13:30:00Z, mood 7.5, tags: Work, db, projects: project-1)."
    );
    // Without a date: now.
    let before = toolbelt_store::now_ms() / 1000 * 1000;
    let env = call(
        &registry,
        "write_review",
        json!({"content": "平静的一天", "type": "daily"}),
    )
    .await;
    let date = success_data(&env)["date"].as_str().unwrap().to_string();
    assert!(
        ms(&date) >= before && ms(&date) <= toolbelt_store::now_ms(),
        "{date}"
    );

    let env = call(&registry, "list_reviews", json!({"utc_offset": "+08:00"})).await;
    let data = success_data(&env);
    assert_eq!(
        (data["total"].clone(), data["has_more"].clone()),
        (json!(2), json!(false))
    );
    assert_eq!(data["items"][1]["id"], json!("review-1"));
    assert_eq!(data["items"][1]["linked_project_ids"], json!(["project-1"]));
    let today = toolbelt_store::local_date(
        ms(&date),
        toolbelt_store::parse_utc_offset("+08:00").unwrap(),
    );
    assert_eq!(
        env.text,
        format!(
            "Reviews 1-2 of 2, newest first:\n- review-2 · {today} · daily · 平静的一天\n\
             - review-1 · 2026-03-04 · weekly · mood 7.5 · [Work, db] · Migrated the users table."
        )
    );

    let env = call(&registry, "list_reviews", json!({"tag": "DB", "limit": 1})).await;
    assert_eq!(success_data(&env)["total"], json!(1));
    let env = call(&registry, "list_reviews", json!({"limit": 1})).await;
    assert_eq!(success_data(&env)["has_more"], json!(true));
    assert!(
        env.text.ends_with("\nMore: call again with offset 1."),
        "{}",
        env.text
    );
    let env = call(&registry, "list_reviews", json!({"type": "monthly"})).await;
    assert_eq!(env.text, "No review matches; write_review saves one.");
}

#[tokio::test]
async fn the_examples_are_what_the_tools_return() {
    let (registry, _t, _dir) = setup().await;
    let specs = registry.definitions();
    let example = |name: &str| {
        let spec = specs.iter().find(|s| s.name == name).unwrap();
        (
            spec.examples[0].input.clone(),
            spec.examples[0].output.clone(),
        )
    };
    let (input, output) = example("write_review");
    assert_eq!(
        success_data(&call(&registry, "write_review", input).await),
        &output
    );
    let (input, output) = example("list_reviews");
    assert_eq!(
        success_data(&call(&registry, "list_reviews", input).await),
        &output
    );
    success_data(
        &call(
            &registry,
            "write_review",
            json!({"content": "Slow start.", "type": "daily", "mood": 6, "date": "2026-03-03"}),
        )
        .await,
    );
    let (input, output) = example("analyze_patterns");
    assert_eq!(
        success_data(&call(&registry, "analyze_patterns", input).await),
        &output
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_with_what_to_do() {
    let (registry, _t, _dir) = setup().await;
    let ok = json!({"content": "Good day.", "type": "daily"});
    let with = |key: &str, value: Value| {
        let mut v = ok.clone();
        v[key] = value;
        v
    };
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "write_review",
            with("content", json!("")),
            "content",
            "invalid arguments for write_review (1 problem):\n- content: \"\" is shorter than 1 character",
        ),
        (
            "write_review",
            with("content", json!("  \n ")),
            "content",
            "invalid arguments for write_review (1 problem):\n- content: `content` is empty or only whitespace: write what happened, what went well and what to change",
        ),
        (
            "write_review",
            with("type", json!("yearly")),
            "type",
            "invalid arguments for write_review (1 problem):\n- type: \"yearly\" is not one of [\"daily\", \"weekly\", \"monthly\"]",
        ),
        (
            "write_review",
            with("mood", json!(11)),
            "mood",
            "invalid arguments for write_review (1 problem):\n- mood: 11 is greater than the maximum of 10",
        ),
        (
            "write_review",
            with("mood", json!(0)),
            "mood",
            "invalid arguments for write_review (1 problem):\n- mood: 0 is less than the minimum of 1",
        ),
        (
            "write_review",
            with("tags", json!(["ok", " "])),
            "tags[1]",
            "invalid arguments for write_review (1 problem):\n- tags[1]: `tags[1]` is empty: give each tag a word, or leave the empty one out",
        ),
        (
            "write_review",
            with("date", json!("2026-02-30")),
            "date",
            "invalid arguments for write_review (1 problem):\n- date: 2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD",
        ),
        (
            "write_review",
            with("date", json!("yesterday")),
            "date",
            "invalid arguments for write_review (1 problem):\n- date: \"yesterday\" is not a date or date-time; write an RFC 3339 date-time such as 2026-03-01T17:00:00Z, or a date YYYY-MM-DD (work out relative dates such as \"tomorrow\" yourself)",
        ),
        (
            "list_reviews",
            json!({"since": "2026-02-30"}),
            "since",
            "invalid arguments for list_reviews (1 problem):\n- since: 2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD",
        ),
        (
            "list_reviews",
            json!({"limit": 201}),
            "limit",
            "invalid arguments for list_reviews (1 problem):\n- limit: 201 is greater than the maximum of 200",
        ),
        (
            "list_reviews",
            json!({"utc_offset": "UTC+8"}),
            "utc_offset",
            "invalid arguments for list_reviews (1 problem):\n- utc_offset: `utc_offset` is \"UTC+8\": use +HH:MM or -HH:MM between -12:00 and +14:00, like +08:00",
        ),
        (
            "analyze_patterns",
            json!({"time_range": "year"}),
            "time_range",
            "invalid arguments for analyze_patterns (1 problem):\n- time_range: \"year\" is not one of [\"week\", \"month\", \"quarter\"]",
        ),
        (
            "analyze_patterns",
            json!({"time_range": "week", "categories": ["mood", "habits"]}),
            "categories[1]",
            "invalid arguments for analyze_patterns (1 problem):\n- categories[1]: \"habits\" is not one of [\"mood\", \"tags\", \"themes\", \"tasks\", \"streaks\"]",
        ),
        (
            "analyze_patterns",
            json!({"time_range": "week", "end_date": "2026-02-30"}),
            "end_date",
            "invalid arguments for analyze_patterns (1 problem):\n- end_date: 2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD",
        ),
        (
            "analyze_patterns",
            json!({"time_range": "week", "end_date": "yesterday"}),
            "end_date",
            "invalid arguments for analyze_patterns (1 problem):\n- end_date: \"yesterday\" is not a date; write it as YYYY-MM-DD, e.g. 2026-06-30 (work out relative dates such as \"tomorrow\" yourself)",
        ),
        (
            "analyze_patterns",
            json!({"time_range": "week", "utc_offset": "+8"}),
            "utc_offset",
            "invalid arguments for analyze_patterns (1 problem):\n- utc_offset: `utc_offset` is \"+8\": use +HH:MM or -HH:MM between -12:00 and +14:00, like +08:00",
        ),
    ];
    for (tool, args, path, message) in cases {
        let env = call(&registry, tool, args.clone()).await;
        assert_eq!(
            error_message(&env, ErrorCode::InvalidParams),
            message,
            "{args}"
        );
        assert_eq!(violation_paths(&env), [path], "{args}");
    }
    for (id, message) in [
        (
            "project-9",
            "no project has the id project-9; list_projects lists the projects and their ids",
        ),
        (
            "task-1",
            "\"task-1\" is a task id, not a project id; list_projects lists the projects and their ids",
        ),
    ] {
        let env = call(
            &registry,
            "write_review",
            with("linked_project_ids", json!([id])),
        )
        .await;
        assert_eq!(error_message(&env, ErrorCode::NotFound), message);
    }
    // Nothing was saved by the refused calls.
    let env = call(&registry, "list_reviews", json!({})).await;
    assert_eq!(success_data(&env)["total"], json!(0));
}
