//! Tool calls a model wrote as text when it should have used function calling.
//!
//! Small models served with a chat template that does not render tools the way
//! they were trained often answer with the call in their text instead of in
//! `tool_calls`:
//!
//! - `<tool_call>{"name": "read_file", "arguments": {...}}</tool_call>` (Qwen,
//!   Hermes; the closing tag may be missing);
//! - a fenced block (```` ```json ````) or the whole reply holding one such object,
//!   or a list of them (`"arguments"` may also be `"parameters"`, or the object may
//!   be `{"function": {...}}`);
//! - the text protocol's `Action: tool_name[{...}]`.
//!
//! [`calls_in_text`] finds them, for the names of tools that exist only: a JSON
//! example that mentions some other name is left as text.

use serde_json::{Map, Value};

use super::text::parse_text_reply;
use super::{ParsedCall, parse_loose_json};

/// The calls found in a reply's text and what is left of the text without them.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenCalls {
    /// The calls, in order.
    pub calls: Vec<ParsedCall>,
    /// How they were written: `<tool_call> tags`, `a JSON block`, `an Action line`.
    pub form: &'static str,
    /// The reply's text without the calls (trimmed).
    pub rest: String,
}

/// The tool calls written in `text`, when it holds some of tools `known` accepts
/// (it is given the name as written). `None` when it holds none: the text is an
/// answer.
pub fn calls_in_text(text: &str, known: &dyn Fn(&str) -> bool) -> Option<WrittenCalls> {
    if let Some(found) = tagged(text, known) {
        return Some(found);
    }
    if let Some(found) = fenced(text, known) {
        return Some(found);
    }
    if let Some(found) = whole(text, known) {
        return Some(found);
    }
    action_lines(text, known)
}

/// `<tool_call>...</tool_call>` blocks.
fn tagged(text: &str, known: &dyn Fn(&str) -> bool) -> Option<WrittenCalls> {
    const OPEN: &str = "<tool_call>";
    let body_start = |start: usize| start + OPEN.len();
    let (calls, rest) = blocks(text, OPEN, body_start, "</tool_call>", known);
    done(calls, "<tool_call> tags", &rest)
}

/// Fenced code blocks holding call objects (the body starts after the fence's
/// info line).
fn fenced(text: &str, known: &dyn Fn(&str) -> bool) -> Option<WrittenCalls> {
    let body_start = |start: usize| {
        text[start..]
            .find('\n')
            .map_or(text.len(), |i| start + i + 1)
    };
    let (calls, rest) = blocks(text, "```", body_start, "```", known);
    done(calls, "a JSON block", &rest)
}

/// The calls of known tools in the blocks of `text` that start at `open` (their
/// body at `body_start(start)`) and end at `close` or, unclosed (the model stopped
/// inside), at the end; and the text without the blocks that held calls.
fn blocks(
    text: &str,
    open: &str,
    body_start: impl Fn(usize) -> usize,
    close: &str,
    known: &dyn Fn(&str) -> bool,
) -> (Vec<ParsedCall>, String) {
    let mut calls = Vec::new();
    let mut rest = String::new();
    let mut pos = 0;
    while let Some(at) = text[pos..].find(open) {
        let start = pos + at;
        let body = body_start(start).min(text.len());
        let (body_end, end) = match text[body..].find(close) {
            Some(i) => (body + i, body + i + close.len()),
            None => (text.len(), text.len()),
        };
        let found = objects(strip_fence(&text[body..body_end]), known);
        if found.is_empty() {
            rest.push_str(&text[pos..end]);
        } else {
            rest.push_str(&text[pos..start]);
            calls.extend(found);
        }
        pos = end;
    }
    rest.push_str(&text[pos..]);
    (calls, rest)
}

/// The whole reply is one call object (or a list of them).
fn whole(text: &str, known: &dyn Fn(&str) -> bool) -> Option<WrittenCalls> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    done(objects(trimmed, known), "a JSON block", "")
}

/// `Action: tool[{...}]` lines naming tools that exist.
fn action_lines(text: &str, known: &dyn Fn(&str) -> bool) -> Option<WrittenCalls> {
    let reply = parse_text_reply(text);
    let calls: Vec<ParsedCall> = reply
        .actions
        .into_iter()
        .filter_map(Result::ok)
        .filter(|c| known(&c.name))
        .collect();
    let rest = reply.thought.unwrap_or_default();
    done(calls, "an Action line", &rest)
}

fn done(calls: Vec<ParsedCall>, form: &'static str, rest: &str) -> Option<WrittenCalls> {
    (!calls.is_empty()).then(|| WrittenCalls {
        calls,
        form,
        rest: rest.trim().to_string(),
    })
}

/// The body of a fence inside a tag (` ```json\n{...}\n``` `), or the text.
fn strip_fence(body: &str) -> &str {
    let t = body.trim();
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.split_once('\n').map_or("", |(_, b)| b);
    inner.trim_end().strip_suffix("```").unwrap_or(inner)
}

/// The calls of known tools in a JSON text: one object, or a list of objects.
fn objects(body: &str, known: &dyn Fn(&str) -> bool) -> Vec<ParsedCall> {
    let body = body.trim();
    if body.is_empty() {
        return Vec::new();
    }
    let Ok((value, _)) = parse_loose_json(body) else {
        return Vec::new();
    };
    let items = match value {
        Value::Array(items) => items,
        one => vec![one],
    };
    items
        .iter()
        .filter_map(|item| call_object(item, known))
        .collect()
}

/// `{"name": ..., "arguments": {...}}` and its variants, when `name` is known.
fn call_object(item: &Value, known: &dyn Fn(&str) -> bool) -> Option<ParsedCall> {
    let object = item.as_object()?;
    let object = match object.get("function").and_then(Value::as_object) {
        Some(function) if function.contains_key("name") => function,
        _ => object,
    };
    let name = object
        .get("name")
        .or_else(|| object.get("tool"))
        .and_then(Value::as_str)?;
    if !known(name) {
        return None;
    }
    let arguments = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|k| object.get(*k));
    let mut call = match arguments {
        None | Some(Value::Null) => ParsedCall::new(name, Value::Object(Map::new())),
        Some(Value::String(text)) => ParsedCall::from_arguments_text(name, text),
        Some(other) => ParsedCall::new(name, other.clone()),
    };
    call.repairs
        .insert(0, "read a tool call written in the text".to_string());
    Some(call)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn known(name: &str) -> bool {
        matches!(name, "read_file" | "apply_patch" | "bash")
    }

    #[test]
    fn qwen_tags_are_calls() {
        let text = "I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\"}}\n</tool_call>";
        let found = calls_in_text(text, &known).unwrap();
        assert_eq!(found.form, "<tool_call> tags");
        assert_eq!(found.calls[0].name, "read_file");
        assert_eq!(found.calls[0].arguments, json!({"path": "a.py"}));
        assert_eq!(found.rest, "I will read it.");
        // No closing tag: the model stopped after the call.
        let found = calls_in_text(
            "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
            &known,
        )
        .unwrap();
        assert_eq!(found.calls[0].arguments, json!({"command": "ls"}));
    }

    #[test]
    fn a_fenced_json_call_is_a_call_and_other_json_is_not() {
        let text = "Here:\n```json\n{\"name\": \"apply_patch\", \"arguments\": {\"patch\": \"x\"}}\n```\nDone.";
        let found = calls_in_text(text, &known).unwrap();
        assert_eq!(found.form, "a JSON block");
        assert_eq!(found.calls[0].name, "apply_patch");
        assert_eq!(found.rest, "Here:\n\nDone.");
        // An unknown name, or JSON that is not a call, stays an answer.
        assert_eq!(
            calls_in_text(
                "```json\n{\"name\": \"widget\", \"arguments\": {}}\n```",
                &known
            ),
            None
        );
        assert_eq!(
            calls_in_text("```json\n{\"port\": 8080}\n```", &known),
            None
        );
        assert_eq!(calls_in_text("The answer is 42.", &known), None);
    }

    #[test]
    fn variants_of_the_object_and_a_bare_reply() {
        let found = calls_in_text(
            "{\"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"pwd\\\"}\"}}",
            &known,
        )
        .unwrap();
        assert_eq!(found.calls[0].arguments, json!({"command": "pwd"}));
        let found = calls_in_text(
            "[{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}, {\"name\": \"read_file\", \"parameters\": {\"path\": \"b\"}}]",
            &known,
        )
        .unwrap();
        assert_eq!(found.calls.len(), 2);
        assert!(found.calls[0].repairs[0].contains("written in the text"));
    }

    #[test]
    fn action_lines_of_known_tools_are_calls() {
        let found = calls_in_text(
            "Thought: look\nAction: read_file[{\"path\": \"a.py\"}]",
            &known,
        )
        .unwrap();
        assert_eq!(found.form, "an Action line");
        assert_eq!(found.calls[0].arguments, json!({"path": "a.py"}));
        assert_eq!(found.rest, "look");
        assert_eq!(calls_in_text("Action: tool_name[{...}]", &known), None);
    }
}
