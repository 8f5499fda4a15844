//! The conversation, as data that no provider owns: each provider writes it in its
//! own wire format.

use serde::{Deserialize, Serialize};

/// One message of a conversation.
///
/// Providers map it onto their wire format: OpenAI sends [`Message::Tool`] as one
/// `role: tool` message per result; Anthropic as one `user` message of
/// `tool_result` blocks, and merges consecutive messages of one role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the person (or, in the text protocol, the loop's observations) said.
    User {
        /// The text.
        content: String,
    },
    /// What the model answered: text, and the tools it asked for.
    Assistant {
        /// The text of the answer (may be empty when the model only calls tools).
        #[serde(default)]
        content: String,
        /// The tool calls, in the order the model wrote them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ModelCall>,
    },
    /// The results of the tool calls of the assistant message before it, in call order.
    Tool {
        /// One result per call.
        results: Vec<ToolOutput>,
    },
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::User {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    /// The number of characters of text this message carries (its arguments and
    /// results included): the base of token estimates.
    pub fn char_len(&self) -> usize {
        match self {
            Message::User { content } => content.len(),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                content.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len() + c.id.len())
                        .sum::<usize>()
            }
            Message::Tool { results } => results
                .iter()
                .map(|r| r.content.len() + r.call_id.len())
                .sum(),
        }
    }
}

/// A tool call as the model sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCall {
    /// The provider's id of the call (OpenAI `id`, Anthropic `tool_use.id`).
    pub id: String,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments as the model wrote them: a JSON text, possibly broken (the
    /// registry repairs it or answers `INVALID_PARAMS`). Anthropic's `input` object
    /// is kept as its JSON text.
    pub arguments: String,
}

/// The result of one tool call, as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The id of the call it answers.
    pub call_id: String,
    /// The tool's name as the model called it.
    pub name: String,
    /// The envelope's `text` (already within the output budget).
    pub content: String,
    /// True for an error envelope (Anthropic `is_error`).
    #[serde(default)]
    pub is_error: bool,
}

/// Tokens a model call used, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Every input (prompt) token of the call, cached ones included: OpenAI's
    /// `prompt_tokens`; Anthropic's `input_tokens + cache_read_input_tokens +
    /// cache_creation_input_tokens`.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache (a part of `input_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
    /// Input tokens written to the provider's cache (Anthropic), a part of `input_tokens`.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds `other` to this.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    /// True when nothing was reported.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}
