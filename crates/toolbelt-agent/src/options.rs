//! How an agent works ([`AgentOptions`], [`Protocol`]) and how its runs end
//! ([`Outcome`], [`RunOutcome`]).

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::transcript::TranscriptSink;

/// How the model asks for tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The provider's function calling (`tools` in the request).
    #[default]
    Native,
    /// The text protocol: the tools described in the system prompt, `Action:
    /// tool[{...}]` read from the reply, `Observation: ...` sent back.
    Text,
}

impl Protocol {
    /// `native` or `text`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Native => "native",
            Protocol::Text => "text",
        }
    }

    /// Parses `native` or `text`.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s.trim().to_ascii_lowercase().as_str() {
            "native" => Some(Protocol::Native),
            "text" => Some(Protocol::Text),
            _ => None,
        }
    }
}

/// How big a model the agent works with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelSize {
    /// A model that follows a long system prompt and many tools.
    #[default]
    Large,
    /// A small model (a few billion parameters, often on a CPU): a short system
    /// prompt, a `finish` tool that alone ends a run (a reply without a call gets
    /// a reminder, or is held to a call by the server: [`Constraint`]), and the
    /// loop guards. (With it, the command line picks the minimal toolset and
    /// short descriptions.)
    Small,
}

impl ModelSize {
    /// `large` or `small`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelSize::Large => "large",
            ModelSize::Small => "small",
        }
    }

    /// Parses `large` or `small`.
    pub fn parse(s: &str) -> Option<ModelSize> {
        match s.trim().to_ascii_lowercase().as_str() {
            "large" => Some(ModelSize::Large),
            "small" => Some(ModelSize::Small),
            _ => None,
        }
    }
}

/// How the server is asked to hold each reply of a small model to one call of
/// the offered tools (the run then ends only through the `finish` tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Constraint {
    /// Nothing is constrained: a reply without a call gets a reminder.
    #[default]
    None,
    /// Native function calling with `tool_choice: "required"` (llama.cpp, vLLM,
    /// OpenAI and servers that honour it).
    ToolChoice,
    /// The text protocol, its replies held by a GBNF grammar of the tools' calls
    /// (llama.cpp's `grammar`).
    Grammar,
    /// The text protocol with replies as JSON objects (`{"name": ...,
    /// "arguments": {...}}`) held by a JSON Schema (`response_format`: vLLM,
    /// Ollama, llama.cpp).
    JsonSchema,
}

impl Constraint {
    /// `none`, `tool_choice`, `grammar` or `json_schema`.
    pub fn as_str(self) -> &'static str {
        match self {
            Constraint::None => "none",
            Constraint::ToolChoice => "tool_choice",
            Constraint::Grammar => "grammar",
            Constraint::JsonSchema => "json_schema",
        }
    }

    /// Parses `none`, `tool_choice`, `grammar` or `json_schema` (or with `-`).
    pub fn parse(s: &str) -> Option<Constraint> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "none" => Some(Constraint::None),
            "tool_choice" => Some(Constraint::ToolChoice),
            "grammar" => Some(Constraint::Grammar),
            "json_schema" => Some(Constraint::JsonSchema),
            _ => None,
        }
    }

    /// What it is, for the person: `tool_choice "required"`, ...
    pub fn describe(self) -> &'static str {
        match self {
            Constraint::None => "none (a reply without a call is answered with a reminder)",
            Constraint::ToolChoice => "tool_choice \"required\": every reply is a tool call",
            Constraint::Grammar => "a GBNF grammar: every reply is one Action line of a tool",
            Constraint::JsonSchema => "a JSON schema: every reply is one call of a tool as JSON",
        }
    }

    /// The protocol the constraint works with, if it needs one.
    pub fn protocol(self) -> Option<Protocol> {
        match self {
            Constraint::None => None,
            Constraint::ToolChoice => Some(Protocol::Native),
            Constraint::Grammar | Constraint::JsonSchema => Some(Protocol::Text),
        }
    }
}

/// The default of [`AgentOptions::max_steps`].
pub const DEFAULT_MAX_STEPS: usize = 100;
/// The default of [`AgentOptions::repeat_warn`].
pub const DEFAULT_REPEAT_WARN: usize = 3;
/// The default of [`AgentOptions::repeat_stop`].
pub const DEFAULT_REPEAT_STOP: usize = 8;
/// The default of [`AgentOptions::context_window`], in tokens.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// How an [`Agent`](crate::Agent) works.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Native function calling or the text protocol.
    pub protocol: Protocol,
    /// How big the model is: a small one gets a short prompt with an example call,
    /// and a reminder to use the tools when it answers in prose at once.
    pub model_size: ModelSize,
    /// How the server holds each reply to a call. Used with a small model only
    /// (which ends its runs through the `finish` tool), and only with the
    /// protocol it works with ([`Constraint::protocol`]).
    pub constraint: Constraint,
    /// Model calls one run may make.
    pub max_steps: usize,
    /// The same call with the same arguments this many times in a row is answered
    /// with a reminder.
    pub repeat_warn: usize,
    /// ... and this many times in a row ends the run.
    pub repeat_stop: usize,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Calls of one turn run at most this many at once (concurrency-safe ones only).
    pub max_parallel: usize,
    /// Replaces the built-in system prompt.
    pub system_prompt: Option<String>,
    /// Project instructions (`AGENTS.md`, `CLAUDE.md`): (file name, text).
    pub instructions: Vec<(String, String)>,
    /// Where transcripts go (`<state>/agent/runs`); none: no transcript.
    pub transcript_dir: Option<PathBuf>,
    /// Where each line of the transcript goes too (a server's store, so that its
    /// replicas see the run); none: the file only.
    pub transcript_sink: Option<Arc<dyn TranscriptSink>>,
    /// Tokens (input and output) one turn may use; the turn stops once it has used
    /// more. None: no limit.
    pub token_budget: Option<u64>,
    /// When the model answers while subagents it started in the background are
    /// still running: wait for their reports and let the model go on with them
    /// (true; for runs nobody watches, such as `-p`), or end the turn (false; the
    /// reports arrive at the next turn).
    pub wait_for_background: bool,
}

impl Default for AgentOptions {
    fn default() -> AgentOptions {
        AgentOptions {
            protocol: Protocol::Native,
            model_size: ModelSize::Large,
            constraint: Constraint::None,
            max_steps: DEFAULT_MAX_STEPS,
            repeat_warn: DEFAULT_REPEAT_WARN,
            repeat_stop: DEFAULT_REPEAT_STOP,
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_parallel: toolbelt_core::DEFAULT_MAX_CONCURRENCY,
            system_prompt: None,
            instructions: Vec::new(),
            transcript_dir: None,
            transcript_sink: None,
            token_budget: None,
            wait_for_background: false,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model gave its final answer.
    FinalAnswer,
    /// The run reached `max_steps`.
    MaxSteps,
    /// The model repeated one call `repeat_stop` times, or went round the same
    /// two or three calls with the same results three times.
    RepeatedCall,
    /// The run was cancelled (Ctrl-C).
    Cancelled,
    /// The turn used more tokens than its budget.
    TokenBudget,
    /// The model kept replying with neither an action nor an answer (it wrote
    /// observations or errors itself, or a small model answered in prose instead
    /// of calling `finish`).
    NoAnswer,
    /// The provider failed (after its retries).
    Error,
    /// A `user_prompt` hook refused the prompt: it was not sent.
    PromptDenied,
    /// A `stop` hook kept the turn from ending more often than a turn allows
    /// (eight times in a row); its next block ended the run.
    StopHookLimit,
}

impl Outcome {
    /// The name used in events and transcripts.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::FinalAnswer => "final_answer",
            Outcome::MaxSteps => "max_steps",
            Outcome::RepeatedCall => "repeated_call",
            Outcome::Cancelled => "cancelled",
            Outcome::TokenBudget => "token_budget",
            Outcome::NoAnswer => "no_answer",
            Outcome::Error => "error",
            Outcome::PromptDenied => "prompt_denied",
            Outcome::StopHookLimit => "stop_hook_limit",
        }
    }
}

/// What a run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// How it ended.
    pub outcome: Outcome,
    /// The final answer, or what ended the run.
    pub message: String,
    /// Model calls made.
    pub steps: usize,
    /// Tool calls made.
    pub tool_calls: usize,
}
