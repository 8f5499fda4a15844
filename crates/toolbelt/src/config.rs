//! `toolbelt.toml` and the environment: what the command line did not say.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use toolbelt_core::toolset::ToolSelection;
use toolbelt_policy::PolicyConfig;

use crate::cli::McpFlags;

/// The smallest output budget accepted: below it, truncation markers alone fill the text.
const MIN_OUTPUT_BYTES: usize = 1_024;

/// The configuration file, all keys optional.
///
/// ```toml
/// profile = "claude"
/// state_dir = ".toolbelt"
/// roots = ["."]
/// timeout_ms = 120000
///
/// [output]
/// max_bytes = 30000
///
/// [shell]
/// sandbox = "workspace-write"   # none, read-only or workspace-write
/// network = false               # default: off in a sandbox, on without
///
/// [web]
/// allow_private_network = false # let web_fetch reach local servers
/// user_agent = "..."            # default: toolbelt's own
/// proxy = "http://proxy:3128"   # default: none (ambient *_PROXY is ignored)
/// search = "duckduckgo"         # duckduckgo (no key), brave (BRAVE_API_KEY), searxng
/// search_url = "http://localhost:8888/"   # the engine's address (required for searxng)
///
/// [store]
/// database_url = "postgres://user:password@host/toolbelt"   # default: <state_dir>/toolbelt.db
/// call_log = true               # record every call (`toolbelt log`)
///
/// [permissions]
/// deny = ["read_file(./secrets/**)"]
/// ask = ["bash(git push:*)"]
/// allow = []
///
/// [agent]
/// provider = "openai"           # openai (any Chat Completions server) or anthropic
/// model = "gpt-4.1"
/// base_url = "http://localhost:11434/v1"   # default: the provider's own
/// api_key_env = "OPENROUTER_API_KEY"       # default: OPENAI_API_KEY / ANTHROPIC_API_KEY
/// max_steps = 100               # model calls one prompt may take
/// max_repeats = 8               # the same call this many times in a row ends the run
/// protocol = "native"           # native, text (Action: tool[{...}]) or auto (asks a local server)
/// model_size = "large"          # small: minimal tools, short descriptions, a short prompt
/// constrain = "auto"            # small: tool-choice, grammar, json-schema or none
/// temperature = 0.2             # default: 0.2 for a small model, else the server's
/// seed = 42                     # for servers that take one
/// context_window = 128000       # tokens (default: what a local server says, else 128000)
/// max_tokens = 8192             # tokens of one answer (default 2048 for a local server)
/// first_byte_timeout = 300      # seconds to wait for an answer to start (1800 for a local server)
///
/// [mcp]                         # toolbelt mcp and /mcp of toolbelt serve
/// structured_content = "auto"   # auto, always or never (see `toolbelt mcp --help`)
/// output_budget = 8000          # bytes of one result's text (default: per client)
/// tool_separator = "__"         # joins a server's name and its tools' (files__read_file)
///
/// [mcp_servers.files]           # another MCP server's tools, as files__read_file ...
/// command = "npx"               # or url = "https://.../mcp" (streamable HTTP)
/// args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
///
/// [tools]                       # default: every tool
/// enable = ["coding", "web"]    # toolsets or tool names
/// disable = ["bash"]
/// descriptions = "full"         # or short: first paragraphs only, for small models
///
/// [[hooks.pre_tool_use]]        # run before calls (see `toolbelt hooks --help`)
/// match = "bash"
/// if = "bash(git push --force:*)"
/// command = ".toolbelt/hooks/no-force-push.sh"   # exit 2 blocks, stderr says why
///
/// [channels.team]               # where `message` and `cron` jobs send (see toolbelt_sched)
/// kind = "slack"                # webhook, telegram, slack, discord, email, file
/// url_env = "SLACK_WEBHOOK_URL" # secrets from the environment (or url = "...")
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Name profile: default, claude, kimi, exec, run-command or camel-planner (seed001, seed002 and seed003 are older names of the last three).
    pub profile: Option<String>,
    /// State directory; relative to the file's directory.
    pub state_dir: Option<PathBuf>,
    /// Workspace roots; relative to the file's directory.
    #[serde(default)]
    pub roots: Vec<PathBuf>,
    /// Default per-call timeout.
    pub timeout_ms: Option<u64>,
    /// Output budget.
    #[serde(default)]
    pub output: OutputConfig,
    /// Permission rules.
    #[serde(default)]
    pub permissions: Option<PolicyConfig>,
    /// Shell commands.
    #[serde(default)]
    pub shell: ShellConfig,
    /// The web tools.
    #[serde(default)]
    pub web: WebConfig,
    /// The store.
    #[serde(default)]
    pub store: StoreConfig,
    /// `toolbelt agent`.
    #[serde(default)]
    pub agent: AgentConfig,
    /// `[tools]`: the tools served.
    #[serde(default)]
    pub tools: ToolsConfig,
    /// `[mcp]`: how MCP results are shaped.
    #[serde(default)]
    pub mcp: McpConfig,
    /// `[checkpoints]`: what is kept so that tool calls can be undone.
    #[serde(default)]
    pub checkpoints: CheckpointsConfig,
    /// `[hooks]`: the person's own commands and rules around every call (those
    /// of a file inside the workspace run once `toolbelt hooks trust` recorded them).
    #[serde(default)]
    pub hooks: Option<toolbelt_hooks::HooksConfig>,
    /// `[diagnostics]`: what is checked after a write and how much is shown.
    #[serde(default)]
    pub diagnostics: Option<toolbelt_diagnostics::config::Settings>,
    /// `[format.LANG]`: a formatter run on the edited lines before the write.
    #[serde(default)]
    pub format: std::collections::BTreeMap<String, toolbelt_diagnostics::config::FormatSpec>,
    /// `[lint.LANG]`: a linter run after each write.
    #[serde(default)]
    pub lint: std::collections::BTreeMap<String, toolbelt_diagnostics::config::LintSpec>,
    /// `[lsp.LANG]`: a language server asked after each write.
    #[serde(default)]
    pub lsp: std::collections::BTreeMap<String, toolbelt_diagnostics::config::LspSpec>,
    /// `[channels.NAME]`: the channels of the `message` and `cron` tools.
    #[serde(default)]
    pub channels: std::collections::BTreeMap<String, toolbelt_sched::ChannelConfig>,
    /// `[mcp_servers.NAME]`: other MCP servers whose tools are offered too.
    #[serde(default)]
    pub mcp_servers: std::collections::BTreeMap<String, toolbelt_upstream::ServerConfig>,
    /// The file this was read from.
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

/// `[agent]`: the model `toolbelt agent` talks to and how the loop runs.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// `openai` (any Chat Completions server) or `anthropic`.
    pub provider: Option<String>,
    /// The model name.
    pub model: Option<String>,
    /// The API's base URL (OpenAI's includes `/v1`).
    pub base_url: Option<String>,
    /// The environment variable holding the API key (the key itself is never in the file).
    pub api_key_env: Option<String>,
    /// Model calls one prompt may take.
    pub max_steps: Option<usize>,
    /// The same call this many times in a row ends the run.
    pub max_repeats: Option<usize>,
    /// `native`, `text` or `auto`.
    pub protocol: Option<String>,
    /// `large` or `small`.
    pub model_size: Option<String>,
    /// `auto`, `tool-choice`, `grammar`, `json-schema` or `none` (small models).
    pub constrain: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// The model's context window, in tokens.
    pub context_window: Option<u64>,
    /// Tokens of one answer.
    pub max_tokens: Option<u32>,
    /// Seconds to wait for the first bytes of an answer.
    pub first_byte_timeout: Option<u64>,
    /// `[agent.subagents]`: the limits of subagents (`task`, `spawn`).
    #[serde(default)]
    pub subagents: SubagentsConfig,
}

/// `[agent.subagents]`: how far subagents may go.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentsConfig {
    /// Levels of subagents (1: subagents cannot start their own; at most 3).
    pub max_depth: Option<usize>,
    /// Subagents running at once (default 4).
    pub max_running: Option<usize>,
    /// Model calls one subagent may make (default 50).
    pub max_steps: Option<usize>,
    /// Seconds one `task` subagent may run (default and at most 600).
    pub timeout_secs: Option<u64>,
    /// Seconds one background subagent may run (default 1800).
    pub background_timeout_secs: Option<u64>,
    /// Tokens one subagent may use (default 2,000,000).
    pub token_budget: Option<u64>,
}

/// `[tools]`: which tools are served, by toolset or name (`enable = ["coding",
/// "web"]`, `disable = ["bash"]`); every tool when `enable` is empty.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Sets and tools to serve (default: all).
    #[serde(default)]
    pub enable: Vec<String>,
    /// Sets and tools left out.
    #[serde(default)]
    pub disable: Vec<String>,
    /// `full` or `short`: how much of each description models see.
    pub descriptions: Option<String>,
}

impl ToolsConfig {
    /// The selection: `flag` (`--tools` / `TOOLBELT_TOOLS`, which may hold `-NAME`
    /// items too) instead of `enable` when given; `disable` always applies.
    pub fn selection(&self, flag: Option<&str>) -> ToolSelection {
        let mut selection = match flag {
            Some(list) => ToolSelection::parse(list),
            None => {
                let mut s = ToolSelection::all();
                for name in &self.enable {
                    s.enable(name.trim());
                }
                s
            }
        };
        for name in &self.disable {
            selection.disable(name.trim());
        }
        selection
    }
}

/// `[store]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// PostgreSQL URL or SQLite file; relative files are relative to the config file's directory.
    pub database_url: Option<String>,
    /// Record every call in the call log.
    pub call_log: Option<bool>,
}

/// `[checkpoints]`: what is kept so that what tool calls change in the files can be
/// seen and undone (`toolbelt checkpoints`, `toolbelt rewind`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsConfig {
    /// Take checkpoints (default true).
    pub enabled: Option<bool>,
    /// Refuse a call that cannot be checkpointed (default false: it runs, and its
    /// result says why there is no checkpoint).
    pub required: Option<bool>,
    /// A larger file is recorded as not captured (default 16).
    pub max_file_mib: Option<u64>,
    /// The content kept for all checkpoints; the oldest are pruned past it
    /// (default 1024).
    pub max_total_mib: Option<u64>,
    /// Checkpoints older than this are pruned (default 30).
    pub max_age_days: Option<u64>,
    /// How long one walk of the workspace may take before the checkpoint is
    /// marked partial (default 5000).
    pub walk_budget_ms: Option<u64>,
}

impl CheckpointsConfig {
    /// The settings this gives, over the defaults. `TOOLBELT_CHECKPOINTS=off`
    /// turns checkpoints off whatever the file says.
    pub fn settings(&self) -> toolbelt_checkpoint::Settings {
        let d = toolbelt_checkpoint::Settings::default();
        let off = std::env::var("TOOLBELT_CHECKPOINTS")
            .is_ok_and(|v| matches!(v.trim(), "off" | "0" | "false" | "no"));
        toolbelt_checkpoint::Settings {
            enabled: !off && self.enabled.unwrap_or(d.enabled),
            required: self.required.unwrap_or(d.required),
            max_file_bytes: self
                .max_file_mib
                .map_or(d.max_file_bytes, |m| m.saturating_mul(1024 * 1024)),
            max_total_bytes: self
                .max_total_mib
                .map_or(d.max_total_bytes, |m| m.saturating_mul(1024 * 1024)),
            max_age: self.max_age_days.map_or(d.max_age, |days| {
                std::time::Duration::from_secs(days.saturating_mul(24 * 60 * 60))
            }),
            walk_budget: self
                .walk_budget_ms
                .map_or(d.walk_budget, std::time::Duration::from_millis),
        }
    }
}

/// `[web]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// Let web_fetch reach loopback and private addresses.
    pub allow_private_network: Option<bool>,
    /// The User-Agent sent.
    pub user_agent: Option<String>,
    /// An HTTP proxy for every request.
    pub proxy: Option<String>,
    /// The search engine: duckduckgo, brave, searxng.
    pub search: Option<String>,
    /// The search engine's address.
    pub search_url: Option<String>,
}

/// `[shell]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellConfig {
    /// Sandbox mode: none, read-only, workspace-write.
    pub sandbox: Option<String>,
    /// Network reachable from commands.
    pub network: Option<bool>,
}

/// `[mcp]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// `auto`, `always` or `never`.
    pub structured_content: Option<String>,
    /// Bytes of one result's text.
    pub output_budget: Option<usize>,
    /// What joins an MCP server's name and its tools' names (default `__`).
    pub tool_separator: Option<String>,
}

impl McpConfig {
    /// The options: `flags` (`--structured-content`, `--output-budget`) over the file.
    ///
    /// # Errors
    ///
    /// An unknown structured-content mode or a budget below the smallest one.
    pub fn options(&self, flags: &McpFlags) -> Result<toolbelt_server::McpOptions> {
        let mode = match (flags.structured_content, &self.structured_content) {
            (Some(mode), _) => mode,
            (None, Some(name)) => toolbelt_server::StructuredContent::parse(name).with_context(|| {
                format!(
                    "invalid [mcp] structured_content {name:?} in the config file; choose one of: {}",
                    toolbelt_server::StructuredContent::NAMES.join(", ")
                )
            })?,
            (None, None) => toolbelt_server::StructuredContent::default(),
        };
        let budget = flags.output_budget.or(self.output_budget);
        if let Some(bytes) = budget
            && bytes < MIN_OUTPUT_BYTES
        {
            bail!("the MCP output budget must be at least {MIN_OUTPUT_BYTES} bytes (got {bytes})");
        }
        Ok(toolbelt_server::McpOptions {
            structured_content: mode,
            output_budget: budget,
        })
    }
}

/// `[output]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Bytes of text a model reads from one call before the output is cut and spilled.
    pub max_bytes: Option<usize>,
}

impl FileConfig {
    /// Reads `path`. Relative paths inside are made relative to the file's directory.
    pub fn load(path: &Path) -> Result<FileConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        let mut cfg: FileConfig = toml::from_str(&text)
            .with_context(|| format!("invalid config file {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        cfg.path = Some(path.to_path_buf());
        cfg.state_dir = cfg.state_dir.map(|d| base.join(d));
        cfg.roots = cfg.roots.into_iter().map(|r| base.join(r)).collect();
        cfg.store.database_url = cfg.store.database_url.map(|url| {
            if url.contains("://") || Path::new(&url).is_absolute() {
                url
            } else {
                base.join(url).display().to_string()
            }
        });
        if let Some(max) = cfg.output.max_bytes.or(cfg.mcp.output_budget)
            && max < MIN_OUTPUT_BYTES
        {
            bail!(
                "invalid config file {}: output.max_bytes and mcp.output_budget must be at least {MIN_OUTPUT_BYTES}",
                path.display()
            );
        }
        Ok(cfg)
    }

    /// The explicit file, else `toolbelt.toml` in the first root if present.
    pub fn discover(explicit: Option<&Path>, first_root: &Path) -> Result<FileConfig> {
        match explicit {
            Some(p) => FileConfig::load(p),
            None => {
                let p = first_root.join("toolbelt.toml");
                if p.is_file() {
                    FileConfig::load(&p)
                } else {
                    Ok(FileConfig::default())
                }
            }
        }
    }
}
