//! Anthropic Messages: `POST {base_url}/v1/messages`, streamed.
//!
//! The base URL does not include `/v1`, as in the Anthropic SDKs
//! (`https://api.anthropic.com`); one that does is not doubled. The conversation is
//! written as alternating `user` / `assistant` messages of content blocks: tool
//! results become a `user` message of `tool_result` blocks, and consecutive messages
//! of one role are merged. The answer's events (`message_start`,
//! `content_block_*`, `message_delta`, `message_stop`) are put together per block
//! index; a stream without `message_stop` broke off, is retried, and is never
//! returned as an answer. A plain JSON `message` is read the same way.
//!
//! The configured `temperature` is sent when set (the API takes no seed); a
//! [`ReplyConstraint::ToolRequired`] with tools becomes `tool_choice: {"type":
//! "any"}`, and the other constraints have no field here.
//!
//! # Tool call arguments
//! [`ModelCall::arguments`](crate::ModelCall) is text, Anthropic's `tool_use.input`
//! an object. The text is parsed (loosely, as the registry does, see
//! [`parse_loose_json`]); when it is not an object, it is sent as
//! `{"arguments": <the text>}`, the wrapper the registry unwraps
//! ([`toolbelt_core::repair_arguments`]), so the model sees what it wrote instead of
//! an empty `{}`. Empty text is `{}`.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_wire::calls::parse_loose_json;

use super::decode::{
    Decoder, Failure, Flow, PartialCall, Wire, error_event, implied_stop, parse_data,
};
use super::http::{Http, RequestBody, join_url, parse_base_url};
use super::{
    ModelRequest, ModelResponse, Provider, ProviderConfig, ProviderError, ProviderKind,
    ReplyConstraint, StopReason, StreamEvent, StreamSink, temperature_json,
};
use crate::message::{Message, Usage};

/// The `anthropic-version` header sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The text of a user message put first when a conversation would start with the
/// assistant (the API requires a user message first).
const LEADING_USER_TEXT: &str = "(continued)";

/// A model behind the Anthropic Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    config: ProviderConfig,
    http: Http,
}

impl AnthropicProvider {
    /// A provider for `config` (its `kind` is taken to be
    /// [`ProviderKind::Anthropic`]).
    ///
    /// # Errors
    /// [`ProviderError::Config`] when the base URL is not an http(s) URL or the key
    /// cannot be sent as a header; [`ProviderError::BaseUrl`] when the base URL
    /// cannot be parsed; [`ProviderError::Tls`] or [`ProviderError::Client`] when
    /// TLS or the client cannot be set up.
    ///
    /// # Security
    /// The key is sent only as `x-api-key`, and never appears in an error or a log.
    pub fn new(mut config: ProviderConfig) -> Result<AnthropicProvider, ProviderError> {
        config.kind = ProviderKind::Anthropic;
        let base = parse_base_url(config.kind, &config.base_url)?;
        let path = if base.path().trim_end_matches('/').ends_with("/v1") {
            "/messages"
        } else {
            "/v1/messages"
        };
        let url = join_url(&base, path);
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        let http = Http::new(
            &config,
            url,
            headers,
            HeaderName::from_static("x-api-key"),
            "",
        )?;
        Ok(AnthropicProvider { config, http })
    }

    /// The request body for `request`.
    fn body<'a>(&self, request: &'a ModelRequest, tools: Option<&'a RawValue>) -> RequestBody<'a> {
        let mut body = Map::new();
        body.insert("model".into(), self.config.model.clone().into());
        body.insert(
            "max_tokens".into(),
            request.max_tokens.unwrap_or(self.config.max_tokens).into(),
        );
        if !request.system.is_empty() {
            body.insert("system".into(), request.system.clone().into());
        }
        body.insert("messages".into(), wire_messages(&request.messages).into());
        body.insert("stream".into(), true.into());
        if !request.stop.is_empty() {
            body.insert("stop_sequences".into(), request.stop.clone().into());
        }
        if let Some(temperature) = self.config.temperature.and_then(temperature_json) {
            body.insert("temperature".into(), temperature);
        }
        // The Messages API takes no seed; a grammar or a reply schema has no field.
        if request.constraint == Some(ReplyConstraint::ToolRequired) && tools.is_some() {
            body.insert("tool_choice".into(), json!({"type": "any"}));
        }
        RequestBody {
            fields: Value::Object(body),
            tools,
        }
    }
}

impl Provider for AnthropicProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: StreamSink<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let tools = self.http.serialized_tools(request.tools.as_ref())?;
            let body = self.body(request, tools.as_deref());
            self.http.run(&AnthropicWire, &body, events, cancel).await
        })
    }
}

/// The conversation as Messages API messages: blocks per role, consecutive roles
/// merged, `tool_result` blocks first in a user message, a user message first.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::User { content } => ("user", text_block(content).into_iter().collect()),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks: Vec<Value> = text_block(content).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|c| {
                    json!({
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": input_object(&c.arguments),
                    })
                }));
                ("assistant", blocks)
            }
            Message::Tool { results } => {
                let blocks = results
                    .iter()
                    .map(|r| {
                        let mut b = json!({
                            "type": "tool_result",
                            "tool_use_id": r.call_id,
                            "content": r.content,
                        });
                        if r.is_error
                            && let Some(map) = b.as_object_mut()
                        {
                            map.insert("is_error".into(), true.into());
                        }
                        b
                    })
                    .collect();
                ("user", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, merged)) if *last == role => merged.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    if turns.first().is_some_and(|(role, _)| *role == "assistant") {
        turns.insert(
            0,
            (
                "user",
                vec![json!({"type": "text", "text": LEADING_USER_TEXT})],
            ),
        );
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                // Stable: results keep their order, ahead of the text.
                blocks
                    .sort_by_key(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"));
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// A text block, none for empty text (the API refuses empty text blocks).
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// A call's arguments as the `input` object (see the module documentation).
fn input_object(arguments: &str) -> Value {
    let text = arguments.trim();
    if text.is_empty() {
        return json!({});
    }
    match parse_loose_json(text) {
        Ok((value @ Value::Object(_), _)) => value,
        Ok((Value::String(inner), _)) => json!({"arguments": inner}),
        _ => json!({"arguments": arguments}),
    }
}

/// The Messages answer format.
struct AnthropicWire;

impl Wire for AnthropicWire {
    type Decoder = AnthropicDecoder;

    fn decoder(&self) -> AnthropicDecoder {
        AnthropicDecoder::default()
    }

    fn parse_json(&self, body: &Value, sink: StreamSink<'_>) -> Result<ModelResponse, Failure> {
        let blocks = body
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                Failure::Malformed("the answer has no `content` (not a message)".into())
            })?;
        let mut decoder = AnthropicDecoder::default();
        if let Some(usage) = body.get("usage") {
            decoder.usage(usage);
        }
        for (index, block) in blocks.iter().enumerate() {
            let index = index as u64;
            decoder.block_start(index, block, sink);
            if let Some(Value::Object(input)) = block.get("input")
                && let Some(Block::ToolUse(position)) = decoder.blocks.get(&index)
                && let Some(call) = decoder.calls.get_mut(*position)
                && !input.is_empty()
            {
                call.arguments = Value::Object(input.clone()).to_string();
            }
        }
        if let Some(reason) = body.get("stop_reason").and_then(Value::as_str) {
            decoder.stop_reason = Some(reason.to_string());
        }
        decoder.stopped = true;
        decoder.finish()
    }
}

/// What a content block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
    /// A tool call: its position among the answer's calls.
    ToolUse(usize),
    /// Anything else (`redacted_thinking`, server tools): ignored.
    Other,
}

/// Puts a streamed Messages answer together.
#[derive(Debug, Default)]
struct AnthropicDecoder {
    blocks: BTreeMap<u64, Block>,
    content: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    stop_reason: Option<String>,
    usage: Usage,
    /// `message_stop` came.
    stopped: bool,
}

impl AnthropicDecoder {
    fn block_start(&mut self, index: u64, block: &Value, sink: StreamSink<'_>) {
        let kind = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                self.text(block.get("text"), sink);
                Block::Text
            }
            Some("thinking") => {
                self.thinking(block.get("thinking"), sink);
                Block::Thinking
            }
            Some("tool_use") => {
                let str_of = |k: &str| {
                    block
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                let position = self.calls.len();
                let mut call = PartialCall {
                    id: str_of("id"),
                    name: str_of("name"),
                    ..PartialCall::default()
                };
                call.announce(position, sink);
                self.calls.push(call);
                Block::ToolUse(position)
            }
            _ => Block::Other,
        };
        self.blocks.insert(index, kind);
    }

    fn text(&mut self, text: Option<&Value>, sink: StreamSink<'_>) {
        if let Some(text) = text.and_then(Value::as_str)
            && !text.is_empty()
        {
            self.content.push_str(text);
            sink(StreamEvent::TextDelta { text: text.into() });
        }
    }

    fn thinking(&mut self, text: Option<&Value>, sink: StreamSink<'_>) {
        if let Some(text) = text.and_then(Value::as_str)
            && !text.is_empty()
        {
            self.reasoning.push_str(text);
            sink(StreamEvent::ReasoningDelta { text: text.into() });
        }
    }

    /// Takes the counts `usage` has (`message_start` has them all,
    /// `message_delta` the output and, lately, the input again).
    fn usage(&mut self, usage: &Value) {
        let n = |k: &str| usage.get(k).and_then(Value::as_u64);
        let input = n("input_tokens");
        let read = n("cache_read_input_tokens");
        let write = n("cache_creation_input_tokens");
        if input.is_some() || read.is_some() || write.is_some() {
            let (input, read, write) = (input.unwrap_or(0), read.unwrap_or(0), write.unwrap_or(0));
            self.usage.input_tokens = input + read + write;
            self.usage.cached_tokens = read;
            self.usage.cache_write_tokens = write;
        }
        if let Some(output) = n("output_tokens") {
            self.usage.output_tokens = output;
        }
    }
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, event: &str, data: &str, sink: StreamSink<'_>) -> Result<Flow, Failure> {
        if event == "ping" || data.trim().is_empty() {
            return Ok(Flow::Continue);
        }
        let value = parse_data(data)?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or(event);
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(usage) = value.pointer("/message/usage") {
                    self.usage(usage);
                }
            }
            "content_block_start" => {
                if let Some(block) = value.get("content_block") {
                    self.block_start(index, block, sink);
                }
            }
            "content_block_delta" => {
                let Some(delta) = value.get("delta") else {
                    return Ok(Flow::Continue);
                };
                match (
                    delta.get("type").and_then(Value::as_str),
                    self.blocks.get(&index),
                ) {
                    (Some("text_delta"), _) => self.text(delta.get("text"), sink),
                    (Some("thinking_delta"), _) => self.thinking(delta.get("thinking"), sink),
                    (Some("input_json_delta"), Some(Block::ToolUse(position))) => {
                        if let (Some(call), Some(fragment)) = (
                            self.calls.get_mut(*position),
                            delta.get("partial_json").and_then(Value::as_str),
                        ) {
                            call.arguments.push_str(fragment);
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = value.get("usage") {
                    self.usage(usage);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Flow::Done);
            }
            "error" => {
                let error = value.get("error").unwrap_or(&value);
                return Err(error_event(error, 500));
            }
            // content_block_stop, ping, and events added later.
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Result<ModelResponse, Failure> {
        if !self.stopped {
            return Err(Failure::Incomplete("no `message_stop` event".into()));
        }
        let tool_calls: Vec<_> = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| c.finish(i))
            .collect();
        let stop_reason = match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_string()),
            None => implied_stop(&tool_calls),
        };
        Ok(ModelResponse {
            content: self.content,
            reasoning: self.reasoning,
            tool_calls,
            stop_reason,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn arguments_become_an_input_object() {
        assert_eq!(input_object(r#"{"path":"a"}"#), json!({"path": "a"}));
        assert_eq!(input_object(""), json!({}));
        assert_eq!(input_object("{'path': 'a'}"), json!({"path": "a"}));
        assert_eq!(input_object("[1, 2]"), json!({"arguments": "[1, 2]"}));
        assert_eq!(input_object("{broken"), json!({"arguments": "{broken"}));
    }

    #[test]
    fn a_conversation_starts_with_the_user() {
        let wire = wire_messages(&[Message::assistant("hello"), Message::user("hi")]);
        assert_eq!(
            wire,
            vec![
                json!({"role": "user", "content": [{"type": "text", "text": LEADING_USER_TEXT}]}),
                json!({"role": "assistant", "content": [{"type": "text", "text": "hello"}]}),
                json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
            ]
        );
    }
}
