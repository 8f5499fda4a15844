//! Who may run what: the [`Authorizer`] the registry asks before every call.
//!
//! The registry knows nothing of rules; it hands each call to an authorizer as a
//! [`Request`] (the tool, the name it is exposed as, the subject the tool declares
//! — a path, a command, a URL — and the permissions it declares) and acts on the
//! [`Evaluation`]: run it, ask a person ([`crate::Approver`]), or refuse. Tools
//! ask it too, about what they reach beyond their arguments (the target of a
//! symlink, the files a search opens). The rules themselves are
//! `toolbelt-policy`'s.
//!
//! Beside the decision, an authorizer may hold a call with a [`Guard`]: a call
//! the rules let through that must still be put to a person, and that an
//! approver which approves every call unseen (`--yes`) must decline (a small
//! model's `rm -rf`).

use std::fmt;

/// The outcome of a rule check, ordered from the most to the least permissive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask a person first.
    Ask,
    /// Refuse.
    Deny,
}

impl Decision {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is being asked for.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Canonical tool name.
    pub tool: &'a str,
    /// The name the tool is exposed as under the active profile, if different.
    pub alias: Option<&'a str>,
    /// The specifier (`git status`, `./src/main.rs`, a URL), if the tool has one.
    pub subject: Option<&'a str>,
    /// Permissions the tool declares (`fs:read`, ...).
    pub permissions: &'a [String],
}

/// The decision and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// The decision.
    pub decision: Decision,
    /// The rule that decided, as written (`tool(prefix:*)`), or a built-in default
    /// (`deny secret file .env (built-in)`); `None` when no rule matched.
    pub rule: Option<String>,
}

impl Evaluation {
    /// Allowed, with no rule behind it.
    pub const fn allowed() -> Evaluation {
        Evaluation {
            decision: Decision::Allow,
            rule: None,
        }
    }
}

/// A built-in guard's hold on a call that the rules allow or ask for: the call is
/// put to a person, and an approver that approves every call without showing it
/// to anyone (`--yes`) declines it instead. The texts are the guard's own; what
/// the call would destroy is said in `danger`, the safer way in `instead`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// The guard, named as a rule is (`ask before rm -r (built-in guard)`): shown
    /// where a rule would be, and the key under which a person's "always" is kept.
    pub rule: String,
    /// What the call would destroy, as a clause (`it deletes the directory tree
    /// build`).
    pub danger: String,
    /// The safer way to reach the goal, for the model when the call is declined.
    pub instead: String,
}

/// Judges calls: the permission rules of a registry.
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// The decision on `request`.
    fn evaluate(&self, request: &Request<'_>) -> Evaluation;

    /// A guard's hold on `request`, which [`Authorizer::evaluate`] allows or asks
    /// for: the registry then puts the call to a person even where the rules
    /// allow it, with the guard in the [`crate::ApprovalRequest`]. None by default.
    fn guard(&self, _request: &Request<'_>) -> Option<Guard> {
        None
    }

    /// Whether the built-in secret files (`.env`, private keys, ...) are denied to
    /// tools that work on files: tools that skip such files on their own (a search
    /// over a tree) follow this.
    fn secret_defaults(&self) -> bool {
        false
    }
}

/// Allows everything: a registry without permission rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Authorizer for AllowAll {
    fn evaluate(&self, _request: &Request<'_>) -> Evaluation {
        Evaluation::allowed()
    }
}
