//! How a server is configured: `[mcp_servers.NAME]` in `toolbelt.toml` (the
//! keys Codex uses are accepted too), or a `.mcp.json` as Claude Code and Cursor
//! write it; and the checked form the connections use, [`ServerSpec`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toolbelt_core::Secret;

/// What joins a server's name and its tool's name: `github__create_issue`.
pub const DEFAULT_SEPARATOR: &str = "__";

/// How long a server may take to start and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one call to a server's tool may take.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest timeout accepted: a day.
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// `[mcp_servers.NAME]` as written: a `command` (stdio) or a `url` (streamable
/// HTTP), and how the server's tools are used.
///
/// ```toml
/// [mcp_servers.files]
/// command = "npx"
/// args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
/// env = { LOG_LEVEL = "warn" }
/// cwd = "."                      # relative to the config file
///
/// [mcp_servers.tracker]
/// url = "https://mcp.example.com/mcp"
/// bearer_token_env = "TRACKER_TOKEN"   # sent as `Authorization: Bearer ...`
/// headers = { "X-Team" = "core" }
/// startup = "lazy"               # eager (default): at start; lazy: on first use
/// startup_timeout = 30           # seconds
/// tool_timeout = 120             # seconds
/// tools = ["search", "create_issue"]   # only these (default: all)
/// disable = ["delete_issue"]
/// enabled = true
/// ```
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for it (values may be secrets: never shown).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory, relative to the config file (default: the first root).
    pub cwd: Option<PathBuf>,
    /// The streamable HTTP endpoint of a remote server.
    pub url: Option<String>,
    /// Headers sent with every request to `url` (values never shown).
    #[serde(default, alias = "http_headers")]
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for `url`.
    #[serde(alias = "bearer_token_env_var")]
    pub bearer_token_env: Option<String>,
    /// `false` keeps the server configured but unused.
    pub enabled: Option<bool>,
    /// `eager` (at start) or `lazy` (on the first call of one of its tools).
    pub startup: Option<String>,
    /// Seconds the server may take to start and list its tools.
    #[serde(alias = "startup_timeout_sec")]
    pub startup_timeout: Option<f64>,
    /// Seconds one call may take.
    #[serde(alias = "tool_timeout_sec")]
    pub tool_timeout: Option<f64>,
    /// Only these of its tools (by the server's names).
    #[serde(alias = "enabled_tools")]
    pub tools: Option<Vec<String>>,
    /// Not these of its tools.
    #[serde(default, alias = "disabled_tools")]
    pub disable: Vec<String>,
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("url", &self.url.as_deref().map(shown_url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("bearer_token_env", &self.bearer_token_env)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

/// When a server is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Startup {
    /// When the tools are built: its tools are listed from the start.
    #[default]
    Eager,
    /// On the first call of one of its tools; its tools are listed from the last
    /// time it ran (it is started at once when they were never listed).
    Lazy,
}

/// How to reach a server.
#[derive(Clone, PartialEq)]
pub enum Transport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: Vec<(String, Secret)>,
        /// Its working directory (`None`: the caller's).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Headers of every request (an `Authorization` one among them for a token).
        headers: Vec<(String, Secret)>,
    },
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Transport {
    /// What a person reads: the command line, or the URL without its query or
    /// user info; never an environment value or a header.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                let mut line = command.clone();
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                format!("stdio: {line}")
            }
            Transport::Http { url, .. } => format!("http: {}", shown_url(url)),
        }
    }
}

/// One server, checked: what the connections use.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// The name its tools are prefixed with.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// When it is started.
    pub startup: Startup,
    /// How long it may take to start and list its tools.
    pub startup_timeout: Duration,
    /// How long one call may take.
    pub tool_timeout: Duration,
    /// Only these tools, when set.
    pub allow: Option<Vec<String>>,
    /// Not these tools.
    pub disable: Vec<String>,
    /// Where it was configured (a file), for messages.
    pub origin: String,
}

impl ServerSpec {
    /// Whether the server's tool `tool` is used.
    pub fn offers(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|t| t == tool))
            && !self.disable.iter().any(|t| t == tool)
    }
}

/// Why a server's configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The name cannot prefix tool names.
    #[error(
        "MCP server name {name:?} ({origin}) must be letters, digits, '-' and '_' (at most 32), without {separator:?}"
    )]
    Name {
        /// The name.
        name: String,
        /// Where it was configured.
        origin: String,
        /// The separator in use.
        separator: String,
    },
    /// Something in one server's entry.
    #[error("MCP server {name:?} ({origin}): {reason}")]
    Invalid {
        /// The server.
        name: String,
        /// Where it was configured.
        origin: String,
        /// What is wrong and how to fix it.
        reason: String,
        /// The error behind it, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// A `.mcp.json` that cannot be read or parsed.
    #[error("cannot read {path}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why: the file system's, the JSON parser's or the variables' error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl ServerConfig {
    /// Whether the server is used.
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The checked form of server `name`, configured in `origin`; a relative `cwd`
    /// starts at `base`. A `bearer_token_env` is read from `env` now.
    ///
    /// # Errors
    /// [`ConfigError`] saying which key is wrong and how to write it.
    pub fn resolve(
        &self,
        name: &str,
        origin: &str,
        base: &Path,
        separator: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerSpec, ConfigError> {
        let invalid = |reason: String| ConfigError::Invalid {
            name: name.to_string(),
            origin: origin.to_string(),
            reason,
            source: None,
        };
        if !valid_name(name, separator) {
            return Err(ConfigError::Name {
                name: name.to_string(),
                origin: origin.to_string(),
                separator: separator.to_string(),
            });
        }
        let transport = match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "give either `command` (a stdio server) or `url` (streamable HTTP), not both"
                        .into(),
                ));
            }
            (None, None) => {
                return Err(invalid(
                    "give `command` (a stdio server) or `url` (streamable HTTP)".into(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(invalid("`command` is empty".into()));
                }
                if !self.headers.is_empty() || self.bearer_token_env.is_some() {
                    return Err(invalid(
                        "`headers` and `bearer_token_env` are for `url` servers; a stdio server gets `env`"
                            .into(),
                    ));
                }
                Transport::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: self
                        .env
                        .iter()
                        .map(|(k, v)| (k.clone(), Secret::new(v.clone())))
                        .collect(),
                    cwd: self.cwd.as_ref().map(|c| base.join(c)),
                }
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err(invalid(
                        "`args`, `env` and `cwd` are for `command` servers; a `url` server gets `headers`"
                            .into(),
                    ));
                }
                let parsed = reqwest::Url::parse(url.trim()).map_err(|e| ConfigError::Invalid {
                    name: name.to_string(),
                    origin: origin.to_string(),
                    reason: format!("`url` {:?} is not a URL", shown_url(url)),
                    source: Some(Box::new(e)),
                })?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(invalid(format!(
                        "`url` must be http:// or https://, not {}://",
                        parsed.scheme()
                    )));
                }
                let mut headers = Vec::new();
                for (key, value) in &self.headers {
                    if reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_err()
                        || reqwest::header::HeaderValue::from_str(value).is_err()
                    {
                        return Err(invalid(format!(
                            "header {key:?} is not a valid HTTP header"
                        )));
                    }
                    headers.push((key.clone(), Secret::new(value.clone())));
                }
                if let Some(var) = &self.bearer_token_env {
                    let token = env(var).filter(|t| !t.trim().is_empty()).ok_or_else(|| {
                        invalid(format!(
                            "`bearer_token_env` names {var}, which is not set in the environment"
                        ))
                    })?;
                    if headers
                        .iter()
                        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                    {
                        return Err(invalid(
                            "both `bearer_token_env` and an Authorization header are set; keep one"
                                .into(),
                        ));
                    }
                    headers.push((
                        "Authorization".into(),
                        Secret::new(format!("Bearer {}", token.trim())),
                    ));
                }
                Transport::Http {
                    url: parsed.to_string(),
                    headers,
                }
            }
        };
        let startup = match self.startup.as_deref() {
            None | Some("eager") => Startup::Eager,
            Some("lazy") => Startup::Lazy,
            Some(other) => {
                return Err(invalid(format!(
                    "unknown `startup` {other:?}; choose eager or lazy"
                )));
            }
        };
        let seconds = |key: &str, value: Option<f64>, default: Duration| match value {
            None => Ok(default),
            Some(s) if s > 0.0 && s <= MAX_TIMEOUT_SECS => Ok(Duration::from_secs_f64(s)),
            Some(s) => Err(invalid(format!(
                "`{key}` is {s}; give seconds above 0 and at most {MAX_TIMEOUT_SECS}"
            ))),
        };
        Ok(ServerSpec {
            name: name.to_string(),
            transport,
            startup,
            startup_timeout: seconds(
                "startup_timeout",
                self.startup_timeout,
                DEFAULT_STARTUP_TIMEOUT,
            )?,
            tool_timeout: seconds("tool_timeout", self.tool_timeout, DEFAULT_TOOL_TIMEOUT)?,
            allow: self.tools.clone(),
            disable: self.disable.clone(),
            origin: origin.to_string(),
        })
    }
}

/// A name that prefixes tool names: `[A-Za-z0-9_-]{1,32}`, without the separator.
fn valid_name(name: &str, separator: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && (separator.is_empty() || !name.contains(separator))
}

/// `url` without its user info, query and fragment: what messages show.
fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url.trim()) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "(not a URL)".to_string(),
    }
}

/// A `.mcp.json`: `{"mcpServers": {"NAME": {...}}}`, the format Claude Code and
/// Cursor read. `${VAR}` and `${VAR:-default}` in its strings are replaced from
/// the environment, as those programs do.
#[derive(Debug, Default, Deserialize)]
pub struct McpJson {
    /// The servers.
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, JsonServer>,
}

/// One server of a `.mcp.json`.
#[derive(Debug, Default, Deserialize)]
struct JsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Cursor's and others' switch.
    disabled: Option<bool>,
}

impl McpJson {
    /// The servers of the `.mcp.json` at `path`, as `[mcp_servers]` entries.
    ///
    /// # Errors
    /// [`ConfigError::File`] when it cannot be read or parsed, or names a variable
    /// that is not set and has no default; [`ConfigError::Invalid`] for a legacy
    /// SSE server.
    pub fn load(
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<BTreeMap<String, ServerConfig>, ConfigError> {
        let file = |source: Box<dyn std::error::Error + Send + Sync + 'static>| ConfigError::File {
            path: path.to_path_buf(),
            source,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file(Box::new(e)))?;
        let parsed: McpJson = serde_json::from_str(&text).map_err(|e| file(Box::new(e)))?;
        let expand = |s: &str| expand_vars(s, env).map_err(|e| file(Box::new(e)));
        let mut out = BTreeMap::new();
        for (name, s) in parsed.servers {
            if s.kind.as_deref() == Some("sse") {
                return Err(ConfigError::Invalid {
                    name,
                    origin: path.display().to_string(),
                    reason: "the legacy SSE transport is not supported; give the server's streamable HTTP endpoint (`\"type\": \"http\"`)".into(),
                    source: None,
                });
            }
            let config = ServerConfig {
                command: s.command.as_deref().map(expand).transpose()?,
                args: s.args.iter().map(|a| expand(a)).collect::<Result<_, _>>()?,
                env: s
                    .env
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                    .collect::<Result<_, ConfigError>>()?,
                cwd: s.cwd,
                url: s.url.as_deref().map(expand).transpose()?,
                headers: s
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                    .collect::<Result<_, ConfigError>>()?,
                enabled: s.disabled.map(|d| !d),
                ..ServerConfig::default()
            };
            out.insert(name, config);
        }
        Ok(out)
    }
}

/// Why `${...}` in a `.mcp.json` cannot be replaced.
#[derive(Debug, thiserror::Error)]
enum ExpandError {
    /// `${` without its `}`.
    #[error("an unclosed ${{ in {0:?}")]
    Unclosed(String),
    /// A variable that is not set, without a default.
    #[error("${{{0}}} is used but {0} is not set (write ${{{0}:-default}} for a default)")]
    Unset(String),
}

/// `text` with `${VAR}` and `${VAR:-default}` replaced from `env`.
fn expand_vars(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ExpandError::Unclosed(text.to_string()));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        match (env(var), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset(var.to_string())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
