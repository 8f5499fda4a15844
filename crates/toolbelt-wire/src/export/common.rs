//! Schema helpers shared by the export formats: description notes for dropped
//! keywords, `allOf` merging, `oneOf`-of-constants detection and `$ref` lookup.

use serde_json::{Map, Value};
use toolbelt_core::human::noun;

/// A JSON object schema node.
pub(super) type Node = Map<String, Value>;

/// Integer and float formats schemars writes (`uint32`, `double`, ...). They say
/// nothing a model needs beyond `type` and `minimum`/`maximum`, so dropping them
/// is lossless for a model.
pub(super) const NUMERIC_FORMATS: [&str; 16] = [
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double", "number", "integer",
];

/// Appends a sentence to the node's `description`, unless it already ends with it.
pub(super) fn append_note(node: &mut Node, note: &str) {
    if note.is_empty() {
        return;
    }
    let text = match node.get("description").and_then(Value::as_str) {
        // Said already (a schema converted twice): nothing to add.
        Some(existing) if existing.trim_end().ends_with(note) => return,
        Some(existing) if !existing.trim().is_empty() => join_sentences(existing, note),
        _ => note.to_owned(),
    };
    node.insert("description".to_owned(), Value::String(text));
}

/// `"Limit"` + `"Default: 5."` -> `"Limit. Default: 5."`.
pub(super) fn join_sentences(first: &str, second: &str) -> String {
    let first = first.trim_end();
    if first.ends_with(['.', '!', '?', ':']) {
        format!("{first} {second}")
    } else {
        format!("{first}. {second}")
    }
}

/// A value as a model should read it in prose: compact JSON.
pub(super) fn render(value: &Value) -> String {
    value.to_string()
}

/// `a`, `a or b`, `a, b or c`.
pub(super) fn render_list(values: &[Value]) -> String {
    let parts: Vec<String> = values.iter().map(render).collect();
    match parts.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The sentence that stands in for a keyword a consumer cannot take, if the keyword
/// carries something a model should know. `None` for keywords that are dropped silently.
pub(super) fn note_for(node: &Node, keyword: &str) -> Option<String> {
    let value = node.get(keyword)?;
    let num = || value.as_f64().map(|_| render(value));
    match keyword {
        // `Option` fields with `#[serde(default)]` say `default: null`: nothing to tell.
        "default" => (!value.is_null()).then(|| format!("Default: {}.", render(value))),
        "examples" => match value.as_array() {
            Some(list) if list.len() == 1 => Some(format!("Example: {}.", render(&list[0]))),
            Some(list) if !list.is_empty() => Some(format!("Examples: {}.", render_list(list))),
            _ => None,
        },
        "example" => Some(format!("Example: {}.", render(value))),
        "minLength" | "maxLength" => length_note(node, keyword),
        "minimum" => num().map(|n| format!("Minimum: {n}.")),
        "maximum" => num().map(|n| format!("Maximum: {n}.")),
        "exclusiveMinimum" => num().map(|n| format!("Greater than {n}.")),
        "exclusiveMaximum" => num().map(|n| format!("Less than {n}.")),
        "multipleOf" => num().map(|n| format!("A multiple of {n}.")),
        "minItems" => num().map(|n| format!("At least {n} items.")),
        "maxItems" => num().map(|n| format!("At most {n} items.")),
        "minProperties" => num().map(|n| format!("At least {n} entries.")),
        "maxProperties" => num().map(|n| format!("At most {n} entries.")),
        "uniqueItems" => (value == &Value::Bool(true)).then(|| "Items are unique.".to_owned()),
        "pattern" => value.as_str().map(|p| format!("Pattern: {p}.")),
        "deprecated" => (value == &Value::Bool(true)).then(|| "Deprecated.".to_owned()),
        "format" => value
            .as_str()
            .filter(|f| !NUMERIC_FORMATS.contains(f))
            .map(|f| format!("Format: {f}.")),
        _ => None,
    }
}

/// One sentence for `minLength` and `maxLength` together; written on `minLength`
/// when both are present so the pair is not said twice.
fn length_note(node: &Node, keyword: &str) -> Option<String> {
    let min = node.get("minLength").and_then(Value::as_u64);
    let max = node.get("maxLength").and_then(Value::as_u64);
    let chars = |n: u64| noun(n, "character", "characters");
    match (keyword, min, max) {
        ("minLength", Some(lo), Some(hi)) if lo == hi => {
            Some(format!("Exactly {lo} {}.", chars(lo)))
        }
        ("minLength", Some(lo), Some(hi)) => Some(format!("{lo} to {hi} characters.")),
        ("minLength", Some(lo), None) => Some(format!("At least {lo} {}.", chars(lo))),
        ("maxLength", None, Some(hi)) => Some(format!("At most {hi} {}.", chars(hi))),
        _ => None,
    }
}

/// Keywords whose loss is worth a sentence, in the order the sentences are written.
pub(super) const NOTED_KEYWORDS: [&str; 18] = [
    "deprecated",
    "format",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "default",
    "examples",
    "example",
];

/// Removes every keyword `keep` rejects; those in [`NOTED_KEYWORDS`] leave a
/// sentence in the description (`Default: 2000.`), the rest go silently.
pub(super) fn drop_keywords(node: &mut Node, keep: impl Fn(&Node, &str) -> bool) {
    let mut notes = Vec::new();
    for keyword in NOTED_KEYWORDS {
        if node.contains_key(keyword) && !keep(node, keyword) {
            notes.extend(note_for(node, keyword));
        }
    }
    let doomed: Vec<String> = node.keys().filter(|k| !keep(node, k)).cloned().collect();
    for key in doomed {
        node.remove(&key);
    }
    for note in notes {
        append_note(node, &note);
    }
}

/// Merges `allOf` branches into the node: properties and `required` are united,
/// other keywords keep the node's own value first, then the first branch's.
pub(super) fn merge_all_of(node: &mut Node) {
    let Some(Value::Array(branches)) = node.remove("allOf") else {
        return;
    };
    for branch in branches {
        let Value::Object(branch) = branch else {
            continue;
        };
        for (key, value) in branch {
            match (key.as_str(), node.get_mut(&key), value) {
                ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                    for (name, schema) in theirs {
                        mine.entry(name).or_insert(schema);
                    }
                }
                ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                    for name in theirs {
                        if !mine.contains(&name) {
                            mine.push(name);
                        }
                    }
                }
                (_, Some(_), _) => {}
                (_, None, value) => {
                    node.insert(key, value);
                }
            }
        }
    }
}

/// One constant alternative of a `oneOf`/`anyOf`: its value and description.
pub(super) struct Choice {
    pub(super) value: Value,
    pub(super) description: Option<String>,
}

/// The branches as constants when every branch is a `const` or a one-value `enum`
/// (how schemars writes unit enums with documented variants).
pub(super) fn constant_choices(branches: &[Value]) -> Option<Vec<Choice>> {
    if branches.is_empty() {
        return None;
    }
    branches
        .iter()
        .map(|b| {
            let b = b.as_object()?;
            let value = match (b.get("const"), b.get("enum")) {
                (Some(v), _) => v.clone(),
                (None, Some(Value::Array(vs))) if vs.len() == 1 => vs[0].clone(),
                _ => return None,
            };
            let description = b
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Some(Choice { value, description })
        })
        .collect()
}

/// `"text": Plain text. "bytes": Raw bytes.` for the constants that carry a
/// description; `None` when none does.
pub(super) fn choices_note(choices: &[Choice]) -> Option<String> {
    let parts: Vec<String> = choices
        .iter()
        .filter_map(|c| {
            let d = c.description.as_deref()?.trim();
            let end = if d.ends_with(['.', '!', '?']) {
                ""
            } else {
                "."
            };
            Some(format!("{}: {d}{end}", render(&c.value)))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// Replaces a `oneOf`/`anyOf` (under `key`) whose branches are all constants by an
/// `enum` of their values, with a shared `type` when there is one and the branches'
/// descriptions folded into the node's description. Returns whether it did.
pub(super) fn union_of_constants_to_enum(node: &mut Node, key: &str) -> bool {
    let Some(Value::Array(branches)) = node.get(key) else {
        return false;
    };
    let Some(choices) = constant_choices(branches) else {
        return false;
    };
    node.remove(key);
    let values: Vec<Value> = choices.iter().map(|c| c.value.clone()).collect();
    if !node.contains_key("type")
        && let Some(ty) = common_type(&values)
    {
        node.insert("type".to_owned(), Value::String(ty.to_owned()));
    }
    node.insert("enum".to_owned(), Value::Array(values));
    if let Some(note) = choices_note(&choices) {
        append_note(node, &note);
    }
    true
}

/// The JSON type name of every value if they all share one, for an `enum` built
/// from constants.
pub(super) fn common_type(values: &[Value]) -> Option<&'static str> {
    let mut ty = None;
    for v in values {
        let t = match toolbelt_core::schema::json_type(v) {
            "null" => return None,
            t => t,
        };
        match ty {
            None => ty = Some(t),
            Some(prev) if prev == t => {}
            Some("integer" | "number") if matches!(t, "integer" | "number") => {
                ty = Some("number");
            }
            Some(_) => return None,
        }
    }
    ty
}

/// The `type` keyword as a list of names (`"string"` -> `["string"]`).
pub(super) fn type_names(node: &Node) -> Vec<String> {
    match node.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// The node describes an object: `type` says so, or it has `properties`.
pub(super) fn is_object_schema(node: &Node) -> bool {
    type_names(node).iter().any(|t| t == "object") || node.contains_key("properties")
}

pub(super) use toolbelt_core::schema::resolve_ref;

/// True when the schema accepts `null`.
pub(super) fn accepts_null(schema: &Value, root: &Value) -> bool {
    accepts_null_at(schema, root, 0)
}

/// Deep enough for any real schema; stops reference cycles.
pub(super) const MAX_REF_DEPTH: usize = 32;

fn accepts_null_at(schema: &Value, root: &Value, depth: usize) -> bool {
    let node = match schema {
        Value::Bool(b) => return *b,
        Value::Object(node) => node,
        _ => return false,
    };
    if depth > MAX_REF_DEPTH {
        return false;
    }
    if node.contains_key("type") {
        return type_names(node).iter().any(|t| t == "null");
    }
    if let Some(Value::Array(values)) = node.get("enum") {
        return values.contains(&Value::Null);
    }
    if let Some(value) = node.get("const") {
        return value.is_null();
    }
    let branches_accept = |key: &str| {
        node.get(key)
            .and_then(Value::as_array)
            .map(|bs| bs.iter().any(|b| accepts_null_at(b, root, depth + 1)))
    };
    if let Some(any) = branches_accept("anyOf").or_else(|| branches_accept("oneOf")) {
        return any;
    }
    if let Some(target) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        return accepts_null_at(target, root, depth + 1);
    }
    !node.contains_key("properties") && !node.contains_key("items")
}

/// Replaces `prefixItems` (tuples) with an `items` schema any position may take:
/// the one shared schema, or an `anyOf` of the different ones. The length is said
/// in the description.
pub(super) fn tuple_to_items(node: &mut Node) {
    let Some(Value::Array(prefix)) = node.remove("prefixItems") else {
        return;
    };
    let mut distinct: Vec<Value> = Vec::new();
    for schema in &prefix {
        if !distinct.contains(schema) {
            distinct.push(schema.clone());
        }
    }
    let items = match distinct.len() {
        0 => return,
        1 => distinct.remove(0),
        _ => serde_json::json!({ "anyOf": distinct }),
    };
    node.insert("items".to_owned(), items);
    append_note(node, &format!("A tuple of exactly {} items.", prefix.len()));
}
