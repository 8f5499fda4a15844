//! OpenAI-compatible Chat Completions: `POST {base_url}/chat/completions`, streamed.
//!
//! The base URL includes `/v1`, as in the OpenAI SDKs (`https://api.openai.com/v1`,
//! `http://localhost:8000/v1` for vLLM, `http://localhost:11434/v1` for Ollama).
//! The request asks for a stream with usage (`stream_options.include_usage`); the
//! answer's `delta.content`, `delta.reasoning_content` / `delta.reasoning` and
//! `delta.tool_calls` fragments are put together per call `index`. A server that
//! ignores `stream` and answers one `chat.completion` object is read the same way.
//!
//! A stream that ends with neither `data: [DONE]` nor a `finish_reason` broke off:
//! it is retried, and never returned as an answer.
//!
//! The configured `temperature` and `seed` are sent when set. A
//! [`ReplyConstraint`] goes out as the servers read it: `tool_choice: "required"`
//! (OpenAI, vLLM >= 0.8.3, llama.cpp with `--jinja`; Ollama ignores it), llama.cpp's
//! top-level `grammar`, or `response_format: {"type": "json_schema", "json_schema":
//! {"schema": ...}}` (the nested form: llama.cpp reads the schema only there for
//! that type, vLLM and Ollama too).

use std::collections::HashMap;

use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;

use super::decode::{
    Decoder, Failure, Flow, PartialCall, Wire, error_event, implied_stop, parse_data,
};
use super::http::{Http, RequestBody, join_url, parse_base_url};
use super::{
    ModelRequest, ModelResponse, Provider, ProviderConfig, ProviderError, ProviderKind,
    ReplyConstraint, StopReason, StreamEvent, StreamSink, temperature_json,
};
use crate::message::{Message, Usage};

/// A model behind an OpenAI-compatible Chat Completions API.
#[derive(Debug)]
pub struct OpenAiProvider {
    config: ProviderConfig,
    http: Http,
}

impl OpenAiProvider {
    /// A provider for `config` (its `kind` is taken to be [`ProviderKind::OpenAi`]).
    ///
    /// # Errors
    /// [`ProviderError::Config`] when the base URL is not an http(s) URL or the key
    /// cannot be sent as a header; [`ProviderError::BaseUrl`] when the base URL
    /// cannot be parsed; [`ProviderError::Tls`] or [`ProviderError::Client`] when
    /// TLS or the client cannot be set up.
    ///
    /// # Security
    /// The key is sent only as `Authorization: Bearer`, and never appears in an
    /// error or a log.
    pub fn new(mut config: ProviderConfig) -> Result<OpenAiProvider, ProviderError> {
        config.kind = ProviderKind::OpenAi;
        let base = parse_base_url(config.kind, &config.base_url)?;
        let url = join_url(&base, "/chat/completions");
        let http = Http::new(&config, url, HeaderMap::new(), AUTHORIZATION, "Bearer ")?;
        Ok(OpenAiProvider { config, http })
    }

    /// The request body for `request`.
    fn body<'a>(&self, request: &'a ModelRequest, tools: Option<&'a RawValue>) -> RequestBody<'a> {
        let mut fields = json!({
            "model": self.config.model,
            "messages": wire_messages(&request.system, &request.messages),
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": request.max_tokens.unwrap_or(self.config.max_tokens),
        });
        if !request.stop.is_empty() {
            fields["stop"] = json!(request.stop);
        }
        if let Some(temperature) = self.config.temperature.and_then(temperature_json) {
            fields["temperature"] = temperature;
        }
        if let Some(seed) = self.config.seed {
            fields["seed"] = json!(seed);
        }
        match &request.constraint {
            Some(ReplyConstraint::ToolRequired) if tools.is_some() => {
                fields["tool_choice"] = json!("required");
            }
            Some(ReplyConstraint::ToolRequired) | None => {}
            Some(ReplyConstraint::Grammar(grammar)) => fields["grammar"] = json!(&**grammar),
            Some(ReplyConstraint::JsonSchema(schema)) => {
                fields["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {"name": "reply", "strict": true, "schema": &**schema},
                });
            }
        }
        RequestBody { fields, tools }
    }
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::OpenAi
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
            self.http.run(&OpenAiWire, &body, events, cancel).await
        })
    }
}

/// The conversation as Chat Completions messages: the system prompt first, one
/// `role: tool` message per tool result.
fn wire_messages(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message {
            Message::User { content } => out.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut m = Map::new();
                m.insert("role".into(), "assistant".into());
                let text = if content.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    Value::String(content.clone())
                };
                m.insert("content".into(), text);
                if !tool_calls.is_empty() {
                    let calls = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(m));
            }
            Message::Tool { results } => {
                for r in results {
                    out.push(json!({
                        "role": "tool",
                        "tool_call_id": r.call_id,
                        "content": r.content,
                    }));
                }
            }
        }
    }
    out
}

/// The Chat Completions answer format.
struct OpenAiWire;

impl Wire for OpenAiWire {
    type Decoder = OpenAiDecoder;

    fn decoder(&self) -> OpenAiDecoder {
        OpenAiDecoder::default()
    }

    fn parse_json(&self, body: &Value, sink: StreamSink<'_>) -> Result<ModelResponse, Failure> {
        let mut decoder = OpenAiDecoder::default();
        let choice = body
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .ok_or_else(|| {
                Failure::Malformed("the answer has no `choices` (not a chat completion)".into())
            })?;
        if let Some(message) = choice.get("message") {
            decoder.delta(message, true, sink);
        }
        decoder.choice_end(choice);
        decoder.usage(body);
        decoder.finished = true;
        decoder.finish()
    }
}

/// Puts a streamed Chat Completions answer together.
#[derive(Debug, Default)]
struct OpenAiDecoder {
    content: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    /// The position in `calls` of each wire `index`.
    positions: HashMap<u64, usize>,
    finish_reason: Option<String>,
    usage: Usage,
    /// `[DONE]` came.
    finished: bool,
}

impl OpenAiDecoder {
    /// Adds a `delta` (or, in a plain answer, the `message`). `whole` marks a
    /// plain answer, whose calls carry no `index`: each is a call of its own.
    fn delta(&mut self, delta: &Value, whole: bool, sink: StreamSink<'_>) {
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.content.push_str(text);
            sink(StreamEvent::TextDelta { text: text.into() });
        }
        let reasoning = delta
            .get("reasoning_content")
            .and_then(Value::as_str)
            .or_else(|| delta.get("reasoning").and_then(Value::as_str));
        if let Some(text) = reasoning
            && !text.is_empty()
        {
            self.reasoning.push_str(text);
            sink(StreamEvent::ReasoningDelta { text: text.into() });
        }
        let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else {
            return;
        };
        for call in calls {
            let position = if whole {
                self.calls.push(PartialCall::default());
                self.calls.len() - 1
            } else {
                self.position(call)
            };
            let Some(partial) = self.calls.get_mut(position) else {
                continue;
            };
            if let Some(id) = call.get("id").and_then(Value::as_str)
                && partial.id.is_empty()
            {
                partial.id = id.to_string();
            }
            let function = call.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str)
                && partial.name.is_empty()
            {
                partial.name = name.to_string();
            }
            match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(fragment)) => partial.arguments.push_str(fragment),
                // Some servers send the arguments as an object.
                Some(v @ Value::Object(_)) => partial.arguments.push_str(&v.to_string()),
                _ => {}
            }
            partial.announce(position, sink);
        }
    }

    /// The position of the call a streamed fragment belongs to: by its `index`;
    /// without one, a new call when it brings a new id, else the last call.
    fn position(&mut self, call: &Value) -> usize {
        if let Some(index) = call.get("index").and_then(Value::as_u64) {
            if let Some(&p) = self.positions.get(&index) {
                return p;
            }
            self.calls.push(PartialCall::default());
            let p = self.calls.len() - 1;
            self.positions.insert(index, p);
            return p;
        }
        let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
        match self.calls.last() {
            Some(last) if id.is_empty() || last.id == id => self.calls.len() - 1,
            _ => {
                self.calls.push(PartialCall::default());
                self.calls.len() - 1
            }
        }
    }

    fn choice_end(&mut self, choice: &Value) {
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str)
            && !reason.is_empty()
        {
            self.finish_reason = Some(reason.to_string());
        }
    }

    fn usage(&mut self, chunk: &Value) {
        let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
        self.usage = Usage {
            input_tokens: n(usage.get("prompt_tokens")),
            output_tokens: n(usage.get("completion_tokens")),
            cached_tokens: n(usage
                .pointer("/prompt_tokens_details/cached_tokens")
                .or_else(|| usage.get("prompt_cache_hit_tokens"))),
            cache_write_tokens: 0,
        };
    }
}

impl Decoder for OpenAiDecoder {
    fn event(&mut self, _event: &str, data: &str, sink: StreamSink<'_>) -> Result<Flow, Failure> {
        let data = data.trim();
        if data == "[DONE]" {
            self.finished = true;
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let chunk = parse_data(data)?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(error_event(error, 500));
        }
        if let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        {
            if let Some(delta) = choice.get("delta") {
                self.delta(delta, false, sink);
            }
            self.choice_end(choice);
        }
        self.usage(&chunk);
        Ok(Flow::Continue)
    }

    fn finish(self) -> Result<ModelResponse, Failure> {
        if !self.finished && self.finish_reason.is_none() {
            return Err(Failure::Incomplete(
                "no `data: [DONE]` and no finish_reason".into(),
            ));
        }
        let tool_calls: Vec<_> = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| c.finish(i))
            .collect();
        let stop_reason = match self.finish_reason.as_deref() {
            Some("stop") => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
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
