//! OpenAI tool calls: Chat Completions `tool_calls` and `function_call`, Responses
//! `function_call` items.

use serde_json::{Map, Value};

use super::{ParsedCall, str_field};

/// Reads the tool calls of an OpenAI reply.
///
/// Accepts any of:
/// - an assistant message (`{"role": "assistant", "tool_calls": [...]}`), with the
///   legacy `function_call` read when there are no `tool_calls`;
/// - a whole Chat Completions response (`{"choices": [{"message": ...}]}`), every choice;
/// - the `tool_calls` array itself, or one entry
///   (`{"id", "type": "function", "function": {"name", "arguments"}}`), or the value
///   of a legacy `function_call` (`{"name", "arguments"}`);
/// - a Responses API response (`{"output": [...]}`), its `output` array, or one
///   `{"type": "function_call", "call_id", "name", "arguments"}` item.
///
/// `arguments` is normally a JSON string and is parsed with
/// [`super::parse_loose_json`]; an object (as some compatible servers send) is taken
/// as is, and a missing or empty one means `{}`. Entries of other types (messages,
/// reasoning, built-in tools) are skipped. A function entry without a name still
/// gives a call, with an empty name, so the registry answers `UNKNOWN_TOOL`.
pub fn parse_openai_tool_calls(message_or_tool_calls: &Value) -> Vec<ParsedCall> {
    let mut out = Vec::new();
    collect(message_or_tool_calls, &mut out);
    out
}

fn collect(v: &Value, out: &mut Vec<ParsedCall>) {
    match v {
        Value::Array(items) => {
            for item in items {
                if let Some(call) = entry(item) {
                    out.push(call);
                }
            }
        }
        Value::Object(obj) => {
            if let Some(Value::Array(choices)) = obj.get("choices") {
                for choice in choices {
                    if let Some(message) = choice.get("message").or_else(|| choice.get("delta")) {
                        collect(message, out);
                    }
                }
            } else if let Some(output @ Value::Array(_)) = obj.get("output") {
                collect(output, out);
            } else if let Some(calls @ Value::Array(_)) = obj.get("tool_calls") {
                collect(calls, out);
            } else if let Some(legacy) = obj.get("function_call").filter(|f| f.is_object()) {
                out.push(from_function(legacy, None));
            } else if let Some(call) = entry(v) {
                out.push(call);
            }
        }
        _ => {}
    }
}

/// One `tool_calls` entry or one Responses output item.
fn entry(item: &Value) -> Option<ParsedCall> {
    let kind = item.get("type").and_then(Value::as_str);
    match kind {
        Some("function_call") => {
            let id = str_field(item, "call_id").or_else(|| str_field(item, "id"));
            Some(from_function(item, id))
        }
        Some("function") | None => match item.get("function").filter(|f| f.is_object()) {
            Some(function) => Some(from_function(function, str_field(item, "id"))),
            // The value of a legacy `function_call`: `{"name", "arguments"}`.
            None if kind.is_none() && item.get("name").is_some_and(Value::is_string) => {
                Some(from_function(item, None))
            }
            None => None,
        },
        Some(_) => None,
    }
}

/// A call from an object holding `name` and `arguments`.
fn from_function(f: &Value, id: Option<String>) -> ParsedCall {
    let name = str_field(f, "name").unwrap_or_default();
    let mut call = match f.get("arguments") {
        Some(Value::String(s)) => ParsedCall::from_arguments_text(name, s),
        None | Some(Value::Null) => ParsedCall::new(name, Value::Object(Map::new())),
        Some(other) => ParsedCall::new(name, other.clone()),
    };
    call.call_id = id;
    call
}
