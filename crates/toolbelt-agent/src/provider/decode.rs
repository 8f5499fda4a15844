//! What an answer is made of, apart from how it travels: why an attempt failed
//! ([`Failure`]), the [`Decoder`] a wire format gives for one answer's events and
//! the [`Wire`] it plugs into the client, the provider's own words in an error
//! body or event, and tool calls put together from streamed fragments.
//!
//! The client in `http` sends, retries and reads; it hands each event to a
//! decoder and takes back a [`ModelResponse`] or a [`Failure`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolbelt_core::error_chain;

use super::{ModelResponse, StopReason, StreamEvent, StreamSink};
use crate::message::ModelCall;

/// The most characters of an error body quoted in a message.
pub(crate) const MAX_ERROR_MESSAGE_CHARS: usize = 500;

/// Why one attempt failed; the client in `http` decides whether to try again.
///
/// Its causes are text, not typed: the client replaces the API key in them before
/// they leave, should a server have echoed it, and an attempt's failure is cloned
/// into the retry notice. The one typed cause is the JSON parser's, which names a
/// place in the text, never the text itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// An error status, or an error event that stands for one.
    Status {
        /// The HTTP status (for an error event: the status its type stands for).
        status: u16,
        /// The provider's own message.
        message: String,
        /// How long the provider asked to wait before the next attempt.
        retry_after: Option<Duration>,
        /// The provider's `x-should-retry` header, when it sent one.
        should_retry: Option<bool>,
    },
    /// The request could not be sent, or no answer came.
    Connection(String),
    /// The answer broke off before its end event: what streamed is void.
    Incomplete(String),
    /// Nothing came within the first-byte timeout, on a connection still open.
    NoFirstByte(String),
    /// The answer cannot be read (not the format it should be): not retried.
    Malformed(String),
    /// The answer, or an event of it, is not JSON: not retried.
    NotJson {
        /// What is not JSON, and the start of its text.
        message: String,
        /// The parser's error.
        source: JsonError,
    },
}

/// The parser's error for a text that is not JSON: shared, as a [`Failure`] is
/// cloned; two are equal when they find the same fault at the same place.
#[derive(Debug, Clone)]
pub(crate) struct JsonError(pub(crate) Arc<serde_json::Error>);

impl PartialEq for JsonError {
    fn eq(&self, other: &JsonError) -> bool {
        let (a, b) = (&self.0, &other.0);
        a.classify() == b.classify() && a.line() == b.line() && a.column() == b.column()
    }
}

impl Failure {
    /// A status failure without retry hints.
    pub(crate) fn status(status: u16, message: impl Into<String>) -> Failure {
        Failure::Status {
            status,
            message: message.into(),
            retry_after: None,
            should_retry: None,
        }
    }

    /// [`Failure::NotJson`]: `what` (`the answer`) is not JSON; `text`, quoted up to
    /// `max` characters, is what it reads.
    pub(crate) fn not_json(
        what: &str,
        text: &str,
        max: usize,
        source: serde_json::Error,
    ) -> Failure {
        Failure::NotJson {
            message: format!("{what} is not JSON ({:?})", clip(text, max)),
            source: JsonError(Arc::new(source)),
        }
    }

    pub(crate) fn retryable(&self) -> bool {
        match self {
            Failure::Status {
                status,
                should_retry,
                ..
            } => should_retry.unwrap_or_else(|| retryable_status(*status)),
            Failure::Connection(_) | Failure::Incomplete(_) | Failure::NoFirstByte(_) => true,
            Failure::Malformed(_) | Failure::NotJson { .. } => false,
        }
    }

    /// The `reason` of a [`StreamEvent::Retrying`].
    pub(crate) fn reason(&self) -> String {
        match self {
            Failure::Status {
                status, message, ..
            } => format!("HTTP {status}: {}", clip(message, 200)),
            Failure::Connection(m) => format!("connection error: {m}"),
            Failure::Incomplete(m) => {
                format!("the stream ended early ({m}); what streamed so far is void")
            }
            Failure::NoFirstByte(m) => m.clone(),
            Failure::Malformed(m) => m.clone(),
            Failure::NotJson { message, source } => {
                format!("{message}: {}", error_chain(&*source.0))
            }
        }
    }
}

/// What a server says when it cannot read the tool call the model wrote (lower
/// case; matched anywhere in its message):
///
/// - llama.cpp, `common/chat.cpp`: `Failed to parse tool call arguments as JSON: `
///   (a tool call of the conversation whose arguments are not JSON: the model's,
///   sent back), and the chat parser's word for a reply its template's parser
///   cannot place: `Failed to parse input at pos N: ...` (until late 2025), `The
///   model produced output that does not match the expected <format> format`
///   (since);
/// - Ollama, `openai/openai.go`: `invalid tool call arguments`.
const MALFORMED_CALL_TEXTS: [&str; 4] = [
    "failed to parse tool call",
    "failed to parse input at pos",
    "the model produced output that does not match the expected",
    "invalid tool call arguments",
];

/// True when a server's error `message` says it could not read the model's tool
/// call: asking again would bring the same call back.
pub(crate) fn is_malformed_call_message(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    MALFORMED_CALL_TEXTS.iter().any(|t| message.contains(t))
}

/// True for the statuses worth another attempt: 429 and 5xx (but 501 Not
/// Implemented and 505 HTTP Version Not Supported, which will not change).
fn retryable_status(status: u16) -> bool {
    status == 429 || ((500..=599).contains(&status) && status != 501 && status != 505)
}

/// Whether reading goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// More events follow.
    Continue,
    /// That was the stream's end event.
    Done,
}

/// Turns one answer's events into a [`ModelResponse`].
pub(crate) trait Decoder: Send {
    /// One server-sent event (`event` is empty when the server named none).
    ///
    /// # Errors
    /// An error event, or an event that is not what the format says.
    fn event(&mut self, event: &str, data: &str, sink: StreamSink<'_>) -> Result<Flow, Failure>;

    /// The answer, once the stream ended (after its end event, or not).
    ///
    /// # Errors
    /// [`Failure::Incomplete`] when the stream ended before the answer did.
    fn finish(self) -> Result<ModelResponse, Failure>;
}

/// What a wire format contributes to a call.
pub(crate) trait Wire: Sync {
    /// The decoder of one attempt's answer.
    type Decoder: Decoder;

    /// A fresh decoder (one per attempt: a retried answer starts over).
    fn decoder(&self) -> Self::Decoder;

    /// A plain JSON answer, from a server that ignored `stream: true`. Reports
    /// its parts through `sink` as if they had streamed.
    ///
    /// # Errors
    /// The body is not an answer.
    fn parse_json(&self, body: &Value, sink: StreamSink<'_>) -> Result<ModelResponse, Failure>;
}

/// The provider's own message in an error body: `error.message` (OpenAI,
/// Anthropic), `error` as a string (Ollama), `message` or `detail`; else the body,
/// trimmed and clipped.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let found = value
            .pointer("/error/message")
            .or_else(|| value.get("error"))
            .or_else(|| value.get("message"))
            .or_else(|| value.get("detail"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|m| !m.is_empty());
        if let Some(message) = found {
            return clip(message, MAX_ERROR_MESSAGE_CHARS * 4);
        }
    }
    let body = body.trim();
    if body.is_empty() {
        "(empty body)".to_string()
    } else {
        clip(body, MAX_ERROR_MESSAGE_CHARS)
    }
}

/// The failure an error object in an answer stands for (`{"message", "type",
/// "code"}`): its status is a numeric `code`, else what its `type` means
/// (Anthropic's error types, OpenAI's `rate_limit_exceeded`...), else `default`.
pub(crate) fn error_event(error: &Value, default: u16) -> Failure {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| error.as_str().map(str::to_string))
        .unwrap_or_else(|| clip(&error.to_string(), MAX_ERROR_MESSAGE_CHARS));
    let code = error.get("code").and_then(|c| {
        c.as_u64()
            .or_else(|| c.as_str().and_then(|s| s.parse::<u64>().ok()))
    });
    let by_code = code
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..=599).contains(c));
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .or_else(|| error.get("code").and_then(Value::as_str))
        .unwrap_or_default();
    let by_type = match kind {
        "invalid_request_error" => Some(400),
        "authentication_error" => Some(401),
        "billing_error" => Some(402),
        "permission_error" => Some(403),
        "not_found_error" => Some(404),
        "request_too_large" => Some(413),
        "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota" => Some(429),
        "api_error" | "server_error" => Some(500),
        "timeout_error" => Some(504),
        "overloaded_error" => Some(529),
        _ => None,
    };
    Failure::status(by_code.or(by_type).unwrap_or(default), message)
}

/// Parses one event's JSON data.
///
/// # Errors
/// [`Failure::NotJson`] quoting the text.
pub(crate) fn parse_data(data: &str) -> Result<Value, Failure> {
    serde_json::from_str(data)
        .map_err(|e| Failure::not_json("an event of the answer", data, 200, e))
}

/// `text`'s first `max` characters, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A tool call being put together from an answer's fragments.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartialCall {
    /// The provider's id (may come late, or never).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments' JSON text so far.
    pub arguments: String,
    /// True once [`StreamEvent::ToolCallStarted`] was reported.
    pub announced: bool,
}

impl PartialCall {
    /// Reports the call's start once its name is known.
    pub(crate) fn announce(&mut self, index: usize, sink: StreamSink<'_>) {
        if !self.announced && !self.name.is_empty() {
            self.announced = true;
            sink(StreamEvent::ToolCallStarted {
                index,
                name: self.name.clone(),
            });
        }
    }

    /// The finished call: `call_<index>` when the provider gave no id, `{}` for
    /// arguments it left empty.
    pub(crate) fn finish(self, index: usize) -> ModelCall {
        let arguments = if self.arguments.trim().is_empty() {
            "{}".to_string()
        } else {
            self.arguments
        };
        ModelCall {
            id: if self.id.is_empty() {
                format!("call_{index}")
            } else {
                self.id
            },
            name: self.name,
            arguments,
        }
    }
}

/// The stop reason of an answer that named none: tool use when it has calls.
pub(crate) fn implied_stop(calls: &[ModelCall]) -> StopReason {
    if calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn error_message_takes_the_providers_own_text() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#),
            "bad model"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            error_message("  <html>bad gateway</html>\n"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(""), "(empty body)");
        assert_eq!(error_message(&"x".repeat(2000)).chars().count(), 501);
    }

    #[test]
    fn a_server_that_cannot_read_the_call_is_recognised() {
        for said in [
            "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 1, column 12: syntax error while parsing value - invalid string: missing closing quote",
            "Failed to parse input at pos 13: <tool_call>{\"name\": \"x\"",
            "The model produced output that does not match the expected Hermes 2 Pro format",
            "invalid tool call arguments",
        ] {
            assert!(is_malformed_call_message(said), "{said}");
        }
        for said in [
            "Internal server error",
            "Loading model",
            "the context is full",
        ] {
            assert!(!is_malformed_call_message(said), "{said}");
        }
    }

    #[test]
    fn error_events_map_types_to_statuses() {
        let e = serde_json::json!({"type": "overloaded_error", "message": "Overloaded"});
        assert_eq!(error_event(&e, 500), Failure::status(529, "Overloaded"));
        let e = serde_json::json!({"message": "upstream", "code": 502});
        assert_eq!(error_event(&e, 500), Failure::status(502, "upstream"));
        let e = serde_json::json!({"message": "odd"});
        assert_eq!(error_event(&e, 500), Failure::status(500, "odd"));
    }
}
