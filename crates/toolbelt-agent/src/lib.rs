//! toolbelt's agent: a model loop over the tool registry.
//!
//! - [`provider`]: the [`Provider`] trait and its two wire formats, OpenAI-compatible
//!   Chat Completions and Anthropic Messages, streamed, with retries.
//! - [`Agent`]: the loop. It sends the conversation and the tools, runs the calls the
//!   model asks for through the [`Registry`](toolbelt_core::Registry) (native function
//!   calling, or the text protocol's `Action: tool[{...}]`), returns the results, and
//!   goes on until a final answer; it guards against repeated calls, keeps the history
//!   inside the context window and writes a transcript.
//!   Compaction (old tool results shortened, older turns summarised) lives apart
//!   from the loop, which calls it before a model call that would not fit.
//! - A small model ([`ModelSize::Small`]) ends its run only through a `finish`
//!   tool the loop answers itself, so every reply can be held to one call
//!   ([`Constraint`]): `tool_choice: "required"`, or for the text protocol a GBNF
//!   grammar or a JSON schema of the offered tools' calls ([`constrain`]). Its
//!   loop guards also stop cycles of two or three calls with the same results.
//! - [`Subagents`]: agents an agent starts for one task (`task`, `spawn`). The loop
//!   sees them through the [`Spawner`] trait only: it hands them its events and
//!   takes the reports of background ones into its conversation.
//! - Hooks: the loop asks the registry's hooks (a person's own commands) at the
//!   edges of a run: `session_start`, `user_prompt`, `stop` (which may keep the
//!   model going), `pre_compact`, `subagent_start` / `subagent_stop` and
//!   `session_end` ([`Agent::end`]); the registry asks them around every call.
//! - [`AgentEvent`]: what a run reports as it goes, for a terminal or a program.
//! - [`transcript`]: runs as JSONL files, listed and resumed.
//! - [`tool_names`]: the few tools the agent names, each once.
//! - [`AgentError`] for transcripts and runs; [`ProviderError`] for model calls.
//!
//! No terminal code lives here: the `toolbelt agent` command renders the events.

mod agent;
mod compact;
pub mod constrain;
mod error;
mod events;
mod finish;
mod guard;
mod hooks;
mod journal;
mod loops;
mod message;
mod options;
mod prompt;
pub mod provider;
mod spawner;
pub mod subagent;
mod summary;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tool_names;
pub mod transcript;

pub use agent::Agent;
pub use error::AgentError;
pub use events::{AgentEvent, EventTx, ToolEventForwarder};
pub use message::{Message, ModelCall, ToolOutput, Usage};
pub use options::{AgentOptions, Constraint, ModelSize, Outcome, Protocol, RunOutcome};
pub use provider::{
    LOCAL_MAX_TOKENS, ModelRequest, ModelResponse, Provider, ProviderConfig, ProviderError,
    ProviderKind, RetryPolicy, Secret, ServerInfo, StopReason, StreamEvent, build_provider,
    default_first_byte_timeout, is_local_url, probe_server, probe_tool_choice,
};
pub use spawner::Spawner;
pub use subagent::{
    AgentType, AgentTypes, SubagentLimits, SubagentModel, SubagentSettings, Subagents, TypeProblem,
};
pub use summary::{call_summary, result_summary};
