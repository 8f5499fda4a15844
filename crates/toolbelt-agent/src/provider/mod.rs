//! Model providers: one trait, one file per wire format.
//!
//! - [`openai`]: OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`,
//!   streamed): OpenAI, vLLM, llama.cpp server, Ollama, DeepSeek, Kimi, Qwen, OpenRouter.
//! - [`anthropic`]: Anthropic Messages (`POST {base_url}/v1/messages`, streamed).
//!
//! A provider streams the answer ([`StreamEvent`]s as they arrive) and returns it
//! whole ([`ModelResponse`]); it retries 429, 5xx and dropped connections with
//! backoff, honouring `Retry-After` ([`RetryPolicy`]), and never returns a stream
//! that stopped mid-answer as an answer. A server that could not read the model's
//! own tool call is answered at once ([`ProviderError::MalformedCall`]): asking again
//! would bring the same call back.
//!
//! A request may hold the reply to a shape ([`ReplyConstraint`]: a required tool
//! call, a GBNF grammar, a JSON Schema), which keeps a small local model's replies
//! readable; [`probe_server`] and [`probe_tool_choice`] tell which of them a server
//! honours.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_wire::export::Format;

use crate::message::{Message, ModelCall, Usage};

pub mod anthropic;
mod decode;
mod http;
pub mod openai;
mod probe;

pub use probe::{ServerInfo, probe_server, probe_tool_choice};

/// The wire formats toolbelt speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    /// `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    /// Parses `openai` or `anthropic`.
    pub fn parse(s: &str) -> Option<ProviderKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }

    /// The base URL used when none is configured (as in the official SDKs: OpenAI's
    /// includes `/v1`, Anthropic's does not).
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The environment variable holding the API key by default.
    pub fn default_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The environment variable holding the base URL.
    pub fn base_url_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_BASE_URL",
            ProviderKind::Anthropic => "ANTHROPIC_BASE_URL",
        }
    }

    /// The schema export this provider's `tools` take.
    pub fn tool_format(self) -> Format {
        match self {
            ProviderKind::OpenAi => Format::OpenAi,
            ProviderKind::Anthropic => Format::Anthropic,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A secret (an API key). Its `Debug` and `Display` never show it.
pub use toolbelt_core::Secret;

/// How failed requests are retried: the waits double from `initial_delay` (less up
/// to a quarter at random) up to `max_delay`; a `Retry-After` longer than
/// `max_retry_after` is not waited for (the provider gives up and says so).
pub use toolbelt_core::RetryPolicy;

/// Everything a provider needs.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The wire format.
    pub kind: ProviderKind,
    /// The base URL, as in the official SDKs (OpenAI's includes `/v1`).
    pub base_url: String,
    /// The API key (optional for local servers).
    pub api_key: Option<Secret>,
    /// The model name.
    pub model: String,
    /// The most tokens one answer may have (Anthropic requires it).
    pub max_tokens: u32,
    /// Retries.
    pub retry: RetryPolicy,
    /// The longest silence between two parts of the answer, once it has started.
    pub idle_timeout: Duration,
    /// The longest wait for the answer's first bytes: a server reads the whole
    /// prompt first, which on a laptop CPU takes minutes for a long one (see
    /// [`default_first_byte_timeout`]).
    pub first_byte_timeout: Duration,
    /// The longest wait for a connection.
    pub connect_timeout: Duration,
    /// The sampling temperature sent with every request (`None`: the server's
    /// default). Small models stay on format better at `0`.
    pub temperature: Option<f32>,
    /// The sampling seed sent with every request, where the API takes one
    /// (OpenAI-compatible servers; Anthropic takes none).
    pub seed: Option<u64>,
}

/// The default of [`ProviderConfig::max_tokens`].
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;
/// The default of [`ProviderConfig::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The default of [`ProviderConfig::first_byte_timeout`] for a server on the
/// network: as long as the idle timeout.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = DEFAULT_IDLE_TIMEOUT;
/// The default of [`ProviderConfig::first_byte_timeout`] for a server on this
/// machine or the local network, which may be reading a long prompt on a CPU.
pub const LOCAL_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The default of [`ProviderConfig::max_tokens`] for a server on this machine or
/// the local network: a small model that runs away costs minutes per thousand
/// tokens there.
pub const LOCAL_MAX_TOKENS: u32 = 2_048;
/// The default of [`ProviderConfig::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

impl ProviderConfig {
    /// A configuration with the defaults of `kind` for `model`.
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: kind.default_base_url().to_string(),
            api_key: None,
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            retry: RetryPolicy::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            temperature: None,
            seed: None,
        }
    }

    /// True when the base URL names this machine or the local network (a model
    /// served by llama.cpp, Ollama or vLLM next door).
    pub fn is_local(&self) -> bool {
        is_local_url(&self.base_url)
    }
}

/// The first-byte timeout for `base_url`: [`LOCAL_FIRST_BYTE_TIMEOUT`] for a
/// server on this machine or the local network, else
/// [`DEFAULT_FIRST_BYTE_TIMEOUT`].
pub fn default_first_byte_timeout(base_url: &str) -> Duration {
    if is_local_url(base_url) {
        LOCAL_FIRST_BYTE_TIMEOUT
    } else {
        DEFAULT_FIRST_BYTE_TIMEOUT
    }
}

/// True when `base_url` names this machine (`localhost`, a loopback address) or
/// the local network (a private or link-local address, `*.local`).
pub fn is_local_url(base_url: &str) -> bool {
    let Ok(url) = url::Url::parse(base_url) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost")
                || d.ends_with(".localhost")
                || d.ends_with(".local")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.is_unique_local() || ip.is_unicast_link_local()
        }
        None => false,
    }
}

/// A temperature as a JSON number with the digits it was written with (`0.2`, not
/// the `0.20000000298023224` an `f32` widens to); `None` for NaN or an infinity.
pub(crate) fn temperature_json(temperature: f32) -> Option<Value> {
    let shown: f64 = temperature.to_string().parse().ok()?;
    serde_json::Number::from_f64(shown).map(Value::Number)
}

/// How the server is asked to hold a reply to a shape (small models).
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyConstraint {
    /// The reply must call a tool: `tool_choice: "required"` (OpenAI-compatible),
    /// `{"type": "any"}` (Anthropic). Not sent with a request without tools.
    ToolRequired,
    /// A GBNF grammar (llama.cpp's `grammar` field). llama.cpp refuses a grammar
    /// beside tools ("Cannot use custom grammar constraints with tools"): it suits
    /// the text protocol ([`crate::constrain::action_grammar`]). Anthropic ignores it.
    Grammar(Arc<str>),
    /// A JSON Schema the whole reply must match: `response_format: {"type":
    /// "json_schema", "json_schema": {"name": "reply", "strict": true, "schema":
    /// ...}}` (vLLM, llama.cpp, Ollama's OpenAI-compatible endpoint, OpenAI); see
    /// [`crate::constrain::reply_schema`]. Anthropic ignores it.
    JsonSchema(Arc<Value>),
}

/// One model call.
#[derive(Debug, Clone, Default)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools, already exported in the provider's format
    /// ([`ProviderKind::tool_format`]): a JSON array. `None` sends no `tools`
    /// (the text protocol, or a summary request).
    pub tools: Option<Arc<Value>>,
    /// Overrides the configured `max_tokens` for this call.
    pub max_tokens: Option<u32>,
    /// Where the model must stop (`\nObservation:` for the text protocol, so that
    /// it does not write the results of its own actions).
    pub stop: Vec<String>,
    /// The shape the server is asked to hold the reply to, if any.
    pub constraint: Option<ReplyConstraint>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The answer is complete (OpenAI `stop`, Anthropic `end_turn` / `stop_sequence`).
    EndTurn,
    /// The model asked for tools (`tool_calls`, `tool_use`).
    ToolUse,
    /// The output limit cut the answer (`length`, `max_tokens`).
    MaxTokens,
    /// Anything else the provider said (`content_filter`, `refusal`, ...).
    Other(String),
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// The text.
    pub content: String,
    /// Reasoning the model showed (DeepSeek `reasoning_content`, Anthropic
    /// `thinking`), for display only: it is not sent back.
    pub reasoning: String,
    /// The tool calls, in order.
    pub tool_calls: Vec<ModelCall>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// What it cost, when the provider said.
    pub usage: Usage,
}

/// What a provider reports while the answer streams in.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// More text of the answer.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// More reasoning.
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// The model started a tool call.
    ToolCallStarted {
        /// Its position among the answer's calls.
        index: usize,
        /// The tool name.
        name: String,
    },
    /// Nothing has arrived yet: the server is still reading the prompt. Sent every
    /// few seconds while the wait lasts.
    Waiting {
        /// Since the request was sent, in milliseconds.
        elapsed_ms: u64,
    },
    /// The request failed and will be sent again; what streamed so far is void.
    Retrying {
        /// The attempt that comes next (2 for the first retry).
        attempt: u32,
        /// How long the provider waits first, in milliseconds.
        wait_ms: u64,
        /// Why: `HTTP 429: rate limited`, `connection reset`, `the stream ended early`.
        reason: String,
    },
}

/// A receiver of [`StreamEvent`]s.
pub type StreamSink<'a> = &'a (dyn Fn(StreamEvent) + Send + Sync);

/// Why a model call failed, after the retries, or a provider cannot be built.
///
/// The `message` of [`Status`](ProviderError::Status),
/// [`MalformedCall`](ProviderError::MalformedCall),
/// [`Connection`](ProviderError::Connection) and [`Stream`](ProviderError::Stream)
/// is text, not a typed cause: it is the provider's own words or what the
/// connection said, with the API key replaced by `***` should a server have echoed
/// it, which a cause kept whole could still show.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider answered with an error status.
    #[error("{provider} answered HTTP {status}{}: {message}", attempts_note(*.attempts))]
    Status {
        /// `openai` or `anthropic`.
        provider: ProviderKind,
        /// The HTTP status.
        status: u16,
        /// The provider's own error text (`error.message`), or the body.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The server could not read a tool call the model wrote, at any status, as
    /// an error answer or an error event in the stream. Returned after one attempt:
    /// the same request brings the same failure back (at temperature 0, byte for
    /// byte). The caller shows the model a format error instead.
    ///
    /// Two kinds (llama.cpp, `common/chat.cpp`): the reply just written does not
    /// fit its chat template's format (`The model produced output that does not
    /// match the expected <format> format`; before late 2025 `Failed to parse input
    /// at pos N: ...`); or a call of the conversation sent back has arguments that
    /// are not JSON (`Failed to parse tool call arguments as JSON: ...`; Ollama:
    /// `invalid tool call arguments`), which goes on failing until that call in
    /// the history is mended or dropped.
    #[error("{provider} could not read the model's tool call (HTTP {status}): {message}")]
    MalformedCall {
        /// `openai` or `anthropic`.
        provider: ProviderKind,
        /// The HTTP status (for an error event in a stream: the status it stands for).
        status: u16,
        /// The server's own words, the API key replaced by `***`.
        message: String,
    },
    /// The provider could not be reached, or the connection dropped.
    #[error("cannot reach {provider} at {url}{}: {message}", attempts_note(*.attempts))]
    Connection {
        /// `openai` or `anthropic`.
        provider: ProviderKind,
        /// The URL requested (never with a key in it).
        url: String,
        /// What went wrong.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The answer's stream broke off or could not be read.
    #[error("{provider}'s answer could not be read{}: {message}", attempts_note(*.attempts))]
    Stream {
        /// `openai` or `anthropic`.
        provider: ProviderKind,
        /// What went wrong.
        message: String,
        /// Attempts made.
        attempts: u32,
        /// The parser's error, for an answer that is not JSON.
        #[source]
        source: Option<Arc<serde_json::Error>>,
    },
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The configuration cannot work (a base URL that is not http(s), a key no
    /// header can carry); the message names what and which provider.
    #[error("{0}")]
    Config(String),
    /// The configured base URL cannot be parsed.
    #[error("{provider} base URL {url:?} cannot be parsed")]
    BaseUrl {
        /// `openai` or `anthropic`.
        provider: ProviderKind,
        /// The URL as configured, without what looks like user info or a query,
        /// clipped.
        url: String,
        /// Why it cannot be parsed.
        source: url::ParseError,
    },
    /// TLS cannot be set up.
    #[error(transparent)]
    Tls(#[from] toolbelt_net::tls::TlsError),
    /// The HTTP client cannot be built.
    #[error("the {provider} HTTP client cannot be built")]
    Client {
        /// `openai` or `anthropic`.
        provider: ProviderKind,
        /// Why.
        source: reqwest::Error,
    },
    /// The request, or the tools sent with it, cannot be encoded as JSON.
    #[error("the {what} cannot be encoded")]
    Encode {
        /// `request` or `tools`.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
}

fn attempts_note(attempts: u32) -> String {
    if attempts > 1 {
        format!(" (after {attempts} attempts)")
    } else {
        String::new()
    }
}

impl ProviderError {
    /// True when the server could not read the model's own tool call
    /// ([`ProviderError::MalformedCall`]): a format error for the model, not a
    /// fault of the connection.
    pub fn is_malformed_call(&self) -> bool {
        matches!(self, ProviderError::MalformedCall { .. })
    }

    /// True when the provider refused the request because it is too long for the
    /// model's context window (the agent then compacts its history and asks again).
    pub fn is_context_overflow(&self) -> bool {
        let ProviderError::Status {
            status, message, ..
        } = self
        else {
            return false;
        };
        let m = message.to_ascii_lowercase();
        (*status == 400 || *status == 413)
            && (m.contains("context length")
                || m.contains("context_length")
                || m.contains("context window")
                || m.contains("maximum context")
                || m.contains("prompt is too long")
                || m.contains("too many tokens")
                || m.contains("reduce the length"))
    }
}

/// A model behind an API.
pub trait Provider: Send + Sync + fmt::Debug {
    /// Which wire format it speaks.
    fn kind(&self) -> ProviderKind;

    /// The model name.
    fn model(&self) -> &str;

    /// Sends `request`, reports the answer as it streams in through `events`, and
    /// returns it whole.
    ///
    /// # Errors
    /// [`ProviderError`] after the retries; [`ProviderError::Cancelled`] when
    /// `cancel` fires (the request is dropped at once).
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: StreamSink<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>>;
}

/// The provider `config` describes.
///
/// # Errors
/// [`ProviderError::Config`] for a base URL that is not http(s).
pub fn build_provider(config: ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(match config.kind {
        ProviderKind::OpenAi => Arc::new(openai::OpenAiProvider::new(config)?),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicProvider::new(config)?),
    })
}
