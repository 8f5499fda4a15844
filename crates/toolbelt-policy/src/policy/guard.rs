//! The destructive-command guard: a shell tool's command that destroys what
//! cannot be had back ([`crate::destructive`]) is held for a person, even where
//! the rules allow it and an approver would approve every call unseen, unless a
//! rule of the person's allows that command by name.

use toolbelt_core::{Decision, Guard, Request};

use super::Policy;
use crate::rule::Specifier;
use crate::subject::Subject;
use crate::writes::destructive::{Destructive, destructive_all};

impl Policy {
    /// Holds the shell commands that destroy what cannot be had back (`rm -r`,
    /// `git reset --hard`, `git clean`, `git checkout .`, `find -delete`, changes
    /// to `.git`; see [`crate::destructive`]) for a person: [`Policy::guard`]
    /// names them, and a registry puts such a call to its approver even where the
    /// rules allow it, telling it that an approval of every call unseen (`--yes`)
    /// does not cover this one. An allow rule whose command specifier matches the
    /// command (`bash(rm -rf build)`, `Bash(git clean:*)`) lets it run; a rule
    /// for the whole tool (`bash`, `bash(*)`) does not. Off by default; `toolbelt
    /// agent --model-size small` turns it on.
    pub fn with_destructive_guard(mut self, on: bool) -> Policy {
        self.destructive_guard = on;
        self
    }

    /// Whether destructive commands are held ([`Policy::with_destructive_guard`]).
    pub fn destructive_guard(&self) -> bool {
        self.destructive_guard
    }

    /// The guard's hold on `req`: for a shell tool's command line with the guard
    /// on, its first destructive command that no allow rule names. The registry
    /// asks for it through [`toolbelt_core::Authorizer::guard`].
    pub fn guard(&self, req: &Request<'_>) -> Option<Guard> {
        if !self.destructive_guard || !self.is_shell_tool(req) {
            return None;
        }
        let line = req.subject?;
        destructive_all(line)
            .into_iter()
            .find(|found| !self.allows_by_name(req, &found.command))
            .map(guard_of)
    }

    /// Whether an allow rule with a command specifier (not `*`) matches `command`.
    fn allows_by_name(&self, req: &Request<'_>, command: &str) -> bool {
        let part = Request {
            subject: Some(command),
            ..*req
        };
        let subject = Subject::new(&part, &self.roots, self.home.as_deref());
        self.rules.iter().any(|(decision, rule)| {
            *decision == Decision::Allow
                && rule
                    .specifier
                    .as_ref()
                    .is_some_and(|s| !matches!(s, Specifier::Everything))
                && rule.matches(&part, &subject)
        })
    }
}

/// The guard of a destructive command.
fn guard_of(found: Destructive) -> Guard {
    Guard {
        rule: format!("ask before {} (built-in guard)", found.kind.as_str()),
        danger: found.reason,
        instead: found.kind.instead().to_string(),
    }
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
