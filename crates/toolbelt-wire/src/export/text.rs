//! The tool prompt of the text protocol: how to write `Action: tool[{...}]` and
//! `Final Answer: ...`, then every tool with a compact parameter list a model reads
//! more easily than a JSON Schema.

use std::fmt::Write as _;

use serde_json::Value;

use super::common::{
    Choice, MAX_REF_DEPTH, NUMERIC_FORMATS, Node, constant_choices, render, resolve_ref, type_names,
};
use toolbelt_core::ToolSpec;

/// How the protocol works; the tools follow.
const HEADER: &str = "\
# Tools

You can use the tools below. To call one, write one line of this form and stop:

Action: tool_name[{\"argument\": \"value\"}]

The brackets hold one JSON object with the tool's arguments. Write one action per \
reply: its result comes back in the next message as \"Observation: ...\"; never \
write an observation yourself. You may reason first on a line starting with \
\"Thought:\". When the task is done, write your final answer as:

Final Answer: your answer
";

/// How deep nested objects are listed; deeper ones are only named.
const MAX_NESTING: usize = 4;

/// The tool prompt for `specs`: the protocol header, then one section per tool.
/// Empty when there are no tools.
pub fn text_prompt(specs: &[ToolSpec]) -> String {
    if specs.is_empty() {
        return String::new();
    }
    format!("{HEADER}{}", tool_sections(specs))
}

/// The tools of `specs`, one section each (name, description, parameters,
/// examples), without the protocol's header: for a prompt that says how to call
/// them its own way.
pub fn tool_sections(specs: &[ToolSpec]) -> String {
    let mut out = String::new();
    for spec in specs {
        out.push('\n');
        out.push_str(&tool_section(spec));
    }
    out
}

/// One tool: name, description, parameters and example calls.
pub(super) fn tool_section(spec: &ToolSpec) -> String {
    let mut out = format!("## {}\n", spec.name);
    let description = spec.description.trim();
    if !description.is_empty() {
        out.push_str(description);
        out.push('\n');
    }
    let root = &spec.input_schema;
    let mut lines = Vec::new();
    parameter_lines(root, root, 0, &mut lines);
    if lines.is_empty() {
        out.push_str("\nParameters: none.\n");
    } else {
        out.push_str("\nParameters:\n");
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
    }
    for example in &spec.examples {
        let _ = write!(
            out,
            "\nExample ({}):\nAction: {}[{}]\n",
            example.description.trim().trim_end_matches('.'),
            spec.name,
            render(&example.input)
        );
    }
    out
}

/// Follows a local `$ref`, if any.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..MAX_REF_DEPTH {
        match current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve_ref(root, r))
        {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

/// A schema with `null` taken out: `[T, "null"]` -> `T`, `anyOf: [X, null]` -> `X`.
/// Returns the schema and whether it allowed null.
fn without_null<'a>(schema: &'a Value, root: &'a Value) -> (Value, bool) {
    let schema = resolve(schema, root);
    let Some(node) = schema.as_object() else {
        return (schema.clone(), false);
    };
    let types = type_names(node);
    if types.len() > 1 && types.iter().any(|t| t == "null") {
        let mut node = node.clone();
        let rest: Vec<Value> = types
            .into_iter()
            .filter(|t| t != "null")
            .map(Value::String)
            .collect();
        let ty = if rest.len() == 1 {
            rest[0].clone()
        } else {
            Value::Array(rest)
        };
        node.insert("type".to_owned(), ty);
        if let Some(Value::Array(values)) = node.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        return (Value::Object(node), true);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = node.get(key) {
            let is_null = |b: &Value| b.get("type") == Some(&Value::String("null".to_owned()));
            if branches.len() == 2 && branches.iter().any(is_null) {
                let Some(other) = branches.iter().find(|b| !is_null(b)) else {
                    break;
                };
                let mut merged = resolve(other, root)
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                for (k, v) in node {
                    if k != key {
                        merged.insert(k.clone(), v.clone());
                    }
                }
                return (Value::Object(merged), true);
            }
        }
    }
    (schema.clone(), false)
}

fn parameter_lines(schema: &Value, root: &Value, depth: usize, out: &mut Vec<String>) {
    let (schema, _) = without_null(schema, root);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let (names, required) = ordered_names(&schema, properties);
    let indent = "  ".repeat(depth);
    for name in names {
        let Some(property) = properties.get(name) else {
            continue;
        };
        let is_required = required.contains(&name);
        let (property, nullable) = without_null(property, root);
        let mut facts = vec![label(&property, root, 0)];
        if nullable && is_required {
            facts[0].push_str(" or null");
        }
        facts.push(if is_required { "required" } else { "optional" }.to_owned());
        facts.extend(constraints(&property));
        let mut line = format!("{indent}- {name} ({})", facts.join(", "));
        let mut text: Vec<String> = Vec::new();
        if let Some(d) = property.get("description").and_then(Value::as_str) {
            text.push(one_line(d));
        }
        if let Some(choices) = choice_text(&property) {
            text.push(choices);
        }
        if !text.is_empty() {
            line.push_str(": ");
            line.push_str(&text.join(" "));
        }
        out.push(line);
        if depth + 1 < MAX_NESTING
            && let Some(nested) = nested_object(&property, root)
        {
            parameter_lines(&nested, root, depth + 1, out);
        }
    }
}

/// Property names in reading order: the required ones as `required` lists them
/// (declaration order for derived schemas), then the optional ones by name.
/// Also returns the required names.
fn ordered_names<'a>(schema: &'a Value, properties: &'a Node) -> (Vec<&'a str>, Vec<&'a str>) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<&str> = required
        .iter()
        .copied()
        .filter(|n| properties.contains_key(*n))
        .collect();
    let mut optional: Vec<&str> = properties
        .keys()
        .map(String::as_str)
        .filter(|n| !required.contains(n))
        .collect();
    optional.sort_unstable();
    names.extend(optional);
    (names, required)
}

/// The object whose fields are listed under a parameter: the parameter itself, or
/// its array items.
fn nested_object(schema: &Value, root: &Value) -> Option<Value> {
    if schema.get("properties").is_some() {
        return Some(schema.clone());
    }
    if type_names(schema.as_object()?).iter().any(|t| t == "array") {
        let (items, _) = without_null(schema.get("items")?, root);
        if items.get("properties").is_some() {
            return Some(items);
        }
    }
    None
}

/// Whitespace runs (newlines too) become single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The type as a model reads it: `string`, `array of object`, `"a" | "b"`, `any`.
fn label(schema: &Value, root: &Value, depth: usize) -> String {
    let schema = resolve(schema, root);
    let Some(node) = schema.as_object() else {
        return "any".to_owned();
    };
    if let Some(value) = node.get("const") {
        return render(value);
    }
    if let Some(choices) = union_choices(node) {
        return label_of_values(&choices.iter().map(|c| c.value.clone()).collect::<Vec<_>>());
    }
    if let Some(Value::Array(values)) = node.get("enum") {
        return label_of_values(values);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = node.get(key) {
            let parts: Vec<String> = branches.iter().map(|b| shape(b, root, depth + 1)).collect();
            return parts.join(" | ");
        }
    }
    let types = type_names(node);
    let labels: Vec<String> = if types.is_empty() {
        if node.contains_key("properties") {
            vec!["object".to_owned()]
        } else {
            return "any".to_owned();
        }
    } else {
        types
            .iter()
            .map(|t| type_label(node, t, root, depth))
            .collect()
    };
    labels.join(" | ")
}

fn type_label(node: &Node, ty: &str, root: &Value, depth: usize) -> String {
    match ty {
        "array" => match node.get("items") {
            Some(items) if depth < MAX_NESTING => {
                let (items, _) = without_null(items, root);
                format!("array of {}", label(&items, root, depth + 1))
            }
            _ => "array".to_owned(),
        },
        "object" if !node.contains_key("properties") => match node.get("additionalProperties") {
            Some(values @ Value::Object(_)) if depth < MAX_NESTING => {
                format!("object with {} values", label(values, root, depth + 1))
            }
            _ => "object".to_owned(),
        },
        other => other.to_owned(),
    }
}

/// The type of a set of constants: `string` (values listed apart), or the values.
fn label_of_values(values: &[Value]) -> String {
    if values.iter().all(Value::is_string) {
        "string".to_owned()
    } else {
        values.iter().map(render).collect::<Vec<_>>().join(" | ")
    }
}

/// A union alternative written inline: `{kind: "one", a: integer, b?: string}`.
fn shape(schema: &Value, root: &Value, depth: usize) -> String {
    let (schema, nullable) = without_null(schema, root);
    let base = match schema.get("properties").and_then(Value::as_object) {
        Some(properties) if depth < MAX_NESTING => {
            let (names, required) = ordered_names(&schema, properties);
            let mut fields: Vec<String> = Vec::new();
            for name in names {
                let Some(sub) = properties.get(name) else {
                    continue;
                };
                let is_required = required.contains(&name);
                let (sub, nullable) = without_null(sub, root);
                let mut ty = label(&sub, root, depth + 1);
                if nullable && is_required {
                    ty.push_str(" | null");
                }
                let mark = if is_required { "" } else { "?" };
                fields.push(format!("{name}{mark}: {ty}"));
            }
            format!("{{{}}}", fields.join(", "))
        }
        _ => label(&schema, root, depth),
    };
    if nullable {
        format!("{base} | null")
    } else {
        base
    }
}

/// Constants of a `oneOf`/`anyOf`.
fn union_choices(node: &Node) -> Option<Vec<Choice>> {
    ["oneOf", "anyOf"].iter().find_map(|key| {
        node.get(*key)
            .and_then(Value::as_array)
            .and_then(|b| constant_choices(b))
    })
}

/// `One of: "text" (Plain text), "bytes".` for string choices.
fn choice_text(schema: &Value) -> Option<String> {
    let node = schema.as_object()?;
    let choices: Vec<(Value, Option<String>)> = match union_choices(node) {
        Some(choices) => choices
            .into_iter()
            .map(|c| (c.value, c.description))
            .collect(),
        None => node
            .get("enum")?
            .as_array()?
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| (v.clone(), None))
            .collect(),
    };
    if choices.is_empty() || !choices.iter().all(|(v, _)| v.is_string()) {
        return None;
    }
    let parts: Vec<String> = choices
        .iter()
        .map(|(value, description)| match description {
            Some(d) => format!("{} ({})", render(value), one_line(d).trim_end_matches('.')),
            None => render(value),
        })
        .collect();
    Some(format!("One of: {}.", parts.join(", ")))
}

/// `default 2000`, `1 to 10000`, `length >= 1`, `at most 5 items`, `format uri`.
fn constraints(schema: &Value) -> Vec<String> {
    let Some(node) = schema.as_object() else {
        return Vec::new();
    };
    let get = |k: &str| node.get(k).map(render);
    let mut out = Vec::new();
    if let Some(d) = node.get("default").filter(|d| !d.is_null()) {
        out.push(format!("default {}", render(d)));
    }
    let lower = get("minimum")
        .map(|v| (v, ">="))
        .or(get("exclusiveMinimum").map(|v| (v, ">")));
    let upper = get("maximum")
        .map(|v| (v, "<="))
        .or(get("exclusiveMaximum").map(|v| (v, "<")));
    match (lower, upper) {
        (Some((lo, ">=")), Some((hi, "<="))) => out.push(format!("{lo} to {hi}")),
        (lo, hi) => {
            out.extend(lo.map(|(v, op)| format!("{op} {v}")));
            out.extend(hi.map(|(v, op)| format!("{op} {v}")));
        }
    }
    match (get("minLength"), get("maxLength")) {
        (Some(lo), Some(hi)) => out.push(format!("length {lo} to {hi}")),
        (Some(lo), None) => out.push(format!("length >= {lo}")),
        (None, Some(hi)) => out.push(format!("length <= {hi}")),
        (None, None) => {}
    }
    let items = |n: String| {
        if n == "1" {
            format!("{n} item")
        } else {
            format!("{n} items")
        }
    };
    out.extend(get("minItems").map(|n| format!("at least {}", items(n))));
    out.extend(get("maxItems").map(|n| format!("at most {}", items(n))));
    if let Some(Value::String(format)) = node.get("format")
        && !NUMERIC_FORMATS.contains(&format.as_str())
    {
        out.push(format!("format {format}"));
    }
    out.extend(get("pattern").map(|p| format!("pattern {p}")));
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use pretty_assertions::assert_eq;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use toolbelt_core::schema_for;

    #[test]
    fn no_tools_no_prompt() {
        assert_eq!(text_prompt(&[]), "");
    }

    #[test]
    fn the_header_teaches_the_action_and_finish_forms() {
        let prompt = text_prompt(&[ToolSpec::describe("ping", "Answers pong.")]);
        assert!(prompt.starts_with(HEADER), "{prompt}");
        assert!(prompt.contains("\nAction: tool_name[{\"argument\": \"value\"}]\n"));
        assert!(prompt.contains("\nFinal Answer: your answer\n"));
        assert!(
            prompt.ends_with("## ping\nAnswers pong.\n\nParameters: none.\n"),
            "{prompt}"
        );
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Target {
        Url { url: String },
        File { path: String, line: Option<u32> },
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Level3 {
        deep: bool,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Level2 {
        level3: Level3,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Level1 {
        level2: Level2,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Params {
        /// Where to go.
        target: Target,
        /// Required but nullable.
        note: Option<String>,
        level1: Level1,
        #[schemars(range(min = 0.5))]
        #[serde(default)]
        scale: Option<f64>,
    }

    #[test]
    fn unions_nesting_and_nullable_parameters() {
        let mut spec = ToolSpec::describe("go", "Goes somewhere.\n");
        spec.input_schema = schema_for::<Params>();
        // Make `note` required: a nullable required parameter says "or null".
        spec.input_schema["required"] = json!(["target", "note", "level1"]);
        assert_eq!(
            tool_section(&spec),
            "## go\nGoes somewhere.\n\nParameters:\n\
             - target ({kind: \"url\", url: string} | {kind: \"file\", path: string, line?: integer}, required): Where to go.\n\
             - note (string or null, required): Required but nullable.\n\
             - level1 (object, required)\n  \
               - level2 (object, required)\n    \
                 - level3 (object, required)\n      \
                   - deep (boolean, required)\n\
             - scale (number, optional, >= 0.5)\n"
        );
    }
}
