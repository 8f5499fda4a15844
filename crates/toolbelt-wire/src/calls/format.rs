//! Results formatted back for each producer.

use serde_json::{Map, Value, json};

use toolbelt_core::{Envelope, Status};

/// Text sent in place of an empty result where an API rejects empty text blocks.
const EMPTY_TEXT_PLACEHOLDER: &str = "(no output)";

/// An OpenAI Chat Completions tool message:
/// `{"role": "tool", "tool_call_id": ..., "content": <text>}`.
pub fn to_openai_tool_message(call_id: &str, env: &Envelope) -> Value {
    json!({
        "role": "tool",
        "tool_call_id": call_id,
        "content": env.text,
    })
}

/// An OpenAI Responses input item:
/// `{"type": "function_call_output", "call_id": ..., "output": <text>}`.
pub fn to_openai_responses_output(call_id: &str, env: &Envelope) -> Value {
    json!({
        "type": "function_call_output",
        "call_id": call_id,
        "output": env.text,
    })
}

/// An Anthropic `tool_result` content block, with `is_error` set for error envelopes.
///
/// The API rejects empty text blocks, so an empty result is sent as `(no output)`.
pub fn to_anthropic_tool_result(tool_use_id: &str, env: &Envelope) -> Value {
    let text = if env.text.is_empty() {
        EMPTY_TEXT_PLACEHOLDER
    } else {
        env.text.as_str()
    };
    let mut content = vec![json!({"type": "text", "text": text})];
    if let Some((mime, data)) = image_of(env) {
        content.push(json!({
            "type": "image",
            "source": {"type": "base64", "media_type": mime, "data": data},
        }));
    }
    json!({
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": content,
        "is_error": env.status == Status::Error,
    })
}

/// An MCP `tools/call` result: the text as content, the whole envelope as
/// `structuredContent` (valid against the tool's MCP `outputSchema`), and
/// `isError` for error envelopes. An image result (`data.image`) becomes an image
/// content item too.
pub fn to_mcp_call_result(env: &Envelope) -> Value {
    mcp_call_result(env.text.clone(), env, Some(env.to_value()))
}

/// [`to_mcp_call_result`] for an envelope that is no longer needed (its text is
/// moved, not copied), with the whole envelope as `structuredContent` only when
/// `structured`: a server leaves it out for clients that would show it to the
/// model in place of the text.
pub fn into_mcp_call_result(mut env: Envelope, structured: bool) -> Value {
    let structured = structured.then(|| env.to_value());
    let text = std::mem::take(&mut env.text);
    mcp_call_result(text, &env, structured)
}

/// The MCP result of `env` with `text` as its text content.
fn mcp_call_result(text: String, env: &Envelope, structured: Option<Value>) -> Value {
    let mut content = vec![json!({"type": "text", "text": text})];
    if let Some((mime, data)) = image_of(env) {
        content.push(json!({"type": "image", "data": data, "mimeType": mime}));
    }
    let mut result = Map::new();
    result.insert("content".into(), Value::Array(content));
    if let Some(structured) = structured {
        result.insert("structuredContent".into(), structured);
    }
    result.insert("isError".into(), Value::Bool(env.status == Status::Error));
    Value::Object(result)
}

/// The image a result carries, as `(mime_type, base64 data)`: tools that return
/// an image put `{"mime_type": "image/png", "data": "<base64>"}` at `data.image`.
pub fn image_of(env: &Envelope) -> Option<(&str, &str)> {
    let image = env.data.get("image")?;
    let mime = image.get("mime_type")?.as_str()?;
    let data = image.get("data")?.as_str()?;
    mime.starts_with("image/").then_some((mime, data))
}

/// The text-protocol observation of a result:
///
/// - `Observation: <text>` on success;
/// - `Observation (partial): <text>` when the result is incomplete;
/// - `Observation (error CODE): <message>` (and the hint) on error.
pub fn to_observation(env: &Envelope) -> String {
    match (env.status, &env.error) {
        (Status::Success, _) => format!("Observation: {}", env.text),
        (Status::Partial, _) => format!("Observation (partial): {}", env.text),
        (Status::Error, Some(err)) => {
            // The text of an error envelope normally starts with `ERROR [CODE]: `;
            // the header already says so.
            let prefix = format!("ERROR [{}]: ", err.code);
            let body = env.text.strip_prefix(&prefix).unwrap_or(&env.text);
            format!("Observation (error {}): {body}", err.code)
        }
        (Status::Error, None) => format!("Observation (error): {}", env.text),
    }
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
