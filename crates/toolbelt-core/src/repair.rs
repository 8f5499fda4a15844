//! Safe repair of what models often send wrong, guided by the tool's input schema.
//!
//! Only changes that cannot alter meaning are made: stringified JSON arguments are
//! parsed, `{"arguments": {...}}` wrappers unwrapped, parameters sent under a name
//! other agents' tools use for them renamed (`file_path` for `path`, `cmd` for
//! `command`, `old_str` for `old_string`) when the schema has no such parameter, and
//! scalars coerced where the schema asks for another type and the text is an exact
//! rendering of it (`"5"` for an integer, `"true"` for a boolean, `7` for a string).
//! Every change is recorded.

use serde_json::{Map, Number, Value};

use crate::envelope::Repair;
use crate::json::NotJson;

/// Keys models wrap real arguments in.
const WRAPPER_KEYS: [&str; 4] = ["arguments", "args", "parameters", "input"];

/// Parameter names the tools of other agents use (Claude Code, Codex, kimi-cli,
/// the MCP reference servers), and ours for the same thing. Compared without case
/// and underscores (`filePath`, `file_path`); applied only when the schema declares
/// the target and not the alias, and the target was not sent too.
const PARAMETER_ALIASES: [(&str, &str); 9] = [
    ("filepath", "path"),
    ("filename", "path"),
    ("directory", "path"),
    ("dirpath", "path"),
    ("cmd", "command"),
    ("oldstr", "old_string"),
    ("newstr", "new_string"),
    ("oldtext", "old_string"),
    ("newtext", "new_string"),
];

/// The outcome of [`repair_arguments`].
#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
    /// The arguments after repair.
    pub value: Value,
    /// What was changed.
    pub repairs: Vec<Repair>,
    /// Set when the arguments were a string that is not JSON, even loosely.
    pub parse_error: Option<NotJson>,
}

/// Repairs `args` against `schema`. See the module documentation for what is repaired.
pub fn repair_arguments(schema: &Value, args: Value) -> Repaired {
    let mut repairs = Vec::new();
    let mut value = args;

    match value {
        Value::Null => {
            value = Value::Object(Map::new());
            repairs.push(rep("", "null arguments -> {}"));
        }
        Value::String(ref s) => {
            let trimmed = s.trim();
            if trimmed.is_empty() {
                value = Value::Object(Map::new());
                repairs.push(rep("", "empty string arguments -> {}"));
            } else {
                match crate::json::parse_loose_json(trimmed) {
                    Ok((parsed, fixes)) => {
                        let mut action = String::from("stringified JSON arguments parsed");
                        if !fixes.is_empty() {
                            action.push_str(" (");
                            action.push_str(&fixes.join(", "));
                            action.push(')');
                        }
                        repairs.push(rep("", &action));
                        value = parsed;
                    }
                    Err(e) => {
                        return Repaired {
                            value,
                            repairs,
                            parse_error: Some(e),
                        };
                    }
                }
            }
        }
        _ => {}
    }

    // {"arguments": {...}} and friends, when the schema has no such property.
    if let Value::Object(map) = &value
        && map.len() == 1
        && let Some((key, inner)) = map.iter().next().map(|(k, v)| (k.clone(), v.clone()))
    {
        let declared = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(&key));
        if WRAPPER_KEYS.contains(&key.as_str()) && !declared {
            let unwrapped = match inner {
                Value::Object(_) => Some(inner),
                Value::String(s) => crate::json::parse_loose_json(s.trim())
                    .ok()
                    .map(|(v, _)| v)
                    .filter(Value::is_object),
                _ => None,
            };
            if let Some(u) = unwrapped {
                repairs.push(rep("", &format!("unwrapped {{\"{key}\": {{...}}}}")));
                value = u;
            }
        }
    }

    coerce(schema, schema, &mut value, String::new(), &mut repairs, 0);
    Repaired {
        value,
        repairs,
        parse_error: None,
    }
}

fn rep(path: &str, action: &str) -> Repair {
    Repair {
        path: path.to_string(),
        action: action.to_string(),
    }
}

/// The JSON types a schema allows, looking through `type`, `enum`, `const` and `anyOf`/`oneOf`.
fn allowed_types<'s>(root: &'s Value, schema: &'s Value) -> Vec<&'s str> {
    let schema = resolve(root, schema);
    let mut out = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) => out.push(t.as_str()),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            for b in branches {
                out.extend(allowed_types(root, b));
            }
        }
    }
    if let Some(Value::Array(vals)) = schema.get("enum") {
        for v in vals {
            out.push(crate::schema::json_type(v));
        }
    }
    if let Some(v) = schema.get("const") {
        out.push(crate::schema::json_type(v));
    }
    out
}

fn fits(types: &[&str], v: &Value) -> bool {
    let t = crate::schema::json_type(v);
    types
        .iter()
        .any(|a| *a == t || (*a == "number" && t == "integer"))
}

/// The subschema to descend into for `v`, looking through `anyOf`/`oneOf`.
fn branch_for<'s>(root: &'s Value, schema: &'s Value, want: &str) -> Option<&'s Value> {
    let schema = resolve(root, schema);
    if allowed_types_direct(schema).contains(&want)
        || (want == "object" && schema.get("properties").is_some())
        || (want == "array" && schema.get("items").is_some())
    {
        return Some(schema);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            for b in branches {
                if let Some(s) = branch_for(root, b, want) {
                    return Some(s);
                }
            }
        }
    }
    None
}

fn allowed_types_direct(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// How many `$ref`s or nesting levels the repair follows before it stops.
const MAX_REPAIR_DEPTH: usize = 64;

/// The schema a chain of local `$ref`s (`#/...`) ends at.
fn resolve<'s>(root: &'s Value, mut schema: &'s Value) -> &'s Value {
    for _ in 0..MAX_REPAIR_DEPTH {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => match crate::schema::resolve_ref(root, r) {
                Some(target) => schema = target,
                None => break,
            },
            None => break,
        }
    }
    schema
}

fn coerce(
    root: &Value,
    schema: &Value,
    value: &mut Value,
    path: String,
    repairs: &mut Vec<Repair>,
    depth: usize,
) {
    if depth > MAX_REPAIR_DEPTH {
        return;
    }
    let schema = resolve(root, schema);
    let types = allowed_types(root, schema);
    if !types.is_empty()
        && !fits(&types, value)
        && let Some((new, action)) = coerce_scalar(&types, value)
    {
        repairs.push(Repair {
            path: path.clone(),
            action,
        });
        *value = new;
    }
    match value {
        Value::Object(map) => {
            let Some(s) = branch_for(root, schema, "object") else {
                return;
            };
            let Some(props) = s.get("properties").and_then(Value::as_object) else {
                return;
            };
            // `"limit": null` for an optional field that does not take null (what
            // strict-mode models send for "not given") means the field is absent.
            let required: Vec<&str> = s
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            rename_aliases(map, props, &path, repairs);
            map.retain(|k, v| {
                let drop = v.is_null()
                    && !required.contains(&k.as_str())
                    && props.get(k).is_some_and(|ps| {
                        let t = allowed_types(root, ps);
                        !t.is_empty() && !t.contains(&"null")
                    });
                if drop {
                    repairs.push(rep(
                        &join(&path, k),
                        "null for an optional field -> left out",
                    ));
                }
                !drop
            });
            for (k, v) in map.iter_mut() {
                if let Some(ps) = props.get(k) {
                    coerce(root, ps, v, join(&path, k), repairs, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let Some(s) = branch_for(root, schema, "array") else {
                return;
            };
            let Some(is) = s.get("items") else { return };
            for (i, v) in items.iter_mut().enumerate() {
                coerce(root, is, v, format!("{path}[{i}]"), repairs, depth + 1);
            }
        }
        _ => {}
    }
}

/// Renames the keys of `map` that are [`PARAMETER_ALIASES`] of a parameter in
/// `props`.
fn rename_aliases(
    map: &mut Map<String, Value>,
    props: &Map<String, Value>,
    path: &str,
    repairs: &mut Vec<Repair>,
) {
    let renames: Vec<(String, &str)> = map
        .keys()
        .filter(|k| !props.contains_key(*k))
        .filter_map(|k| {
            let folded: String = k
                .chars()
                .filter(|c| *c != '_' && *c != '-')
                .flat_map(char::to_lowercase)
                .collect();
            PARAMETER_ALIASES
                .iter()
                .find(|(alias, _)| *alias == folded)
                .map(|(_, target)| (k.clone(), *target))
        })
        .filter(|(_, target)| props.contains_key(*target) && !map.contains_key(*target))
        .collect();
    for (alias, target) in renames {
        // Two aliases of one parameter (`file_path` and `filename`): the first wins,
        // the other stays for validation to report.
        if map.contains_key(target) {
            continue;
        }
        if let Some(v) = map.remove(&alias) {
            repairs.push(rep(
                &join(path, target),
                &format!("`{alias}` -> `{target}` (the parameter's name here)"),
            ));
            map.insert(target.to_string(), v);
        }
    }
}

fn coerce_scalar(types: &[&str], value: &Value) -> Option<(Value, String)> {
    match value {
        Value::String(s) => {
            let t = s.trim();
            if types.contains(&"integer")
                && let Ok(i) = t.parse::<i64>()
            {
                return Some((Value::from(i), format!("string {s:?} -> integer {i}")));
            }
            if types.contains(&"number")
                && let Some(n) = t.parse::<f64>().ok().and_then(Number::from_f64)
            {
                let n = match t.parse::<i64>() {
                    Ok(i) => Number::from(i),
                    Err(_) => n,
                };
                return Some((
                    Value::Number(n.clone()),
                    format!("string {s:?} -> number {n}"),
                ));
            }
            if types.contains(&"boolean") {
                if t.eq_ignore_ascii_case("true") {
                    return Some((Value::Bool(true), format!("string {s:?} -> boolean true")));
                }
                if t.eq_ignore_ascii_case("false") {
                    return Some((Value::Bool(false), format!("string {s:?} -> boolean false")));
                }
            }
            if (types.contains(&"array") || types.contains(&"object"))
                && let Ok(v) = serde_json::from_str::<Value>(t)
                && ((v.is_array() && types.contains(&"array"))
                    || (v.is_object() && types.contains(&"object")))
            {
                let kind = crate::schema::json_type(&v);
                return Some((v, format!("stringified {kind} parsed")));
            }
            if types.contains(&"null") && t.eq_ignore_ascii_case("null") {
                return Some((Value::Null, format!("string {s:?} -> null")));
            }
            None
        }
        Value::Number(n) if types.contains(&"string") => Some((
            Value::String(n.to_string()),
            format!("number {n} -> string \"{n}\""),
        )),
        Value::Number(n) if types.contains(&"integer") => {
            // 5.0 for an integer
            let f = n.as_f64()?;
            (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| {
                let i = f as i64;
                (Value::from(i), format!("number {n} -> integer {i}"))
            })
        }
        Value::Bool(b) if types.contains(&"string") => Some((
            Value::String(b.to_string()),
            format!("boolean {b} -> string \"{b}\""),
        )),
        _ => None,
    }
}

#[cfg(test)]
#[path = "repair_tests.rs"]
mod tests;
