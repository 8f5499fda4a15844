//! Gemini function declarations take their `parameters` in a subset of the
//! OpenAPI 3.0 schema object: one `type` per schema (nullable through
//! `"nullable": true`), `enum` of strings only, a handful of `format`s, `anyOf`
//! as the only composition, no references, no `additionalProperties`, and objects
//! that always have some `properties`.

use super::SchemaRejected;
use serde_json::{Value, json};

use super::common::{
    MAX_REF_DEPTH, Node, append_note, common_type, drop_keywords, merge_all_of, render_list,
    resolve_ref, tuple_to_items, type_names, union_of_constants_to_enum,
};

/// Keywords Gemini's `Schema` accepts (and this exporter writes).
const GEMINI_KEYWORDS: [&str; 20] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "propertyOrdering",
    "minimum",
    "maximum",
];

/// Gemini's types, written in lower case as its REST examples do.
const GEMINI_TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

/// The keywords that only make sense for one type, to split a multi-type schema.
const TYPED_KEYWORDS: [(&str, &[&str]); 5] = [
    (
        "string",
        &["minLength", "maxLength", "pattern", "format", "enum"],
    ),
    (
        "number",
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "format",
        ],
    ),
    (
        "integer",
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "format",
        ],
    ),
    (
        "array",
        &[
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
        ],
    ),
    (
        "object",
        &[
            "properties",
            "required",
            "additionalProperties",
            "minProperties",
            "maxProperties",
        ],
    ),
];

/// The description given to a schema that accepts any JSON value.
const ANY_VALUE: &str = "Any JSON value.";

/// The `format` Gemini takes for a schemars/JSON Schema format on `ty`, if any.
fn gemini_format(ty: &str, format: &str) -> Option<&'static str> {
    match (ty, format) {
        ("string", "date-time") => Some("date-time"),
        ("string", "enum") => Some("enum"),
        ("number", "float") => Some("float"),
        ("number", "double") => Some("double"),
        ("integer", "int8" | "int16" | "int32" | "uint8" | "uint16") => Some("int32"),
        ("integer", "int64" | "uint32" | "uint64" | "int" | "uint" | "int128" | "uint128") => {
            Some("int64")
        }
        _ => None,
    }
}

fn keep_gemini(node: &Node, keyword: &str) -> bool {
    match keyword {
        "format" => match (node.get("type").and_then(Value::as_str), node.get("format")) {
            (Some(ty), Some(Value::String(f))) => gemini_format(ty, f) == Some(f.as_str()),
            _ => false,
        },
        _ => GEMINI_KEYWORDS.contains(&keyword),
    }
}

/// The schema rewritten into Gemini's OpenAPI subset:
/// - local `$ref`s are inlined (a reference back into itself becomes a schema
///   that says so in its description), `allOf` is merged, tuples become `items`;
/// - `type: [T, "null"]` and `anyOf: [..., {"type": "null"}]` become
///   `"nullable": true`; several non-null types become an `anyOf` of one type each;
/// - `const` and `oneOf`/`anyOf` of constants become a string `enum` (the values'
///   descriptions move into the description); other `oneOf` becomes `anyOf`;
///   non-string enums become a sentence (`One of: 1, 2 or 3.`);
/// - formats are mapped (`uint32` -> `int64`, `double` stays) or, for strings
///   Gemini does not know (`uri`), written into the description;
/// - `default`, `examples`, `multipleOf`, `uniqueItems` and exclusive bounds (on
///   numbers; on integers they become `minimum`/`maximum`) are written into the
///   description; `additionalProperties`, `$schema`, `$defs` and the rest go;
/// - objects without properties (maps, free-form values) lose `type` (Gemini
///   rejects an `object` without properties) and say what they are in the
///   description; a value of any type (`true`) becomes `{"description": "Any JSON value."}`.
pub fn gemini_schema(schema: &Value) -> Value {
    let mut refs = Vec::new();
    gemini_node(schema, schema, &mut refs)
}

fn gemini_node(value: &Value, root: &Value, refs: &mut Vec<String>) -> Value {
    match value {
        Value::Object(node) => convert(node.clone(), root, refs),
        _ => json!({ "description": ANY_VALUE }),
    }
}

fn convert(mut node: Node, root: &Value, refs: &mut Vec<String>) -> Value {
    merge_all_of(&mut node);
    if let Some(reference) = node.remove("$ref") {
        return inline_ref(node, &reference, root, refs);
    }
    tuple_to_items(&mut node);
    let mut nullable = node.remove("nullable") == Some(Value::Bool(true));
    constants_to_enum(&mut node);
    split_types(&mut node, &mut nullable);
    union_to_any_of(&mut node, root, refs, &mut nullable);
    enum_to_strings(&mut node, &mut nullable);
    fix_numbers(&mut node);
    shape_object(&mut node);
    shape_array(&mut node);
    drop_keywords(&mut node, keep_gemini);
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for schema in properties.values_mut() {
            *schema = gemini_node(schema, root, refs);
        }
    }
    if let Some(items) = node.get_mut("items") {
        *items = gemini_node(items, root, refs);
    }
    if nullable {
        node.insert("nullable".to_owned(), Value::Bool(true));
    }
    Value::Object(node)
}

fn inline_ref(siblings: Node, reference: &Value, root: &Value, refs: &mut Vec<String>) -> Value {
    let reference = reference.as_str().unwrap_or_default().to_owned();
    let target = resolve_ref(root, &reference);
    match target {
        Some(target) if !refs.contains(&reference) && refs.len() < MAX_REF_DEPTH => {
            let mut merged = target.as_object().cloned().unwrap_or_default();
            merged.remove("$defs");
            merged.remove("definitions");
            merged.extend(siblings);
            refs.push(reference);
            let out = convert(merged, root, refs);
            refs.pop();
            out
        }
        _ => {
            let mut node = Node::new();
            if let Some(d) = siblings.get("description") {
                node.insert("description".to_owned(), d.clone());
            }
            let name = reference.rsplit('/').next().unwrap_or_default();
            let note = if target.is_some() && !name.is_empty() && name != "#" {
                format!("The same structure as the enclosing `{name}` (recursive).")
            } else if target.is_some() {
                "The same structure as the whole input (recursive).".to_owned()
            } else {
                ANY_VALUE.to_owned()
            };
            append_note(&mut node, &note);
            Value::Object(node)
        }
    }
}

/// `const` and unions of constants become `enum`.
fn constants_to_enum(node: &mut Node) {
    if let Some(constant) = node.remove("const") {
        node.insert("enum".to_owned(), json!([constant]));
    }
    for key in ["oneOf", "anyOf"] {
        union_of_constants_to_enum(node, key);
    }
}

/// One `type` per schema: `null` becomes `nullable`, several types an `anyOf`.
fn split_types(node: &mut Node, nullable: &mut bool) {
    let names = type_names(node);
    if names.is_empty() {
        node.remove("type");
        return;
    }
    let (nulls, types): (Vec<String>, Vec<String>) = names.into_iter().partition(|t| t == "null");
    if !nulls.is_empty() {
        *nullable = true;
    }
    match types.as_slice() {
        [] => {
            node.remove("type");
        }
        [one] => {
            node.insert("type".to_owned(), json!(one));
        }
        many if !node.contains_key("anyOf") && !node.contains_key("oneOf") => {
            let mut branches = Vec::new();
            for ty in many {
                let mut branch = Node::new();
                branch.insert("type".to_owned(), json!(ty));
                let keywords = TYPED_KEYWORDS
                    .iter()
                    .find(|(t, _)| t == ty)
                    .map(|(_, k)| *k)
                    .unwrap_or_default();
                for keyword in keywords {
                    if let Some(v) = node.get(*keyword) {
                        branch.insert((*keyword).to_owned(), v.clone());
                    }
                }
                branches.push(Value::Object(branch));
            }
            for (_, keywords) in TYPED_KEYWORDS {
                for keyword in keywords {
                    node.remove(*keyword);
                }
            }
            node.remove("type");
            node.insert("anyOf".to_owned(), Value::Array(branches));
        }
        _ => {
            // The union keywords describe the alternatives; a list of types next
            // to them adds nothing Gemini can take.
            node.remove("type");
        }
    }
}

/// `oneOf` becomes `anyOf`; null alternatives become `nullable`; a single
/// remaining alternative is merged into the schema.
fn union_to_any_of(node: &mut Node, root: &Value, refs: &mut Vec<String>, nullable: &mut bool) {
    let mut branches: Vec<Value> = Vec::new();
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = node.remove(key)
            && branches.is_empty()
        {
            branches = list;
        }
    }
    if branches.is_empty() {
        return;
    }
    let mut kept = Vec::new();
    for branch in &branches {
        if is_null_only(branch) {
            *nullable = true;
        } else {
            kept.push(gemini_node(branch, root, refs));
        }
    }
    match kept.len() {
        0 => {}
        1 if !node.contains_key("type") => {
            if let Some(Value::Object(only)) = kept.pop() {
                for (key, value) in only {
                    if key == "nullable" {
                        *nullable |= value == Value::Bool(true);
                    } else if key == "description" && node.contains_key("description") {
                        continue;
                    } else {
                        node.entry(key).or_insert(value);
                    }
                }
            }
        }
        _ => {
            node.insert("anyOf".to_owned(), Value::Array(kept));
        }
    }
}

fn is_null_only(schema: &Value) -> bool {
    let Some(node) = schema.as_object() else {
        return false;
    };
    node.get("type") == Some(&json!("null"))
        || node.get("const") == Some(&Value::Null)
        || node.get("enum") == Some(&json!([null]))
}

/// Gemini's `enum` lists strings for a string schema; others become a sentence.
fn enum_to_strings(node: &mut Node, nullable: &mut bool) {
    let Some(Value::Array(mut values)) = node.remove("enum") else {
        return;
    };
    if values.contains(&Value::Null) {
        *nullable = true;
        values.retain(|v| !v.is_null());
    }
    if values.is_empty() {
        return;
    }
    let ty = node.get("type").and_then(Value::as_str);
    if values.iter().all(Value::is_string) && matches!(ty, None | Some("string")) {
        node.insert("type".to_owned(), json!("string"));
        node.insert("enum".to_owned(), Value::Array(values));
    } else {
        if ty.is_none()
            && let Some(common) = common_type(&values)
        {
            node.insert("type".to_owned(), json!(common));
        }
        append_note(node, &format!("One of: {}.", render_list(&values)));
    }
}

/// Formats mapped onto Gemini's, exclusive integer bounds made inclusive.
fn fix_numbers(node: &mut Node) {
    let ty = node.get("type").and_then(Value::as_str).map(str::to_owned);
    if let (Some(ty), Some(Value::String(format))) = (&ty, node.get("format"))
        && let Some(mapped) = gemini_format(ty, format)
    {
        node.insert("format".to_owned(), json!(mapped));
    }
    if ty.as_deref() == Some("integer") {
        for (exclusive, inclusive, step) in [
            ("exclusiveMinimum", "minimum", 1),
            ("exclusiveMaximum", "maximum", -1),
        ] {
            if node.contains_key(inclusive) {
                continue;
            }
            if let Some(bound) = node.get(exclusive).and_then(Value::as_i64) {
                node.remove(exclusive);
                node.insert(inclusive.to_owned(), json!(bound + step));
            }
        }
    }
}

/// Objects keep `type: object` only with properties; free-form and empty ones
/// say what they are in the description instead. Runs before unsupported
/// keywords (`additionalProperties`) are dropped.
fn shape_object(node: &mut Node) {
    let has_properties = node
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    let typed_object = node.get("type") == Some(&json!("object"));
    if has_properties && (typed_object || !node.contains_key("type")) {
        node.insert("type".to_owned(), json!("object"));
        let names: Vec<String> = node
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(Value::Array(required)) = node.get_mut("required") {
            required.retain(|r| r.as_str().is_some_and(|r| names.iter().any(|n| n == r)));
            if required.is_empty() {
                node.remove("required");
            }
        }
        return;
    }
    let was_object = typed_object || node.contains_key("properties");
    node.remove("properties");
    node.remove("required");
    node.remove("propertyOrdering");
    if was_object {
        node.remove("type");
        node.remove("minProperties");
        node.remove("maxProperties");
        let closed = node.get("additionalProperties") == Some(&Value::Bool(false));
        let value_types = node
            .get("additionalProperties")
            .and_then(Value::as_object)
            .map(type_names)
            .unwrap_or_default();
        let note = match value_types.as_slice() {
            _ if closed => "An empty JSON object.".to_owned(),
            [ty] => format!("A JSON object with free-form keys and {ty} values."),
            _ => "A JSON object with free-form keys.".to_owned(),
        };
        append_note(node, &note);
    } else if !["type", "anyOf", "enum"]
        .iter()
        .any(|k| node.contains_key(*k))
    {
        append_note(node, ANY_VALUE);
    }
}

fn shape_array(node: &mut Node) {
    if node.get("type") == Some(&json!("array")) {
        // Converted with the other subschemas: `true` becomes an any-value schema.
        node.entry("items").or_insert(Value::Bool(true));
    } else {
        node.remove("items");
        node.remove("minItems");
        node.remove("maxItems");
    }
}

/// Checks that `schema` is valid Gemini `parameters`: the root is an `object`
/// with properties; every subschema uses only Gemini's keywords, a single known
/// `type`, string-only `enum`s, formats Gemini knows for that type, `properties`
/// (non-empty) exactly on objects, `items` exactly on arrays, and `required`
/// naming existing properties.
///
/// # Errors
/// The first rule broken, with the JSON pointer of the offending subschema.
pub fn check_gemini(schema: &Value) -> Result<(), SchemaRejected> {
    if schema.get("type") != Some(&json!("object")) {
        return Err("/: the root must be `\"type\": \"object\"`"
            .to_owned()
            .into());
    }
    check_node(schema, "")
}

fn check_node(value: &Value, path: &str) -> Result<(), SchemaRejected> {
    let at = if path.is_empty() { "/" } else { path };
    let Value::Object(node) = value else {
        return Err(format!("{at}: Gemini takes only object schemas, found {value}").into());
    };
    if let Some(key) = node.keys().find(|k| !GEMINI_KEYWORDS.contains(&k.as_str())) {
        return Err(format!("{at}: `{key}` is not supported by Gemini").into());
    }
    let ty = match node.get("type") {
        None => None,
        Some(Value::String(t)) if GEMINI_TYPES.contains(&t.as_str()) => Some(t.as_str()),
        Some(other) => {
            return Err(
                format!("{at}: `type` must be one of {GEMINI_TYPES:?}, found {other}").into(),
            );
        }
    };
    if node.get("nullable").is_some_and(|n| !n.is_boolean()) {
        return Err(format!("{at}: `nullable` must be a boolean").into());
    }
    if let Some(values) = node.get("enum") {
        let strings = values
            .as_array()
            .is_some_and(|vs| !vs.is_empty() && vs.iter().all(Value::is_string));
        if !strings || ty != Some("string") {
            return Err(
                format!("{at}: `enum` must be a non-empty list of strings on a string").into(),
            );
        }
    }
    if let Some(format) = node.get("format") {
        let valid = match (ty, format.as_str()) {
            (Some(t), Some(f)) => gemini_format(t, f) == Some(f),
            _ => false,
        };
        if !valid {
            return Err(format!(
                "{at}: format {format} is not supported on {}",
                ty.unwrap_or("a schema without type")
            )
            .into());
        }
    }
    check_object(node, ty, at)?;
    match (ty, node.get("items")) {
        (Some("array"), None) => return Err(format!("{at}: an array needs `items`").into()),
        (Some("array"), Some(items)) => check_node(items, &format!("{path}/items"))?,
        (_, Some(_)) => return Err(format!("{at}: `items` is only allowed on arrays").into()),
        (_, None) => {}
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            let escaped = name.replace('~', "~0").replace('/', "~1");
            check_node(child, &format!("{path}/properties/{escaped}"))?;
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
    Ok(())
}

fn check_object(node: &Node, ty: Option<&str>, at: &str) -> Result<(), SchemaRejected> {
    let properties = node.get("properties");
    if ty != Some("object") {
        for key in [
            "properties",
            "required",
            "propertyOrdering",
            "minProperties",
            "maxProperties",
        ] {
            if node.contains_key(key) {
                return Err(format!("{at}: `{key}` is only allowed on objects").into());
            }
        }
        return Ok(());
    }
    let properties = properties
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| format!("{at}: an object needs non-empty `properties`"))?;
    for key in ["required", "propertyOrdering"] {
        if let Some(names) = node.get(key) {
            let names = names
                .as_array()
                .ok_or_else(|| format!("{at}: `{key}` must be a list"))?;
            for name in names {
                if !name.as_str().is_some_and(|n| properties.contains_key(n)) {
                    return Err(
                        format!("{at}: `{key}` names {name}, which is not a property").into(),
                    );
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;
