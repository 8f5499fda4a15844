//! `[hooks]` as written in a configuration file.
//!
//! ```toml
//! [[hooks.pre_tool_use]]
//! name = "no-force-push"
//! match = "bash"                          # glob over tool names (`files__*`, `Bash|Edit`)
//! if = "bash(git push --force:*)"         # permission-rule syntax; `write(**/.env*)`
//! command = ".toolbelt/hooks/no-force-push.sh"   # a shell line, or ["prog", "arg"]
//! timeout_ms = 5000
//! on_error = "deny"                       # default for pre_tool_use and permission_request
//!
//! [[hooks.post_tool_use]]
//! paths = ["src/gen/**"]                  # the files the call changed
//! context = "src/gen is generated; edit schema/*.yaml and run `make gen`."
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toolbelt_core::hooks::HookEvent;

/// The longest a hook may run.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long a hook runs unless it says.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// `[hooks]`: the hooks of each event, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HooksConfig {
    /// `[[hooks.pre_tool_use]]` and the other events, by name (an unknown one is
    /// refused when the hooks are built, naming the events there are).
    #[serde(flatten)]
    pub events: BTreeMap<String, Vec<HookSpec>>,
}

impl HooksConfig {
    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.events.values().all(Vec::is_empty)
    }
}

/// What a hook does when it cannot answer (a timeout, a crash, a missing
/// command, output it cannot mean).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Refuse the call (the default for guards: `pre_tool_use`,
    /// `permission_request`).
    Deny,
    /// Let the call go on, with a warning (the default for the others).
    Allow,
}

/// The fields and names a command hook is given and reads back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// toolbelt's: events as `pre_tool_use`, tools by the names the model sees.
    #[default]
    Toolbelt,
    /// Claude Code's: events as `PreToolUse`, tools by Claude Code's names
    /// (`Bash`, `Edit`, `Write`), so its hook scripts work unchanged.
    Claude,
}

/// A command: one shell line (`"jq -r .tool_input.command | ..."`), or a program
/// and its arguments run without a shell (`[".toolbelt/hooks/x.sh", "--strict"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommandSpec {
    /// A shell line.
    Line(String),
    /// A program and its arguments.
    Exec(Vec<String>),
}

/// One hook, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// Its name in messages, the log and `toolbelt hooks` (default: made from
    /// the event and the command).
    pub name: Option<String>,
    /// Tool names it applies to: globs, `|` between alternatives (`Edit|Write`),
    /// canonical names, a profile's names or `SERVER__*` (default: every tool).
    #[serde(rename = "match", alias = "matcher")]
    pub matcher: Option<String>,
    /// A permission rule the call must match (`bash(git push:*)`, `write(**/.env*)`).
    #[serde(rename = "if")]
    pub condition: Option<String>,
    /// Globs over the files the call may write (before it) or changed (after it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The command to run.
    pub command: Option<CommandSpec>,
    /// Deny every matching call with this message (no process).
    pub deny: Option<String>,
    /// Add this text for the model to every matching call (no process).
    pub context: Option<String>,
    /// POST the hook's JSON to this URL and read the answer from the response's
    /// body (a loopback address unless `allow_remote`).
    pub http: Option<String>,
    /// Let `http` reach an address other than this machine's loopback.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_remote: bool,
    /// How long the command may run, in milliseconds (default 10 s, at most 600 s).
    pub timeout_ms: Option<u64>,
    /// What a failure means (default: deny for guards, allow for observers).
    pub on_error: Option<OnError>,
    /// A workspace hook that is not trusted denies what it would match, instead
    /// of being skipped.
    #[serde(default)]
    pub required: bool,
    /// The fields it is given and reads back.
    #[serde(default)]
    pub dialect: Dialect,
}

/// A problem with `[hooks]`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// An event name that does not exist.
    #[error("unknown hook event [[hooks.{0}]]; choose one of: {events}", events = event_names())]
    UnknownEvent(String),
    /// A hook with nothing to do.
    #[error("hook '{0}' has nothing to do: give it a command, http, deny or context")]
    NoHandler(String),
    /// A hook with more than one thing to do.
    #[error("hook '{0}' has more than one of command, http, deny and context; give it one")]
    TwoHandlers(String),
    /// An `http` that cannot be used.
    #[error("hook '{name}': http = {url:?} {why}")]
    Http {
        /// The hook.
        name: String,
        /// The URL.
        url: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// An empty command.
    #[error("hook '{0}' has an empty command")]
    EmptyCommand(String),
    /// A timeout out of range.
    #[error("hook '{name}': timeout_ms {ms} is out of range (1 to {MAX_TIMEOUT_MS})")]
    Timeout {
        /// The hook.
        name: String,
        /// The value.
        ms: u64,
    },
    /// A bad tool-name glob.
    #[error("hook '{name}': invalid match {pattern:?}")]
    Matcher {
        /// The hook.
        name: String,
        /// The pattern.
        pattern: String,
        /// Why.
        #[source]
        source: globset::Error,
    },
    /// A bad path pattern.
    #[error("hook '{name}': invalid path pattern {pattern:?}")]
    Paths {
        /// The hook.
        name: String,
        /// The patterns.
        pattern: String,
        /// Why (boxed: the policy's errors are large).
        #[source]
        source: Box<toolbelt_policy::PolicyError>,
    },
    /// A bad `if`.
    #[error("hook '{name}': invalid if {rule:?}")]
    Condition {
        /// The hook.
        name: String,
        /// The rule.
        rule: String,
        /// Why (boxed: the policy's errors are large).
        #[source]
        source: Box<toolbelt_policy::PolicyError>,
    },
    /// Two hooks of one event with the same name.
    #[error("two hooks of {event} are named '{name}'; give them different names")]
    Duplicate {
        /// The event.
        event: String,
        /// The name.
        name: String,
    },
}

fn event_names() -> String {
    HookEvent::ALL.map(HookEvent::as_str).join(", ")
}

impl HookSpec {
    /// The hook's name: its own, or one made from the event, its place and its
    /// command (`pre_tool_use#2 (./check.sh)`).
    pub fn display_name(&self, event: HookEvent, index: usize) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        let what = match (&self.command, &self.deny, &self.context) {
            (Some(CommandSpec::Line(line)), _, _) => short(line),
            (Some(CommandSpec::Exec(argv)), _, _) => short(&argv.join(" ")),
            (None, Some(_), _) => "deny".to_string(),
            (None, None, Some(_)) => "context".to_string(),
            _ => String::new(),
        };
        format!("{event}#{} ({what})", index + 1)
    }

    /// The timeout, checked.
    ///
    /// # Errors
    /// [`ConfigError::Timeout`] outside 1 ms to 600 s.
    pub fn timeout_ms(&self, name: &str) -> Result<u64, ConfigError> {
        let ms = self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if ms == 0 || ms > MAX_TIMEOUT_MS {
            return Err(ConfigError::Timeout {
                name: name.to_string(),
                ms,
            });
        }
        Ok(ms)
    }

    /// What a failure means for this hook of `event`.
    pub fn on_error(&self, event: HookEvent) -> OnError {
        self.on_error.unwrap_or(if event.guards() {
            OnError::Deny
        } else {
            OnError::Allow
        })
    }
}

/// At most 40 characters of `text`, on one line.
fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_string(),
    }
}
