use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "flag": {"type": "boolean"},
            "name": {"type": "string"},
            "opt": {"type": ["integer", "null"]},
            "items": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "integer"}}}},
            "nested": {"anyOf": [{"type": "object", "properties": {"b": {"type": "boolean"}}}, {"type": "null"}]}
        }
    })
}

#[test]
fn scalars_are_coerced_and_recorded() {
    let r = repair_arguments(
        &schema(),
        json!({"n": "5", "x": "2.5", "flag": "true", "name": 7, "opt": "3",
               "items": [{"k": "1"}], "nested": {"b": "FALSE"}}),
    );
    assert_eq!(
        r.value,
        json!({"n": 5, "x": 2.5, "flag": true, "name": "7", "opt": 3,
               "items": [{"k": 1}], "nested": {"b": false}})
    );
    let paths: Vec<_> = r.repairs.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        ["flag", "items[0].k", "n", "name", "nested.b", "opt", "x"]
    );
}

#[test]
fn unsafe_changes_are_not_made() {
    let input = json!({"n": "five", "flag": "yes", "x": "1e999", "name": "ok"});
    let r = repair_arguments(&schema(), input.clone());
    assert_eq!(r.value, input);
    assert!(r.repairs.is_empty());
}

#[test]
fn stringified_arguments_and_wrappers() {
    let r = repair_arguments(&schema(), json!("{\"n\": \"5\"}"));
    assert_eq!(r.value, json!({"n": 5}));
    assert_eq!(r.repairs.len(), 2);

    let r = repair_arguments(&schema(), json!({"arguments": {"n": 1}}));
    assert_eq!(r.value, json!({"n": 1}));
    assert_eq!(r.repairs[0].action, "unwrapped {\"arguments\": {...}}");

    let r = repair_arguments(&schema(), json!({"arguments": "{\"n\": 2}"}));
    assert_eq!(r.value, json!({"n": 2}));

    // A declared property named like a wrapper is left alone.
    let s = json!({"type": "object", "properties": {"input": {"type": "object"}}});
    let r = repair_arguments(&s, json!({"input": {"a": 1}}));
    assert_eq!(r.value, json!({"input": {"a": 1}}));
    assert!(r.repairs.is_empty());
}

#[test]
fn null_and_empty_become_empty_object() {
    assert_eq!(repair_arguments(&schema(), Value::Null).value, json!({}));
    assert_eq!(repair_arguments(&schema(), json!("  ")).value, json!({}));
}

#[test]
fn unparseable_string_reports_error() {
    let r = repair_arguments(&schema(), json!("{not json at all"));
    assert!(r.parse_error.is_some());
}

#[test]
fn null_for_optional_field_is_left_out() {
    let s = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": ["integer", "null"]}, "c": {"type": "string"}},
        "required": ["c"]
    });
    let r = repair_arguments(&s, json!({"a": null, "b": null, "c": null}));
    // `a` is optional and does not take null: left out. `b` takes null. `c` is required: kept, so validation reports it.
    assert_eq!(r.value, json!({"b": null, "c": null}));
    assert_eq!(
        r.repairs,
        vec![Repair {
            path: "a".into(),
            action: "null for an optional field -> left out".into()
        }]
    );
}

#[test]
fn local_refs_are_followed() {
    let s = json!({
        "type": "object",
        "properties": {
            "rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
            "opt": {"anyOf": [{"$ref": "#/$defs/Row"}, {"type": "null"}]}
        },
        "$defs": {"Row": {"type": "object", "properties": {"w": {"type": "number"}, "n": {"type": "integer"}}}}
    });
    let r = repair_arguments(
        &s,
        json!({"rows": [{"w": null, "n": "2"}], "opt": {"w": "1.5"}}),
    );
    assert_eq!(r.value, json!({"rows": [{"n": 2}], "opt": {"w": 1.5}}));
}

#[test]
fn other_agents_parameter_names_are_renamed_when_unambiguous() {
    let s = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "limit": {"type": "integer"}
        }
    });
    let r = repair_arguments(
        &s,
        json!({"file_path": "a.rs", "old_str": "x", "newText": "y", "limit": "3"}),
    );
    assert_eq!(
        r.value,
        json!({"path": "a.rs", "old_string": "x", "new_string": "y", "limit": 3})
    );
    let actions: Vec<(&str, &str)> = r
        .repairs
        .iter()
        .map(|r| (r.path.as_str(), r.action.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("path", "`file_path` -> `path` (the parameter's name here)"),
            (
                "new_string",
                "`newText` -> `new_string` (the parameter's name here)"
            ),
            (
                "old_string",
                "`old_str` -> `old_string` (the parameter's name here)"
            ),
            ("limit", "string \"3\" -> integer 3"),
        ]
    );
}

#[test]
fn aliases_never_override_what_was_sent_or_what_the_schema_declares() {
    // Both names sent: nothing renamed, validation reports the extra one.
    let s = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let r = repair_arguments(&s, json!({"path": "a", "file_path": "b"}));
    assert_eq!(r.value, json!({"path": "a", "file_path": "b"}));
    assert!(r.repairs.is_empty());
    // Two aliases of one parameter: one is taken, the other left for validation.
    let r = repair_arguments(&s, json!({"file_path": "a", "filename": "b"}));
    assert_eq!(r.value.as_object().unwrap().len(), 2);
    assert_eq!(r.repairs.len(), 1);
    // A schema that declares the alias itself keeps it.
    let s = json!({"type": "object", "properties": {"path": {"type": "string"}, "cmd": {"type": "string"}}});
    let r = repair_arguments(&s, json!({"cmd": "ls"}));
    assert_eq!(r.value, json!({"cmd": "ls"}));
    // No target declared: nothing to rename to.
    let s = json!({"type": "object", "properties": {"pattern": {"type": "string"}}});
    let r = repair_arguments(&s, json!({"file_path": "a"}));
    assert_eq!(r.value, json!({"file_path": "a"}));
}
