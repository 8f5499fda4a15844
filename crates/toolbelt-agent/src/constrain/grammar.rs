//! The GBNF grammar of one `Action: tool_name[{...}]` line, from the tools' input
//! schemas.
//!
//! Each tool gets a rule `call-<tool>` for `tool_name[ARGS]`; its arguments' schema
//! becomes rules named after the tool and the property path. An object's
//! required properties come first (in the order `required` lists them), then the
//! optional ones, each of which may be left out: the first member is one of the
//! properties up to the first required one, and rule
//! `<object>-rest<i>` is what may follow property `i - 1`, so the grammar grows
//! with the number of properties, not its square. Whitespace is at most one space
//! at each place JSON allows it (`ws`), so a model cannot loop on blanks; numbers
//! have bounded digits. Rule names are what llama.cpp takes: letters, digits, `-`.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};
use toolbelt_core::ToolSpec;

/// Rules a grammar may use, each written once and only when used: name, body, the
/// shared rules its body names.
const SHARED: &[(&str, &str, &[&str])] = &[
    ("ws", r#"" "?"#, &[]),
    ("comma", r#"ws "," ws"#, &["ws"]),
    ("colon", r#"ws ":" ws"#, &["ws"]),
    (
        "char",
        r#"[^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" unicode )"#,
        &["unicode"],
    ),
    // `\uXXXX` outside the surrogates, which JSON parsers refuse alone.
    (
        "unicode",
        "[0-9a-cA-CeEfF] hex hex hex | [dD] [0-7] hex hex",
        &["hex"],
    ),
    ("hex", "[0-9a-fA-F]", &[]),
    ("string", r#""\"" char* "\"""#, &["char"]),
    ("string-1", r#""\"" char+ "\"""#, &["char"]),
    ("uint", r#""0" | [1-9] [0-9]{0,15}"#, &[]),
    ("uint-1", "[1-9] [0-9]{0,15}", &[]),
    ("integer", r#""-"? uint"#, &["uint"]),
    (
        "number",
        r#""-"? uint ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?"#,
        &["uint"],
    ),
    ("boolean", r#""true" | "false""#, &[]),
    ("null", r#""null""#, &[]),
    (
        "value",
        "object | array | string | number | boolean | null",
        &["object", "array", "string", "number", "boolean", "null"],
    ),
    (
        "object",
        r#""{" ws ( string colon value ( comma string colon value )* )? ws "}""#,
        &["ws", "string", "colon", "value", "comma"],
    ),
    (
        "array",
        r#""[" ws ( value ( comma value )* )? ws "]""#,
        &["ws", "value", "comma"],
    ),
    ("name", "[a-zA-Z0-9_.-]+", &[]),
];

/// Deeper than this, a schema allows any JSON value (a guard against schemas
/// nested without end).
const MAX_DEPTH: usize = 32;
/// Counts (`minItems`, `maxItems`, `minLength`) up to this are written out; a
/// larger minimum is cut to it, a larger maximum left out.
const MAX_COUNTED: u64 = 16;

/// See [`super::action_grammar`].
pub(super) fn action_grammar(specs: &[ToolSpec]) -> String {
    let mut builder = Builder::default();
    let mut calls = Vec::new();
    for (index, spec) in specs.iter().enumerate() {
        if spec.name.is_empty() || !spec.name.bytes().all(is_name_byte) {
            continue;
        }
        builder.tool = index;
        builder.tool_hint = sanitize(&spec.name);
        let hint = format!("{}-args", builder.tool_hint);
        let args = builder.value(&spec.input_schema, &spec.input_schema, &hint, 0);
        let body = format!(
            "{} {args} {}",
            literal(&format!("{}[", spec.name)),
            literal("]")
        );
        let call = builder.rule(&format!("call-{}", builder.tool_hint), body);
        calls.push(call);
    }
    let call_body = if calls.is_empty() {
        let name = builder.shared("name");
        let object = builder.shared("object");
        format!("{name} \"[\" {object} \"]\"")
    } else {
        calls.join(" | ")
    };
    let mut out = String::new();
    out.push_str("root ::= \"Action: \" call \"\\n\"?\n");
    out.push_str(&format!("call ::= {call_body}\n"));
    for (name, body) in &builder.rules {
        out.push_str(&format!("{name} ::= {}\n", body.as_deref().unwrap_or("")));
    }
    for (name, body, _) in SHARED {
        if builder.used.contains(name) {
            out.push_str(&format!("{name} ::= {body}\n"));
        }
    }
    out
}

/// The bytes of a tool name the text protocol reads (`Action: name[`).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Writes the rules of the tools' schemas.
#[derive(Debug, Default)]
struct Builder {
    /// The rules in the order made; a rule's body is `None` while it is made.
    rules: Vec<(String, Option<String>)>,
    /// Every rule name given out, and the reserved ones.
    taken: HashSet<String>,
    /// The shared rules named so far, with what they name.
    used: BTreeSet<&'static str>,
    /// The rule of each `$ref` met, by tool and reference.
    refs: HashMap<(usize, String), String>,
    /// The tool whose schema is being written.
    tool: usize,
    /// Its name as a rule name.
    tool_hint: String,
}

impl Builder {
    /// A fresh rule name like `hint` (cleaned, made unique).
    fn name(&mut self, hint: &str) -> String {
        if self.taken.is_empty() {
            self.taken.insert("root".into());
            self.taken.insert("call".into());
            self.taken
                .extend(SHARED.iter().map(|(name, _, _)| name.to_string()));
        }
        let base = sanitize(hint);
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// A new rule `body`, named like `hint`; returns its name.
    fn rule(&mut self, hint: &str, body: String) -> String {
        let name = self.name(hint);
        self.rules.push((name.clone(), Some(body)));
        name
    }

    /// The shared rule `name` (and what it names), marked used.
    fn shared(&mut self, name: &'static str) -> String {
        let mut stack = vec![name];
        while let Some(next) = stack.pop() {
            if self.used.insert(next)
                && let Some((_, _, deps)) = SHARED.iter().find(|(n, _, _)| *n == next)
            {
                stack.extend(deps.iter().copied());
            }
        }
        name.to_string()
    }

    /// Any JSON value.
    fn any(&mut self) -> String {
        self.shared("value")
    }

    /// An expression (one element: a rule name, a literal or a group) for the
    /// values `schema` allows; `root` is the tool's whole schema, for `$ref`s.
    fn value(&mut self, schema: &Value, root: &Value, hint: &str, depth: usize) -> String {
        let Some(obj) = schema.as_object().filter(|_| depth < MAX_DEPTH) else {
            return self.any();
        };
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            return self.reference(reference, root, depth);
        }
        if let Some(constant) = obj.get("const") {
            return json_literal(constant);
        }
        if let Some(choices) = obj.get("enum").and_then(Value::as_array)
            && !choices.is_empty()
        {
            let alternatives: Vec<String> = choices.iter().map(json_literal).collect();
            return group(&alternatives);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(list) = obj.get(key).and_then(Value::as_array)
                && !list.is_empty()
            {
                let alternatives: Vec<String> = list
                    .iter()
                    .enumerate()
                    .map(|(i, s)| self.value(s, root, &format!("{hint}-{i}"), depth + 1))
                    .collect();
                return group(&alternatives);
            }
        }
        if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
            return match all.as_slice() {
                [only] => self.value(only, root, hint, depth + 1),
                _ => self.any(),
            };
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.typed(obj, t, root, hint, depth),
            Some(Value::Array(types)) => {
                let alternatives: Vec<String> = types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.typed(obj, t, root, &format!("{hint}-{t}"), depth))
                    .collect();
                if alternatives.is_empty() {
                    self.any()
                } else {
                    group(&alternatives)
                }
            }
            _ if obj.contains_key("properties") => self.typed(obj, "object", root, hint, depth),
            _ if obj.contains_key("items") => self.typed(obj, "array", root, hint, depth),
            _ => self.any(),
        }
    }

    /// The values of type `t` that `obj` allows.
    fn typed(
        &mut self,
        obj: &Map<String, Value>,
        t: &str,
        root: &Value,
        hint: &str,
        depth: usize,
    ) -> String {
        match t {
            "string" => {
                let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0);
                match min {
                    0 => self.shared("string"),
                    1 => self.shared("string-1"),
                    m => {
                        self.shared("char");
                        let m = m.min(MAX_COUNTED);
                        self.rule(hint, format!("\"\\\"\" char{{{m},}} \"\\\"\""))
                    }
                }
            }
            "integer" => {
                let minimum = obj.get("minimum").and_then(Value::as_f64);
                let above = obj
                    .get("exclusiveMinimum")
                    .and_then(Value::as_f64)
                    .map(|e| e.floor() + 1.0);
                let floor = minimum
                    .into_iter()
                    .chain(above)
                    .fold(f64::NEG_INFINITY, f64::max);
                if floor >= 1.0 {
                    self.shared("uint-1")
                } else if floor >= 0.0 {
                    self.shared("uint")
                } else {
                    self.shared("integer")
                }
            }
            "number" => self.shared("number"),
            "boolean" => self.shared("boolean"),
            "null" => self.shared("null"),
            "object" => self.object(obj, root, hint, depth),
            "array" => self.array(obj, root, hint, depth),
            _ => self.any(),
        }
    }

    /// An object of exactly the listed properties, the required ones present and
    /// first (in the order `required` lists them), the optional ones after.
    fn object(
        &mut self,
        obj: &Map<String, Value>,
        root: &Value,
        hint: &str,
        depth: usize,
    ) -> String {
        let properties = obj
            .get("properties")
            .and_then(Value::as_object)
            .filter(|p| !p.is_empty());
        let Some(properties) = properties else {
            if obj.get("additionalProperties") == Some(&Value::Bool(false)) {
                self.shared("ws");
                return "( \"{\" ws \"}\" )".to_string();
            }
            return self.shared("object");
        };
        let required_order: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let required: HashSet<&str> = required_order.iter().copied().collect();
        self.shared("ws");
        self.shared("comma");
        self.shared("colon");
        // The required properties first, in the order `required` lists them (the
        // declared order, whatever order the map keeps), then the optional ones:
        // a small model writes what it must and may stop there, instead of
        // filling in every optional argument it meets first.
        let ordered: Vec<(&String, &Value)> = required_order
            .iter()
            .filter_map(|name| properties.get_key_value(*name))
            .chain(
                properties
                    .iter()
                    .filter(|(key, _)| !required.contains(key.as_str())),
            )
            .collect();
        let mut members = Vec::with_capacity(properties.len());
        for (key, schema) in ordered {
            let value = self.value(schema, root, &format!("{hint}-{key}"), depth + 1);
            let key_text = Value::String(key.clone()).to_string();
            members.push((
                format!("{} colon {value}", literal(&key_text)),
                required.contains(key.as_str()),
            ));
        }
        let n = members.len();
        // rest[i]: what may follow member i - 1 (none after the last).
        let mut rest: Vec<Option<String>> = vec![None; n + 1];
        for i in (1..n).rev() {
            let (member, needed) = &members[i];
            let piece = if *needed {
                format!("comma {member}")
            } else {
                format!("( comma {member} )?")
            };
            let body = match &rest[i + 1] {
                Some(next) => format!("{piece} {next}"),
                None => piece,
            };
            rest[i] = Some(self.rule(&format!("{hint}-rest{i}"), body));
        }
        let first_required = members.iter().position(|(_, needed)| *needed);
        let last_first = first_required.unwrap_or(n - 1);
        let firsts: Vec<String> = (0..=last_first)
            .map(|j| match &rest[j + 1] {
                Some(next) => format!("{} {next}", members[j].0),
                None => members[j].0.clone(),
            })
            .collect();
        let optional = if first_required.is_some() { "" } else { "?" };
        let body = format!("\"{{\" ws ( {} ){optional} ws \"}}\"", firsts.join(" | "));
        self.rule(hint, body)
    }

    /// An array of items `obj` allows, as many as it says.
    fn array(
        &mut self,
        obj: &Map<String, Value>,
        root: &Value,
        hint: &str,
        depth: usize,
    ) -> String {
        let item = match obj.get("items") {
            Some(items @ (Value::Object(_) | Value::Bool(_))) => {
                self.value(items, root, &format!("{hint}-item"), depth + 1)
            }
            _ => self.any(),
        };
        self.shared("ws");
        self.shared("comma");
        let min = obj
            .get("minItems")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(MAX_COUNTED);
        let max = obj
            .get("maxItems")
            .and_then(Value::as_u64)
            .filter(|m| *m <= MAX_COUNTED)
            .map(|m| m.max(min));
        let more = format!("( comma {item} )");
        let body = match (min, max) {
            (_, Some(0)) => "\"[\" ws \"]\"".to_string(),
            (0, max) => format!(
                "\"[\" ws ( {item} {} )? ws \"]\"",
                repeat(&more, 0, max.map(|m| m - 1))
            ),
            (min, max) => format!(
                "\"[\" ws {item} {} ws \"]\"",
                repeat(&more, min - 1, max.map(|m| m - 1))
            ),
        };
        self.rule(hint, body)
    }

    /// The rule of a local `$ref` (`#`, `#/$defs/X`, `#/definitions/X`, any JSON
    /// pointer into the tool's schema); any value for one that does not resolve.
    fn reference(&mut self, reference: &str, root: &Value, depth: usize) -> String {
        let key = (self.tool, reference.to_string());
        if let Some(name) = self.refs.get(&key) {
            return name.clone();
        }
        let target = reference.strip_prefix('#').and_then(|pointer| {
            if pointer.is_empty() {
                Some(root)
            } else {
                root.pointer(pointer)
            }
        });
        let Some(target) = target else {
            return self.any();
        };
        let last = reference.rsplit('/').next().unwrap_or("ref");
        let name = self.name(&format!("{}-{last}", self.tool_hint));
        self.refs.insert(key, name.clone());
        let at = self.rules.len();
        self.rules.push((name.clone(), None));
        let body = self.value(target, root, &format!("{name}-def"), depth + 1);
        if let Some(slot) = self.rules.get_mut(at) {
            slot.1 = Some(body);
        }
        name
    }
}

/// `element` repeated `min` to `max` times (no maximum: any number).
fn repeat(element: &str, min: u64, max: Option<u64>) -> String {
    match (min, max) {
        (_, Some(0)) => String::new(),
        (0, None) => format!("{element}*"),
        (1, None) => format!("{element}+"),
        (m, None) => format!("{element}{{{m},}}"),
        (0, Some(1)) => format!("{element}?"),
        (1, Some(1)) => element.to_string(),
        (m, Some(x)) if m == x => format!("{element}{{{m}}}"),
        (m, Some(x)) => format!("{element}{{{m},{x}}}"),
    }
}

/// The alternatives as one element.
fn group(alternatives: &[String]) -> String {
    match alternatives {
        [one] => one.clone(),
        _ => format!("( {} )", alternatives.join(" | ")),
    }
}

/// A GBNF literal matching `text` exactly.
pub(super) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A GBNF literal of `value`'s compact JSON text.
fn json_literal(value: &Value) -> String {
    literal(&value.to_string())
}

/// `text` as a rule name: letters and digits kept, runs of anything else one `-`.
fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        "x".to_string()
    } else {
        trimmed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned_and_repetitions_written_short() {
        assert_eq!(sanitize("read_file"), "read-file");
        assert_eq!(sanitize("__x__y"), "x-y");
        assert_eq!(sanitize("é"), "x");
        assert_eq!(repeat("a", 0, None), "a*");
        assert_eq!(repeat("a", 1, None), "a+");
        assert_eq!(repeat("a", 2, Some(2)), "a{2}");
        assert_eq!(repeat("a", 0, Some(3)), "a{0,3}");
        assert_eq!(repeat("a", 0, Some(0)), "");
        assert_eq!(literal("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
    }
}
