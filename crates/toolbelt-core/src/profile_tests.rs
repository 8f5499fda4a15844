#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;

use serde_json::json;

use super::{
    Profile, ProfileError, camel_case, camel_message, camel_schema, camel_violation,
    property_names, rename_args,
};
use crate::Violation;

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
