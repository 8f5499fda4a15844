//! The MCP `tools/list` entry: input schema, output schema (the envelope) and
//! annotations, written so that strict validators (ajv in strict mode, as the
//! MCP Inspector and the TypeScript SDK's clients run it) take them without a
//! warning: no union `type` arrays.
//!
//! - An optional input property that also accepts `null` (`Option<T>`) loses the
//!   `null`: leaving the property out says the same, and the registry repairs a
//!   `null` a model sends anyway.
//! - Every other `"type": [A, B]` becomes `"anyOf": [{"type": A}, {"type": B}]`,
//!   which accepts exactly the same values.

use serde_json::{Map, Value, json};

use super::clean_root;
use toolbelt_core::ToolSpec;
use toolbelt_core::schema::drop_foreign_formats;

/// Keywords whose value is one schema.
const SCHEMA_KEYWORDS: [&str; 8] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "unevaluatedProperties",
];
/// Keywords whose value is an array of schemas.
const SCHEMA_ARRAY_KEYWORDS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value is a map of schemas.
const SCHEMA_MAP_KEYWORDS: [&str; 4] = ["properties", "$defs", "definitions", "patternProperties"];

pub(super) fn mcp_tool(spec: &ToolSpec, mut input: Value) -> Value {
    if let (Some(dialect), Value::Object(root)) = (spec.input_schema.get("$schema"), &mut input) {
        root.insert("$schema".to_owned(), dialect.clone());
    }
    drop_optional_nulls(&mut input);
    split_type_unions(&mut input);
    let hints = spec.hints;
    let mut tool = json!({
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": input,
        "annotations": {
            "title": spec.title,
            "readOnlyHint": hints.read_only,
            "destructiveHint": hints.destructive,
            "idempotentHint": hints.idempotent,
            "openWorldHint": hints.open_world,
        },
    });
    // `structuredContent` is the whole envelope, so that is what `outputSchema`
    // describes (clients check the one against the other), with the tool's own
    // result schema at `data`.
    if let (Some(output), Value::Object(tool)) = (&spec.output_schema, &mut tool) {
        tool.insert("outputSchema".to_owned(), envelope_schema(output));
    }
    tool
}

/// The JSON Schema of a result envelope whose `data` follows `data_schema` when
/// the call did not fail; an error envelope has an `error` (code, message, hint)
/// and whatever `data` the failure left (usually `{}`). The data schema's `$defs`
/// move to the root, so its `#/$defs/...` references hold.
pub fn envelope_schema(data_schema: &Value) -> Value {
    let mut data = clean_root(data_schema);
    drop_foreign_formats(&mut data);
    split_type_unions(&mut data);
    let defs = data.as_object_mut().and_then(|d| d.remove("$defs"));
    // Error envelopes carry an object too (`{}`, or what the failure left).
    let any_data = if data.get("type") == Some(&json!("object")) {
        json!({"type": "object"})
    } else {
        json!({"description": "The tool's result."})
    };
    let mut schema = json!({
        "type": "object",
        "description": "The result envelope: `text` is what the model reads; `data` is the tool's result, \
                        in the shape below unless `status` is `error`, when `error` says what went wrong \
                        and what to do next.",
        "properties": {
            "status": {"enum": ["success", "partial", "error"]},
            "data": any_data,
            "text": {"type": "string"},
            "stats": {"type": "object"},
            "context": {"type": "object"},
            "error": {
                "type": "object",
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "hint": {"type": "string"},
                },
                "required": ["code", "message"],
            },
        },
        "required": ["status", "data", "text"],
        "if": {"properties": {"status": {"const": "error"}}},
        "then": {"required": ["error"], "properties": {"data": {"type": "object"}}},
        "else": {"properties": {"data": data}},
    });
    if let (Some(defs), Value::Object(root)) = (defs, &mut schema) {
        root.insert("$defs".to_owned(), defs);
    }
    schema
}

/// Removes `null` from the accepted types of every optional property of every
/// object in `schema` (input schemas only: an output's `null` is a value).
fn drop_optional_nulls(schema: &mut Value) {
    let Value::Object(node) = schema else {
        return;
    };
    let required: Vec<String> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = node.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                drop_null(prop);
            }
        }
    }
    for_each_subschema(node, drop_optional_nulls);
}

/// `prop` without the `null` it accepts, in `type` or as an `anyOf`/`oneOf`
/// branch (a branch left alone is merged into `prop`).
fn drop_null(prop: &mut Value) {
    let Value::Object(node) = prop else {
        return;
    };
    if let Some(Value::Array(types)) = node.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            node.insert("type".to_owned(), only);
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = node.get_mut(key) else {
            continue;
        };
        branches.retain(|b| !is_null_only(b));
        if branches.len() == 1
            && let Some(Value::Object(only)) = branches.pop()
        {
            node.remove(key);
            for (k, v) in only {
                node.entry(k).or_insert(v);
            }
        }
    }
    if let Some(Value::Array(values)) = node.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if node.get("default") == Some(&Value::Null) {
        node.remove("default");
    }
}

/// True for a schema that accepts `null` only.
fn is_null_only(schema: &Value) -> bool {
    schema.get("type") == Some(&json!("null"))
        || schema.get("const") == Some(&Value::Null)
        || schema.get("enum") == Some(&json!([null]))
}

/// Rewrites every `"type": [A, B, ...]` in `schema` as an `anyOf` of one type
/// each (combined with an existing `anyOf` through `allOf`).
pub(super) fn split_type_unions(schema: &mut Value) {
    let Value::Object(node) = schema else {
        return;
    };
    if let Some(Value::Array(types)) = node.get("type") {
        let types = types.clone();
        node.remove("type");
        if types.len() == 1 {
            if let Some(only) = types.into_iter().next() {
                node.insert("type".to_owned(), only);
            }
        } else {
            let branches = Value::Array(types.into_iter().map(|t| json!({"type": t})).collect());
            match node.remove("anyOf") {
                None => {
                    node.insert("anyOf".to_owned(), branches);
                }
                Some(existing) => {
                    let all = node
                        .entry("allOf")
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(all) = all {
                        all.push(json!({"anyOf": branches}));
                        all.push(json!({"anyOf": existing}));
                    }
                }
            }
        }
    }
    for_each_subschema(node, split_type_unions);
}

/// Calls `f` on every schema directly inside `node`.
fn for_each_subschema(node: &mut Map<String, Value>, f: fn(&mut Value)) {
    for key in SCHEMA_KEYWORDS {
        if let Some(sub) = node.get_mut(key) {
            f(sub);
        }
    }
    for key in SCHEMA_ARRAY_KEYWORDS {
        if let Some(Value::Array(subs)) = node.get_mut(key) {
            subs.iter_mut().for_each(f);
        }
    }
    for key in SCHEMA_MAP_KEYWORDS {
        if let Some(Value::Object(subs)) = node.get_mut(key) {
            subs.values_mut().for_each(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn optional_nullable_inputs_lose_the_null() {
        let mut input = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": ["integer", "null"], "default": null},
                "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}], "description": "How."},
                "kinds": {"type": ["array", "null"], "items": {"type": ["string", "null"]}},
            },
            "required": ["path"],
        });
        drop_optional_nulls(&mut input);
        split_type_unions(&mut input);
        assert_eq!(
            input,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer"},
                    "mode": {"$ref": "#/$defs/Mode", "description": "How."},
                    "kinds": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                },
                "required": ["path"],
            })
        );
    }

    #[test]
    fn unions_become_any_of_everywhere() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "exit_code": {"type": ["integer", "null"], "minimum": 0},
                "both": {"type": ["string", "integer"], "anyOf": [{"minLength": 1}, {"minimum": 1}]},
            },
            "$defs": {"X": {"type": ["boolean", "null"]}},
        });
        split_type_unions(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "exit_code": {"anyOf": [{"type": "integer"}, {"type": "null"}], "minimum": 0},
                    "both": {"allOf": [
                        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                        {"anyOf": [{"minLength": 1}, {"minimum": 1}]},
                    ]},
                },
                "$defs": {"X": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}},
            })
        );
    }
}
