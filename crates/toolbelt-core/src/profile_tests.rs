#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;

use serde_json::json;

use super::{
    ParamCase, Profile, ProfileError, camel_case, camel_message, camel_schema, camel_violation,
    property_names, rename_args,
};
use crate::Violation;

fn table(name: &str) -> Vec<(String, String)> {
    Profile::by_name(name)
        .unwrap()
        .entries()
        .map(|(c, e)| (c.to_string(), e.to_string()))
        .collect()
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|&(c, e)| (c.to_string(), e.to_string()))
        .collect()
}

#[test]
fn every_listed_name_is_a_profile_with_that_name() {
    for name in Profile::NAMES {
        assert_eq!(Profile::by_name(name).unwrap().name(), name);
    }
    assert_eq!(Profile::by_name("Claude"), None);
    assert_eq!(Profile::by_name(""), None);
}

#[test]
fn default_renames_nothing() {
    let p = Profile::default_profile();
    assert_eq!(Profile::by_name("default"), Some(p.clone()));
    assert_eq!(p.entries().len(), 0);
    assert_eq!(p.exposed("read_file"), "read_file");
    assert_eq!(p.canonical("read_file"), None);
}

#[test]
fn claude_table() {
    assert_eq!(
        table("claude"),
        owned(&[
            ("read_file", "Read"),
            ("write_file", "Write"),
            ("edit_file", "Edit"),
            ("multi_edit", "MultiEdit"),
            ("glob", "Glob"),
            ("grep", "Grep"),
            ("list_dir", "LS"),
            ("bash", "Bash"),
            ("bash_output", "BashOutput"),
            ("kill_shell", "KillShell"),
            ("set_todo_list", "TodoWrite"),
            ("task", "Task"),
            ("web_fetch", "WebFetch"),
            ("web_search", "WebSearch"),
        ])
    );
}

#[test]
fn kimi_table() {
    assert_eq!(
        table("kimi"),
        owned(&[
            ("read_file", "ReadFile"),
            ("write_file", "WriteFile"),
            ("edit_file", "StrReplaceFile"),
            ("glob", "Glob"),
            ("grep", "Grep"),
            ("bash", "Bash"),
            ("think", "Think"),
            ("set_todo_list", "SetTodoList"),
            ("web_search", "WebSearch"),
            ("web_fetch", "WebFetch"),
            ("task", "Task"),
        ])
    );
}

#[test]
fn seed001_and_seed002_name_the_shell_tool() {
    assert_eq!(table("seed001"), owned(&[("bash", "exec")]));
    assert_eq!(table("seed002"), owned(&[("bash", "run_command")]));
    let seed002 = Profile::by_name("seed002").unwrap();
    assert_eq!(seed002.canonical("run_command"), Some("bash"));
    assert_eq!(seed002.exposed("read_file"), "read_file");
}

#[test]
fn seed003_table() {
    assert_eq!(
        table("seed003"),
        owned(&[
            ("create_project", "createProject"),
            ("update_project", "updateProject"),
            ("delete_project", "deleteProject"),
            ("get_project", "getProject"),
            ("create_goal", "createGoal"),
            ("link_goal_to_project", "linkGoalToProject"),
            ("create_task", "createTask"),
            ("complete_task", "completeTask"),
            ("write_review", "writeReview"),
            ("analyze_patterns", "analyzePatterns"),
            ("list_projects", "listProjects"),
            ("list_goals", "listGoals"),
            ("list_tasks", "listTasks"),
            ("list_reviews", "listReviews"),
        ])
    );
}

#[test]
fn every_built_in_table_round_trips_and_has_unique_names() {
    for name in Profile::NAMES {
        let p = Profile::by_name(name).unwrap();
        let entries: Vec<(&str, &str)> = p.entries().collect();
        for &(canonical, exposed) in &entries {
            assert_eq!(p.exposed(canonical), exposed, "{name}: {canonical}");
            assert_eq!(p.canonical(exposed), Some(canonical), "{name}: {exposed}");
            assert_ne!(canonical, exposed, "{name} lists an identity pair");
        }
        // Rebuilding the table as a custom profile passes the duplicate checks.
        let case = entries
            .first()
            .map_or(ParamCase::Canonical, |(c, _)| p.param_case(c));
        let rebuilt = Profile::custom(name, entries.iter().copied())
            .unwrap()
            .with_param_case(case);
        assert_eq!(rebuilt, p);
    }
}

#[test]
fn unmapped_tools_keep_their_names() {
    let claude = Profile::by_name("claude").unwrap();
    for tool in [
        "think",
        "read_output",
        "mcp__github__create_issue",
        "createProject",
    ] {
        assert_eq!(claude.exposed(tool), tool);
        assert_eq!(claude.canonical(tool), None);
    }
    let kimi = Profile::by_name("kimi").unwrap();
    assert_eq!(kimi.exposed("list_dir"), "list_dir");
    assert_eq!(kimi.exposed("multi_edit"), "multi_edit");
    let seed = Profile::by_name("seed003").unwrap();
    assert_eq!(seed.exposed("read_file"), "read_file");
}

#[test]
fn canonical_lookup_is_case_sensitive() {
    let claude = Profile::by_name("claude").unwrap();
    assert_eq!(claude.canonical("Read"), Some("read_file"));
    assert_eq!(claude.canonical("read"), None);
    assert_eq!(claude.canonical("READ"), None);
}

#[test]
fn custom_profile_maps_both_ways_and_drops_identity_pairs() {
    let p = Profile::custom(
        "mine",
        [("read_file", "cat"), ("bash", "sh"), ("grep", "grep")],
    )
    .unwrap();
    assert_eq!(p.name(), "mine");
    assert_eq!(
        p.entries().collect::<Vec<_>>(),
        vec![("read_file", "cat"), ("bash", "sh")]
    );
    assert_eq!(p.exposed("bash"), "sh");
    assert_eq!(p.canonical("cat"), Some("read_file"));
    assert_eq!(p.exposed("grep"), "grep");
    assert_eq!(p.canonical("grep"), None);
}

#[test]
fn custom_profile_repeating_a_pair_is_fine() {
    let p = Profile::custom("mine", [("bash", "sh"), ("bash", "sh")]).unwrap();
    assert_eq!(p.entries().collect::<Vec<_>>(), vec![("bash", "sh")]);
}

#[test]
fn custom_profile_refuses_two_tools_under_one_name() {
    let err = Profile::custom("mine", [("read_file", "Read"), ("list_dir", "Read")]).unwrap_err();
    assert_eq!(
        err,
        ProfileError::DuplicateExposed {
            profile: "mine".into(),
            exposed: "Read".into(),
            first: "read_file".into(),
            second: "list_dir".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        r#"profile "mine" exposes both "read_file" and "list_dir" as "Read"; give each tool its own name"#
    );
}

#[test]
fn custom_profile_refuses_an_identity_pair_colliding_with_a_rename() {
    let err = Profile::custom("mine", [("grep", "grep"), ("glob", "grep")]).unwrap_err();
    assert_eq!(
        err,
        ProfileError::DuplicateExposed {
            profile: "mine".into(),
            exposed: "grep".into(),
            first: "grep".into(),
            second: "glob".into(),
        }
    );
}

#[test]
fn custom_profile_refuses_renaming_a_tool_twice() {
    let err = Profile::custom("mine", [("bash", "sh"), ("bash", "Shell")]).unwrap_err();
    assert_eq!(
        err,
        ProfileError::DuplicateCanonical {
            profile: "mine".into(),
            canonical: "bash".into(),
            first: "sh".into(),
            second: "Shell".into(),
        }
    );
}

#[test]
fn custom_profile_refuses_empty_names() {
    assert_eq!(
        Profile::custom(" ", [("bash", "sh")]).unwrap_err(),
        ProfileError::EmptyName
    );
    assert_eq!(
        Profile::custom("mine", [("bash", "")]).unwrap_err(),
        ProfileError::EmptyToolName {
            profile: "mine".into(),
            canonical: "bash".into(),
            exposed: String::new(),
        }
    );
}

#[test]
fn only_seed003_writes_parameters_in_camel_case_and_only_for_its_tools() {
    let seed = Profile::by_name("seed003").unwrap();
    assert_eq!(seed.param_case("create_task"), ParamCase::Camel);
    assert_eq!(seed.param_case("read_file"), ParamCase::Canonical);
    for name in Profile::NAMES.iter().filter(|n| **n != "seed003") {
        let p = Profile::by_name(name).unwrap();
        assert!(
            p.entries()
                .all(|(c, _)| p.param_case(c) == ParamCase::Canonical),
            "{name}"
        );
    }
    let custom = Profile::custom("mine", [("read_file", "readFile")])
        .unwrap()
        .with_param_case(ParamCase::Camel);
    assert_eq!(custom.param_case("read_file"), ParamCase::Camel);
}

#[test]
fn camel_case_names() {
    for (snake, camel) in [
        ("project_id", "projectId"),
        ("linked_project_ids", "linkedProjectIds"),
        ("type", "type"),
        ("_private", "_private"),
        ("trailing_", "trailing_"),
        ("already", "already"),
    ] {
        assert_eq!(camel_case(snake), camel);
    }
}

#[test]
fn schemas_and_arguments_round_trip_through_camel_case() {
    let schema = json!({
        "type": "object",
        "properties": {
            "project_id": {"type": "string"},
            "updates": {
                "type": "object",
                "properties": {"goal_ids": {"type": "array", "items": {"type": "string"}}, "name": {"type": "string"}},
                "required": ["name"]
            },
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
        },
        "required": ["project_id"],
        "$defs": {"Item": {"type": "object", "properties": {"due_date": {"type": "string"}}}}
    });
    let names = property_names(&schema);
    assert_eq!(
        names.iter().map(String::as_str).collect::<Vec<_>>(),
        [
            "due_date",
            "goal_ids",
            "items",
            "name",
            "project_id",
            "updates"
        ]
    );
    assert_eq!(
        camel_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "projectId": {"type": "string"},
                "updates": {
                    "type": "object",
                    "properties": {"goalIds": {"type": "array", "items": {"type": "string"}}, "name": {"type": "string"}},
                    "required": ["name"]
                },
                "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
            },
            "required": ["projectId"],
            "$defs": {"Item": {"type": "object", "properties": {"dueDate": {"type": "string"}}}}
        })
    );
    let canonical = json!({
        "project_id": "project-1",
        "updates": {"goal_ids": ["goal-1"], "name": "x"},
        "items": [{"due_date": "2026-03-01"}],
        "other_key": 1
    });
    let camel = rename_args(canonical.clone(), &names, false);
    assert_eq!(
        camel,
        json!({
            "projectId": "project-1",
            "updates": {"goalIds": ["goal-1"], "name": "x"},
            "items": [{"dueDate": "2026-03-01"}],
            "other_key": 1
        })
    );
    assert_eq!(rename_args(camel, &names, true), canonical);
    // Snake-case arguments are accepted as they are; a key given both ways is left
    // for validation to report.
    assert_eq!(rename_args(canonical.clone(), &names, true), canonical);
    assert_eq!(
        rename_args(json!({"projectId": "a", "project_id": "b"}), &names, true),
        json!({"projectId": "a", "project_id": "b"})
    );
    // Keys that are no parameter stay as written.
    assert_eq!(
        rename_args(json!({"dueSoon": 1}), &names, true),
        json!({"dueSoon": 1})
    );
}

#[test]
fn violations_name_the_camel_case_parameters() {
    let names = property_names(&json!({"properties": {
        "project_id": {}, "updates": {"properties": {"goal_ids": {}}}, "due_date": {}
    }}));
    let v = camel_violation(
        &Violation::new("updates.goal_ids[0]", "\"x\" is not of type 'integer'"),
        &names,
    );
    assert_eq!(v.path, "updates.goalIds[0]");
    let v = camel_violation(
        &Violation::new("", "\"project_id\" is a required property"),
        &names,
    );
    assert_eq!(v.message, "\"projectId\" is a required property");
    assert_eq!(
        camel_message("due_date: 2026-02-30 is not a calendar date", &names),
        "dueDate: 2026-02-30 is not a calendar date"
    );
    // Unquoted words that happen to be parameter names are left alone.
    assert_eq!(
        camel_message("the project_id was not found", &names),
        "the project_id was not found"
    );
}
