//! The bytes of answers, in the OpenAI and Anthropic wire formats.

use std::fmt;

use bytes::Bytes;
use serde_json::Value;

use super::{Reply, ScriptedCall, ScriptedUsage};
use crate::provider::ProviderKind;

/// The longest text delta, in bytes: deltas are word-sized, as tokens are.
const TEXT_PIECE_BYTES: usize = 16;
/// The size of the argument fragments, in bytes: small, so they end mid-string.
const ARGUMENT_PIECE_BYTES: usize = 7;
/// OpenAI's `system_fingerprint`.
const FINGERPRINT: &str = "fp_5cr1pt3d";
/// Anthropic's thinking-block signature (base64 of "scripted thinking signature").
const THINKING_SIGNATURE: &str = "c2NyaXB0ZWQgdGhpbmtpbmcgc2lnbmF0dXJl";

/// A JSON value whose objects keep their keys in the order written, as the APIs
/// write them (serde_json's `Value` sorts keys unless its `preserve_order` feature
/// is on).
#[derive(Debug, Clone)]
enum J {
    Value(Value),
    Object(Vec<(&'static str, J)>),
    Array(Vec<J>),
    /// JSON text written as it is (a model's arguments, which already are JSON).
    Verbatim(String),
}

const NULL: J = J::Value(Value::Null);

/// `obj!{"key": value, ...}`: an ordered object of values that convert into [`J`].
macro_rules! obj {
    ($($key:literal : $value:expr),* $(,)?) => {
        J::Object(vec![$(($key, J::from($value))),*])
    };
}

impl J {
    fn write(&self, out: &mut String) {
        match self {
            J::Value(value) => out.push_str(&value.to_string()),
            J::Verbatim(text) => out.push_str(text),
            J::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            J::Object(fields) => {
                out.push('{');
                for (i, (key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::from(*key).to_string());
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    /// Sets `key` (appended when new).
    fn set(&mut self, key: &'static str, value: impl Into<J>) {
        if let J::Object(fields) = self {
            let value = value.into();
            match fields.iter_mut().find(|(k, _)| *k == key) {
                Some((_, slot)) => *slot = value,
                None => fields.push((key, value)),
            }
        }
    }
}

impl fmt::Display for J {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write(&mut out);
        f.write_str(&out)
    }
}

macro_rules! j_from {
    ($($t:ty),*) => {$(
        impl From<$t> for J {
            fn from(value: $t) -> J {
                J::Value(Value::from(value))
            }
        }
    )*};
}
j_from!(&str, String, u64, i64, usize, bool);

impl From<&String> for J {
    fn from(value: &String) -> J {
        J::Value(Value::from(value.as_str()))
    }
}

impl From<Value> for J {
    fn from(value: Value) -> J {
        J::Value(value)
    }
}

impl From<Vec<J>> for J {
    fn from(items: Vec<J>) -> J {
        J::Array(items)
    }
}

/// What an answer is written for.
#[derive(Debug, Clone)]
pub(super) struct Context {
    /// The model request's number, from 1.
    pub seq: u64,
    /// The request's `model`.
    pub model: String,
    /// Unix seconds.
    pub created: i64,
    /// Whether the request asked for a stream.
    pub stream: bool,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
    /// The request body's size in bytes, for made-up usage.
    pub request_bytes: usize,
}

/// A rendered answer: the body as the pieces it is naturally written in (one per
/// event when streamed).
#[derive(Debug)]
pub(super) struct Rendered {
    pub status: u16,
    pub content_type: &'static str,
    pub frames: Vec<Bytes>,
}

pub(super) const JSON: &str = "application/json";
pub(super) const EVENT_STREAM: &str = "text/event-stream; charset=utf-8";

/// The answer to a model request that gets `reply` (not an error).
pub(super) fn render(kind: ProviderKind, reply: &Reply, cx: &Context) -> Rendered {
    let usage = reply.usage.unwrap_or_else(|| made_up_usage(reply, cx));
    let frames = match (kind, cx.stream) {
        (ProviderKind::OpenAi, false) => vec![json_bytes(&openai_completion(reply, cx, &usage))],
        (ProviderKind::OpenAi, true) => openai_chunks(reply, cx, &usage),
        (ProviderKind::Anthropic, false) => {
            vec![json_bytes(&anthropic_message(reply, cx, &usage))]
        }
        (ProviderKind::Anthropic, true) => anthropic_events(reply, cx, &usage),
    };
    Rendered {
        status: 200,
        content_type: if cx.stream { EVENT_STREAM } else { JSON },
        frames,
    }
}

/// The provider's error JSON for `status`.
pub(super) fn error_body(
    kind: ProviderKind,
    status: u16,
    message: &str,
    request_id: &str,
) -> Bytes {
    let value = match kind {
        ProviderKind::OpenAi => {
            let (kind, code) = match status {
                401 => ("invalid_request_error", J::from("invalid_api_key")),
                404 => ("invalid_request_error", J::from("model_not_found")),
                429 => ("requests", J::from("rate_limit_exceeded")),
                500.. => ("server_error", NULL),
                _ => ("invalid_request_error", NULL),
            };
            obj! {"error": obj! {"message": message, "type": kind, "param": NULL, "code": code}}
        }
        ProviderKind::Anthropic => {
            let kind = match status {
                401 => "authentication_error",
                402 => "billing_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                504 => "timeout_error",
                529 => "overloaded_error",
                500.. => "api_error",
                _ => "invalid_request_error",
            };
            obj! {
                "type": "error",
                "error": obj! {"type": kind, "message": message},
                "request_id": request_id,
            }
        }
    };
    json_bytes(&value)
}

/// The `GET /v1/models` list.
pub(super) fn models(kind: ProviderKind, model: &str) -> Bytes {
    let value = match kind {
        ProviderKind::OpenAi => obj! {
            "object": "list",
            "data": vec![obj! {
                "id": model,
                "object": "model",
                "created": 1_735_689_600u64,
                "owned_by": "toolbelt",
            }],
        },
        ProviderKind::Anthropic => obj! {
            "data": vec![obj! {
                "type": "model",
                "id": model,
                "display_name": "Scripted model",
                "created_at": "2025-01-01T00:00:00Z",
            }],
            "has_more": false,
            "first_id": model,
            "last_id": model,
        },
    };
    json_bytes(&value)
}

fn json_bytes(value: &J) -> Bytes {
    Bytes::from(value.to_string())
}

fn made_up_usage(reply: &Reply, cx: &Context) -> ScriptedUsage {
    let out = reply.text.len()
        + reply.reasoning.len()
        + reply
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>();
    ScriptedUsage {
        input_tokens: (cx.request_bytes / 4).max(1) as u64,
        output_tokens: (out / 4).max(1) as u64,
        cached_tokens: 0,
        cache_write_tokens: 0,
    }
}

fn call_id(kind: ProviderKind, call: &ScriptedCall, cx: &Context, index: usize) -> String {
    match (&call.id, kind) {
        (Some(id), _) => id.clone(),
        (None, ProviderKind::OpenAi) => format!("call_{}_{index}", cx.seq),
        (None, ProviderKind::Anthropic) => format!("toolu_{}_{index}", cx.seq),
    }
}

/// `text` in word-sized pieces (a word and the spaces after it, at most
/// [`TEXT_PIECE_BYTES`], cut at character boundaries).
fn text_pieces(text: &str) -> Vec<&str> {
    pieces(text, TEXT_PIECE_BYTES, true)
}

/// `arguments` in pieces of [`ARGUMENT_PIECE_BYTES`], at character boundaries.
fn argument_pieces(arguments: &str) -> Vec<&str> {
    pieces(arguments, ARGUMENT_PIECE_BYTES, false)
}

fn pieces(text: &str, max_bytes: usize, at_words: bool) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut after_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if i > start && ((at_words && after_space && !space) || i - start >= max_bytes) {
            out.push(&text[start..i]);
            start = i;
        }
        after_space = space;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn finish_reason(reply: &Reply, calls: &str, done: &str) -> String {
    match &reply.stop {
        Some(stop) => stop.clone(),
        None if !reply.tool_calls.is_empty() => calls.to_string(),
        None => done.to_string(),
    }
}

// ---- OpenAI Chat Completions ----

fn openai_id(cx: &Context) -> String {
    format!("chatcmpl-scripted-{}", cx.seq)
}

fn openai_usage(usage: &ScriptedUsage) -> J {
    obj! {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": obj! {"cached_tokens": usage.cached_tokens, "audio_tokens": 0u64},
        "completion_tokens_details": obj! {
            "reasoning_tokens": 0u64,
            "audio_tokens": 0u64,
            "accepted_prediction_tokens": 0u64,
            "rejected_prediction_tokens": 0u64,
        },
    }
}

fn openai_completion(reply: &Reply, cx: &Context, usage: &ScriptedUsage) -> J {
    let content = if reply.text.is_empty() && !reply.tool_calls.is_empty() {
        NULL
    } else {
        J::from(&reply.text)
    };
    let mut message = obj! {"role": "assistant", "content": content};
    if !reply.reasoning.is_empty() {
        message.set("reasoning_content", &reply.reasoning);
    }
    if !reply.tool_calls.is_empty() {
        let calls: Vec<J> = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                obj! {
                    "id": call_id(ProviderKind::OpenAi, call, cx, i),
                    "type": "function",
                    "function": obj! {"name": &call.name, "arguments": &call.arguments},
                }
            })
            .collect();
        message.set("tool_calls", calls);
    }
    message.set("refusal", NULL);
    message.set("annotations", Vec::<J>::new());
    obj! {
        "id": openai_id(cx),
        "object": "chat.completion",
        "created": cx.created,
        "model": &cx.model,
        "choices": vec![obj! {
            "index": 0u64,
            "message": message,
            "logprobs": NULL,
            "finish_reason": finish_reason(reply, "tool_calls", "stop"),
        }],
        "usage": openai_usage(usage),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }
}

fn openai_chunks(reply: &Reply, cx: &Context, usage: &ScriptedUsage) -> Vec<Bytes> {
    let id = openai_id(cx);
    let chunk = |choices: Vec<J>, usage: J| -> Bytes {
        let mut v = obj! {
            "id": &id,
            "object": "chat.completion.chunk",
            "created": cx.created,
            "model": &cx.model,
            "service_tier": "default",
            "system_fingerprint": FINGERPRINT,
            "choices": choices,
        };
        if cx.include_usage {
            v.set("usage", usage);
        }
        Bytes::from(format!("data: {v}\n\n"))
    };
    let delta = |delta: J, finish: J| -> Bytes {
        chunk(
            vec![obj! {"index": 0u64, "delta": delta, "logprobs": NULL, "finish_reason": finish}],
            NULL,
        )
    };
    let call_start = |i: usize, call: &ScriptedCall| -> Vec<J> {
        vec![obj! {
            "index": i,
            "id": call_id(ProviderKind::OpenAi, call, cx, i),
            "type": "function",
            "function": obj! {"name": &call.name, "arguments": ""},
        }]
    };

    let mut frames = Vec::new();
    let calls_only = reply.text.is_empty() && reply.reasoning.is_empty();
    let mut calls = reply.tool_calls.iter().enumerate().peekable();
    match calls.peek() {
        Some(&(i, call)) if calls_only => {
            // As OpenAI starts an answer that only calls tools.
            frames.push(delta(
                obj! {
                    "role": "assistant",
                    "content": NULL,
                    "tool_calls": call_start(i, call),
                    "refusal": NULL,
                },
                NULL,
            ));
        }
        _ => frames.push(delta(
            obj! {"role": "assistant", "content": "", "refusal": NULL},
            NULL,
        )),
    }
    for piece in text_pieces(&reply.reasoning) {
        frames.push(delta(
            obj! {"content": NULL, "reasoning_content": piece},
            NULL,
        ));
    }
    for piece in text_pieces(&reply.text) {
        frames.push(delta(obj! {"content": piece}, NULL));
    }
    let mut started = calls_only;
    for (i, call) in calls {
        if !started {
            frames.push(delta(obj! {"tool_calls": call_start(i, call)}, NULL));
        }
        started = false;
        for piece in argument_pieces(&call.arguments) {
            frames.push(delta(
                obj! {"tool_calls": vec![obj! {"index": i, "function": obj! {"arguments": piece}}]},
                NULL,
            ));
        }
    }
    frames.push(delta(
        obj! {},
        J::from(finish_reason(reply, "tool_calls", "stop")),
    ));
    if cx.include_usage {
        frames.push(chunk(Vec::new(), openai_usage(usage)));
    }
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    frames
}

// ---- Anthropic Messages ----

fn anthropic_id(cx: &Context) -> String {
    format!("msg_scripted_{}", cx.seq)
}

fn anthropic_usage(usage: &ScriptedUsage, output_tokens: u64) -> J {
    let uncached = usage
        .input_tokens
        .saturating_sub(usage.cached_tokens)
        .saturating_sub(usage.cache_write_tokens);
    obj! {
        "input_tokens": uncached,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }
}

/// A call's `input`: the arguments as they are when they are JSON, `{}` when
/// empty, else the raw text as a JSON string.
fn tool_input(arguments: &str) -> J {
    if arguments.trim().is_empty() {
        return obj! {};
    }
    match serde_json::from_str::<serde::de::IgnoredAny>(arguments) {
        // Compact, keys in the model's order: re-read only to drop whitespace.
        Ok(_) => J::Verbatim(compact_json(arguments)),
        Err(_) => J::from(arguments),
    }
}

/// `text` (valid JSON) without the whitespace between tokens.
fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

fn anthropic_message(reply: &Reply, cx: &Context, usage: &ScriptedUsage) -> J {
    let mut content = Vec::new();
    if !reply.reasoning.is_empty() {
        content.push(obj! {
            "type": "thinking",
            "thinking": &reply.reasoning,
            "signature": THINKING_SIGNATURE,
        });
    }
    if !reply.text.is_empty() {
        content.push(obj! {"type": "text", "text": &reply.text});
    }
    for (i, call) in reply.tool_calls.iter().enumerate() {
        content.push(obj! {
            "type": "tool_use",
            "id": call_id(ProviderKind::Anthropic, call, cx, i),
            "name": &call.name,
            "input": tool_input(&call.arguments),
        });
    }
    obj! {
        "id": anthropic_id(cx),
        "type": "message",
        "role": "assistant",
        "model": &cx.model,
        "content": content,
        "stop_reason": finish_reason(reply, "tool_use", "end_turn"),
        "stop_sequence": NULL,
        "usage": anthropic_usage(usage, usage.output_tokens),
    }
}

fn event(name: &str, data: &J) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn anthropic_events(reply: &Reply, cx: &Context, usage: &ScriptedUsage) -> Vec<Bytes> {
    let mut frames = vec![event(
        "message_start",
        &obj! {
            "type": "message_start",
            "message": obj! {
                "id": anthropic_id(cx),
                "type": "message",
                "role": "assistant",
                "model": &cx.model,
                "content": Vec::<J>::new(),
                "stop_reason": NULL,
                "stop_sequence": NULL,
                "usage": anthropic_usage(usage, 1),
            },
        },
    )];
    let ping = event("ping", &obj! {"type": "ping"});
    let mut index = 0usize;
    let mut block = |frames: &mut Vec<Bytes>, start: J, deltas: Vec<J>| {
        frames.push(event(
            "content_block_start",
            &obj! {"type": "content_block_start", "index": index, "content_block": start},
        ));
        if index == 0 {
            // The API pings once the first block has started.
            frames.push(ping.clone());
        }
        for delta in deltas {
            frames.push(event(
                "content_block_delta",
                &obj! {"type": "content_block_delta", "index": index, "delta": delta},
            ));
        }
        frames.push(event(
            "content_block_stop",
            &obj! {"type": "content_block_stop", "index": index},
        ));
        index += 1;
    };

    if !reply.reasoning.is_empty() {
        let mut deltas: Vec<J> = text_pieces(&reply.reasoning)
            .into_iter()
            .map(|t| obj! {"type": "thinking_delta", "thinking": t})
            .collect();
        deltas.push(obj! {"type": "signature_delta", "signature": THINKING_SIGNATURE});
        block(
            &mut frames,
            obj! {"type": "thinking", "thinking": "", "signature": ""},
            deltas,
        );
    }
    if !reply.text.is_empty() {
        let deltas = text_pieces(&reply.text)
            .into_iter()
            .map(|t| obj! {"type": "text_delta", "text": t})
            .collect();
        block(&mut frames, obj! {"type": "text", "text": ""}, deltas);
    }
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let mut deltas = vec![obj! {"type": "input_json_delta", "partial_json": ""}];
        deltas.extend(
            argument_pieces(&call.arguments)
                .into_iter()
                .map(|p| obj! {"type": "input_json_delta", "partial_json": p}),
        );
        block(
            &mut frames,
            obj! {
                "type": "tool_use",
                "id": call_id(ProviderKind::Anthropic, call, cx, i),
                "name": &call.name,
                "input": obj! {},
            },
            deltas,
        );
    }
    if index == 0 {
        frames.push(ping);
    }
    frames.push(event(
        "message_delta",
        &obj! {
            "type": "message_delta",
            "delta": obj! {
                "stop_reason": finish_reason(reply, "tool_use", "end_turn"),
                "stop_sequence": NULL,
            },
            "usage": obj! {"output_tokens": usage.output_tokens},
        },
    ));
    frames.push(event("message_stop", &obj! {"type": "message_stop"}));
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_rejoin_and_split_mid_string() {
        let text = "héllo wörld, this is a long-ish sentence ✓✓✓✓✓✓✓✓";
        assert_eq!(text_pieces(text).concat(), text);
        assert_eq!(text_pieces(text)[0], "héllo ");
        let args = r#"{"path": "src/main.rs", "line": 1}"#;
        let parts = argument_pieces(args);
        assert_eq!(parts.concat(), args);
        assert!(parts.len() >= 4);
        assert!(parts.iter().all(|p| p.len() <= ARGUMENT_PIECE_BYTES));
        assert!(pieces("", 4, true).is_empty());
    }

    #[test]
    fn objects_keep_their_order_and_arguments_stay_verbatim() {
        let v = obj! {"z": 1u64, "a": obj! {"y": NULL, "b": "\"q\""}, "m": Vec::<J>::new()};
        assert_eq!(
            v.to_string(),
            r#"{"z":1,"a":{"y":null,"b":"\"q\""},"m":[]}"#
        );
        let input = tool_input("{\n  \"path\": \"a b.txt\",\n  \"all\": true }");
        assert_eq!(input.to_string(), r#"{"path":"a b.txt","all":true}"#);
        assert_eq!(tool_input("{\"broken").to_string(), r#""{\"broken""#);
        assert_eq!(tool_input("").to_string(), "{}");
    }
}
