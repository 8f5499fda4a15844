//! What an agent run reports as it goes: the stream a terminal renders and that
//! `toolbelt agent --json` prints, one JSON object a line.

use serde::Serialize;
use serde_json::Value;

use crate::message::Usage;

/// One event of a run. Serialized with a `type` field (`{"type": "tool_call", ...}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A run started (or resumed).
    RunStarted {
        /// The run's id (its transcript's name).
        run_id: String,
        /// `openai` or `anthropic`.
        provider: String,
        /// The model.
        model: String,
        /// `native` or `text`.
        protocol: String,
        /// How the server holds each reply to a call: `none`, `tool_choice`,
        /// `grammar` or `json_schema`.
        constraint: String,
        /// True when an earlier run's conversation was loaded.
        resumed: bool,
    },
    /// A model call starts (step `step` of the run).
    StepStarted {
        /// 1-based.
        step: usize,
    },
    /// More text of the model's answer.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// More reasoning the model shows.
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// The model's answer of this step is complete.
    AssistantMessage {
        /// Its text (in the text protocol, the whole reply).
        text: String,
        /// The calls it asked for.
        tool_calls: usize,
    },
    /// A tool call starts.
    ToolCall {
        /// The call's id.
        call_id: String,
        /// The tool as the model named it.
        tool: String,
        /// Its arguments (as parsed; a string when they are not JSON).
        arguments: Value,
        /// The call in one line, by its key argument: `grep "fn main"`,
        /// `Think: "..."`.
        summary: String,
    },
    /// A tool call ended.
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The tool as the model named it.
        tool: String,
        /// `success`, `partial` or `error`.
        status: String,
        /// The error code, for errors.
        #[serde(skip_serializing_if = "Option::is_none")]
        error_code: Option<String>,
        /// The result in a few words: `12 matches`, `exit 1`, `NOT_FOUND: ...`.
        summary: String,
        /// The text the model reads.
        text: String,
        /// The envelope's `data` (a diff for edits, the todo list, ...).
        data: Value,
        /// How long it took.
        time_ms: u64,
    },
    /// A tool said something for the person (Think's "💭 Thinking: ...").
    ToolEvent {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The message.
        message: String,
    },
    /// Nothing has come back yet: the server is still reading the prompt (a
    /// local model on a CPU takes minutes for a long one). Sent every few seconds.
    Waiting {
        /// Since the request was sent, in milliseconds.
        elapsed_ms: u64,
        /// The prompt's tokens, estimated.
        prompt_tokens: u64,
    },
    /// The provider retries a request.
    Retrying {
        /// The attempt that comes next.
        attempt: u32,
        /// The wait before it.
        wait_ms: u64,
        /// Why.
        reason: String,
    },
    /// The history was made smaller to fit the context window.
    Compacted {
        /// `tool_results` (old large results shortened) or `summary` (old turns
        /// summarised by the model) or `dropped` (old turns left out).
        kind: String,
        /// Estimated tokens before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// Something the loop tells the person (and, where it says so, the model): a
    /// repeated call, a reply without action.
    Notice {
        /// The message.
        message: String,
    },
    /// A subagent's progress, or its end: one line that a terminal updates in place
    /// (`● task "find the config loader" — 7 tool calls`).
    Subagent {
        /// The subagent's id (`sa_...`).
        task_id: String,
        /// The `task` call that runs it; none for a background subagent (`spawn`).
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// Its description or label.
        label: String,
        /// Its agent type.
        agent_type: String,
        /// True when it runs in the background.
        background: bool,
        /// `queued`, `running`, `done`, `failed` or `stopped`.
        state: String,
        /// Model calls so far.
        steps: usize,
        /// Tool calls so far.
        tool_calls: usize,
        /// Its latest tool call in one line.
        #[serde(skip_serializing_if = "Option::is_none")]
        last: Option<String>,
        /// Its report (the final answer) or what ended it, once it has ended.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<String>,
    },
    /// Tokens of one model call, and the run's total so far.
    Usage {
        /// This call.
        step: Usage,
        /// The run so far.
        total: Usage,
    },
    /// The run ended.
    RunEnded {
        /// How ([`Outcome::as_str`](crate::Outcome::as_str)): `final_answer`,
        /// `max_steps`, `repeated_call`, `cancelled`, `error`, `stop_hook_limit`...
        outcome: String,
        /// The final answer, or what went wrong.
        message: String,
        /// Model calls made.
        steps: usize,
        /// Tool calls made.
        tool_calls: usize,
        /// Tokens of the run.
        usage: Usage,
    },
}

/// Where a run's events go.
pub type EventTx = tokio::sync::mpsc::UnboundedSender<AgentEvent>;

/// Forwards what tools say for the person (Think's "💭 Thinking: ...") into a run's
/// events as [`AgentEvent::ToolEvent`], under the tool's name as the model sees it:
/// give it to [`Registry::set_events`](toolbelt_core::Registry::set_events) before the
/// registry is shared.
#[derive(Debug, Clone)]
pub struct ToolEventForwarder {
    events: EventTx,
    profile: toolbelt_core::profile::Profile,
}

impl ToolEventForwarder {
    /// Forwards into `events`, naming tools as `profile` exposes them (the
    /// registry's [`profile`](toolbelt_core::Registry::profile)).
    pub fn new(events: EventTx, profile: toolbelt_core::profile::Profile) -> ToolEventForwarder {
        ToolEventForwarder { events, profile }
    }
}

impl toolbelt_core::EventSink for ToolEventForwarder {
    fn emit(&self, tool: &str, call_id: &str, message: &str) {
        let _ = self.events.send(AgentEvent::ToolEvent {
            call_id: call_id.to_string(),
            tool: self.profile.exposed(tool).to_string(),
            message: message.to_string(),
        });
    }
}
