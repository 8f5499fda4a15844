//! Permission policy (skeleton; the full rule engine replaces this).

/// The outcome of a rule check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask a person first.
    Ask,
    /// Refuse.
    Deny,
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
    /// The rule that decided, as written (`bash(rm:*)`), if any.
    pub rule: Option<String>,
}

/// Allow / ask / deny rules.
#[derive(Debug, Clone, Default)]
pub struct Policy {}

impl Policy {
    /// Evaluates a request.
    pub fn evaluate(&self, _req: &Request<'_>) -> Evaluation {
        Evaluation {
            decision: Decision::Allow,
            rule: None,
        }
    }
}
