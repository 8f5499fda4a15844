//! Deriving JSON Schemas from Rust types.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The JSON Schema (2020-12) of `T`, with subschemas inlined (no `$ref` unless the
/// type is recursive), without what a model does not need: the Rust type's name as
/// `title`, the type's own doc comment as the root `description` (the tool's
/// description says it), `"default": null` on optional fields, and `$schema`
/// (2020-12 is the default dialect of every consumer that names one).
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("title");
        map.remove("$schema");
        map.remove("description");
    }
    drop_null_defaults(&mut value);
    value
}

/// Removes `"default": null` from every subschema (an optional field is optional
/// already, and the key costs every request tokens) and the description of an
/// enum type wrapped in `anyOf` beside its field's own. Data (`default`,
/// `examples`, `const`, `enum` values) is left alone.
fn drop_null_defaults(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            // `Option<Enum>` with a field description: the enum type's own doc
            // comment inside `anyOf` says less than the field's.
            if map.contains_key("description")
                && let Some(Value::Array(members)) = map.get_mut("anyOf")
            {
                for member in members {
                    if let Value::Object(m) = member
                        && (m.contains_key("oneOf") || m.contains_key("enum"))
                    {
                        m.remove("description");
                    }
                }
            }
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "default" | "examples" | "const" | "enum") {
                    drop_null_defaults(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_defaults),
        _ => {}
    }
}

/// The `format` values JSON Schema 2020-12 defines.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes the `format`s JSON Schema does not define, such as the `uint32` and
/// `int64` that Rust integer types produce: strict validators (Ajv in strict mode)
/// reject a schema with an unknown format, and the range is in `minimum` and
/// `maximum` anyway.
pub fn drop_foreign_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let foreign = map.get("type").is_some()
                && map
                    .get("format")
                    .and_then(Value::as_str)
                    .is_some_and(|f| !STANDARD_FORMATS.contains(&f));
            if foreign {
                map.remove("format");
            }
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "default" | "examples" | "const" | "enum") {
                    drop_foreign_formats(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_foreign_formats),
        _ => {}
    }
}

/// The schema a local reference (`#/$defs/Row`) points at in `root`.
pub fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(reference.strip_prefix('#')?)
}

/// The JSON Schema type name of a value (`integer` for whole numbers).
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Sets `additionalProperties: false` on every object schema with `properties` that
/// does not say otherwise, so a misspelt argument is reported instead of ignored.
pub fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            for (key, child) in map.iter_mut() {
                // Values of these keywords are data, not schemas.
                if matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                    continue;
                }
                close_objects(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn closes_nested_objects_but_not_data() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": {"b": {"type": "string"}}},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "d": {"default": {"properties": {}}}
            }
        });
        close_objects(&mut s);
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["properties"]["a"]["additionalProperties"], json!(false));
        assert_eq!(
            s["properties"]["m"]["additionalProperties"],
            json!({"type": "string"})
        );
        assert_eq!(s["properties"]["d"]["default"], json!({"properties": {}}));
    }
}
