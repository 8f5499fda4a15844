#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::*;
use toolbelt_core::schema_for;

#[test]
fn nested_objects_close_at_every_level() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "inner": {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["y"]
            }
        },
        "required": ["inner"]
    });
    assert_eq!(
        strict_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "name": {"type": ["string", "null"]},
                "inner": {
                    "type": "object",
                    "properties": {"x": {"type": ["integer", "null"]}, "y": {"type": "integer"}},
                    "required": ["y", "x"],
                    "additionalProperties": false
                }
            },
            "required": ["inner", "name"],
            "additionalProperties": false
        })
    );
}

#[test]
fn arrays_of_objects_close_their_items() {
    let schema = json!({
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": true,
                "items": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 9}}}
            }
        },
        "required": ["items"]
    });
    assert_eq!(
        strict_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "description": "Items are unique.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "a": {"type": ["string", "null"], "description": "At most 9 characters."}
                        },
                        "required": ["a"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["items"],
            "additionalProperties": false
        })
    );
}

#[test]
fn optional_struct_stays_nullable_and_closes() {
    // schemars writes Option<Struct> as `type: ["object", "null"]`.
    let schema = json!({
        "type": "object",
        "properties": {
            "owner": {
                "type": ["object", "null"],
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }
        }
    });
    assert_eq!(
        strict_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "owner": {
                    "type": ["object", "null"],
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": false
                }
            },
            "required": ["owner"],
            "additionalProperties": false
        })
    );
}

#[test]
fn optional_union_without_a_simple_type_is_wrapped_in_any_of_null() {
    let schema = json!({
        "type": "object",
        "properties": {
            "target": {
                "description": "Where to send it.",
                "oneOf": [
                    {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
                    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
                ]
            },
            "link": {"$ref": "#/$defs/Link", "description": "A link."}
        },
        "$defs": {"Link": {"type": "object", "properties": {"href": {"type": "string"}}, "required": ["href"]}}
    });
    let closed = |name: &str| {
        json!({"type": "object", "properties": {name: {"type": "string"}},
               "required": [name], "additionalProperties": false})
    };
    assert_eq!(
        strict_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "target": {
                    "description": "Where to send it.",
                    "anyOf": [closed("url"), closed("path"), {"type": "null"}]
                },
                "link": {
                    "description": "A link.",
                    "anyOf": [{"$ref": "#/$defs/Link"}, {"type": "null"}]
                }
            },
            "$defs": {"Link": closed("href")},
            "required": ["link", "target"],
            "additionalProperties": false
        })
    );
    check_strict(&strict_schema(&schema)).unwrap();
}

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

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Plain {
    A,
    B,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Enums {
    mode: Mode,
    mode_opt: Option<Mode>,
    plain_opt: Option<Plain>,
}

#[test]
fn documented_enums_become_enums_with_the_variants_described() {
    assert_eq!(
        strict_schema(&schema_for::<Enums>()),
        json!({
            "type": "object",
            "properties": {
                "mode": {
                    "type": "string",
                    "enum": ["text", "bytes"],
                    "description": "How to read. \"text\": Plain text. \"bytes\": Raw bytes."
                },
                "mode_opt": {
                    "anyOf": [
                        {
                            "type": "string",
                            "enum": ["text", "bytes"],
                            "description": "How to read. \"text\": Plain text. \"bytes\": Raw bytes."
                        },
                        {"type": "null"}
                    ]
                },
                "plain_opt": {"type": ["string", "null"], "enum": ["a", "b", null]}
            },
            "required": ["mode", "mode_opt", "plain_opt"],
            "additionalProperties": false
        })
    );
}

#[test]
fn optional_enum_gains_null_in_type_and_values() {
    let schema = json!({
        "type": "object",
        "properties": {"color": {"type": "string", "enum": ["red", "blue"], "default": "red"}}
    });
    assert_eq!(
        strict_schema(&schema)["properties"]["color"],
        json!({"type": ["string", "null"], "enum": ["red", "blue", null], "description": "Default: \"red\"."})
    );
}

#[test]
fn dropped_keywords_leave_their_meaning_in_the_description() {
    let schema = json!({
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 100,
                      "default": 20, "description": "Most results"},
            "url": {"type": "string", "format": "uri", "minLength": 8, "maxLength": 2048,
                    "examples": ["https://example.com"]},
            "when": {"type": "string", "format": "date-time"},
            "code": {"type": "string", "minLength": 4, "maxLength": 4, "pattern": "^[0-9]+$"},
            "old": {"type": "boolean", "deprecated": true, "readOnly": true, "$comment": "x"}
        },
        "required": ["url", "when", "code", "old"]
    });
    assert_eq!(
        strict_schema(&schema)["properties"],
        json!({
            "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 100,
                      "description": "Most results. Default: 20."},
            "url": {"type": "string",
                    "description": "Format: uri. 8 to 2048 characters. Example: \"https://example.com\"."},
            "when": {"type": "string", "format": "date-time"},
            "code": {"type": "string", "pattern": "^[0-9]+$", "description": "Exactly 4 characters."},
            "old": {"type": "boolean", "description": "Deprecated."}
        })
    );
}

#[test]
fn all_of_is_merged_one_of_becomes_any_of_and_const_an_enum() {
    let schema = json!({
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"const": 3}}}
        ],
        "properties": {
            "c": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        },
        "required": ["c"]
    });
    assert_eq!(
        strict_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"enum": [3, null]},
                "c": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
            },
            "required": ["c", "a", "b"],
            "additionalProperties": false
        })
    );
}

#[test]
fn tuples_become_items() {
    let schema = json!({
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "items": false, "minItems": 2, "maxItems": 2}
        },
        "required": ["pair"]
    });
    let strict = strict_schema(&schema);
    assert_eq!(
        strict["properties"]["pair"],
        json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
               "minItems": 2, "maxItems": 2, "description": "A tuple of exactly 2 items."})
    );
    check_strict(&strict).unwrap();
}

#[test]
fn root_without_properties_takes_no_arguments() {
    let strict = strict_schema(&json!({"type": "object"}));
    assert_eq!(
        strict,
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    );
    check_strict(&strict).unwrap();
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct FreeForm {
    headers: HashMap<String, String>,
    body: Value,
}

/// Maps and any-values keep their meaning and are reported, not closed.
#[test]
fn free_form_values_are_left_open_and_reported() {
    let strict = strict_schema(&schema_for::<FreeForm>());
    assert_eq!(
        strict,
        json!({
            "type": "object",
            "properties": {
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": true
            },
            "required": ["headers", "body"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        check_strict(&strict).map_err(|e| e.0),
        Err("/properties/body: a boolean schema (a free-form value) cannot be strict".to_owned())
    );
    let only_map =
        json!({"type": "object", "properties": {"m": {"type": "object"}}, "required": ["m"]});
    assert_eq!(
        check_strict(&strict_schema(&only_map)).map_err(|e| e.0),
        Err(
            "/properties/m: an object needs `properties` (free-form objects cannot be strict)"
                .to_owned()
        )
    );
    let mixed = json!({"type": "object", "properties": {"a": {"type": "string"}},
                       "additionalProperties": {"type": "integer"}});
    assert_eq!(
        check_strict(&strict_schema(&mixed)).map_err(|e| e.0),
        Err("/: `additionalProperties` must be false".to_owned())
    );
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Point {
    x: f64,
    #[schemars(range(min = 0, max = 10))]
    y: u8,
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Shape {
    Circle { r: f64 },
    Polygon { points: Vec<Point> },
}

/// A typed struct with most of what schemars writes.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Everything {
    /// Name.
    #[schemars(length(min = 1))]
    name: String,
    points: Vec<Point>,
    origin: Option<Point>,
    shape: Shape,
    shape_opt: Option<Shape>,
    mode: Option<Mode>,
    #[serde(default)]
    count: u64,
    tags: Option<Vec<String>>,
    pair: (String, u32),
}

#[test]
fn typed_schemas_without_free_form_values_pass_the_check() {
    let strict = strict_schema(&schema_for::<Everything>());
    check_strict(&strict).unwrap();
    // Spot checks on the parts the walker cannot judge.
    assert_eq!(
        strict["properties"]["shape"]["anyOf"][0]["properties"]["kind"],
        json!({"type": "string", "enum": ["circle"]})
    );
    assert_eq!(
        strict["properties"]["count"],
        json!({"type": ["integer", "null"], "minimum": 0, "description": "Default: 0."})
    );
    // Option<tagged enum>: the variants and null side by side in one anyOf.
    let shape_opt = strict["properties"]["shape_opt"]["anyOf"]
        .as_array()
        .unwrap();
    let kinds: Vec<&Value> = shape_opt
        .iter()
        .map(|b| b.pointer("/properties/kind/enum/0").unwrap_or(&b["type"]))
        .collect();
    assert_eq!(kinds, [&json!("circle"), &json!("polygon"), &json!("null")]);
}

#[test]
fn check_strict_names_the_first_broken_rule_and_where() {
    let closed = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required, "additionalProperties": false});
    let cases = [
        (
            json!({"anyOf": [{"type": "object"}]}),
            "/: the root must be `\"type\": \"object\"`",
        ),
        (
            json!({"type": "object", "properties": {}}),
            "/: `additionalProperties` must be false",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}),
            "/: `required` is missing",
        ),
        (
            closed(
                json!({"a": {"type": "string"}, "b": {"type": "string"}}),
                json!(["a"]),
            ),
            "/: `required` must list every property; missing: b",
        ),
        (
            closed(json!({}), json!(["a"])),
            "/: `required` names \"a\", which is not a property",
        ),
        (
            closed(
                json!({"a": {"type": "string", "default": "x"}}),
                json!(["a"]),
            ),
            "/properties/a: `default` is not supported in strict mode",
        ),
        (
            closed(
                json!({"a": {"type": "integer", "format": "uint32"}}),
                json!(["a"]),
            ),
            "/properties/a: format \"uint32\" is not supported in strict mode",
        ),
        (
            closed(
                json!({"a": {"type": ["string", "null"], "enum": ["x"]}}),
                json!(["a"]),
            ),
            "/properties/a: a nullable `enum` must list null",
        ),
        (
            closed(
                json!({"a": {"type": "array", "items": {"type": "object", "properties": {}}}}),
                json!(["a"]),
            ),
            "/properties/a/items: `additionalProperties` must be false",
        ),
        (
            closed(
                json!({"a": {"anyOf": [{"type": "null"}, {"oneOf": []}]}}),
                json!(["a"]),
            ),
            "/properties/a/anyOf/1: `oneOf` is not supported in strict mode",
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(
            check_strict(&schema),
            Err(super::SchemaRejected(expected.to_owned())),
            "{schema}"
        );
    }
}
