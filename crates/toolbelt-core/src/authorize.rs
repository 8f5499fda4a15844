//! Who may run what: the [`Authorizer`] the registry asks before every call.
//!
//! The registry knows nothing of rules; it hands each call to an authorizer as a
//! [`Request`] (the tool, the name it is exposed as, the subject the tool declares
//! — a path, a command, a URL — and the permissions it declares) and acts on the
//! [`Evaluation`]: run it, ask a person ([`crate::Approver`]), or refuse. Tools
//! ask it too, about what they reach beyond their arguments (the target of a
//! symlink, the files a search opens). The rules themselves are
//! `toolbelt-policy`'s.

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

/// Judges calls: the permission rules of a registry.
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// The decision on `request`.
    fn evaluate(&self, request: &Request<'_>) -> Evaluation;

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
