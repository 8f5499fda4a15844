//! Tool calls parsed from every producer, and results formatted back for each.
//!
//! Models ask for tools in several shapes; each parser turns its shape into
//! [`ParsedCall`]s, which become the registry's [`ToolCall`]s:
//!
//! - OpenAI Chat Completions `tool_calls` (and the legacy `function_call`) and OpenAI
//!   Responses `function_call` items: [`parse_openai_tool_calls`];
//! - Anthropic Messages `tool_use` blocks: [`parse_anthropic_tool_uses`];
//! - MCP `tools/call` requests: [`parse_mcp_tool_call`];
//! - the text protocol `Action: tool_name[{...json...}]` with `Thought:`, `Finish[...]`
//!   and `Final Answer:`: [`parse_text_reply`];
//! - calls a model wrote in its text when it should have used function calling
//!   (`<tool_call>` tags, a JSON block, an `Action:` line): [`calls_in_text`].
//!
//! Arguments that arrive as text go through [`parse_loose_json`], which repairs the
//! breakage models commonly produce (code fences, prose, trailing commas, truncation)
//! and says what it repaired. A call is never dropped: arguments that are not JSON
//! even after repair are passed on as the raw string, and the registry answers with
//! an `INVALID_PARAMS` envelope naming the problem.
//!
//! Results go back with [`to_openai_tool_message`], [`to_openai_responses_output`],
//! [`to_anthropic_tool_result`], [`to_mcp_call_result`] (and [`into_mcp_call_result`]) and
//! [`to_observation`].
//!
//! ```
//! use serde_json::json;
//! use toolbelt_wire::calls::{parse_openai_tool_calls, parse_text_reply};
//!
//! let message = json!({
//!     "role": "assistant",
//!     "tool_calls": [{"id": "call_1", "type": "function",
//!                     "function": {"name": "read_file", "arguments": "{\"path\": \"a.txt\",}"}}]
//! });
//! let calls = parse_openai_tool_calls(&message);
//! assert_eq!(calls[0].arguments, json!({"path": "a.txt"}));
//! assert_eq!(calls[0].repairs, ["removed trailing comma"]);
//!
//! let reply = parse_text_reply("Thought: read it\nAction: read_file[{\"path\": \"a.txt\"}]");
//! assert_eq!(reply.thought.as_deref(), Some("read it"));
//! let call = reply.actions[0].clone().map(|c| c.into_call());
//! assert_eq!(call.map(|c| c.arguments).ok(), Some(json!({"path": "a.txt"})));
//! ```

use serde::Serialize;
use serde_json::{Map, Value};

use toolbelt_core::ToolCall;

mod anthropic;
mod format;

mod openai;
mod text;
mod written;

pub use anthropic::parse_anthropic_tool_uses;
pub use format::{
    image_of, into_mcp_call_result, to_anthropic_tool_result, to_mcp_call_result, to_observation,
    to_openai_responses_output, to_openai_tool_message,
};
pub use openai::parse_openai_tool_calls;
pub use text::{TextParseError, TextReply, parse_text_reply};
pub use toolbelt_core::json::parse_loose_json;
pub use written::{WrittenCalls, calls_in_text};

/// One tool call as a producer sent it, after parsing its arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedCall {
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments: the parsed JSON, or the raw text when it is not JSON even after
    /// repair (see `arguments_error`).
    pub arguments: Value,
    /// The producer's id for the call (OpenAI `id`/`call_id`, Anthropic `tool_use.id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// What was repaired to read the call, e.g. `removed code fence`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// The arguments text as received, kept when it was not strict JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
    /// Why the arguments text is not JSON, when it is not even after repair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

impl ParsedCall {
    /// A call with already-parsed arguments.
    pub fn new(name: impl Into<String>, arguments: Value) -> ParsedCall {
        ParsedCall {
            name: name.into(),
            arguments,
            call_id: None,
            repairs: Vec::new(),
            raw_arguments: None,
            arguments_error: None,
        }
    }

    /// Sets the call id.
    pub fn with_id(mut self, id: impl Into<String>) -> ParsedCall {
        self.call_id = Some(id.into());
        self
    }

    /// A call whose arguments arrived as text: parsed with [`parse_loose_json`];
    /// empty text means no arguments (`{}`).
    pub fn from_arguments_text(name: impl Into<String>, text: &str) -> ParsedCall {
        let mut call = ParsedCall::new(name, Value::Object(Map::new()));
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return call;
        }
        match parse_loose_json(trimmed) {
            Ok((value, repairs)) => {
                call.arguments = value;
                if !repairs.is_empty() {
                    call.repairs = repairs;
                    call.raw_arguments = Some(trimmed.to_string());
                }
            }
            Err(e) => {
                call.arguments = Value::String(trimmed.to_string());
                call.raw_arguments = Some(trimmed.to_string());
                call.arguments_error = Some(e.0);
            }
        }
        call
    }

    /// True when the arguments were read as JSON (possibly after repair).
    pub fn is_ok(&self) -> bool {
        self.arguments_error.is_none()
    }

    /// The call for [`toolbelt_core::Registry::execute_call`].
    ///
    /// Arguments that needed repair, or that are not JSON at all, are passed on as the
    /// raw text: the registry then records the repairs in the envelope's context, or
    /// answers `INVALID_PARAMS` with the parse error. Clean arguments are passed as
    /// parsed, so the same call from any producer gives the same envelope.
    pub fn into_call(self) -> ToolCall {
        let arguments = match self.raw_arguments {
            Some(raw) => Value::String(raw),
            None => self.arguments,
        };
        ToolCall {
            name: self.name,
            arguments,
            call_id: self.call_id,
        }
    }
}

impl From<ParsedCall> for ToolCall {
    fn from(call: ParsedCall) -> ToolCall {
        call.into_call()
    }
}

/// Reads the `params` of an MCP `tools/call` request (`{"name": ..., "arguments": {...}}`),
/// or the whole JSON-RPC request holding them. The JSON-RPC `id` becomes the call id.
///
/// Returns `None` when there is no tool name.
pub fn parse_mcp_tool_call(request_or_params: &Value) -> Option<ParsedCall> {
    let params = request_or_params
        .get("params")
        .filter(|p| p.is_object())
        .unwrap_or(request_or_params);
    let name = params.get("name")?.as_str()?;
    let mut call = match params.get("arguments") {
        None | Some(Value::Null) => ParsedCall::new(name, Value::Object(Map::new())),
        Some(Value::String(s)) => ParsedCall::from_arguments_text(name, s),
        Some(v) => ParsedCall::new(name, v.clone()),
    };
    if !std::ptr::eq(params, request_or_params) {
        call.call_id = match request_or_params.get("id") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
    }
    Some(call)
}

/// The string at `key`, if present and a string.
fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
#[path = "providers_tests.rs"]
mod providers_tests;
