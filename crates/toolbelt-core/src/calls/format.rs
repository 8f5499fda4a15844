//! Results formatted back for each producer.

use serde_json::{Value, json};

use crate::envelope::{Envelope, Status};

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
    json!({
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [{"type": "text", "text": text}],
        "is_error": env.status == Status::Error,
    })
}

/// An MCP `tools/call` result: the text as content, the whole envelope as
/// `structuredContent`, and `isError` for error envelopes.
pub fn to_mcp_call_result(env: &Envelope) -> Value {
    json!({
        "content": [{"type": "text", "text": env.text}],
        "structuredContent": env.to_value(),
        "isError": env.status == Status::Error,
    })
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
