//! Permission policy: allow / ask / deny rules over tool calls, as plain data.
//!
//! A [`Rule`] is written `tool` or `tool(specifier)`. The tool part names the
//! canonical tool or the name a profile exposes it as (`bash` or `Bash`), `*` for any
//! tool, `prefix*` for every tool whose name starts with `prefix`, and `mcp__server`
//! for every tool of an MCP server (`mcp__server__tool`). The specifier depends on
//! what the tool's subject is:
//!
//! | rule | matches |
//! |---|---|
//! | `bash` | every call of `bash` (so does `bash(*)`) |
//! | `bash(git status:*)` | the command `git status` and every command starting with `git status ` |
//! | `bash(npm test)` | exactly the command `npm test` |
//! | `read_file(./secrets/**)`, `write_file(src/**/*.rs)` | paths relative to the workspace root |
//! | `read_file(.env)`, `read_file(*.pem)`, `edit_file(**/gen/**)` | a name at any depth |
//! | `read_file(/etc/**)` (or `//etc/**`) | absolute paths |
//! | `read_file(~/.ssh/**)` | paths under the home directory |
//! | `web_fetch(domain:example.com)` | URLs whose host is `example.com` or one of its subdomains |
//! | `web_fetch(domain:*.example.com)` | URLs on a subdomain of `example.com` only |
//! | `*(**/.env)` | any file tool working on such a path |
//!
//! Shell tools (`bash`, `run_command`) take commands, `web_fetch` takes `domain:` specifiers,
//! file tools (`read_file`, `write_file`, `edit_file`, `multi_edit`, `list_dir`, `glob`,
//! `grep`) take path patterns. Any other tool (and `*`) takes `domain:HOST`,
//! `prefix:*`, or a pattern that is matched as a path for tools with an `fs:`
//! permission and compared exactly with the subject otherwise.
//!
//! **Path patterns** are gitignore-style globs: `*` and `?` stay inside one path
//! component, `**` crosses them, `[a-z]` and `{a,b}` work, and a pattern that
//! matches a directory covers everything beneath it. A pattern without a `/` (other
//! than a trailing one) or starting with `**/` matches at any depth (inside the
//! workspace, below its root only); `./x` and other
//! patterns containing a `/` are relative to the workspace root; `/x` and `//x` are
//! absolute; `~/x` is under the home directory. Subjects are normalised first
//! (`./a/../b` is `b`); relative subjects are taken relative to the workspace root,
//! and absolute subjects under a root given to [`Policy::with_roots`] match relative
//! patterns too. Paths compare case-sensitively.
//!
//! **Commands** are compared after collapsing runs of unquoted blanks, so
//! `git  status` is `git status`. One rule checks one simple command: a shell tool's
//! command line is parsed with a bash parser ([`shell::simple_commands`]) and every
//! simple command in it (in `&&`, `||`, `;`, pipes, subshells, `$(...)`, backticks,
//! `<(...)`, loops, conditions and function bodies) is judged on its own: a denied
//! part denies the call (naming its rule), else a part that asks makes it ask, else
//! it is allowed. So `bash(git status:*)` does not allow `git status && rm -rf x`,
//! and `bash(echo:*)` does not allow `echo $(rm x)`. While an allow rule with a
//! command specifier names the tool, the tool's allow rules are a list: a part no
//! rule matches asks (`no allow rule covers "rm -rf x"`). A command line that does
//! not parse asks (`command could not be parsed`) unless a deny rule matches it as
//! a whole. Arguments keep their quotes (`echo "a && b"` is one command, which
//! `bash(echo:*)` covers); the command name is unquoted (`"rm"` and `\rm` are
//! `rm`). Variable assignments before a command are part of its text for allow
//! rules (`FOO=1 make` needs a rule like `bash(FOO=1 make:*)`, since `PATH=...` or
//! `LD_PRELOAD=...` change what runs) and are ignored by deny and ask rules
//! (`FOO=1 rm x` is denied by `bash(rm:*)`). Without command rules for the tool
//! (none, or only `bash` / `bash(*)`), the line is not split. To judge parts split
//! elsewhere, use [`Policy::evaluate_commands`].
//!
//! **Evaluation** is deny, then ask, then allow: any matching deny rule wins, then
//! any ask rule, then any allow rule. When nothing matches, the call is allowed (a
//! registered tool is an allowed tool), except for the built-in secret files, which
//! tools with an `fs:` permission may not touch: `.env` and `.env.*` (not
//! `.env.example`, `.env.sample`, `.env.template`), private keys (`*.pem`, `*.key`,
//! `id_rsa*`, `id_ed25519*`, `id_ecdsa*`, `id_dsa*`, but not their `*.pub` halves),
//! cloud and registry credentials, keystores, and `.ssh/**` (but not `*.pub` and
//! `known_hosts`), at any depth. Deny always wins: to reach a secret file, turn the
//! defaults off with [`Policy::without_secret_defaults`].
//!
//! ```
//! use toolbelt_core::policy::{Decision, Policy, Request};
//!
//! let policy = Policy::from_rules(&["Bash(git status:*)"], &["bash(git push:*)"], &["bash(rm:*)"])
//!     .unwrap();
//! let bash = |command| Request {
//!     tool: "bash",
//!     alias: Some("Bash"),
//!     subject: Some(command),
//!     permissions: &[],
//! };
//! assert_eq!(policy.evaluate(&bash("git status --short")).decision, Decision::Allow);
//! assert_eq!(policy.evaluate(&bash("git push origin main")).decision, Decision::Ask);
//! let denied = policy.evaluate(&bash("rm -rf target"));
//! assert_eq!(denied.decision, Decision::Deny);
//! assert_eq!(denied.rule.as_deref(), Some("bash(rm:*)"));
//!
//! let fs = ["fs:read".to_string()];
//! let read = |path| Request { tool: "read_file", alias: None, subject: Some(path), permissions: &fs };
//! assert_eq!(
//!     policy.evaluate(&read("config/.env")).rule.as_deref(),
//!     Some("deny secret file .env (built-in)")
//! );
//! assert_eq!(policy.evaluate(&read(".env.example")).decision, Decision::Allow);
//! ```

use std::cell::OnceCell;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::str::FromStr;
use std::sync::LazyLock;

use globset::{GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::{profile, shell};

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
    /// The rule that decided, as written (`bash(rm:*)`), or a built-in default
    /// (`deny secret file .env (built-in)`); `None` when no rule matched.
    pub rule: Option<String>,
}

/// Why a permission rule was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The rule is blank.
    #[error("a permission rule is empty; write `tool` or `tool(specifier)`")]
    Empty,
    /// Nothing precedes the `(`.
    #[error(
        "permission rule {rule:?} has no tool name; write `tool(specifier)`, or `*(specifier)` for any tool"
    )]
    EmptyTool {
        /// The rule as written.
        rule: String,
    },
    /// The tool part has characters a tool name cannot have.
    #[error(
        "permission rule {rule:?} names the tool {tool:?}; tool names use letters, digits, `_`, `-` and `.`, with an optional trailing `*`"
    )]
    BadToolName {
        /// The rule as written.
        rule: String,
        /// The tool part.
        tool: String,
    },
    /// A `(` without its closing `)` at the end, or a stray `)`.
    #[error(
        "permission rule {rule:?} has unbalanced parentheses; write `tool` or `tool(specifier)`, with the closing `)` last"
    )]
    Unbalanced {
        /// The rule as written.
        rule: String,
    },
    /// `tool()` or `tool(:*)`.
    #[error(
        "permission rule {rule:?} has an empty specifier; write the tool name alone to match every call"
    )]
    EmptySpecifier {
        /// The rule as written.
        rule: String,
    },
    /// A path pattern that is not a valid glob.
    #[error("permission rule {rule:?} has an invalid path pattern: {reason}")]
    BadGlob {
        /// The rule as written.
        rule: String,
        /// What is wrong with the glob.
        reason: String,
    },
    /// A `domain:` specifier that is not a host name or IP address.
    #[error(
        "permission rule {rule:?} has an invalid domain {domain:?} ({reason}); write `domain:example.com` without scheme, port or path"
    )]
    BadDomain {
        /// The rule as written.
        rule: String,
        /// The text after `domain:`.
        domain: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A URL tool's rule without `domain:`.
    #[error(
        "permission rule {rule:?}: rules for {tool} take `domain:HOST`, e.g. `{tool}(domain:example.com)`"
    )]
    NeedsDomain {
        /// The rule as written.
        rule: String,
        /// The tool part.
        tool: String,
    },
}

/// One parsed permission rule: `tool` or `tool(specifier)`. See the
/// [module documentation](self) for the syntax.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool_len: usize,
    tool: ToolPattern,
    specifier: Option<Specifier>,
}

impl Rule {
    /// Parses a rule.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] for an empty rule or tool name, a tool name with characters a
    /// tool name cannot have, unbalanced parentheses, an empty specifier, an invalid
    /// path glob, an invalid `domain:`, or a `web_fetch` rule without `domain:`.
    pub fn parse(text: &str) -> Result<Rule, PolicyError> {
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
            Some(inner) => Some(Specifier::parse(text, tool_text, &tool, inner)?),
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

    fn matches(&self, req: &Request<'_>, subject: &Subject<'_>) -> bool {
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

fn unbalanced(rule: &str) -> PolicyError {
    PolicyError::Unbalanced {
        rule: rule.to_string(),
    }
}

/// The tool part of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ToolPattern {
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
    fn parse(rule: &str, name: &str) -> Result<ToolPattern, PolicyError> {
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

    fn matches(&self, name: &str) -> bool {
        match self {
            ToolPattern::Any => true,
            ToolPattern::Exact(exact) => name == exact,
            ToolPattern::Prefix(prefix) | ToolPattern::McpServer(prefix) => {
                name.starts_with(prefix.as_str())
            }
        }
    }
}

/// What a tool's subject is, judged from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubjectKind {
    Command,
    Url,
    Path,
    Unknown,
}

impl SubjectKind {
    fn of(tool: &ToolPattern) -> SubjectKind {
        let ToolPattern::Exact(name) = tool else {
            return SubjectKind::Unknown;
        };
        let canonical = profile::built_in_canonical(name).unwrap_or(name);
        match canonical {
            "bash" | "run_command" => SubjectKind::Command,
            "web_fetch" => SubjectKind::Url,
            "read_file" | "write_file" | "edit_file" | "multi_edit" | "list_dir" | "glob"
            | "grep" => SubjectKind::Path,
            _ => SubjectKind::Unknown,
        }
    }
}

/// The part of a rule between the parentheses.
#[derive(Debug, Clone)]
enum Specifier {
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
    fn parse(
        rule: &str,
        tool_text: &str,
        tool: &ToolPattern,
        inner: &str,
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
        let kind = SubjectKind::of(tool);
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
                .map_err(|e| PolicyError::BadGlob {
                    rule: rule.to_string(),
                    reason: e.to_string(),
                })
        };
        match kind {
            SubjectKind::Command => {
                prefix().unwrap_or_else(|| Ok(Specifier::CommandExact(normalize_command(inner))))
            }
            SubjectKind::Url => domain().unwrap_or_else(|| {
                Err(PolicyError::NeedsDomain {
                    rule: rule.to_string(),
                    tool: tool_text.to_string(),
                })
            }),
            SubjectKind::Path => path(None),
            SubjectKind::Unknown => domain()
                .or_else(prefix)
                .unwrap_or_else(|| path(Some(inner.to_string()))),
        }
    }
}

/// Collapses runs of unquoted blanks (spaces and tabs) to one space and trims the
/// ends; quoted text and escaped characters are kept as they are.
pub(crate) fn normalize_command(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut quote: Option<char> = None;
    let mut blank = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            } else if c == '\\'
                && q == '"'
                && let Some(next) = chars.next()
            {
                out.push(next);
            }
            continue;
        }
        if c == ' ' || c == '\t' {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push(' ');
            blank = false;
        }
        out.push(c);
        if c == '\'' || c == '"' {
            quote = Some(c);
        } else if c == '\\'
            && let Some(next) = chars.next()
        {
            out.push(next);
        }
    }
    out
}

/// A host: a lowercase domain without a trailing dot, or an IP address.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostName {
    Domain(String),
    Ip(IpAddr),
}

impl HostName {
    fn from_url_host<S: AsRef<str>>(host: url::Host<S>) -> HostName {
        match host {
            url::Host::Domain(d) => {
                HostName::Domain(d.as_ref().trim_end_matches('.').to_ascii_lowercase())
            }
            url::Host::Ipv4(ip) => HostName::Ip(IpAddr::V4(ip)),
            url::Host::Ipv6(ip) => HostName::Ip(IpAddr::V6(ip)),
        }
    }
}

/// `domain:example.com` or `domain:*.example.com`.
#[derive(Debug, Clone)]
struct DomainPattern {
    host: HostName,
    subdomains_only: bool,
}

impl DomainPattern {
    fn parse(rule: &str, domain: &str) -> Result<DomainPattern, PolicyError> {
        let bad = |reason: &str| PolicyError::BadDomain {
            rule: rule.to_string(),
            domain: domain.to_string(),
            reason: reason.to_string(),
        };
        let (subdomains_only, host) = match domain.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, domain),
        };
        let host = host.trim_end_matches('.');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let host = match bare.parse::<IpAddr>() {
            Ok(ip) => HostName::Ip(ip),
            Err(_) if host.contains("://") => return Err(bad("a URL, not a host")),
            Err(_) if host.contains('/') => return Err(bad("a path is not part of a host")),
            Err(_) if host.contains(':') => return Err(bad("a port is not part of a host")),
            Err(_) if host.contains('@') || host.contains(char::is_whitespace) => {
                return Err(bad("not a host name"));
            }
            Err(_) => {
                HostName::from_url_host(url::Host::parse(host).map_err(|e| bad(&e.to_string()))?)
            }
        };
        if subdomains_only && matches!(host, HostName::Ip(_)) {
            return Err(bad("an IP address has no subdomains"));
        }
        Ok(DomainPattern {
            host,
            subdomains_only,
        })
    }

    fn matches(&self, host: &HostName) -> bool {
        match (&self.host, host) {
            (HostName::Ip(rule), HostName::Ip(ip)) => rule == ip,
            (HostName::Domain(rule), HostName::Domain(name)) => {
                let sub = name
                    .strip_suffix(rule.as_str())
                    .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.'));
                sub || (!self.subdomains_only && name == rule)
            }
            _ => false,
        }
    }
}

/// The host of a URL subject (`https://a.example.com/x`, or `a.example.com/x`
/// without a scheme), parsed the way an HTTP client parses it.
fn url_host(subject: &str) -> Option<HostName> {
    let subject = subject.trim();
    let parsed = if subject.contains("://") {
        url::Url::parse(subject)
    } else {
        url::Url::parse(&format!("https://{subject}"))
    };
    parsed.ok()?.host().map(HostName::from_url_host)
}

/// Where a path pattern is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Workspace,
    Absolute,
    Home,
    Anywhere,
}

/// A compiled gitignore-style path pattern.
#[derive(Debug, Clone)]
struct PathPattern {
    anchor: Anchor,
    matcher: GlobMatcher,
}

impl PathPattern {
    fn parse(spec: &str) -> Result<PathPattern, globset::Error> {
        let (anchor, glob) = if let Some(rest) = spec.strip_prefix('/') {
            let body = clean_absolute(rest);
            let glob = if body == "/" { "/**".to_string() } else { body };
            (Anchor::Absolute, glob)
        } else if spec == "~" || spec.starts_with("~/") {
            (Anchor::Home, or_everything(clean_relative(&spec[1..])))
        } else if let Some(rest) = spec.strip_prefix("./") {
            (Anchor::Workspace, or_everything(clean_relative(rest)))
        } else {
            let body = clean_relative(spec);
            if body.is_empty() {
                (Anchor::Workspace, "**".to_string())
            } else if body.starts_with("**/") || body == "**" {
                (Anchor::Anywhere, body)
            } else if !body.contains('/') {
                (Anchor::Anywhere, format!("**/{body}"))
            } else {
                (Anchor::Workspace, body)
            }
        };
        Ok(PathPattern {
            anchor,
            matcher: compile_glob(&glob)?,
        })
    }

    fn matches(&self, forms: &PathForms) -> bool {
        let candidates = match self.anchor {
            Anchor::Workspace => [forms.workspace.as_deref(), None, None],
            Anchor::Absolute => [None, forms.absolute.as_deref(), None],
            Anchor::Home => [None, None, forms.home.as_deref()],
            Anchor::Anywhere => [forms.preferred(), None, None],
        };
        candidates
            .into_iter()
            .flatten()
            .any(|path| ancestors(path).any(|p| self.matcher.is_match(p)))
    }
}

fn or_everything(glob: String) -> String {
    if glob.is_empty() {
        "**".to_string()
    } else {
        glob
    }
}

fn compile_glob(glob: &str) -> Result<GlobMatcher, globset::Error> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
}

/// `path` and each of its parent directories, longest first (`a/b/c`, `a/b`, `a`;
/// `/a/b`, `/a`).
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(path), |p| {
        p.rfind('/').filter(|&i| i > 0).and_then(|i| p.get(..i))
    })
}

/// Joins the segments of a `/`-separated path, dropping empty and `.` segments and
/// resolving `..` against the segment before it; `..` that climbs above the start
/// is kept for relative paths and dropped for absolute ones (`/..` is `/`).
fn clean_segments(path: &str, absolute: bool) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    parts.join("/")
}

fn clean_relative(path: &str) -> String {
    clean_segments(path, false)
}

/// `rest` is the path after its leading `/`.
fn clean_absolute(rest: &str) -> String {
    format!("/{}", clean_segments(rest, true))
}

/// `abs` relative to `base` (both clean and absolute), `""` when they are equal.
fn relative_to(abs: &str, base: &str) -> Option<String> {
    if base == "/" {
        return abs.strip_prefix('/').map(str::to_string);
    }
    let rest = abs.strip_prefix(base)?;
    if rest.is_empty() {
        Some(String::new())
    } else {
        rest.strip_prefix('/').map(str::to_string)
    }
}

fn absolute_path_string(path: &Path) -> Option<String> {
    path.to_str()?.strip_prefix('/').map(clean_absolute)
}

/// A path subject in the forms patterns are matched against.
#[derive(Debug, Default)]
struct PathForms {
    /// Relative to the workspace root.
    workspace: Option<String>,
    /// Absolute.
    absolute: Option<String>,
    /// Relative to the home directory.
    home: Option<String>,
}

impl PathForms {
    fn new(subject: &str, roots: &[String], home: Option<&str>) -> PathForms {
        let mut forms = PathForms::default();
        if let Some(rest) = subject.strip_prefix('/') {
            forms.absolute = Some(clean_absolute(rest));
        } else if subject == "~" || subject.starts_with("~/") {
            let rest = &subject[1..];
            forms.home = Some(clean_relative(rest));
            forms.absolute = home.map(|h| clean_absolute(&format!("{h}/{rest}")));
        } else {
            forms.workspace = Some(clean_relative(subject));
            forms.absolute = roots
                .first()
                .map(|root| clean_absolute(&format!("{root}/{subject}")));
        }
        if let Some(abs) = forms.absolute.as_deref() {
            if forms.workspace.is_none() {
                forms.workspace = roots.iter().find_map(|root| relative_to(abs, root));
            }
            if forms.home.is_none() {
                forms.home = home.and_then(|h| relative_to(abs, h));
            }
        }
        forms
    }

    /// The form a pattern that matches at any depth is checked against: the
    /// workspace form for paths inside the workspace, so that the directories above
    /// the root never match, else the absolute form, else whatever is known.
    fn preferred(&self) -> Option<&str> {
        let inside = self
            .workspace
            .as_deref()
            .filter(|w| *w != ".." && !w.starts_with("../"));
        inside
            .or(self.absolute.as_deref())
            .or(self.home.as_deref())
            .or(self.workspace.as_deref())
    }

    fn all(&self) -> impl Iterator<Item = &str> {
        [&self.workspace, &self.absolute, &self.home]
            .into_iter()
            .filter_map(|f| f.as_deref())
    }
}

/// A request's subject, with its interpretations computed on first use.
struct Subject<'a> {
    raw: Option<&'a str>,
    is_fs: bool,
    policy: &'a Policy,
    command: OnceCell<String>,
    host: OnceCell<Option<HostName>>,
    paths: OnceCell<PathForms>,
}

impl<'a> Subject<'a> {
    fn new(req: &Request<'a>, policy: &'a Policy) -> Subject<'a> {
        Subject {
            raw: req.subject,
            is_fs: req.permissions.iter().any(|p| p.starts_with("fs:")),
            policy,
            command: OnceCell::new(),
            host: OnceCell::new(),
            paths: OnceCell::new(),
        }
    }

    fn command(&self) -> &str {
        self.command
            .get_or_init(|| normalize_command(self.raw.unwrap_or_default()))
    }

    fn host(&self) -> Option<&HostName> {
        self.host
            .get_or_init(|| self.raw.and_then(url_host))
            .as_ref()
    }

    fn paths(&self) -> &PathForms {
        self.paths.get_or_init(|| {
            self.raw.map_or_else(PathForms::default, |raw| {
                PathForms::new(raw, &self.policy.roots, self.policy.home.as_deref())
            })
        })
    }
}

/// The built-in secret files: a gitignore-style name matched at any depth, and the
/// file names it does not cover.
const SECRET_FILES: &[(&str, &[&str])] = &[
    (".env", &[]),
    (".env.*", &[".env.example", ".env.sample", ".env.template"]),
    ("*.pem", &[]),
    ("*.key", &[]),
    ("id_rsa*", &["*.pub"]),
    ("id_ed25519*", &["*.pub"]),
    ("id_ecdsa*", &["*.pub"]),
    ("id_dsa*", &["*.pub"]),
    (".aws/credentials", &[]),
    (".aws/config", &[]),
    (".config/gcloud/**", &[]),
    (".azure/**", &[]),
    (".docker/config.json", &[]),
    (".kube/config", &[]),
    (".netrc", &[]),
    (".npmrc", &[]),
    (".pypirc", &[]),
    (".git-credentials", &[]),
    ("*.p12", &[]),
    ("*.pfx", &[]),
    ("*.keystore", &[]),
    (".ssh/**", &["*.pub", "known_hosts"]),
];

struct SecretFile {
    label: &'static str,
    except: Vec<GlobMatcher>,
}

/// The built-in secret files, all in one matcher (built once, matched in one pass:
/// the fast path for tools that look at many files).
struct Secrets {
    set: GlobSet,
    /// For each glob of `set`, its secret file.
    files: Vec<SecretFile>,
}

static SECRETS: LazyLock<Secrets> = LazyLock::new(|| {
    let mut builder = GlobSetBuilder::new();
    let mut files = Vec::new();
    for &(label, except) in SECRET_FILES {
        let Ok(glob) = GlobBuilder::new(&format!("**/{label}"))
            .literal_separator(true)
            .backslash_escape(true)
            .build()
        else {
            continue;
        };
        builder.add(glob);
        files.push(SecretFile {
            label,
            except: except.iter().filter_map(|e| compile_glob(e).ok()).collect(),
        });
    }
    let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
    Secrets { set, files }
});

/// The label of the built-in secret file (`.env`, `*.pem`, `.ssh/**`, ...) that
/// `path` is, if any. `path` uses `/` separators, relative to the workspace or
/// absolute. Tools that open many files (a search) skip these while the policy's
/// [secret defaults](Policy::secret_defaults) are on.
///
/// ```
/// use toolbelt_core::policy::secret_file_label;
///
/// assert_eq!(secret_file_label("app/.env"), Some(".env"));
/// assert_eq!(secret_file_label("app/.env.example"), None);
/// assert_eq!(secret_file_label("src/main.rs"), None);
/// ```
pub fn secret_file_label(path: &str) -> Option<&'static str> {
    if !might_be_secret(path) {
        return None;
    }
    let secrets = &*SECRETS;
    if !secrets.set.is_match(path) {
        return None;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    secrets.set.matches(path).into_iter().find_map(|i| {
        let secret = secrets.files.get(i)?;
        (!secret.except.iter().any(|e| e.is_match(name))).then_some(secret.label)
    })
}

/// File name endings of the built-in secret files that are not hidden names.
const SECRET_SUFFIXES: [&str; 5] = [".pem", ".key", ".p12", ".pfx", ".keystore"];

/// A cheap test that is true for every built-in secret file (and for few others):
/// a hidden component (`.env`, `.ssh/...`), an `id_*` key, or a key-file ending.
/// It spares a search the full match on almost every file.
fn might_be_secret(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.starts_with('.')
        || path.contains("/.")
        || name.starts_with("id_")
        || SECRET_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// The label of the built-in secret file `forms` names, if any.
fn secret_file(forms: &PathForms) -> Option<&'static str> {
    forms.all().find_map(secret_file_label)
}

/// Allow / ask / deny rules, checked deny → ask → allow, plus the built-in
/// secret-file defaults. See the [module documentation](self).
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
    rules: Vec<(Decision, Rule)>,
    secret_defaults: bool,
    roots: Vec<String>,
    home: Option<String>,
}

impl Default for Policy {
    /// No rules, with the secret-file defaults, and the home directory of the
    /// process for `~/` patterns.
    fn default() -> Policy {
        Policy {
            rules: Vec::new(),
            secret_defaults: true,
            roots: Vec::new(),
            home: std::env::home_dir().and_then(|h| absolute_path_string(&h)),
        }
    }
}

impl Policy {
    /// A policy from allow, ask and deny rules, with the secret-file defaults. One
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

    /// No rules at all, not even the secret-file defaults: everything is allowed.
    pub fn permissive() -> Policy {
        Policy::default().without_secret_defaults()
    }

    /// Adds a rule.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] when the rule does not parse (see [`Rule::parse`]).
    pub fn add(&mut self, decision: Decision, rule: &str) -> Result<(), PolicyError> {
        let rule = Rule::parse(rule)?;
        self.rules.push((decision, rule));
        Ok(())
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

    /// Evaluates a request: deny rules, then the secret-file defaults, then ask
    /// rules, then allow rules; allowed when nothing matches.
    ///
    /// A shell tool's command is split into its simple commands (see
    /// [`shell::simple_commands`]) when the policy has
    /// rules with a command specifier for the tool, and each part is judged on its
    /// own: the first part denied decides, else the first part that asks, else the
    /// call is allowed. While an allow rule with a command specifier names the tool,
    /// a part no rule matches asks; a command that cannot be parsed asks.
    pub fn evaluate(&self, req: &Request<'_>) -> Evaluation {
        if let Some(raw) = req.subject
            && is_shell_tool(req.tool)
            && self.has_command_rules(req)
        {
            return self.evaluate_shell(req, raw);
        }
        self.evaluate_whole(req)
    }

    /// Evaluates `req` for one simple command (no `&&`, `;`, `|`, ...) in place of
    /// its subject, without splitting it.
    pub fn evaluate_command(&self, req: &Request<'_>, command: &str) -> Evaluation {
        let req = Request {
            subject: Some(command),
            ..*req
        };
        if is_shell_tool(req.tool) && self.has_command_rules(&req) {
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
    fn first_match(&self, decision: Decision, req: &Request<'_>) -> Option<&Rule> {
        let subject = Subject::new(req, self);
        self.rules
            .iter()
            .find(|(d, rule)| *d == decision && rule.matches(req, &subject))
            .map(|(_, rule)| rule)
    }

    /// The request judged on its subject as it is, unsplit.
    fn evaluate_whole(&self, req: &Request<'_>) -> Evaluation {
        let subject = Subject::new(req, self);
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
        first(Decision::Ask)
            .or_else(|| first(Decision::Allow))
            .unwrap_or(Evaluation {
                decision: Decision::Allow,
                rule: None,
            })
    }

    /// Rules for the tool of `req` whose specifier depends on the command (neither
    /// absent nor `*`), optionally only those for `decision`.
    fn command_rules<'r>(
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

    fn has_command_rules(&self, req: &Request<'_>) -> bool {
        self.command_rules(req, None).next().is_some()
    }

    fn has_command_allow_rules(&self, req: &Request<'_>) -> bool {
        self.command_rules(req, Some(Decision::Allow))
            .next()
            .is_some()
    }

    /// A shell command line, split into its simple commands.
    fn evaluate_shell(&self, req: &Request<'_>, raw: &str) -> Evaluation {
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
    fn evaluate_part(
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
            None => Evaluation {
                decision: Decision::Allow,
                rule: None,
            },
        }
    }
}

/// The rule text of an evaluation that asks because a command line could not be
/// split into simple commands.
pub const UNPARSED_COMMAND: &str = "command could not be parsed";

/// Whether `tool` (canonical, or a name a built-in profile exposes) is a shell tool.
fn is_shell_tool(tool: &str) -> bool {
    matches!(
        profile::built_in_canonical(tool).unwrap_or(tool),
        "bash" | "run_command"
    )
}

/// The strictest of `evals`: the first deny, else the first ask, else the first.
fn strictest(evals: impl IntoIterator<Item = Evaluation>) -> Option<Evaluation> {
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
/// use toolbelt_core::policy::{Decision, PolicyConfig};
///
/// let config: PolicyConfig =
///     serde_json::from_str(r#"{"allow": ["bash(cargo test:*)"], "deny": ["web_fetch(domain:example.com)"]}"#)
///         .unwrap();
/// assert!(config.secret_defaults);
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
}

impl Default for PolicyConfig {
    fn default() -> PolicyConfig {
        PolicyConfig {
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            secret_defaults: true,
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
        let policy = Policy::from_rules(&self.allow, &self.ask, &self.deny)?;
        Ok(if self.secret_defaults {
            policy
        } else {
            policy.without_secret_defaults()
        })
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
