//! OpenAI strict mode (Structured Outputs): the schema transform, its checker, and
//! the small undo step for arguments produced under it.
//!
//! Strict mode accepts a subset of JSON Schema: every object closes with
//! `additionalProperties: false` and lists every property in `required`; optional
//! properties are written as nullable instead; the composition keyword is `anyOf`
//! only; strings may carry `pattern` and a few `format`s, numbers their ranges and
//! `multipleOf`, arrays `minItems`/`maxItems`; `$ref`/`$defs` are allowed.
//! Everything else is removed, and what a model should still know (a default,
//! a length limit, an unsupported format) is written into the description.

use super::SchemaRejected;
use serde_json::{Value, json};

use super::common::{
    Node, accepts_null, drop_keywords, is_object_schema, merge_all_of, tuple_to_items, type_names,
    union_of_constants_to_enum,
};

/// Keywords strict mode accepts.
const STRICT_KEYWORDS: [&str; 21] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "description",
    "title",
    "$ref",
    "$defs",
    "definitions",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

/// String formats strict mode accepts.
const STRICT_STRING_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

fn keep_strict(node: &Node, keyword: &str) -> bool {
    match keyword {
        "format" => node
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| STRICT_STRING_FORMATS.contains(&f)),
        _ => STRICT_KEYWORDS.contains(&keyword),
    }
}

/// The schema rewritten for OpenAI strict mode (`"strict": true`).
///
/// At every object level (the root, nested properties, array items, `anyOf`
/// branches, `$defs`):
/// - `additionalProperties` becomes `false` and `required` lists every property
///   (first those that were required, in their order, then the others by name);
/// - a property that was optional becomes nullable: `"null"` joins its `type` (and
///   its `enum`), or the schema is wrapped in `anyOf: [schema, {"type": "null"}]`;
///   its meaning is kept, as `null` stands for "not given" (the registry repairs
///   such a `null` before validation);
/// - `oneOf` of constants (documented unit enums) becomes an `enum` whose values'
///   descriptions move into the description; any other `oneOf` becomes `anyOf`;
///   `const` becomes a one-value `enum`; `allOf` is merged; tuples become `items`;
/// - unsupported keywords are removed; `default`, `examples`, length limits,
///   `uniqueItems` and unsupported string formats are written into the
///   description (`Default: 2000.`). Integer and float formats (`uint32`,
///   `double`) are dropped: `type` and the range carry their meaning.
///
/// An object without `properties` at the root (a tool without arguments), or one
/// that is explicitly closed, gets an empty `properties`. Free-form values cannot
/// be strict and are left as they are: a map (an object with no `properties` whose
/// `additionalProperties` is a schema), any value (`true` or `{}`), and an object
/// mixing `properties` with an `additionalProperties` schema. Closing them would
/// change what the tool accepts, so [`check_strict`] reports them and the
/// `openai-strict` export falls back to a non-strict tool for such a schema.
pub fn strict_schema(schema: &Value) -> Value {
    let mut out = schema.clone();
    if let Value::Object(root) = &mut out {
        root.remove("$schema");
    }
    strict_node(&mut out, schema, true);
    out
}

fn strict_node(value: &mut Value, root: &Value, is_root: bool) {
    let Value::Object(node) = value else {
        return;
    };
    merge_all_of(node);
    tuple_to_items(node);
    unions_to_strict(node);
    if let Some(constant) = node.remove("const") {
        node.insert("enum".to_owned(), json!([constant]));
    }
    drop_keywords(node, keep_strict);
    for_each_child(node, &mut |child| strict_node(child, root, false));
    flatten_any_of(node);
    if is_object_schema(node) {
        close_object(node, root, is_root);
    }
}

/// `oneOf`/`anyOf` of constants -> `enum`; any other `oneOf` -> `anyOf`.
fn unions_to_strict(node: &mut Node) {
    for key in ["oneOf", "anyOf"] {
        union_of_constants_to_enum(node, key);
    }
    if let Some(one_of) = node.remove("oneOf") {
        // Alternatives that exclude each other (how serde enums are written) mean
        // the same under `anyOf`. When both keywords are present, `anyOf` stays
        // and the `oneOf` refinement is dropped: a looser schema, never a wrong one.
        node.entry("anyOf").or_insert(one_of);
    }
}

/// `anyOf: [{anyOf: [a, b]}, c]` -> `anyOf: [a, b, c]` (what `Option<enum>`
/// becomes once the enum's `oneOf` is an `anyOf`). A nested union's description
/// moves up when the node has none; otherwise the nested union stays.
fn flatten_any_of(node: &mut Node) {
    let has_description = node.contains_key("description");
    let Some(Value::Array(branches)) = node.get_mut("anyOf") else {
        return;
    };
    let mut lifted: Option<Value> = None;
    let mut flat = Vec::with_capacity(branches.len());
    for branch in std::mem::take(branches) {
        let nested_union = branch.as_object().is_some_and(|b| {
            b.get("anyOf").is_some_and(Value::is_array)
                && b.keys().all(|k| k == "anyOf" || k == "description")
        });
        let description = branch.get("description").cloned();
        let can_lift = description.is_none() || (!has_description && lifted.is_none());
        if nested_union && can_lift {
            if description.is_some() {
                lifted = description;
            }
            if let Some(Value::Array(inner)) = branch.get("anyOf") {
                flat.extend(inner.iter().cloned());
            }
        } else {
            flat.push(branch);
        }
    }
    *branches = flat;
    if let Some(description) = lifted {
        node.insert("description".to_owned(), description);
    }
}

/// Calls `f` on every direct subschema of `node`.
fn for_each_child(node: &mut Node, f: &mut impl FnMut(&mut Value)) {
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(map)) = node.get_mut(key) {
            map.values_mut().for_each(&mut *f);
        }
    }
    if let Some(Value::Array(branches)) = node.get_mut("anyOf") {
        branches.iter_mut().for_each(&mut *f);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child @ Value::Object(_)) = node.get_mut(key) {
            f(child);
        }
    }
}

fn close_object(node: &mut Node, root: &Value, is_root: bool) {
    if !node.get("properties").is_some_and(Value::is_object) {
        let extra = node.get("additionalProperties");
        let closed = extra == Some(&Value::Bool(false));
        if closed || (is_root && extra.is_none()) {
            node.insert("properties".to_owned(), json!({}));
        } else {
            return; // a free-form map: see `strict_schema`
        }
    }
    if matches!(node.get("additionalProperties"), Some(Value::Object(_))) {
        return; // known properties plus a map of other keys: see `strict_schema`
    }
    let mut required: Vec<String> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(properties)) = node.get_mut("properties") else {
        return;
    };
    required.retain(|name| properties.contains_key(name));
    let mut optional: Vec<String> = properties
        .keys()
        .filter(|name| !required.contains(name))
        .cloned()
        .collect();
    optional.sort();
    for name in &optional {
        if let Some(schema) = properties.get_mut(name) {
            make_nullable(schema, root);
        }
    }
    required.extend(optional);
    node.insert("required".to_owned(), json!(required));
    node.insert("additionalProperties".to_owned(), Value::Bool(false));
}

/// Lets `schema` take `null` as well, keeping its meaning for every other value.
fn make_nullable(schema: &mut Value, root: &Value) {
    if accepts_null(schema, root) {
        return;
    }
    if let Value::Object(node) = schema {
        let types = type_names(node);
        let only_union = node
            .keys()
            .all(|k| matches!(k.as_str(), "anyOf" | "description" | "title"));
        if !types.is_empty() {
            let mut with_null: Vec<Value> = types.into_iter().map(Value::String).collect();
            with_null.push(json!("null"));
            let ty = json!(with_null);
            node.insert("type".to_owned(), ty);
            add_null_to_enum(node);
            return;
        }
        if node.contains_key("enum") && !node.contains_key("$ref") {
            add_null_to_enum(node);
            return;
        }
        if only_union && let Some(Value::Array(branches)) = node.get_mut("anyOf") {
            branches.push(json!({"type": "null"}));
            return;
        }
    }
    let mut inner = std::mem::take(schema);
    let mut outer = Node::new();
    if let Value::Object(node) = &mut inner {
        for key in ["title", "description"] {
            if let Some(v) = node.remove(key) {
                outer.insert(key.to_owned(), v);
            }
        }
    }
    outer.insert("anyOf".to_owned(), json!([inner, {"type": "null"}]));
    *schema = Value::Object(outer);
}

fn add_null_to_enum(node: &mut Node) {
    if let Some(Value::Array(values)) = node.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// Checks that `schema` is accepted by OpenAI strict mode: the root is a
/// `type: object`; at every object level `additionalProperties` is `false` and
/// `required` lists exactly the properties; only supported keywords and string
/// formats appear; a nullable `type` with an `enum` lists `null` among the values.
///
/// # Errors
/// The first rule broken, with the JSON pointer of the offending subschema
/// (`/properties/inner: additionalProperties must be false`).
pub fn check_strict(schema: &Value) -> Result<(), SchemaRejected> {
    let root_type = schema.get("type");
    if root_type != Some(&json!("object")) {
        return Err("/: the root must be `\"type\": \"object\"`"
            .to_owned()
            .into());
    }
    check_node(schema, "")
}

fn check_node(value: &Value, path: &str) -> Result<(), SchemaRejected> {
    let at = if path.is_empty() { "/" } else { path };
    let node = match value {
        Value::Object(node) => node,
        Value::Bool(_) => {
            return Err(
                format!("{at}: a boolean schema (a free-form value) cannot be strict").into(),
            );
        }
        _ => return Err(format!("{at}: not a schema").into()),
    };
    if let Some(key) = node.keys().find(|k| !STRICT_KEYWORDS.contains(&k.as_str())) {
        return Err(format!("{at}: `{key}` is not supported in strict mode").into());
    }
    if let Some(format) = node.get("format")
        && !format
            .as_str()
            .is_some_and(|f| STRICT_STRING_FORMATS.contains(&f))
    {
        return Err(format!("{at}: format {format} is not supported in strict mode").into());
    }
    let types = type_names(node);
    if types.iter().any(|t| t == "null")
        && let Some(Value::Array(values)) = node.get("enum")
        && !values.contains(&Value::Null)
    {
        return Err(format!("{at}: a nullable `enum` must list null").into());
    }
    if is_object_schema(node) {
        check_closed_object(node, at)?;
    }
    for key in ["properties", "$defs", "definitions"] {
        if let Some(map) = node.get(key).and_then(Value::as_object) {
            for (name, child) in map {
                check_node(child, &format!("{path}/{key}/{}", escape_pointer(name)))?;
            }
        }
    }
    if let Some(branches) = node.get("anyOf") {
        let branches = branches
            .as_array()
            .filter(|b| !b.is_empty())
            .ok_or_else(|| format!("{at}: `anyOf` must be a non-empty array"))?;
        for (i, child) in branches.iter().enumerate() {
            check_node(child, &format!("{path}/anyOf/{i}"))?;
        }
    }
    for key in ["items", "additionalProperties"] {
        match node.get(key) {
            Some(Value::Bool(false)) | None => {}
            Some(child) => check_node(child, &format!("{path}/{key}"))?,
        }
    }
    Ok(())
}

fn check_closed_object(node: &Node, at: &str) -> Result<(), SchemaRejected> {
    let properties = node
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            format!("{at}: an object needs `properties` (free-form objects cannot be strict)")
        })?;
    if node.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err(format!("{at}: `additionalProperties` must be false").into());
    }
    let required = node
        .get("required")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{at}: `required` is missing"))?;
    let mut seen: Vec<&str> = Vec::new();
    for name in required {
        let name = name
            .as_str()
            .ok_or_else(|| format!("{at}: `required` holds a non-string"))?;
        if !properties.contains_key(name) {
            return Err(format!("{at}: `required` names {name:?}, which is not a property").into());
        }
        if seen.contains(&name) {
            return Err(format!("{at}: `required` names {name:?} twice").into());
        }
        seen.push(name);
    }
    let missing: Vec<&str> = properties
        .keys()
        .map(String::as_str)
        .filter(|k| !seen.contains(k))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{at}: `required` must list every property; missing: {}",
            missing.join(", ")
        )
        .into());
    }
    Ok(())
}

/// JSON pointer escaping of one segment.
fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
#[path = "strict_tests.rs"]
mod tests;
