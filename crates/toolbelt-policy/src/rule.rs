//! Permission rules as written: `tool` or `tool(specifier)`, parsed for what the
//! tool's subject is.

use std::fmt;
use std::str::FromStr;

use toolbelt_core::{Request, Subject as SubjectKind};

use crate::command::normalize_command;
use crate::error::PolicyError;
use crate::kinds::ToolKinds;
use crate::subject::{DomainPattern, PathPattern, Subject};

/// One parsed permission rule: `tool` or `tool(specifier)`. See the
/// [crate documentation](crate) for the syntax.
#[derive(Debug, Clone)]
pub struct Rule {
    pub(crate) text: String,
    pub(crate) tool_len: usize,
    pub(crate) tool: ToolPattern,
    pub(crate) specifier: Option<Specifier>,
}

impl Rule {
    /// Parses a rule.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] for an empty rule or tool name, a tool name with characters a
    /// tool name cannot have, unbalanced parentheses, an empty specifier, an invalid
    /// path glob or an invalid `domain:`. Without knowing the tool, the specifier is
    /// read as a `domain:`, a `prefix:*` or a path (see [`Rule::parse_for`]).
    pub fn parse(text: &str) -> Result<Rule, PolicyError> {
        Rule::parse_for(text, &ToolKinds::new())
    }

    /// Parses a rule for the tools of `kinds`: the specifier of a rule naming one of
    /// them is read as its subject (a command, a `domain:`, a path pattern).
    ///
    /// # Errors
    ///
    /// As [`Rule::parse`], and a rule for a URL tool without `domain:`.
    pub fn parse_for(text: &str, kinds: &ToolKinds) -> Result<Rule, PolicyError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(PolicyError::Empty);
        }
        let (tool_text, inner) = match text.split_once('(') {
            None if text.contains(')') => return Err(unbalanced(text)),
            None => (text, None),
            Some((tool, rest)) => match rest.strip_suffix(')') {
                Some(inner) => (tool.trim_end(), Some(inner.trim())),
                None => return Err(unbalanced(text)),
            },
        };
        let tool = ToolPattern::parse(text, tool_text)?;
        let specifier = match inner {
            None => None,
            Some(inner) => Some(Specifier::parse(text, tool_text, &tool, inner, kinds)?),
        };
        Ok(Rule {
            text: text.to_string(),
            tool_len: tool_text.len(),
            tool,
            specifier,
        })
    }

    /// The rule as written (trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tool part (`bash`, `Read`, `*`, `mcp__github`).
    pub fn tool(&self) -> &str {
        self.text.get(..self.tool_len).unwrap_or_default()
    }

    /// The specifier between the parentheses, if any (`git status:*`).
    pub fn specifier(&self) -> Option<&str> {
        let open = self.text.find('(')?;
        let inner = self.text.get(open + 1..self.text.len().saturating_sub(1))?;
        Some(inner.trim())
    }

    pub(crate) fn matches(&self, req: &Request<'_>, subject: &Subject<'_>) -> bool {
        let tool_matches =
            self.tool.matches(req.tool) || req.alias.is_some_and(|a| self.tool.matches(a));
        if !tool_matches {
            return false;
        }
        let Some(spec) = &self.specifier else {
            return true;
        };
        if matches!(spec, Specifier::Everything) {
            return true;
        }
        let Some(raw) = subject.raw else {
            return false;
        };
        match spec {
            Specifier::Everything => true,
            Specifier::CommandPrefix(prefix) => {
                let command = subject.command();
                command == prefix
                    || command
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with(' '))
            }
            Specifier::CommandExact(exact) => subject.command() == exact,
            Specifier::Domain(domain) => subject.host().is_some_and(|h| domain.matches(h)),
            Specifier::Path { pattern, literal } => match literal {
                Some(literal) if !subject.is_fs => raw.trim() == literal,
                _ => pattern.matches(subject.paths()),
            },
        }
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.text == other.text
    }
}

impl Eq for Rule {}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Rule {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Rule, PolicyError> {
        Rule::parse(s)
    }
}

pub(crate) fn unbalanced(rule: &str) -> PolicyError {
    PolicyError::Unbalanced {
        rule: rule.to_string(),
    }
}

/// The tool part of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolPattern {
    /// `*`.
    Any,
    /// One name, canonical or exposed.
    Exact(String),
    /// `prefix*`.
    Prefix(String),
    /// `mcp__server`: every `mcp__server__...` tool (the string ends with `__`).
    McpServer(String),
}

impl ToolPattern {
    pub(crate) fn parse(rule: &str, name: &str) -> Result<ToolPattern, PolicyError> {
        if name.is_empty() {
            return Err(PolicyError::EmptyTool {
                rule: rule.to_string(),
            });
        }
        let body = name.strip_suffix('*').unwrap_or(name);
        let valid = body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            return Err(PolicyError::BadToolName {
                rule: rule.to_string(),
                tool: name.to_string(),
            });
        }
        Ok(if name == "*" {
            ToolPattern::Any
        } else if body.len() < name.len() {
            ToolPattern::Prefix(body.to_string())
        } else if let Some(server) = name.strip_prefix("mcp__")
            && !server.is_empty()
            && !server.contains("__")
        {
            ToolPattern::McpServer(format!("{name}__"))
        } else {
            ToolPattern::Exact(name.to_string())
        })
    }

    pub(crate) fn matches(&self, name: &str) -> bool {
        match self {
            ToolPattern::Any => true,
            ToolPattern::Exact(exact) => name == exact,
            ToolPattern::Prefix(prefix) | ToolPattern::McpServer(prefix) => {
                name.starts_with(prefix.as_str())
            }
        }
    }
}

/// What the tool a rule names declares as its subject, if it names one tool that
/// declares one.
fn kind_of(tool: &ToolPattern, kinds: &ToolKinds) -> Option<SubjectKind> {
    match tool {
        ToolPattern::Exact(name) => kinds.of(name),
        _ => None,
    }
}

/// The part of a rule between the parentheses.
#[derive(Debug, Clone)]
pub(crate) enum Specifier {
    /// `*`: every call, with or without a subject.
    Everything,
    /// `prefix:*`, normalised.
    CommandPrefix(String),
    /// An exact command, normalised.
    CommandExact(String),
    /// `domain:host`.
    Domain(DomainPattern),
    /// A path pattern. `literal` is set for tools of unknown kind: the pattern text
    /// compared exactly when the tool has no `fs:` permission.
    Path {
        pattern: PathPattern,
        literal: Option<String>,
    },
}

impl Specifier {
    pub(crate) fn parse(
        rule: &str,
        tool_text: &str,
        tool: &ToolPattern,
        inner: &str,
        kinds: &ToolKinds,
    ) -> Result<Specifier, PolicyError> {
        let empty = || PolicyError::EmptySpecifier {
            rule: rule.to_string(),
        };
        if inner.is_empty() {
            return Err(empty());
        }
        if inner == "*" {
            return Ok(Specifier::Everything);
        }
        let kind = kind_of(tool, kinds);
        let domain = || {
            inner
                .strip_prefix("domain:")
                .map(|d| DomainPattern::parse(rule, d).map(Specifier::Domain))
        };
        let prefix = || {
            inner.strip_suffix(":*").map(|p| {
                let p = normalize_command(p);
                if p.is_empty() {
                    Err(empty())
                } else {
                    Ok(Specifier::CommandPrefix(p))
                }
            })
        };
        let path = |literal: Option<String>| {
            PathPattern::parse(inner)
                .map(|pattern| Specifier::Path { pattern, literal })
                .map_err(|source| PolicyError::BadGlob {
                    rule: rule.to_string(),
                    source,
                })
        };
        match kind {
            Some(SubjectKind::Command) => {
                prefix().unwrap_or_else(|| Ok(Specifier::CommandExact(normalize_command(inner))))
            }
            Some(SubjectKind::Url) => domain().unwrap_or_else(|| {
                Err(PolicyError::NeedsDomain {
                    rule: rule.to_string(),
                    tool: tool_text.to_string(),
                })
            }),
            Some(SubjectKind::Path) => path(None),
            None => domain()
                .or_else(prefix)
                .unwrap_or_else(|| path(Some(inner.to_string()))),
        }
    }
}
