//! The policy: rules checked deny → ask → allow, the secret-file and
//! configuration defaults, shell command lines judged part by part, and the
//! `[permissions]` table.

mod guard;
mod protected;

use std::path::Path;

use serde::{Deserialize, Serialize};
use toolbelt_core::{Authorizer, Decision, Evaluation, Guard, Request, Subject as SubjectKind};

use self::protected::ProtectedPath;
use crate::error::PolicyError;
use crate::kinds::ToolKinds;
use crate::rule::{Rule, Specifier};
use crate::shell;
use crate::subject::{Subject, absolute_path_string, secret_file};

/// Allow / ask / deny rules, checked deny → ask → allow, plus the built-in
/// secret-file and configuration defaults. See the [crate documentation](crate).
///
/// # Security
///
/// Rules compare strings: a path subject is normalised lexically (`a/../b`) but
/// symbolic links are not resolved, and the file tools' workspace jail does the
/// rest. A shell command line is split into simple commands, each matched by its
/// words: a rule that allows a program allows whatever that program runs
/// (`env rm x`, `xargs rm`, `bash -c '...'`, `eval '...'`), so allow such
/// programs only with care.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) rules: Vec<(Decision, Rule)>,
    pub(crate) kinds: ToolKinds,
    pub(crate) secret_defaults: bool,
    /// toolbelt's configuration is denied to tools that write (see
    /// [`Policy::config_defaults`]).
    pub(crate) config_defaults: bool,
    /// Paths denied to tools that write (see [`Policy::with_protected_paths`]).
    pub(crate) protected: Vec<ProtectedPath>,
    pub(crate) roots: Vec<String>,
    pub(crate) home: Option<String>,
    /// Destructive shell commands are held for a person (see
    /// [`Policy::with_destructive_guard`]).
    pub(crate) destructive_guard: bool,
}

impl Default for Policy {
    /// No rules, with the secret-file and configuration defaults, and the home
    /// directory of the process for `~/` patterns.
    fn default() -> Policy {
        Policy {
            rules: Vec::new(),
            kinds: ToolKinds::new(),
            secret_defaults: true,
            config_defaults: true,
            protected: Vec::new(),
            roots: Vec::new(),
            home: std::env::home_dir().and_then(|h| absolute_path_string(&h)),
            destructive_guard: false,
        }
    }
}

impl Policy {
    /// A policy from allow, ask and deny rules, with the secret-file and
    /// configuration defaults. One
    /// string type serves all three lists, so `&[]` needs no annotation.
    ///
    /// # Errors
    ///
    /// The first rule that does not parse (see [`Rule::parse`]).
    pub fn from_rules<S: AsRef<str>>(
        allow: &[S],
        ask: &[S],
        deny: &[S],
    ) -> Result<Policy, PolicyError> {
        let mut policy = Policy::default();
        for (decision, rules) in [
            (Decision::Allow, allow),
            (Decision::Ask, ask),
            (Decision::Deny, deny),
        ] {
            for rule in rules {
                policy.add(decision, rule.as_ref())?;
            }
        }
        Ok(policy)
    }

    /// No rules at all, not even the secret-file and configuration defaults:
    /// everything is allowed.
    pub fn permissive() -> Policy {
        Policy::default()
            .without_secret_defaults()
            .without_config_defaults()
    }

    /// Adds a rule.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] when the rule does not parse (see [`Rule::parse`]).
    pub fn add(&mut self, decision: Decision, rule: &str) -> Result<(), PolicyError> {
        let rule = Rule::parse_for(rule, &self.kinds)?;
        self.rules.push((decision, rule));
        Ok(())
    }

    /// Reads the rules for the tools of `kinds` (what each declares as its
    /// subject): rules added before are read again, and later ones are read so.
    ///
    /// # Errors
    ///
    /// The first rule that does not parse for its tool (a URL tool's rule without
    /// `domain:`, a path tool's rule with an invalid glob).
    pub fn with_kinds(mut self, kinds: ToolKinds) -> Result<Policy, PolicyError> {
        self.rules = self
            .rules
            .iter()
            .map(|(d, r)| Rule::parse_for(r.text(), &kinds).map(|r| (*d, r)))
            .collect::<Result<_, _>>()?;
        self.kinds = kinds;
        Ok(self)
    }

    /// Turns the built-in secret-file defaults off.
    pub fn without_secret_defaults(mut self) -> Policy {
        self.secret_defaults = false;
        self
    }

    /// Whether the built-in secret-file defaults are on.
    pub fn secret_defaults(&self) -> bool {
        self.secret_defaults
    }

    /// The workspace roots: relative subjects are taken relative to the first, and
    /// absolute subjects under any of them also match relative patterns. Roots that
    /// are not absolute UTF-8 paths are ignored.
    pub fn with_roots<P: AsRef<Path>>(mut self, roots: impl IntoIterator<Item = P>) -> Policy {
        self.roots = roots
            .into_iter()
            .filter_map(|r| absolute_path_string(r.as_ref()))
            .collect();
        self
    }

    /// The home directory for `~/` patterns and subjects (`None`: `~/` patterns
    /// match only `~/` subjects). Defaults to the process's home directory.
    pub fn with_home(mut self, home: Option<&Path>) -> Policy {
        self.home = home.and_then(absolute_path_string);
        self
    }

    /// The rules added, in order, with their decisions (the built-in secret-file
    /// defaults are not listed; see [`Policy::secret_defaults`]).
    pub fn rules(&self) -> impl ExactSizeIterator<Item = (Decision, &Rule)> + '_ {
        self.rules.iter().map(|(d, r)| (*d, r))
    }

    /// Evaluates a request: deny rules, then the secret-file defaults, then the
    /// protection of toolbelt's configuration and of the protected paths (for
    /// tools that write, and for shell lines that write them through a
    /// redirection or a known writer), then ask rules, then allow rules; allowed
    /// when nothing matches.
    ///
    /// A shell tool's command is split into its simple commands (see
    /// [`shell::simple_commands`]) when the policy has
    /// rules with a command specifier for the tool, and each part is judged on its
    /// own: the first part denied decides, else the first part that asks, else the
    /// call is allowed. While an allow rule with a command specifier names the tool,
    /// a part no rule matches asks; a command that cannot be parsed asks.
    pub fn evaluate(&self, req: &Request<'_>) -> Evaluation {
        if let Some(raw) = req.subject
            && self.is_shell_tool(req)
        {
            if let Some(denied) = self.shell_protection(req, raw) {
                return denied;
            }
            if self.has_command_rules(req) {
                return self.evaluate_shell(req, raw);
            }
        }
        self.evaluate_whole(req)
    }

    /// Whether the tool of `req` declares commands as its subject.
    pub(crate) fn is_shell_tool(&self, req: &Request<'_>) -> bool {
        [Some(req.tool), req.alias]
            .into_iter()
            .flatten()
            .any(|name| self.kinds.of(name) == Some(SubjectKind::Command))
    }

    /// Evaluates `req` for one simple command (no `&&`, `;`, `|`, ...) in place of
    /// its subject, without splitting it.
    pub fn evaluate_command(&self, req: &Request<'_>, command: &str) -> Evaluation {
        let req = Request {
            subject: Some(command),
            ..*req
        };
        if self.is_shell_tool(&req) && self.has_command_rules(&req) {
            self.evaluate_part(&req, command, command, self.has_command_allow_rules(&req))
        } else {
            self.evaluate_whole(&req)
        }
    }

    /// Evaluates the simple commands a compound command splits into: the strictest
    /// decision wins (the first deny, else the first ask, else the first part's
    /// evaluation). With no commands, evaluates `req` as it is.
    pub fn evaluate_commands<'c>(
        &self,
        req: &Request<'_>,
        commands: impl IntoIterator<Item = &'c str>,
    ) -> Evaluation {
        strictest(commands.into_iter().map(|c| self.evaluate_command(req, c)))
            .unwrap_or_else(|| self.evaluate(req))
    }

    /// The first rule for `decision` that matches `req` with its subject as it is.
    pub(crate) fn first_match(&self, decision: Decision, req: &Request<'_>) -> Option<&Rule> {
        let subject = Subject::new(req, &self.roots, self.home.as_deref());
        self.rules
            .iter()
            .find(|(d, rule)| *d == decision && rule.matches(req, &subject))
            .map(|(_, rule)| rule)
    }

    /// The request judged on its subject as it is, unsplit.
    pub(crate) fn evaluate_whole(&self, req: &Request<'_>) -> Evaluation {
        let subject = Subject::new(req, &self.roots, self.home.as_deref());
        let first = |decision: Decision| {
            self.rules
                .iter()
                .find(|(d, rule)| *d == decision && rule.matches(req, &subject))
                .map(|(_, rule)| Evaluation {
                    decision,
                    rule: Some(rule.text.clone()),
                })
        };
        if let Some(eval) = first(Decision::Deny) {
            return eval;
        }
        if self.secret_defaults
            && subject.is_fs
            && subject.raw.is_some()
            && let Some(label) = secret_file(subject.paths())
        {
            return Evaluation {
                decision: Decision::Deny,
                rule: Some(format!("deny secret file {label} (built-in)")),
            };
        }
        if let Some(label) = self.protection(req, &subject) {
            return Evaluation {
                decision: Decision::Deny,
                rule: Some(label),
            };
        }
        first(Decision::Ask)
            .or_else(|| first(Decision::Allow))
            .unwrap_or(Evaluation::allowed())
    }

    /// Rules for the tool of `req` whose specifier depends on the command (neither
    /// absent nor `*`), optionally only those for `decision`.
    pub(crate) fn command_rules<'r>(
        &'r self,
        req: &'r Request<'_>,
        decision: Option<Decision>,
    ) -> impl Iterator<Item = &'r Rule> + 'r {
        self.rules
            .iter()
            .filter(move |(d, _)| decision.is_none_or(|want| *d == want))
            .map(|(_, rule)| rule)
            .filter(|rule| {
                rule.specifier
                    .as_ref()
                    .is_some_and(|s| !matches!(s, Specifier::Everything))
            })
            .filter(|rule| {
                rule.tool.matches(req.tool) || req.alias.is_some_and(|a| rule.tool.matches(a))
            })
    }

    pub(crate) fn has_command_rules(&self, req: &Request<'_>) -> bool {
        self.command_rules(req, None).next().is_some()
    }

    pub(crate) fn has_command_allow_rules(&self, req: &Request<'_>) -> bool {
        self.command_rules(req, Some(Decision::Allow))
            .next()
            .is_some()
    }

    /// A shell command line, split into its simple commands.
    pub(crate) fn evaluate_shell(&self, req: &Request<'_>, raw: &str) -> Evaluation {
        let commands = match shell::simple_commands(raw) {
            Ok(commands) => commands,
            Err(_) => {
                let whole = self.evaluate_whole(req);
                return if whole.decision == Decision::Deny {
                    whole
                } else {
                    Evaluation {
                        decision: Decision::Ask,
                        rule: Some(UNPARSED_COMMAND.to_string()),
                    }
                };
            }
        };
        let allowlist = self.has_command_allow_rules(req);
        strictest(commands.iter().map(|c| {
            let part = Request {
                subject: Some(c.text()),
                ..*req
            };
            self.evaluate_part(&part, c.text(), c.command(), allowlist)
        }))
        .unwrap_or_else(|| self.evaluate_whole(req))
    }

    /// One simple command: deny and ask rules are matched against its text and
    /// against the command without its prefix assignments (`FOO=1 rm x` is an
    /// `rm` command to them), allow rules against its text only. With `allowlist`,
    /// a command no rule matches asks.
    pub(crate) fn evaluate_part(
        &self,
        req: &Request<'_>,
        text: &str,
        command: &str,
        allowlist: bool,
    ) -> Evaluation {
        fn with<'b>(req: &Request<'b>, subject: &'b str) -> Request<'b> {
            Request {
                subject: Some(subject),
                ..*req
            }
        }
        for decision in [Decision::Deny, Decision::Ask] {
            let found = self
                .first_match(decision, &with(req, text))
                .or_else(|| self.first_match(decision, &with(req, command)));
            if let Some(rule) = found {
                return Evaluation {
                    decision,
                    rule: Some(rule.text.clone()),
                };
            }
        }
        match self.first_match(Decision::Allow, &with(req, text)) {
            Some(rule) => Evaluation {
                decision: Decision::Allow,
                rule: Some(rule.text.clone()),
            },
            None if allowlist => Evaluation {
                decision: Decision::Ask,
                rule: Some(format!("no allow rule covers {text:?}")),
            },
            None => Evaluation::allowed(),
        }
    }
}

/// The rule text of an evaluation that asks because a command line could not be
/// split into simple commands.
pub const UNPARSED_COMMAND: &str = "command could not be parsed";

/// The strictest of `evals`: the first deny, else the first ask, else the first.
pub(crate) fn strictest(evals: impl IntoIterator<Item = Evaluation>) -> Option<Evaluation> {
    let mut strictest: Option<Evaluation> = None;
    for eval in evals {
        if strictest
            .as_ref()
            .is_none_or(|s| eval.decision > s.decision)
        {
            let deny = eval.decision == Decision::Deny;
            strictest = Some(eval);
            if deny {
                break;
            }
        }
    }
    strictest
}

/// The `[permissions]` table of a configuration file.
///
/// ```
/// use toolbelt_policy::{Decision, PolicyConfig};
///
/// let config: PolicyConfig =
///     serde_json::from_str(r#"{"allow": ["bash(cargo test:*)"], "deny": ["web_fetch(domain:example.com)"]}"#)
///         .unwrap();
/// assert!(config.secret_defaults && config.config_defaults);
/// let policy = config.build().unwrap();
/// assert_eq!(policy.rules().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Rules that allow a call.
    pub allow: Vec<String>,
    /// Rules that make a call wait for approval.
    pub ask: Vec<String>,
    /// Rules that refuse a call.
    pub deny: Vec<String>,
    /// Whether the built-in secret files are denied (default `true`).
    pub secret_defaults: bool,
    /// Whether tools that write files are denied the workspace's `toolbelt.toml`
    /// and `.toolbelt/hooks/` (default `true`; see [`Policy::config_defaults`]).
    pub config_defaults: bool,
}

impl Default for PolicyConfig {
    fn default() -> PolicyConfig {
        PolicyConfig {
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            secret_defaults: true,
            config_defaults: true,
        }
    }
}

impl PolicyConfig {
    /// Builds the policy.
    ///
    /// # Errors
    ///
    /// The first rule that does not parse (see [`Rule::parse`]).
    pub fn build(&self) -> Result<Policy, PolicyError> {
        let mut policy = Policy::from_rules(&self.allow, &self.ask, &self.deny)?;
        if !self.secret_defaults {
            policy = policy.without_secret_defaults();
        }
        if !self.config_defaults {
            policy = policy.without_config_defaults();
        }
        Ok(policy)
    }
}

#[cfg(test)]
#[path = "policy_more_tests.rs"]
mod more_tests;
#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;

impl Authorizer for Policy {
    fn evaluate(&self, request: &Request<'_>) -> Evaluation {
        Policy::evaluate(self, request)
    }

    fn guard(&self, request: &Request<'_>) -> Option<Guard> {
        Policy::guard(self, request)
    }

    fn secret_defaults(&self) -> bool {
        Policy::secret_defaults(self)
    }
}
