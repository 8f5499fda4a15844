//! toolbelt's agent: a model loop over the tool registry.
//!
//! - [`provider`]: the [`Provider`] trait and its two wire formats, OpenAI-compatible
//!   Chat Completions and Anthropic Messages, streamed, with retries.
//! - [`Agent`]: the loop. It sends the conversation and the tools, runs the calls the
//!   model asks for through the [`Registry`](toolbelt_core::Registry) (native function
//!   calling, or the text protocol's `Action: tool[{...}]`), returns the results, and
//!   goes on until a final answer; it guards against repeated calls, keeps the history
//!   inside the context window and writes a transcript.
//! - [`AgentEvent`]: what a run reports as it goes, for a terminal or a program.
//! - [`transcript`]: runs as JSONL files, listed and resumed.
//!
//! No terminal code lives here: the `toolbelt agent` command renders the events.

mod agent;
mod compact;
mod events;
mod message;
pub mod provider;
pub mod subagent;
mod summary;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transcript;

pub use agent::{Agent, AgentError, AgentOptions, Outcome, Protocol, RunOutcome};
pub use events::{AgentEvent, EventTx, ToolEventForwarder};
pub use message::{Message, ModelCall, ToolOutput, Usage};
pub use provider::{
    ModelRequest, ModelResponse, Provider, ProviderConfig, ProviderError, ProviderKind,
    RetryPolicy, Secret, StopReason, StreamEvent, build_provider,
};
pub use subagent::{
    AgentType, AgentTypes, SubagentLimits, SubagentModel, SubagentSettings, Subagents, TypeProblem,
};
pub use summary::{call_summary, result_summary};
