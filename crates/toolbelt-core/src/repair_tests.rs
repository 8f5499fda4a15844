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
