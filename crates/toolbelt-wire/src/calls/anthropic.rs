//! Anthropic Messages `tool_use` blocks.

use serde_json::{Map, Value};

use super::{ParsedCall, str_field};

/// Reads the `tool_use` blocks of an Anthropic reply.
///
/// Accepts a message or whole response (`{"role": "assistant", "content": [...]}`),
/// the content array itself, or one block. Each `{"type": "tool_use", "id", "name",
/// "input"}` block gives a call; other blocks (text, thinking, server-side tools) are
/// skipped. `input` is normally an object; a string (as some proxies send) is parsed
/// with [`super::parse_loose_json`], and a missing one means `{}`.
pub fn parse_anthropic_tool_uses(content: &Value) -> Vec<ParsedCall> {
    let blocks: &[Value] = match content {
        Value::Array(items) => items,
        Value::Object(obj) => match obj.get("content") {
            Some(Value::Array(items)) => items,
            _ => std::slice::from_ref(content),
        },
        _ => &[],
    };
    blocks.iter().filter_map(tool_use).collect()
}

fn tool_use(block: &Value) -> Option<ParsedCall> {
    if block.get("type").and_then(Value::as_str) != Some("tool_use") {
        return None;
    }
    let name = str_field(block, "name").unwrap_or_default();
    let mut call = match block.get("input") {
        Some(Value::String(s)) => ParsedCall::from_arguments_text(name, s),
        None | Some(Value::Null) => ParsedCall::new(name, Value::Object(Map::new())),
        Some(other) => ParsedCall::new(name, other.clone()),
    };
    call.call_id = str_field(block, "id");
    Some(call)
}
