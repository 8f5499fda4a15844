//! What the command line, the environment and the config file make together: the
//! workspace's [`Settings`], and the model settings of `toolbelt agent` and of
//! scheduled jobs ([`AgentSettings`], resolved only by what runs a model).
//!
//! Each value comes from the first of: a flag, the environment, `toolbelt.toml`,
//! the default.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toolbelt_agent::{AgentOptions, Protocol, ProviderConfig, ProviderKind, Secret};
use toolbelt_core::Session;
use toolbelt_core::state::{self, StateLocation, StateSource};
use toolbelt_sandbox::SandboxMode;
use toolbelt_store::Location;

use crate::cli::{AgentArgs, Global};
use crate::config::{AgentConfig, FileConfig};

/// The smallest context window accepted, in tokens.
const MIN_CONTEXT_WINDOW: u64 = 2_000;

/// How to set a model, shown when none is set.
pub const NO_MODEL: &str = "no model is set: pass --model NAME, set TOOLBELT_AGENT_MODEL, \
     or add `model = \"...\"` under [agent] in toolbelt.toml";

/// The configuration the command line, the environment and the config file make.
#[derive(Debug)]
pub struct Settings {
    /// The workspace roots, absolute; the first is where relative paths start.
    pub roots: Vec<PathBuf>,
    /// The config file (empty when there is none).
    pub file: FileConfig,
    /// Where the store, saved outputs and agent runs are kept.
    pub state_dir: PathBuf,
    /// Why `state_dir` is where it is.
    pub state_source: StateSource,
    /// The shell sandbox's mode.
    pub sandbox: SandboxMode,
    /// Whether shell commands reach the network.
    pub network: bool,
    /// The store.
    pub store: Location,
    /// Whether calls are recorded in the call log.
    pub call_log: bool,
    /// The name profile asked for (`--profile`, else the file's), checked when the
    /// registry is built.
    pub profile: Option<String>,
    /// `--allow-private-network`.
    pub allow_private_network: bool,
    /// `--tools` / `TOOLBELT_TOOLS`, checked when the registry is built.
    pub tool_selection: Option<String>,
    /// The other MCP servers whose tools are offered too.
    pub mcp_servers: crate::upstream::Servers,
}

impl Settings {
    /// The settings of the command line `g`, the environment and the config file
    /// (`--config`, else `toolbelt.toml` in the first root).
    ///
    /// # Errors
    /// A root that is not a directory, an unreadable or invalid config file, an
    /// unknown sandbox mode, an invalid database URL.
    pub fn new(g: &Global) -> Result<Settings> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let mut roots: Vec<PathBuf> = g.roots.iter().map(|r| cwd.join(r)).collect();
        let first = roots.first().cloned().unwrap_or_else(|| cwd.clone());
        let file = FileConfig::discover(g.config.as_deref(), &first)?;
        if roots.is_empty() {
            roots = if file.roots.is_empty() {
                vec![cwd.clone()]
            } else {
                file.roots.clone()
            };
        }
        for r in &roots {
            if !r.is_dir() {
                bail!("workspace root {} is not a directory", r.display());
            }
        }
        let first = roots.first().cloned().unwrap_or(cwd);
        let StateLocation {
            dir: state_dir,
            source: state_source,
        } = match (&g.state_dir, &file.state_dir) {
            (Some(dir), _) => StateLocation {
                dir: dir.clone(),
                source: StateSource::Explicit,
            },
            (None, Some(dir)) => StateLocation {
                dir: dir.clone(),
                source: StateSource::Config,
            },
            (None, None) => state::default_state_dir(&first, user_state_home().as_deref()),
        };
        let sandbox = match g.sandbox.as_ref().or(file.shell.sandbox.as_ref()) {
            None => SandboxMode::None,
            Some(name) => SandboxMode::parse(name).with_context(|| {
                format!(
                    "unknown sandbox mode {name:?}; choose one of: none, read-only, workspace-write"
                )
            })?,
        };
        let network = g
            .network
            .or(file.shell.network)
            .unwrap_or(sandbox == SandboxMode::None);
        let store = match g.database_url.as_ref().or(file.store.database_url.as_ref()) {
            Some(url) => Location::parse(url).context(
                "invalid database URL (--database-url, TOOLBELT_DATABASE_URL or [store] database_url)",
            )?,
            None => Location::in_state_dir(&state_dir),
        };
        let call_log = g.call_log.or(file.store.call_log).unwrap_or(true);
        let mcp_servers = crate::upstream::servers(&file, &first)?;
        Ok(Settings {
            mcp_servers,
            roots,
            profile: g.profile.clone().or(file.profile.clone()),
            file,
            state_dir,
            state_source,
            sandbox,
            network,
            store,
            call_log,
            allow_private_network: g.allow_private_network,
            tool_selection: g.tool_selection.clone(),
        })
    }

    /// The state directory and why it is there.
    pub fn state_location(&self) -> StateLocation {
        StateLocation {
            dir: self.state_dir.clone(),
            source: self.state_source,
        }
    }
}

/// `$XDG_STATE_HOME/toolbelt`, else `$HOME/.local/state/toolbelt`.
pub fn user_state_home() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).map(PathBuf::from);
    state::user_state_home(var("XDG_STATE_HOME").as_deref(), var("HOME").as_deref())
}

/// Where `toolbelt serve` keeps its token: the state directory, unless that is
/// inside a workspace root (a workspace's own `.toolbelt/`), where any command
/// could read it; then the workspace's directory in the user's state directory.
///
/// # Errors
/// The state directory is inside the workspace and there is no user state
/// directory to use instead.
pub fn token_dir(session: &Session) -> Result<PathBuf> {
    let dir = session.state_dir();
    let inside = session
        .roots()
        .iter()
        .any(|r| dir.starts_with(r) || real_path(dir).starts_with(real_path(r)));
    if !inside {
        return Ok(dir.to_path_buf());
    }
    let first = session
        .roots()
        .first()
        .map_or_else(|| session.cwd().to_path_buf(), Clone::clone);
    match user_state_home() {
        Some(home) => Ok(home.join(state::workspace_id(&first))),
        None => bail!(
            "the state directory {} is inside the workspace, where commands could read the \
             token; pass --token, or set XDG_STATE_HOME or HOME",
            dir.display()
        ),
    }
}

/// `path` with its links resolved, or as it is when it cannot be (it does not exist).
pub fn real_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The model `toolbelt agent` (or a scheduled job) talks to and the limits of its
/// loop: flags, then the environment, then `[agent]`, then the defaults.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// The provider, model, base URL and key.
    pub provider: ProviderConfig,
    /// The variable the key was looked for in.
    pub key_env: String,
    /// How the model calls tools.
    pub protocol: Protocol,
    /// Model calls one prompt may take.
    pub max_steps: usize,
    /// The same call this many times in a row ends the run.
    pub max_repeats: usize,
    /// The model's context window, in tokens.
    pub context_window: u64,
}

impl AgentSettings {
    /// The settings of `toolbelt agent`: `args`, then the environment, then `file`.
    ///
    /// # Errors
    /// No model is set, or a setting is invalid; the message says how to fix it.
    pub fn for_command(args: &AgentArgs, file: &AgentConfig) -> Result<AgentSettings> {
        AgentSettings::resolve(args, file, &non_empty_env)
    }

    /// The settings of runs nobody started from the command line (scheduled jobs):
    /// the environment (`TOOLBELT_AGENT_PROVIDER`, `TOOLBELT_AGENT_MODEL`, the base
    /// URL and key variables), then `[agent]`, then the defaults, as `toolbelt
    /// agent` without flags.
    ///
    /// # Errors
    /// No model is set, or a setting is invalid; the message says how to fix it.
    pub fn for_jobs(file: &AgentConfig) -> Result<AgentSettings> {
        let args = AgentArgs {
            provider: non_empty_env("TOOLBELT_AGENT_PROVIDER"),
            model: non_empty_env("TOOLBELT_AGENT_MODEL"),
            ..AgentArgs::default()
        };
        AgentSettings::resolve(&args, file, &non_empty_env)
    }

    /// Flags, then the environment (`env` reads a variable), then `[agent]`, then
    /// the defaults.
    fn resolve(
        args: &AgentArgs,
        file: &AgentConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<AgentSettings> {
        let name = args
            .provider
            .as_deref()
            .or(file.provider.as_deref())
            .unwrap_or("openai");
        let kind = ProviderKind::parse(name).with_context(|| {
            format!("unknown provider {name:?}; choose one of: openai, anthropic")
        })?;
        let model = args
            .model
            .as_deref()
            .or(file.model.as_deref())
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .context(NO_MODEL)?;
        let base_url = args
            .base_url
            .clone()
            .or_else(|| env(kind.base_url_env()))
            .or(file.base_url.clone())
            .unwrap_or_else(|| kind.default_base_url().to_string());
        let parsed = url::Url::parse(&base_url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .with_context(|| {
                format!("invalid base URL {base_url:?}: give an http:// or https:// URL")
            })?;
        let key_env = file
            .api_key_env
            .clone()
            .unwrap_or_else(|| kind.default_key_env().to_string());
        let mut provider = ProviderConfig::new(kind, model);
        provider.base_url = parsed.as_str().trim_end_matches('/').to_string();
        provider.api_key = env(&key_env).map(Secret::new);
        if let Some(max) = file.max_tokens {
            if max == 0 {
                bail!("[agent] max_tokens must be at least 1");
            }
            provider.max_tokens = max;
        }
        let protocol = match args.protocol.as_deref().or(file.protocol.as_deref()) {
            None => Protocol::Native,
            Some(p) => Protocol::parse(p)
                .with_context(|| format!("unknown protocol {p:?}; choose one of: native, text"))?,
        };
        let defaults = AgentOptions::default();
        let max_steps = args
            .max_steps
            .or(file.max_steps)
            .unwrap_or(defaults.max_steps);
        if max_steps == 0 {
            bail!("--max-steps must be at least 1");
        }
        let max_repeats = args
            .max_repeats
            .or(file.max_repeats)
            .unwrap_or(defaults.repeat_stop);
        if max_repeats < 2 {
            bail!("--max-repeats must be at least 2 (the second identical call in a row)");
        }
        let context_window = args
            .context_window
            .or(file.context_window)
            .unwrap_or(defaults.context_window);
        if context_window < MIN_CONTEXT_WINDOW {
            bail!("--context-window must be at least {MIN_CONTEXT_WINDOW} tokens");
        }
        Ok(AgentSettings {
            provider,
            key_env,
            protocol,
            max_steps,
            max_repeats,
            context_window,
        })
    }
}

/// The variable `name`, trimmed, when it is set and not blank.
fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
