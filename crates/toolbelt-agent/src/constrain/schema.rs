//! The JSON Schema of a whole reply `{"name": "<tool>", "arguments": {...}}`.
//!
//! Each tool's schema goes in as it is, but for what must move for it to stay
//! right inside another document: its `$defs` / `definitions` go up to the root's
//! `$defs` (as `<tool>:<name>`), its `$ref`s are rewritten to match (a reference to
//! its own root, `#...`, to a copy of it at `#/$defs/<tool>`), and its `$schema`
//! and `$id` are dropped (an `$id` would move the base the references resolve
//! against).

use serde_json::{Map, Value, json};
use toolbelt_core::ToolSpec;

/// Keywords whose values are data, not schemas: a `$ref` inside them is left alone.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

/// See [`super::reply_schema`].
pub(super) fn reply_schema(specs: &[ToolSpec]) -> Value {
    let mut defs = Map::new();
    let branches: Vec<Value> = specs
        .iter()
        .map(|spec| {
            let arguments = embed(&spec.name, &spec.input_schema, &mut defs);
            json!({
                "type": "object",
                "properties": {
                    "name": {"const": spec.name},
                    "arguments": arguments,
                },
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let mut root = Map::new();
    root.insert("anyOf".into(), Value::Array(branches));
    if !defs.is_empty() {
        root.insert("$defs".into(), Value::Object(defs));
    }
    Value::Object(root)
}

/// `schema` of tool `tool`, ready to sit inside the reply schema; what it
/// defines goes into `defs`.
fn embed(tool: &str, schema: &Value, defs: &mut Map<String, Value>) -> Value {
    let mut own = schema.clone();
    let mut moved = Map::new();
    if let Some(obj) = own.as_object_mut() {
        obj.remove("$schema");
        obj.remove("$id");
        for key in ["definitions", "$defs"] {
            if let Some(Value::Object(found)) = obj.remove(key) {
                for (name, mut def) in found {
                    if let Some(def) = def.as_object_mut() {
                        def.remove("$id");
                    }
                    moved.insert(format!("{tool}:{name}"), def);
                }
            }
        }
    }
    let mut needs_root = false;
    rewrite(&mut own, tool, &mut needs_root);
    for def in moved.values_mut() {
        rewrite(def, tool, &mut needs_root);
    }
    defs.extend(moved);
    if needs_root {
        defs.insert(tool.to_string(), own.clone());
    }
    own
}

/// Rewrites the local `$ref`s in `schema` for tool `tool`; sets `needs_root` when
/// one points at the tool's own root.
fn rewrite(schema: &mut Value, tool: &str, needs_root: &mut bool) {
    match schema {
        Value::Object(obj) => {
            for (key, value) in obj.iter_mut() {
                match value {
                    Value::String(reference) if key == "$ref" => {
                        if let Some(new) = rewritten(reference, tool, needs_root) {
                            *reference = new;
                        }
                    }
                    _ if DATA_KEYWORDS.contains(&key.as_str()) => {}
                    _ => rewrite(value, tool, needs_root),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite(item, tool, needs_root);
            }
        }
        _ => {}
    }
}

/// The new form of a local reference (`None` for one that is not local).
fn rewritten(reference: &str, tool: &str, needs_root: &mut bool) -> Option<String> {
    let pointer = reference.strip_prefix('#')?;
    let mut segments = pointer.split('/').skip(1);
    if let (Some("$defs" | "definitions"), Some(name)) = (segments.next(), segments.next()) {
        let rest: String = segments.map(|s| format!("/{s}")).collect();
        let key = escape(&format!("{tool}:{}", unescape(name)));
        return Some(format!("#/$defs/{key}{rest}"));
    }
    *needs_root = true;
    Some(format!("#/$defs/{}{pointer}", escape(tool)))
}

/// A JSON pointer segment for `text` (`~` as `~0`, `/` as `~1`).
fn escape(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

/// The text of a JSON pointer segment.
fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_move_with_their_definitions() {
        let mut root = false;
        assert_eq!(
            rewritten("#/$defs/Mode", "grep", &mut root).as_deref(),
            Some("#/$defs/grep:Mode")
        );
        assert_eq!(
            rewritten("#/definitions/a~1b/properties/x", "t", &mut root).as_deref(),
            Some("#/$defs/t:a~1b/properties/x")
        );
        assert!(!root);
        assert_eq!(
            rewritten("#/properties/x", "t", &mut root).as_deref(),
            Some("#/$defs/t/properties/x")
        );
        assert!(root);
        assert_eq!(
            rewritten("https://example.com/s.json", "t", &mut root),
            None
        );
    }
}
