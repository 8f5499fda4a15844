//! A scripted model provider on 127.0.0.1, for tests and benchmarks (feature `testing`).
//!
//! [`ScriptedServer`] is a real HTTP/1.1 server (keep-alive) that answers model
//! requests from a [`Script`]: one [`Reply`] per request, in order, written in the
//! wire format the script names, byte for byte as the real APIs write it, streamed
//! (server-sent events) when the request asks `"stream": true` and one JSON object
//! otherwise:
//!
//! - OpenAI Chat Completions: `POST /v1/chat/completions` (also `/chat/completions`);
//!   `chat.completion` objects, or `chat.completion.chunk` events ending in
//!   `data: [DONE]`, with a usage chunk when `stream_options.include_usage` is true.
//! - Anthropic Messages: `POST /v1/messages`; `message` objects, or the
//!   `message_start` ... `message_stop` events.
//! - Both: `GET /v1/models` (one model, `scripted-model`), and errors in the
//!   provider's own error JSON with `retry-after` and request-id headers.
//!
//! A reply can also misbehave the way networks do: arrive in small writes that split
//! events anywhere ([`Reply::chunk_bytes`]), break off mid-answer
//! ([`Reply::cut_after_bytes`]), or come late ([`Reply::delay_ms`], [`Reply::body_delay_ms`]). Every model
//! request is recorded ([`ScriptedServer::requests`]) with its headers and JSON body;
//! `GET /_scripted/requests` returns the same as JSON for programs in other languages.
//!
//! [`gbnf`] checks llama.cpp GBNF grammars: whether one parses as llama.cpp would
//! parse it, and whether a string is in its language.
//!
//! Ids are predictable: the `n`th model request (from 1) is answered as
//! `chatcmpl-scripted-n` / `msg_scripted_n`, and its calls without a scripted id get
//! `call_n_i` / `toolu_n_i` (`i` from 0).
//!
//! ```
//! use toolbelt_agent::ProviderKind;
//! use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
//!
//! let server = ScriptedServer::start(Script::new(
//!     ProviderKind::OpenAi,
//!     vec![
//!         Reply::call("read_file", r#"{"path": "README.md"}"#),
//!         Reply::text("It is a tool layer.").with_usage(120, 8),
//!     ],
//! ))?;
//! assert!(server.base_url().ends_with("/v1"));
//! assert_eq!(server.remaining(), 2);
//! # Ok::<(), std::io::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::provider::ProviderKind;

pub mod gbnf;
mod server;
mod wire;

pub use server::ScriptedServer;

/// What the server answers, request after request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The wire format served: `"openai"` or `"anthropic"`.
    pub kind: ProviderKind,
    /// One reply per model request, in order.
    #[serde(default)]
    pub replies: Vec<Reply>,
    /// The answer once the replies have run out (default: HTTP 500, "the script has
    /// no more replies").
    #[serde(default)]
    pub when_done: Option<Reply>,
    /// Which requests use up a reply.
    #[serde(default)]
    pub consume: Consume,
    /// The answer to requests that do not use up a reply under
    /// [`Consume::WithTools`] (default: the text `ok`).
    #[serde(default)]
    pub side_reply: Option<Reply>,
    /// Conversations with replies of their own: a request whose first user message
    /// contains a route's `when` takes the route's next reply instead of the main
    /// list's (the first matching route; once it has run out, `when_done`). Several
    /// agents that talk to one server at once (subagents) each follow their own
    /// script this way.
    #[serde(default)]
    pub routes: Vec<ScriptRoute>,
    /// What the server says about itself, as the local servers do: served as
    /// llama.cpp's `GET /props` and Ollama's `POST /api/show` (the same object;
    /// each reader takes its own keys). None: both are not found.
    #[serde(default)]
    pub server_info: Option<serde_json::Value>,
}

/// Replies for the conversations whose first user message contains `when`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRoute {
    /// Text the first user message contains.
    pub when: String,
    /// The replies, in order.
    pub replies: Vec<Reply>,
}

impl Script {
    /// A script of `replies` in the wire format `kind`.
    pub fn new(kind: ProviderKind, replies: Vec<Reply>) -> Script {
        Script {
            kind,
            replies,
            when_done: None,
            consume: Consume::Always,
            side_reply: None,
            routes: Vec::new(),
            server_info: None,
        }
    }

    /// Serves `info` as `GET /props` and `POST /api/show` ([`Script::server_info`]).
    pub fn with_server_info(mut self, info: serde_json::Value) -> Script {
        self.server_info = Some(info);
        self
    }

    /// Answers the conversations whose first user message contains `when` with
    /// `replies` (see [`Script::routes`]).
    pub fn route(mut self, when: impl Into<String>, replies: Vec<Reply>) -> Script {
        self.routes.push(ScriptRoute {
            when: when.into(),
            replies,
        });
        self
    }

    /// Only requests with tools use up replies; the others get `side_reply`.
    pub fn consume_with_tools(mut self, side_reply: Reply) -> Script {
        self.consume = Consume::WithTools;
        self.side_reply = Some(side_reply);
        self
    }

    /// The answer once the replies have run out.
    pub fn when_done(mut self, reply: Reply) -> Script {
        self.when_done = Some(reply);
        self
    }
}

/// Which requests use up a reply of the script.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consume {
    /// Every model request.
    #[default]
    Always,
    /// Only requests with a non-empty `tools` array; the others (a peer agent's side
    /// requests, such as title generation) get [`Script::side_reply`].
    WithTools,
}

/// One answer of the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// The text of the answer.
    #[serde(default)]
    pub text: String,
    /// Reasoning shown before the answer: OpenAI-compatible `reasoning_content`
    /// (as DeepSeek sends it), Anthropic a `thinking` block.
    #[serde(default)]
    pub reasoning: String,
    /// The tool calls, in order (parallel calls when more than one).
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// The token counts reported (default: small counts derived from the sizes of
    /// the request and the reply).
    #[serde(default)]
    pub usage: Option<ScriptedUsage>,
    /// The raw `finish_reason` / `stop_reason` (default: `stop` / `end_turn`, or
    /// `tool_calls` / `tool_use` when there are calls), e.g. `length`, `max_tokens`.
    #[serde(default)]
    pub stop: Option<String>,
    /// Answer this error instead.
    #[serde(default)]
    pub error: Option<ScriptedError>,
    /// Write the body in pieces of this many bytes, flushed with a pause of about a
    /// millisecond between them, so events split across reads anywhere (inside
    /// UTF-8 characters too).
    #[serde(default)]
    pub chunk_bytes: Option<usize>,
    /// Close the connection after this many bytes of the body: an answer that stops
    /// in the middle.
    #[serde(default)]
    pub cut_after_bytes: Option<usize>,
    /// Wait this long before answering, in milliseconds.
    #[serde(default)]
    pub delay_ms: u64,
    /// Send the headers at once, then wait this long before the body's first
    /// byte, in milliseconds: a local server (llama.cpp) reading a long prompt.
    #[serde(default)]
    pub body_delay_ms: u64,
}

impl Reply {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: text.into(),
            ..Reply::default()
        }
    }

    /// One tool call; `arguments` is the JSON text as the model writes it (it may
    /// be broken).
    pub fn call(name: impl Into<String>, arguments: impl Into<String>) -> Reply {
        Reply::calls([(name, arguments)])
    }

    /// Parallel tool calls: `(name, arguments)` pairs.
    pub fn calls<N: Into<String>, A: Into<String>>(
        calls: impl IntoIterator<Item = (N, A)>,
    ) -> Reply {
        Reply {
            tool_calls: calls
                .into_iter()
                .map(|(name, arguments)| ScriptedCall {
                    id: None,
                    name: name.into(),
                    arguments: arguments.into(),
                })
                .collect(),
            ..Reply::default()
        }
    }

    /// An error answer: HTTP `status` with the provider's error JSON carrying
    /// `message`, and a `retry-after` header when given.
    pub fn error(status: u16, retry_after: Option<&str>, message: impl Into<String>) -> Reply {
        Reply {
            error: Some(ScriptedError {
                status,
                retry_after: retry_after.map(str::to_string),
                message: message.into(),
            }),
            ..Reply::default()
        }
    }

    /// Reports these token counts (nothing cached).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Reply {
        self.usage = Some(ScriptedUsage {
            input_tokens,
            output_tokens,
            ..ScriptedUsage::default()
        });
        self
    }

    /// Sets the text.
    pub fn with_text(mut self, text: impl Into<String>) -> Reply {
        self.text = text.into();
        self
    }

    /// Sets the reasoning.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Reply {
        self.reasoning = reasoning.into();
        self
    }

    /// Sets the raw stop reason.
    pub fn with_stop(mut self, stop: impl Into<String>) -> Reply {
        self.stop = Some(stop.into());
        self
    }

    /// Writes the body in pieces of `bytes` ([`Reply::chunk_bytes`]).
    pub fn chunked(mut self, bytes: usize) -> Reply {
        self.chunk_bytes = Some(bytes);
        self
    }

    /// Breaks the connection after `bytes` of the body ([`Reply::cut_after_bytes`]).
    pub fn cut_after(mut self, bytes: usize) -> Reply {
        self.cut_after_bytes = Some(bytes);
        self
    }

    /// Waits `ms` milliseconds before answering.
    pub fn delayed(mut self, ms: u64) -> Reply {
        self.delay_ms = ms;
        self
    }

    /// Sends the headers at once and the body after `ms` milliseconds
    /// ([`Reply::body_delay_ms`]).
    pub fn body_delayed(mut self, ms: u64) -> Reply {
        self.body_delay_ms = ms;
        self
    }
}

/// A tool call the model makes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The call's id (default: `call_n_i` / `toolu_n_i`).
    #[serde(default)]
    pub id: Option<String>,
    /// The tool name.
    pub name: String,
    /// The arguments: the raw JSON text as the model writes it; it may be broken.
    /// Anthropic's non-streamed `input` carries it as a JSON value when it parses,
    /// else as a string (streamed, the raw text goes out as `partial_json` pieces).
    #[serde(default)]
    pub arguments: String,
}

/// Token counts a reply reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    /// All input tokens, cached ones included (OpenAI `prompt_tokens`; Anthropic
    /// `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the cache (OpenAI
    /// `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
    /// Input tokens written to the cache (Anthropic `cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

/// An error answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// The HTTP status: 429, 500, 529, 400 ...
    pub status: u16,
    /// The `retry-after` header, as sent (`"2"`, `"0.05"`).
    #[serde(default)]
    pub retry_after: Option<String>,
    /// The error's message.
    #[serde(default)]
    pub message: String,
}

/// A model request the server received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// `POST`.
    pub method: String,
    /// The path, without the query: `/v1/chat/completions`.
    pub path: String,
    /// The headers in arrival order, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The JSON body; a body that is not JSON as a string (it was answered 400).
    pub body: serde_json::Value,
}

impl Recorded {
    /// The first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}
