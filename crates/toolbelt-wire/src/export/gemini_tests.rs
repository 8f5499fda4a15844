#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::*;
use toolbelt_core::schema_for;

/// How to read.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Mode {
    /// Plain text.
    Text,
    /// Raw bytes.
    Bytes,
}

/// A point.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Point {
    x: i32,
    /// Optional label.
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Params {
    /// The path.
    #[schemars(length(min = 1))]
    path: String,
    #[serde(default)]
    #[schemars(range(max = 100))]
    depth: u8,
    ratio: Option<f64>,
    mode: Mode,
    mode_opt: Option<Mode>,
    points: Vec<Point>,
    origin: Option<Point>,
    labels: HashMap<String, String>,
    extra: Value,
}

#[test]
fn typed_params_become_the_openapi_subset() {
    let gemini = gemini_schema(&schema_for::<Params>());
    let mode = json!({
        "type": "string",
        "enum": ["text", "bytes"],
        "description": "How to read. \"text\": Plain text. \"bytes\": Raw bytes."
    });
    let point = json!({
        "type": "object",
        "description": "A point.",
        "properties": {
            "x": {"type": "integer", "format": "int32"},
            "label": {"type": "string", "nullable": true, "description": "Optional label."}
        },
        "required": ["x"]
    });
    let mut mode_opt = mode.clone();
    mode_opt["nullable"] = json!(true);
    let mut origin = point.clone();
    origin["nullable"] = json!(true);
    assert_eq!(
        gemini,
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "The path."},
                "depth": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 100,
                          "description": "Default: 0."},
                "ratio": {"type": "number", "format": "double", "nullable": true},
                "mode": mode,
                "mode_opt": mode_opt,
                "points": {"type": "array", "items": point},
                "origin": origin,
                "labels": {"description": "A JSON object with free-form keys and string values."},
                "extra": {"description": "Any JSON value."}
            },
            "required": ["path", "mode", "points", "labels", "extra"]
        })
    );
    check_gemini(&gemini).unwrap();
}

#[test]
fn references_are_inlined_and_recursion_is_described() {
    let schema = json!({
        "type": "object",
        "properties": {
            "root": {"$ref": "#/$defs/Node", "description": "The tree."}
        },
        "required": ["root"],
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                },
                "required": ["name"]
            }
        }
    });
    let gemini = gemini_schema(&schema);
    assert_eq!(
        gemini,
        json!({
            "type": "object",
            "properties": {
                "root": {
                    "type": "object",
                    "description": "The tree.",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {
                            "type": "array",
                            "items": {"description": "The same structure as the enclosing `Node` (recursive)."}
                        }
                    },
                    "required": ["name"]
                }
            },
            "required": ["root"]
        })
    );
    check_gemini(&gemini).unwrap();
}

#[test]
fn unions_types_and_constants_fit_single_types() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"type": ["string", "integer"], "minLength": 2, "minimum": 1},
            "kind": {"const": "file"},
            "level": {"enum": [1, 2, 3], "type": "integer"},
            "flag": {"const": true},
            "target": {
                "oneOf": [
                    {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
                    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                    {"type": "null"}
                ]
            },
            "maybe": {"anyOf": [{"type": "integer", "format": "uint64"}, {"type": "null"}], "description": "Count."},
            "merged": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"required": ["a", "zz"]}]}
        }
    });
    assert_eq!(
        gemini_schema(&schema)["properties"],
        json!({
            "id": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "integer", "minimum": 1}]},
            "kind": {"type": "string", "enum": ["file"]},
            "level": {"type": "integer", "description": "One of: 1, 2 or 3."},
            "flag": {"type": "boolean", "description": "One of: true."},
            "target": {
                "nullable": true,
                "anyOf": [
                    {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
                    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
                ]
            },
            "maybe": {"type": "integer", "format": "int64", "nullable": true, "description": "Count."},
            "merged": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
        })
    );
    check_gemini(&gemini_schema(&schema)).unwrap();
}

#[test]
fn unsupported_keywords_move_into_the_description() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "url": {"type": "string", "format": "uri", "default": "https://a.example", "examples": ["x", "y"]},
            "at": {"type": "string", "format": "date-time"},
            "n": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10, "multipleOf": 2},
            "r": {"type": "number", "exclusiveMinimum": 0.5, "format": "float"},
            "tags": {"type": "array", "uniqueItems": true},
            "empty": {"type": "object", "properties": {}, "additionalProperties": false},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}], "items": false}
        },
        "required": ["url"]
    });
    let gemini = gemini_schema(&schema);
    assert_eq!(
        gemini,
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string",
                        "description": "Format: uri. Default: \"https://a.example\". Examples: \"x\" or \"y\"."},
                "at": {"type": "string", "format": "date-time"},
                "n": {"type": "integer", "minimum": 1, "maximum": 9, "description": "A multiple of 2."},
                "r": {"type": "number", "format": "float", "description": "Greater than 0.5."},
                "tags": {"type": "array", "items": {"description": "Any JSON value."},
                         "description": "Items are unique."},
                "empty": {"description": "An empty JSON object."},
                "pair": {"type": "array", "items": {"type": "string"},
                         "description": "A tuple of exactly 2 items."}
            },
            "required": ["url"]
        })
    );
    check_gemini(&gemini).unwrap();
}

#[test]
fn check_gemini_names_the_first_broken_rule_and_where() {
    let object = |props: Value| json!({"type": "object", "properties": props});
    let cases = [
        (
            json!({"type": "string"}),
            "/: the root must be `\"type\": \"object\"`",
        ),
        (
            json!({"type": "object", "properties": {}}),
            "/: an object needs non-empty `properties`",
        ),
        (
            object(json!({"a": true})),
            "/properties/a: Gemini takes only object schemas, found true",
        ),
        (
            object(json!({"a": {"type": ["string", "null"]}})),
            "/properties/a: `type` must be one of [\"string\", \"number\", \"integer\", \"boolean\", \"array\", \"object\"], found [\"string\",\"null\"]",
        ),
        (
            object(json!({"a": {"type": "string", "default": "x"}})),
            "/properties/a: `default` is not supported by Gemini",
        ),
        (
            object(json!({"a": {"const": "x"}})),
            "/properties/a: `const` is not supported by Gemini",
        ),
        (
            object(json!({"a": {"oneOf": [{"type": "string"}]}})),
            "/properties/a: `oneOf` is not supported by Gemini",
        ),
        (
            object(json!({"a": {"$ref": "#/$defs/A"}})),
            "/properties/a: `$ref` is not supported by Gemini",
        ),
        (
            object(
                json!({"a": {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": false}}),
            ),
            "/properties/a: `additionalProperties` is not supported by Gemini",
        ),
        (
            object(json!({"a": {"type": "integer", "enum": ["1"]}})),
            "/properties/a: `enum` must be a non-empty list of strings on a string",
        ),
        (
            object(json!({"a": {"type": "integer", "format": "uint32"}})),
            "/properties/a: format \"uint32\" is not supported on integer",
        ),
        (
            object(json!({"a": {"type": "array"}})),
            "/properties/a: an array needs `items`",
        ),
        (
            object(json!({"a": {"type": "string", "items": {"type": "string"}}})),
            "/properties/a: `items` is only allowed on arrays",
        ),
        (
            object(json!({"a": {"type": "string", "properties": {"b": {}}}})),
            "/properties/a: `properties` is only allowed on objects",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}),
            "/: `required` names \"b\", which is not a property",
        ),
        (
            object(
                json!({"a": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]}}),
            ),
            "/properties/a/anyOf/1/items: an object needs non-empty `properties`",
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(
            check_gemini(&schema),
            Err(super::SchemaRejected(expected.to_owned())),
            "{schema}"
        );
    }
}
