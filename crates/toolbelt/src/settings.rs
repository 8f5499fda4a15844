//! What the command line, the environment and the config file make together: the
//! workspace's [`Settings`], and the model settings of `toolbelt agent` and of
//! scheduled jobs ([`AgentSettings`], resolved only by what runs a model).
//!
//! Each value comes from the first of: a flag, the environment, `toolbelt.toml`,
//! the default.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toolbelt_agent::{
    AgentOptions, Constraint, ModelSize, Protocol, ProviderConfig, ProviderKind, Secret,
    ServerInfo, default_first_byte_timeout, is_local_url, probe_server,
};
use toolbelt_core::state::{self, StateLocation, StateSource};
use toolbelt_core::{Descriptions, Session};
use toolbelt_sandbox::SandboxMode;
use toolbelt_store::Location;

use crate::cli::{AgentArgs, Global};
use crate::config::{AgentConfig, FileConfig};

/// The default of `--max-repeats` for a small model.
const SMALL_MODEL_REPEAT_STOP: usize = 4;

/// The default of `--temperature` for a small model: low, so that its runs vary
/// little from one try to the next, not 0, where a model that goes wrong gives
/// the same wrong call every time.
pub const SMALL_MODEL_TEMPERATURE: f32 = 0.2;

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
    /// `--descriptions` / `TOOLBELT_DESCRIPTIONS`, else `[tools] descriptions`; none
    /// when neither says.
    pub descriptions: Option<Descriptions>,
    /// The other MCP servers whose tools are offered too.
    pub mcp_servers: crate::upstream::Servers,
    /// The post-edit pipeline's configuration, untrusted workspace commands left out.
    pub checks: toolbelt_diagnostics::Config,
    /// The tools serve a small model ([`Settings::for_small_model`]): the
    /// session takes the careful path and destructive commands are held.
    pub small_model: bool,
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
        let mut mcp_servers = crate::upstream::servers(&file, &first)?;
        let (checks, untrusted_checks) = crate::diagnostics::config(&file, &first);
        mcp_servers.untrusted.extend(untrusted_checks);
        let descriptions = match g.descriptions.as_ref().or(file.tools.descriptions.as_ref()) {
            None => None,
            Some(level) => Some(Descriptions::parse(level).with_context(|| {
                format!(
                    "unknown description level {level:?} (--descriptions, TOOLBELT_DESCRIPTIONS or [tools] descriptions); choose full or short"
                )
            })?),
        };
        Ok(Settings {
            checks,
            descriptions,
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
            small_model: false,
        })
    }

    /// What a small model works with, where nothing else is said: the minimal
    /// toolset (unless `--tools` or `[tools] enable` chose) and short descriptions
    /// (unless `--descriptions` or `[tools] descriptions` did); and always the
    /// guards of [`Settings::small_model`].
    pub fn for_small_model(&mut self) {
        if self.tool_selection.is_none() && self.file.tools.enable.is_empty() {
            self.tool_selection = Some("minimal".to_string());
        }
        if self.descriptions.is_none() {
            self.descriptions = Some(Descriptions::Short);
        }
        self.small_model = true;
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
    /// `auto`: the protocol is chosen by what the server says
    /// ([`AgentSettings::ask_server`]); `protocol` holds the choice until then.
    pub protocol_auto: bool,
    /// The protocol was given as native or text (not auto, not the default).
    pub protocol_given: bool,
    /// How big the model is.
    pub model_size: ModelSize,
    /// How the server holds a small model's replies to a call.
    pub constraint: Constraint,
    /// `auto`: the constraint is chosen by what the server supports
    /// ([`AgentSettings::ask_server`]); `constraint` is none until then.
    pub constrain_auto: bool,
    /// Model calls one prompt may take.
    pub max_steps: usize,
    /// The same call this many times in a row ends the run.
    pub max_repeats: usize,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// The context window was given (a flag or `[agent]`), not assumed.
    pub context_window_set: bool,
}

impl AgentSettings {
    /// The settings of `toolbelt agent`: `args`, then the environment, then `file`.
    ///
    /// # Errors
    /// No model is set, or a setting is invalid; the message says how to fix it.
    pub fn for_command(args: &AgentArgs, file: &AgentConfig) -> Result<AgentSettings> {
        AgentSettings::resolve(args, file, &non_empty_env)
    }

    /// True when `args` or `[agent]` say the model is small (checked before the
    /// workspace's tools are chosen).
    ///
    /// # Errors
    /// An unknown size.
    pub fn small_model(args: &AgentArgs, file: &AgentConfig) -> Result<bool> {
        match args.model_size.as_deref().or(file.model_size.as_deref()) {
            None => Ok(false),
            Some(size) => Ok(ModelSize::parse(size).with_context(|| {
                format!("unknown model size {size:?}; choose one of: large, small")
            })? == ModelSize::Small),
        }
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
        let local = is_local_url(&provider.base_url);
        match args.max_tokens.or(file.max_tokens) {
            Some(0) => bail!("--max-tokens ([agent] max_tokens) must be at least 1"),
            Some(max) => provider.max_tokens = max,
            None if local => provider.max_tokens = toolbelt_agent::LOCAL_MAX_TOKENS,
            None => {}
        }
        provider.first_byte_timeout = match args.first_byte_timeout.or(file.first_byte_timeout) {
            Some(0) => {
                bail!("--first-byte-timeout ([agent] first_byte_timeout) must be at least 1 second")
            }
            Some(secs) => std::time::Duration::from_secs(secs),
            None => default_first_byte_timeout(&provider.base_url),
        };
        let (protocol, protocol_auto) = match args.protocol.as_deref().or(file.protocol.as_deref())
        {
            None => (Protocol::Native, false),
            Some(p) if p.trim().eq_ignore_ascii_case("auto") => (Protocol::Native, true),
            Some(p) => (
                Protocol::parse(p).with_context(|| {
                    format!("unknown protocol {p:?}; choose one of: native, text, auto")
                })?,
                false,
            ),
        };
        let model_size = match args.model_size.as_deref().or(file.model_size.as_deref()) {
            None => ModelSize::Large,
            Some(size) => ModelSize::parse(size).with_context(|| {
                format!("unknown model size {size:?}; choose one of: large, small")
            })?,
        };
        let (constraint, constrain_auto) = constraint_of(args, file, model_size)?;
        let protocol = match constraint.protocol() {
            Some(needed)
                if !protocol_auto
                    && args
                        .protocol
                        .as_deref()
                        .or(file.protocol.as_deref())
                        .is_some()
                    && needed != protocol =>
            {
                bail!(
                    "--constrain {} works with the {} protocol, not {}",
                    constraint.as_str().replace('_', "-"),
                    needed.as_str(),
                    protocol.as_str()
                )
            }
            Some(needed) => needed,
            None => protocol,
        };
        let protocol_given = !protocol_auto
            && args
                .protocol
                .as_deref()
                .or(file.protocol.as_deref())
                .is_some();
        let protocol_auto = protocol_auto && constraint.protocol().is_none();
        provider.temperature = match args.temperature.or(file.temperature) {
            Some(t) if !(0.0..=2.0).contains(&t) => {
                bail!("--temperature ([agent] temperature) must be between 0 and 2, not {t}")
            }
            Some(t) => Some(t),
            None if model_size == ModelSize::Small => Some(SMALL_MODEL_TEMPERATURE),
            None => None,
        };
        provider.seed = args.seed.or(file.seed);
        let defaults = AgentOptions::default();
        let max_steps = args
            .max_steps
            .or(file.max_steps)
            .unwrap_or(defaults.max_steps);
        if max_steps == 0 {
            bail!("--max-steps must be at least 1");
        }
        // A small model that repeats itself seldom stops on its own: end sooner.
        let default_repeats = match model_size {
            ModelSize::Small => SMALL_MODEL_REPEAT_STOP,
            ModelSize::Large => defaults.repeat_stop,
        };
        let max_repeats = args
            .max_repeats
            .or(file.max_repeats)
            .unwrap_or(default_repeats);
        if max_repeats < 2 {
            bail!("--max-repeats must be at least 2 (the second identical call in a row)");
        }
        let context_window_set = args.context_window.or(file.context_window).is_some();
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
            protocol_auto,
            protocol_given,
            model_size,
            constraint,
            constrain_auto,
            max_steps,
            max_repeats,
            context_window,
            context_window_set,
        })
    }

    /// Asks a server on this machine or the local network what it runs
    /// ([`probe_server`]) when something is left to it: the protocol (`auto`), the
    /// context window (not given), the constraint of a small model's replies
    /// (`--constrain auto`, which may ask any server once, remembered). Returns
    /// what it learnt, in lines for the person; none when nothing was asked.
    pub async fn ask_server(&mut self) -> Vec<String> {
        let local = is_local_url(&self.provider.base_url);
        let mut said = Vec::new();
        let info = if local
            && (self.protocol_auto || !self.context_window_set || self.constrain_auto)
        {
            let info = probe_server(&self.provider).await;
            said.extend(self.learn(&info));
            info
        } else {
            if self.protocol_auto {
                self.protocol_auto = false;
                said.push(format!(
                    "--protocol auto: {} is not on this machine or the local network; using native function calling",
                    self.provider.base_url
                ));
            }
            ServerInfo::default()
        };
        if self.constrain_auto {
            self.constrain_auto = false;
            let memory = user_state_home().map(|home| home.join(crate::constraint::SERVERS_FILE));
            let (constraint, protocol, why) = crate::constraint::choose(
                &self.provider,
                self.protocol,
                self.protocol_given,
                &info,
                memory.as_deref(),
            )
            .await;
            self.constraint = constraint;
            self.protocol = protocol;
            let protocol = match protocol {
                Protocol::Native => "native function calling",
                Protocol::Text => "the text protocol",
            };
            said.insert(
                0,
                format!("constraint: {} ({why}; {protocol})", constraint.describe()),
            );
        }
        said
    }

    /// Takes what the server said; the line for the person, when it changed
    /// something.
    fn learn(&mut self, info: &ServerInfo) -> Option<String> {
        let mut said = Vec::new();
        if !self.context_window_set
            && let Some(window) = info.context_window
        {
            self.context_window = window.max(MIN_CONTEXT_WINDOW);
            said.push(format!("a context window of {window} tokens"));
        }
        if self.protocol_auto {
            self.protocol_auto = false;
            self.protocol = match info.tools {
                Some(false) => Protocol::Text,
                _ => Protocol::Native,
            };
            // A constraint still to choose picks the protocol it needs, and says so.
            if !self.constrain_auto {
                said.push(
                    match info.tools {
                        Some(true) => "a chat template that takes tools: native function calling",
                        Some(false) => "a chat template without tools: the text protocol",
                        None => "nothing about tools: native function calling",
                    }
                    .to_string(),
                );
            }
        }
        if said.is_empty() {
            return None;
        }
        let server = info.server.unwrap_or("the server");
        Some(format!(
            "{server} at {} says {}",
            self.provider.base_url,
            said.join("; ")
        ))
    }
}

/// `--constrain` over `[agent] constrain`: the constraint and whether it is
/// left to the server (`auto`, the default of a small model).
fn constraint_of(
    args: &AgentArgs,
    file: &AgentConfig,
    model_size: ModelSize,
) -> Result<(Constraint, bool)> {
    let small = model_size == ModelSize::Small;
    let Some(given) = args.constrain.as_deref().or(file.constrain.as_deref()) else {
        return Ok((Constraint::None, small));
    };
    if given.trim().eq_ignore_ascii_case("auto") {
        return Ok((Constraint::None, small));
    }
    let constraint = Constraint::parse(given).with_context(|| {
        format!("unknown constraint {given:?}; choose one of: auto, tool-choice, grammar, json-schema, none")
    })?;
    if !small && constraint != Constraint::None {
        bail!(
            "--constrain {given} is for small models, which end their runs with the finish tool: \
             add --model-size small"
        );
    }
    Ok((constraint, false))
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
