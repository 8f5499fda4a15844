//! A person's own hooks: what the registry asks before and after every call, and
//! what the agent asks at the edges of a run.
//!
//! The registry knows nothing of how hooks are written or run: a [`CallHooks`]
//! (the binary's, over `[hooks]` in the configuration) is asked at fixed stages of
//! every call, whatever the front end, and its [`HookVerdict`] composes the
//! answers of the hooks that matched:
//!
//! - [`HookEvent::PreToolUse`], after the deny rules: a hook may deny the call,
//!   put it to the person (`ask`), rewrite its arguments (validated and checked by
//!   every rule again) or add context for the model;
//! - [`HookEvent::PermissionRequest`], when a rule or a hook asks: a hook may
//!   answer for the person;
//! - [`HookEvent::PostToolUse`] or [`HookEvent::PostToolFailure`], and
//!   [`HookEvent::FileChanged`] when the call changed files: a hook may add
//!   context, tell the model something went wrong (`block`), or undo the call
//!   (`revert`, through the call's checkpoint).
//!
//! The agent asks the same hooks at [`HookEvent::SessionStart`],
//! [`HookEvent::UserPrompt`], [`HookEvent::SubagentStart`] and
//! [`HookEvent::SubagentStop`], [`HookEvent::PreCompact`], [`HookEvent::Stop`] and
//! [`HookEvent::SessionEnd`].
//!
//! A hook's allow never overrides a deny rule: the rules run before and after it.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::checkpoint::ChangedFile;
use crate::checkpoint::{Changes, Origin};
use crate::envelope::Envelope;
pub use crate::envelope::HookRun;

/// A boxed future that may move between threads.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Before a call, after the deny rules.
    PreToolUse,
    /// A call needs the person's approval.
    PermissionRequest,
    /// After a call that succeeded.
    PostToolUse,
    /// After a call that failed.
    PostToolFailure,
    /// After a call that changed files (whatever the tool).
    FileChanged,
    /// An agent run starts.
    SessionStart,
    /// The person sent a prompt to the agent.
    UserPrompt,
    /// A subagent starts.
    SubagentStart,
    /// A subagent finished.
    SubagentStop,
    /// The agent is about to compact its conversation.
    PreCompact,
    /// The agent is about to end its turn (a block keeps it going).
    Stop,
    /// An agent run ends.
    SessionEnd,
}

impl HookEvent {
    /// Every event, in the order a run meets them.
    pub const ALL: [HookEvent; 12] = [
        HookEvent::SessionStart,
        HookEvent::UserPrompt,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolFailure,
        HookEvent::FileChanged,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::Stop,
        HookEvent::SessionEnd,
    ];

    /// The event's name in the configuration (`pre_tool_use`).
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PermissionRequest => "permission_request",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::PostToolFailure => "post_tool_failure",
            HookEvent::FileChanged => "file_changed",
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPrompt => "user_prompt",
            HookEvent::SubagentStart => "subagent_start",
            HookEvent::SubagentStop => "subagent_stop",
            HookEvent::PreCompact => "pre_compact",
            HookEvent::Stop => "stop",
            HookEvent::SessionEnd => "session_end",
        }
    }

    /// The event of that name.
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether hooks of this event guard calls (and so fail closed by default).
    pub fn guards(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PermissionRequest)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool call as hooks see it.
#[derive(Debug, Clone, Copy)]
pub struct HookCall<'a> {
    /// The canonical tool name.
    pub tool: &'a str,
    /// The name the model knows it by (the profile's).
    pub exposed: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// The arguments, repaired and validated.
    pub arguments: &'a Value,
    /// What the permission rules look at: a command, a path, a URL.
    pub subject: Option<&'a str>,
    /// Whether the subject is a shell command line.
    pub subject_is_command: bool,
    /// What the call may change, as its tool tells.
    pub changes: &'a Changes,
    /// The tool's permissions (`fs:write`, `shell:exec`).
    pub permissions: &'a [String],
}

/// What a hook is asked about: the event and what it knows at that point.
#[derive(Debug, Clone, Copy)]
pub struct HookInput<'a> {
    /// The event.
    pub event: HookEvent,
    /// The call, for the call events.
    pub call: Option<HookCall<'a>>,
    /// The call's result, after it ran.
    pub response: Option<&'a Envelope>,
    /// What the call changed (after it ran, when it was checkpointed).
    pub changed: &'a [ChangedFile],
    /// The call's checkpoint, when one was kept.
    pub checkpoint: Option<&'a str>,
    /// Where the call or run came from.
    pub origin: &'a Origin,
    /// The session's directory.
    pub cwd: &'a Path,
    /// What the agent adds for its events (`prompt`, `stop_hook_active`,
    /// `reason`, `last_message`...).
    pub extra: Option<&'a Map<String, Value>>,
}

impl<'a> HookInput<'a> {
    /// An input for `event` with nothing but where it came from.
    pub fn new(event: HookEvent, origin: &'a Origin, cwd: &'a Path) -> HookInput<'a> {
        HookInput {
            event,
            call: None,
            response: None,
            changed: &[],
            checkpoint: None,
            origin,
            cwd,
            extra: None,
        }
    }
}

/// What the hooks of one event decided, composed in configuration order: any
/// deny wins, then a block or revert, then ask, then allow.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HookDecision {
    /// No hook decided anything.
    #[default]
    Continue,
    /// A hook allowed the call (it still goes through every rule).
    Allow,
    /// A hook asks the person first.
    Ask {
        /// The hook.
        hook: String,
        /// Why.
        reason: Option<String>,
    },
    /// A hook denied the call (or, for an observer, failed closed).
    Deny {
        /// The hook.
        hook: String,
        /// Why.
        reason: String,
    },
    /// After a call: the model is told something went wrong. At `stop`: the
    /// agent keeps going, with the reason as its next prompt.
    Block {
        /// The hook.
        hook: String,
        /// Why.
        reason: String,
    },
    /// After a call: the call's changes are undone.
    Revert {
        /// The hook.
        hook: String,
        /// Why.
        reason: String,
    },
}

/// New arguments a hook gave for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The hook that rewrote last (the one named if the new arguments are invalid).
    pub hook: String,
    /// The arguments, every hook's rewrite applied in configuration order.
    pub arguments: Value,
}

/// Text a hook adds for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookContext {
    /// The hook.
    pub hook: String,
    /// The text.
    pub text: String,
}

/// What the hooks of one event said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HookVerdict {
    /// Each hook that matched, in configuration order.
    pub runs: Vec<HookRun>,
    /// What they decided together.
    pub decision: HookDecision,
    /// New arguments (pre_tool_use).
    pub rewrite: Option<Rewrite>,
    /// Text for the model.
    pub context: Vec<HookContext>,
}

/// Runs a person's hooks. See the [module documentation](self).
pub trait CallHooks: Send + Sync {
    /// Whether any hook is configured for `event` (a quick answer: the registry
    /// skips the stage when none is).
    fn wants(&self, event: HookEvent) -> bool;

    /// Runs the hooks of `input.event` that match it and composes their answers.
    /// Never fails: a hook that cannot answer applies its own failure policy.
    fn run<'a>(&'a self, input: HookInput<'a>) -> BoxFuture<'a, HookVerdict>;
}

impl fmt::Debug for dyn CallHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallHooks")
    }
}
