//! Which calls a hook applies to, decided in process: tool-name globs, an `if`
//! in the permission-rule syntax, and globs over the files a call writes.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use toolbelt_core::checkpoint::absolute_path;
use toolbelt_core::hooks::{HookEvent, HookInput};
use toolbelt_core::{Changes, Decision, Request};
use toolbelt_policy::{Policy, PolicyError, ToolKinds, write_targets};

use crate::config::{ConfigError, HookSpec};

/// What a call may write, as hooks see it before the call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallWrites {
    /// Paths it names (relative to the first root when inside it).
    pub paths: Vec<String>,
    /// It may write where nobody can tell (`python3 -c ...`, a script, a tool that
    /// cannot say).
    pub unknown: bool,
}

impl CallWrites {
    /// What the call of `input` may write.
    pub fn of(input: &HookInput<'_>, root: &Path) -> CallWrites {
        let Some(call) = input.call else {
            return CallWrites::default();
        };
        let mut out = CallWrites::default();
        match call.changes {
            Changes::Nothing => {}
            Changes::Paths(paths) => {
                out.paths = paths.iter().map(|p| relative(root, input.cwd, p)).collect();
            }
            Changes::Unknown if call.subject_is_command => {
                let Some(command) = call.subject else {
                    out.unknown = true;
                    return out;
                };
                let writes = write_targets(command);
                out.unknown = writes.unknown;
                out.paths = writes
                    .paths
                    .iter()
                    .map(|p| relative(root, input.cwd, Path::new(p)))
                    .collect();
            }
            Changes::Unknown => out.unknown = true,
        }
        out
    }
}

/// `path` (relative to `cwd` when relative) as the rules see it: relative to
/// `root` when inside it, absolute otherwise; `.` and `..` resolved by text.
fn relative(root: &Path, cwd: &Path, path: &Path) -> String {
    let clean = absolute_path(cwd, path);
    match clean.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => clean.to_string_lossy().into_owned(),
    }
}

/// A hook's `if`.
#[derive(Debug)]
enum Condition {
    /// A permission rule: the call matches when a policy denying only it denies
    /// the call by it.
    Rule { policy: Box<Policy>, text: String },
    /// `write(glob, ...)`: the call may write a matching path.
    Write(PathSet),
}

/// A hook's matcher, compiled.
#[derive(Debug)]
pub(crate) struct Matcher {
    tools: Option<GlobSet>,
    condition: Option<Condition>,
    paths: Option<PathSet>,
}

/// What the matcher needs to know of the workspace.
pub(crate) struct MatchEnv<'a> {
    pub roots: &'a [PathBuf],
    pub kinds: &'a ToolKinds,
}

impl Matcher {
    /// Compiles the matcher of hook `name`.
    pub(crate) fn new(
        name: &str,
        spec: &HookSpec,
        env: &MatchEnv<'_>,
    ) -> Result<Matcher, ConfigError> {
        let tools = match spec.matcher.as_deref().map(str::trim) {
            None | Some("" | "*") => None,
            Some(pattern) => {
                let mut b = GlobSetBuilder::new();
                for alt in pattern.split('|') {
                    // Claude Code's matchers are regular expressions: `.*` is `*`.
                    let alt = alt.trim().replace(".*", "*");
                    let glob = Glob::new(&alt).map_err(|source| ConfigError::Matcher {
                        name: name.to_string(),
                        pattern: pattern.to_string(),
                        source,
                    })?;
                    b.add(glob);
                }
                Some(b.build().map_err(|source| ConfigError::Matcher {
                    name: name.to_string(),
                    pattern: pattern.to_string(),
                    source,
                })?)
            }
        };
        let condition = match spec.condition.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(condition(name, text, env)?),
        };
        let paths = if spec.paths.is_empty() {
            None
        } else {
            Some(
                PathSet::new(&spec.paths, env.roots).map_err(|(pattern, source)| {
                    ConfigError::Paths {
                        name: name.to_string(),
                        pattern,
                        source: Box::new(source),
                    }
                })?,
            )
        };
        Ok(Matcher {
            tools,
            condition,
            paths,
        })
    }

    /// Whether the hook applies to `input`. `writes`: what the call may write
    /// (before it), worked out only when a hook asks (a shell line is parsed for
    /// it); `claude_name`: the tool's name in Claude Code.
    pub(crate) fn matches<'w>(
        &self,
        input: &HookInput<'_>,
        writes: &dyn Fn() -> &'w CallWrites,
        claude_name: Option<&str>,
    ) -> bool {
        let call = input.call;
        if let Some(tools) = &self.tools {
            let Some(call) = call else {
                // An agent event: the matcher is on the event's own subject
                // (`session_start`'s source, say), which toolbelt does not
                // distinguish: a matcher there matches nothing but `*`.
                return false;
            };
            let named = tools.is_match(call.tool)
                || tools.is_match(call.exposed)
                || claude_name.is_some_and(|n| tools.is_match(n));
            if !named {
                return false;
            }
        }
        if let Some(condition) = &self.condition {
            let Some(call) = call else {
                return false;
            };
            let hit = match condition {
                Condition::Rule { policy, text } => {
                    let eval = policy.evaluate(&Request {
                        tool: call.tool,
                        alias: (call.exposed != call.tool).then_some(call.exposed),
                        subject: call.subject,
                        permissions: call.permissions,
                    });
                    eval.decision == Decision::Deny && eval.rule.as_deref() == Some(text)
                }
                Condition::Write(globs) => {
                    let writes = writes();
                    writes.unknown || writes.paths.iter().any(|p| globs.is_match(p))
                }
            };
            if !hit {
                return false;
            }
        }
        if let Some(paths) = &self.paths {
            let hit = match input.event {
                HookEvent::PreToolUse | HookEvent::PermissionRequest => {
                    let writes = writes();
                    writes.unknown || writes.paths.iter().any(|p| paths.is_match(p))
                }
                _ => input.changed.iter().any(|c| paths.is_match(&c.path)),
            };
            if !hit {
                return false;
            }
        }
        true
    }
}

/// Compiles `if = text`.
fn condition(name: &str, text: &str, env: &MatchEnv<'_>) -> Result<Condition, ConfigError> {
    if let Some(inner) = text
        .strip_prefix("write(")
        .and_then(|r| r.strip_suffix(')'))
    {
        let patterns: Vec<String> = inner.split(',').map(|g| g.trim().to_string()).collect();
        return PathSet::new(&patterns, env.roots)
            .map(Condition::Write)
            .map_err(|(pattern, source)| ConfigError::Paths {
                name: name.to_string(),
                pattern,
                source: Box::new(source),
            });
    }
    let bad = |source| ConfigError::Condition {
        name: name.to_string(),
        rule: text.to_string(),
        source: Box::new(source),
    };
    let policy = Policy::from_rules::<&str>(&[], &[], &[text])
        .map_err(bad)?
        .without_secret_defaults()
        .with_roots(env.roots)
        .with_kinds(env.kinds.clone())
        .map_err(bad)?;
    // The rule as the policy spells it (trimmed), to tell it from a built-in.
    let text = text.trim().to_string();
    Ok(Condition::Rule {
        policy: Box::new(policy),
        text,
    })
}

/// Path patterns as the permission rules read them (gitignore-style: a pattern
/// without `/` at any depth, a directory with what is beneath it, `./x` from the
/// root, `~/x`, absolute paths under a root too): a policy that denies each
/// pattern to a tool that writes.
#[derive(Debug)]
struct PathSet {
    policy: Box<Policy>,
    permissions: [String; 1],
}

impl PathSet {
    fn new(patterns: &[String], roots: &[PathBuf]) -> Result<PathSet, (String, PolicyError)> {
        let rules: Vec<String> = patterns
            .iter()
            .map(|p| format!("*({})", p.trim()))
            .collect();
        let policy = Policy::from_rules::<String>(&[], &[], &rules)
            .map_err(|e| (patterns.join(", "), e))?
            .without_secret_defaults()
            .without_config_defaults()
            .with_roots(roots);
        Ok(PathSet {
            policy: Box::new(policy),
            permissions: ["fs:write".to_string()],
        })
    }

    /// Whether `path` (relative to the first root, or absolute) matches.
    fn is_match(&self, path: &str) -> bool {
        let eval = self.policy.evaluate(&Request {
            tool: "hook",
            alias: None,
            subject: Some(path),
            permissions: &self.permissions,
        });
        eval.decision == Decision::Deny
    }
}
