//! The command line: every flag, subcommand and help text (clap reads the doc
//! comments of these types as the text of `--help`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "toolbelt",
    version,
    about = "The tool layer for LLM agents: typed, validated, jailed tools for any model API."
)]
// The whole command line: the global flags and one command. (No doc comments on
// these clap types and fields: clap would take them for help text.)
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

// The flags every command takes: where the workspace is and how its tools are set.
#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Workspace root (repeatable). Defaults to the current directory.
    #[arg(
        long = "root",
        global = true,
        env = "TOOLBELT_ROOT",
        value_delimiter = ','
    )]
    pub roots: Vec<PathBuf>,
    /// Name profile: default, claude, kimi, exec, run-command or camel-planner (seed001, seed002 and seed003 are older names of the last three).
    #[arg(long, global = true, env = "TOOLBELT_PROFILE")]
    pub profile: Option<String>,
    /// Configuration file (default: <root>/toolbelt.toml when it exists).
    #[arg(long, global = true, env = "TOOLBELT_CONFIG")]
    pub config: Option<PathBuf>,
    /// State directory: the store, saved outputs, agent runs, the serve token
    /// (default: $XDG_STATE_HOME/toolbelt/<workspace id>, else
    /// ~/.local/state/toolbelt/<workspace id>; a workspace whose .toolbelt/ already
    /// holds a store keeps it).
    #[arg(long, global = true, env = "TOOLBELT_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Sandbox of shell commands: none, read-only or workspace-write (default: the
    /// config file's [shell] sandbox, else none). Refused when this machine cannot
    /// enforce it; `toolbelt doctor` shows what it can.
    #[arg(long, global = true, env = "TOOLBELT_SANDBOX")]
    pub sandbox: Option<String>,
    /// Network for shell commands: on or off (default: off in a sandbox, on without).
    #[arg(long, global = true, env = "TOOLBELT_NETWORK", value_parser = parse_on_off)]
    pub network: Option<bool>,
    /// Let web_fetch reach loopback and private addresses (a local development
    /// server); the SSRF guard refuses them by default.
    #[arg(long, global = true)]
    pub allow_private_network: bool,
    /// The store of todos, the planner and the call log: postgres://user:password@host/db
    /// for PostgreSQL, or a SQLite file (default: <state-dir>/toolbelt.db).
    #[arg(
        long,
        global = true,
        env = "TOOLBELT_DATABASE_URL",
        hide_env_values = true
    )]
    pub database_url: Option<String>,
    /// Record every call in the call log (`toolbelt log`): on or off (default: the
    /// config file's [store] call_log, else on).
    #[arg(long, global = true, env = "TOOLBELT_CALL_LOG", value_parser = parse_on_off)]
    pub call_log: Option<bool>,
    /// The tools to serve, by toolset (files, search, shell, web, todos, planner,
    /// agent, schedule, message; coding = files, search, shell, todos, think,
    /// read_output and ask_user; minimal = read_file, write_file, edit_file, bash,
    /// grep and glob, for small models) or by name, comma-separated; `-NAME` leaves
    /// a set or tool out (`coding,web,-bash`). Default: the config file's [tools],
    /// else every tool.
    #[arg(
        long = "tools",
        global = true,
        env = "TOOLBELT_TOOLS",
        value_name = "LIST",
        allow_hyphen_values = true
    )]
    pub tool_selection: Option<String>,
    /// How much of each tool's description models see: full, or short (the first
    /// paragraph, each argument's first sentence, only the arguments a small model
    /// needs: a fraction of the tokens, for small models; every argument is still
    /// accepted). Default: [tools] descriptions, else full.
    #[arg(
        long,
        global = true,
        env = "TOOLBELT_DESCRIPTIONS",
        value_name = "LEVEL"
    )]
    pub descriptions: Option<String>,
}

/// `on`/`off` (also `true`/`false`, `yes`/`no`, `1`/`0`).
fn parse_on_off(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("{value:?} is not on or off")),
    }
}

// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the tools.
    Tools(ToolsArgs),
    /// Print tool schemas for a model API.
    Schema(SchemaArgs),
    /// Call a tool and print its result envelope.
    ///
    /// Exit status: 0 for success or partial, 1 for an error envelope, 2 for bad usage.
    Call(CallArgs),
    /// Run several calls from a JSON array, in order: `[{"tool": "createProject",
    /// "params": {"name": "A"}}, {"tool": "createTask", "params": {...}}]`.
    ///
    /// Every call runs, also after one fails; each gets its envelope. Exit status: 0
    /// when every call succeeded (or was partial), 1 when any failed, 2 for a batch
    /// that cannot be read (then no call runs).
    Batch(BatchArgs),
    /// Serve the tools over HTTP: MCP streamable HTTP at /mcp, a JSON API at /v1,
    /// and a web page at / (log in with the token).
    ///
    /// Every request but GET /healthz needs `Authorization: Bearer <token>`. Without
    /// --token the token is generated on first start into <state-dir>/serve-token and
    /// printed. Stops on SIGINT or SIGTERM after open requests finish.
    Serve(ServeArgs),
    /// Serve the tools over MCP on standard input and output.
    ///
    /// Standard output carries MCP messages only; logs go to standard error
    /// (set RUST_LOG, e.g. RUST_LOG=info). Without --root the workspace is the
    /// current directory.
    #[command(after_help = MCP_CLIENT_HELP)]
    Mcp(McpFlags),
    /// Show the call log: the last calls made through any interface, newest last, with
    /// their status, error code, duration, bytes returned and arguments (secrets
    /// redacted).
    Log(LogArgs),
    /// What each tool call changed in the files: list the checkpoints, show one,
    /// see its diff, prune old ones.
    ///
    /// Every call that may change files (write_file, edit_file, apply_patch, bash,
    /// ...) gets a checkpoint, cp-N, with each path's state before and after it;
    /// `toolbelt rewind cp-N` puts the files back as they were before it. Turned on
    /// by default; [checkpoints] in toolbelt.toml sets what is kept.
    ///
    /// Exit status: 0 ok, 1 when checkpoints are off or the checkpoint is unknown,
    /// 2 for bad usage.
    #[command(after_help = CHECKPOINTS_HELP)]
    Checkpoints(CheckpointsArgs),
    /// Put the files back as they were before a checkpoint: every path that
    /// checkpoint and the ones after it changed (created files are removed,
    /// deleted and moved ones come back, modes are restored).
    ///
    /// The plan is printed first; then it asks (y/N), or takes --yes. A file
    /// changed outside toolbelt since toolbelt last wrote it is a conflict: nothing
    /// is changed unless --skip-conflicts (rewind the others) or --force
    /// (overwrite it too). A rewind is itself a checkpoint: `toolbelt rewind
    /// --undo` takes it back.
    ///
    /// Exit status: 0 when rewound (or nothing to do, or a dry run), 1 for
    /// conflicts, an unknown or pruned checkpoint, a declined confirmation, or
    /// checkpoints turned off, 2 for bad usage (also: no --yes and standard input
    /// is not a terminal).
    #[command(after_help = REWIND_HELP)]
    Rewind(RewindArgs),
    /// Your own commands and rules around every tool call, on every front end:
    /// list them, trust the workspace's, test them, import Claude Code's.
    ///
    /// Hooks are `[[hooks.EVENT]]` tables in toolbelt.toml (the workspace's) or
    /// in $XDG_CONFIG_HOME/toolbelt/toolbelt.toml (yours, always trusted). Events:
    /// pre_tool_use (deny, ask, rewrite the arguments, add context),
    /// permission_request, post_tool_use, post_tool_failure, file_changed (add
    /// context, or revert the call), and for `toolbelt agent` session_start,
    /// user_prompt, subagent_start, subagent_stop, pre_compact, stop (exit 2 keeps
    /// the model going) and session_end. A command gets the call as JSON on its
    /// standard input; exit 2 blocks with its standard error as the reason; JSON on
    /// standard output decides (Claude Code's fields, or toolbelt's). A hook that
    /// times out, crashes or answers nonsense denies (pre_tool_use) or warns (the
    /// others), as its on_error says.
    ///
    /// A workspace's hooks and MCP servers (.mcp.json, [mcp_servers] of its
    /// toolbelt.toml) run only once `toolbelt hooks trust` recorded their hash; a
    /// change of one byte, to them or to a hook's script, stops them again.
    ///
    /// Exit status: 0 ok, 1 when `test` denied or a hook is broken, 2 for bad usage.
    #[command(after_help = HOOKS_HELP)]
    Hooks(HooksArgs),
    /// Work on a task with a model and the tools: interactively, or with -p to its
    /// final answer.
    ///
    /// The model is any OpenAI-compatible Chat Completions server or Anthropic's
    /// Messages API ([agent] in toolbelt.toml, or the flags). The key comes from
    /// OPENAI_API_KEY / ANTHROPIC_API_KEY (or [agent] api_key_env) and is never
    /// written anywhere. Runs are kept in <state-dir>/agent/runs (--list, --continue,
    /// --resume; `toolbelt agent import` copies them into the store, for `toolbelt
    /// serve`). Calls an `ask` permission rule covers need approval: the
    /// interactive screen asks, -p declines them unless --yes.
    ///
    /// Exit status with -p: 0 for a final answer, 1 when the run ended otherwise
    /// (an error, the step limit, a repeated call, Ctrl-C), 2 for bad usage.
    Agent(AgentArgs),
    /// Scheduled jobs: list, add, remove (as the `cron` tool), or run the scheduler
    /// in the foreground.
    Cron(CronArgs),
    /// Other MCP servers whose tools toolbelt offers (as SERVER__tool): list them,
    /// test one, add one to a config file, remove one.
    ///
    /// They are configured under [mcp_servers.NAME] in toolbelt.toml or the user's
    /// ~/.config/toolbelt/toolbelt.toml, or in a .mcp.json in the first root.
    #[command(name = "mcp-servers")]
    McpServers(McpServersArgs),
    /// Check this machine and the configuration: roots, config file, tools, other MCP
    /// servers, and what the shell sandbox can enforce here.
    ///
    /// Exit status: 0 when the configuration can be served, 1 when not (a sandbox
    /// this machine cannot enforce, a bad config file).
    Doctor(DoctorArgs),
}

/// Examples under `toolbelt checkpoints --help`.
const CHECKPOINTS_HELP: &str = "Examples:
  toolbelt checkpoints list               the last 20, newest first
  toolbelt checkpoints show cp-12         each path it changed, before and after
  toolbelt checkpoints diff cp-12         its changes as unified diffs
  toolbelt rewind cp-12                   the files as they were before cp-12";

/// Examples under `toolbelt hooks --help`.
const HOOKS_HELP: &str = "Examples (in toolbelt.toml):
  [[hooks.pre_tool_use]]                  block touch in the shell
  if = \"bash(touch:*)\"
  command = \"echo 'no touching' >&2; exit 2\"

  [[hooks.pre_tool_use]]                  no writes to .env, by any tool or the shell
  if = \"write(**/.env*)\"
  deny = \"edit .env.example instead\"

  toolbelt hooks list                     every hook, and whether it is trusted
  toolbelt hooks trust                    trust the workspace's hooks and servers
  toolbelt hooks test pre_tool_use --tool bash --args '{\"command\":\"touch x\"}'
  toolbelt hooks import .claude/settings.json >> toolbelt.toml";

/// Examples under `toolbelt rewind --help`.
const REWIND_HELP: &str = "Examples:
  toolbelt rewind cp-12 --dry-run         what it would do, changing nothing
  toolbelt rewind cp-12 --files 'src/**'  only the paths under src/
  toolbelt rewind cp-12 --yes             without asking
  toolbelt rewind --undo --yes            take the last rewind back";

/// How to add the server to an MCP client, shown by `toolbelt mcp --help`.
const MCP_CLIENT_HELP: &str = r#"Add toolbelt to an MCP client's configuration (Claude Desktop, Cursor, ...):

  {
    "mcpServers": {
      "toolbelt": {
        "command": "toolbelt",
        "args": ["mcp", "--root", "/path/to/project"]
      }
    }
  }"#;

/// Arguments of `toolbelt mcp-servers`.
#[derive(Debug, Args)]
pub struct McpServersArgs {
    #[command(subcommand)]
    pub action: McpServersAction,
}

/// What `toolbelt mcp-servers` does.
#[derive(Debug, Subcommand)]
pub enum McpServersAction {
    /// The configured servers, without starting them.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start one server, list its tools, stop it.
    ///
    /// Exit status: 0 when it answers, 1 when it does not (the reason and the last
    /// lines of its stderr are printed).
    Test {
        /// The server's name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add a server to toolbelt.toml (or, with --user, to the user's config):
    /// `toolbelt mcp-servers add files -- npx -y @modelcontextprotocol/server-filesystem .`
    /// or `toolbelt mcp-servers add tracker --url https://mcp.example.com/mcp
    /// --bearer-token-env TRACKER_TOKEN`. The entry is checked before it is written.
    Add(AddServerArgs),
    /// Remove a server from toolbelt.toml (or, with --user, from the user's config).
    Remove {
        /// The server's name.
        name: String,
        /// The user's config instead of the workspace's.
        #[arg(long)]
        user: bool,
    },
}

/// Arguments of `toolbelt mcp-servers add`.
#[derive(Debug, Args)]
pub struct AddServerArgs {
    /// The server's name: its tools are NAME__tool.
    pub name: String,
    /// The streamable HTTP endpoint of a remote server (instead of a command).
    #[arg(long)]
    pub url: Option<String>,
    /// An environment variable for a stdio server (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// A header for a url server (repeatable).
    #[arg(long = "header", value_name = "NAME=VALUE")]
    pub headers: Vec<String>,
    /// The environment variable holding a bearer token for a url server.
    #[arg(long)]
    pub bearer_token_env: Option<String>,
    /// Write to the user's config instead of the workspace's toolbelt.toml.
    #[arg(long)]
    pub user: bool,
    /// The command of a stdio server and its arguments, after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Arguments of `toolbelt tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only tools of this category (files, search, shell, web, planning, ...).
    #[arg(long)]
    pub category: Option<String>,
}

/// Arguments of `toolbelt schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// openai, openai-strict, openai-responses, anthropic, gemini, mcp or text.
    #[arg(long, short, default_value = "openai")]
    pub format: String,
    /// Only these tools (exposed names); all when none are given.
    pub tools: Vec<String>,
}

/// Arguments of `toolbelt call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's name (canonical or as exposed by the profile).
    pub tool: String,
    /// Arguments as JSON (default `{}`; `-` reads them from standard input).
    pub args: Option<String>,
    /// Print the exact envelope as JSON.
    #[arg(long)]
    pub json: bool,
    /// Timeout for this call in milliseconds (at most 600000).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `toolbelt batch`.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// A JSON file holding an array of calls, each `{"tool": NAME, "params": {...}}`
    /// (`arguments` is accepted for `params`, which may be left out, and an `id` may
    /// name the call); `-` reads standard input.
    #[arg(default_value = "-")]
    pub file: String,
    /// Print the envelopes as one JSON array.
    #[arg(long)]
    pub json: bool,
    /// Let up to this many calls run at once. Only calls that are safe to run side
    /// by side do; any other call waits for the calls before it and runs alone. The
    /// default runs the calls one after another, each seeing what the ones before
    /// it did.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrent: Option<u16>,
    /// Timeout for each call in milliseconds (at most 600000).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `toolbelt serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; one that is not loopback needs an explicit token.
    #[arg(long, default_value = toolbelt_server::http::DEFAULT_BIND)]
    pub bind: SocketAddr,
    /// Bearer token clients must send (default: the generated one).
    #[arg(long, env = "TOOLBELT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Ask for no token at all: loopback addresses only, for clients that cannot
    /// send one. Every program on this machine can then call the tools; Host and
    /// Origin checks still keep web pages out.
    #[arg(long, conflicts_with = "token")]
    pub no_token: bool,
    /// A browser origin allowed to call the server, such as
    /// https://app.example.com (repeatable; loopback origins are always allowed).
    #[arg(long = "allow-origin")]
    pub allowed_origins: Vec<String>,
    /// Print a one-time login URL for the web page at / (good for one login,
    /// for 10 minutes), besides the token.
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub mcp: McpFlags,
}

/// The MCP flags of `toolbelt mcp` and `toolbelt serve`.
#[derive(Debug, Default, Clone, Args)]
pub struct McpFlags {
    /// Whether MCP tool results carry the envelope as structuredContent (and tools
    /// their outputSchema): auto (the MCP Inspector and the Python SDK's default
    /// client get it; agent clients such as Claude Code, Codex and gemini-cli get the
    /// text written for the model), always, or never. Default: [mcp]
    /// structured_content, else auto.
    #[arg(long, value_name = "auto|always|never", value_parser = parse_structured)]
    pub structured_content: Option<toolbelt_server::StructuredContent>,
    /// Bytes of text one MCP tool result may hold; longer output is cut (head, tail
    /// and error lines kept) and saved for read_output, and read_file pages fit it.
    /// Default: [mcp] output_budget, else 8000 for Codex (which cuts the middle out
    /// of results past 12,000 bytes) and [output] max_bytes for other clients.
    #[arg(long, value_name = "BYTES")]
    pub output_budget: Option<usize>,
}

/// A structured-content mode by name (clap's value parsers speak `String`).
fn parse_structured(value: &str) -> Result<toolbelt_server::StructuredContent, String> {
    toolbelt_server::StructuredContent::parse(value).ok_or_else(|| {
        format!(
            "{value:?} is not a structured-content mode; choose one of: {}",
            toolbelt_server::StructuredContent::NAMES.join(", ")
        )
    })
}

/// Arguments of `toolbelt log`.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// How many of the most recent calls to show.
    #[arg(long, default_value_t = 20)]
    pub tail: usize,
    /// Only calls of this tool (its canonical name, e.g. read_file).
    #[arg(long)]
    pub tool: Option<String>,
    /// Print a JSON array of entries instead of lines.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `toolbelt agent`.
#[derive(Debug, Default, Args)]
pub struct AgentArgs {
    /// Run this prompt to its final answer and exit (`-` reads it from standard
    /// input). The answer goes to standard output, the progress to standard error.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// The API: openai (any Chat Completions server: OpenAI, vLLM, Ollama,
    /// llama.cpp, OpenRouter...) or anthropic. Default: [agent] provider, else openai.
    #[arg(long, env = "TOOLBELT_AGENT_PROVIDER")]
    pub provider: Option<String>,
    /// The model. Default: [agent] model.
    #[arg(long, env = "TOOLBELT_AGENT_MODEL")]
    pub model: Option<String>,
    /// The API's base URL, with the API's path: OpenAI's includes `/v1`
    /// (`http://127.0.0.1:8080/v1` for llama.cpp's llama-server,
    /// `http://127.0.0.1:11434/v1` for Ollama). Default: OPENAI_BASE_URL /
    /// ANTHROPIC_BASE_URL, then [agent] base_url, then the provider's own.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// How the model calls tools: native (function calling), text (`Action:
    /// tool[{...}]` lines, for models without function calling), or auto (native
    /// when a local server says its chat template takes tools — llama.cpp's /props,
    /// Ollama's /api/show — else text). Default: [agent] protocol, else native.
    #[arg(long, value_name = "PROTOCOL")]
    pub protocol: Option<String>,
    /// The model's size: small (a few billion parameters, often on a CPU) gets the
    /// minimal toolset (unless --tools or [tools] says otherwise), short
    /// descriptions, a short prompt, a `finish` tool that alone ends its run,
    /// replies held to one call by the server (--constrain), a low temperature and
    /// guards against loops and destructive commands. Default: [agent]
    /// model_size, else large.
    #[arg(long, value_name = "SIZE")]
    pub model_size: Option<String>,
    /// With a small model, how the server holds every reply to one tool call:
    /// auto (what the server supports: tool_choice "required" for native function
    /// calling, a GBNF grammar or a JSON schema for the text protocol; asked once
    /// and remembered), tool-choice, grammar (llama.cpp), json-schema (vLLM,
    /// Ollama, llama.cpp) or none (a reply without a call gets a reminder).
    /// Default: [agent] constrain, else auto.
    #[arg(long, value_name = "HOW")]
    pub constrain: Option<String>,
    /// Sampling temperature (0 to 2). Default: [agent] temperature, else 0.2 for a
    /// small model and the server's own for others.
    #[arg(long, value_name = "T")]
    pub temperature: Option<f32>,
    /// Sampling seed, for servers that take one (llama.cpp, vLLM, OpenAI).
    /// Default: [agent] seed, else none.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The most tokens one answer may have. Default: [agent] max_tokens, else 2048
    /// for a server on this machine or the local network, 8192 otherwise.
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u32>,
    /// Seconds to wait for the first bytes of each answer, while the server reads
    /// the prompt. Default: [agent] first_byte_timeout, else 1800 for a server on
    /// this machine or the local network (a CPU reads a long prompt in minutes),
    /// 300 otherwise.
    #[arg(long, value_name = "SECONDS")]
    pub first_byte_timeout: Option<u64>,
    /// Model calls one prompt may take (default 100).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// The same call with the same arguments this many times in a row ends the
    /// run (default 8; the model is reminded before).
    #[arg(long, value_name = "N")]
    pub max_repeats: Option<usize>,
    /// The model's context window in tokens; older history is compacted to fit.
    /// Default: [agent] context_window, else what a local server says (llama.cpp's
    /// /props, Ollama's num_ctx, /v1/models), else 128000.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// Print the run's events on standard output, one JSON object a line (with
    /// -p); with --list, the runs as JSON.
    #[arg(long)]
    pub json: bool,
    /// Approve every call an `ask` permission rule covers (without it, a run with
    /// -p declines them, and the interactive screen asks).
    #[arg(long)]
    pub yes: bool,
    /// Continue the latest run.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_latest: bool,
    /// Continue run ID (a unique prefix will do; --list shows the runs).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// With --resume or --continue: go back to before the run's turn TURN (1 is its
    /// first prompt): a new run with the conversation before it (the old run stays
    /// as it was), and the files as they were then. Then -p runs its prompt in the
    /// new run; without -p the screen opens on it (on a terminal).
    #[arg(long, value_name = "TURN", value_parser = clap::value_parser!(u32).range(1..))]
    pub rewind_to: Option<u32>,
    /// With --rewind-to: only the files (no new run).
    #[arg(long, requires = "rewind_to", conflicts_with_all = ["conversation", "both", "prompt"])]
    pub code: bool,
    /// With --rewind-to: only the conversation (the files stay as they are).
    #[arg(long, requires = "rewind_to", conflicts_with = "both")]
    pub conversation: bool,
    /// With --rewind-to: the conversation and the files (the default).
    #[arg(long, requires = "rewind_to")]
    pub both: bool,
    /// List the runs and exit.
    #[arg(long, conflicts_with_all = ["prompt", "continue_latest", "resume", "rewind_to"])]
    pub list: bool,
    #[command(subcommand)]
    pub command: Option<AgentCommand>,
}

// The subcommands of `toolbelt agent`.
#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Copy runs kept as transcript files into the store, for `toolbelt serve`.
    ///
    /// The runs of `toolbelt agent` on this machine, or of a server from before
    /// its runs went to the store, are then listed and shown by `toolbelt serve`
    /// (/v1/agent/runs and its page) on every replica that shares the store.
    /// Each DIR/*.jsonl transcript becomes a run of the workspace (see
    /// --workspace); the files stay as they are. Importing again adds only what
    /// the store lacks: a run continued since gets its new lines, the others are
    /// left alone.
    ///
    /// Exit status: 0 when every transcript was imported (files that are not
    /// transcripts are skipped, and counted), 1 when the store refused one, 2 for
    /// bad usage (DIR cannot be read, the store cannot be opened).
    #[command(after_help = AGENT_IMPORT_HELP)]
    Import(AgentImportArgs),
}

/// Examples under `toolbelt agent import --help`.
const AGENT_IMPORT_HELP: &str = "Examples:
  toolbelt agent import                   this workspace's runs, into its store
  toolbelt agent import ~/old-runs --json another folder of transcripts; counts as JSON
  toolbelt --database-url postgres://toolbelt@db/toolbelt agent import --workspace /srv/project
                                          into a server's store, as runs of the server
                                          whose first root is /srv/project";

/// Arguments of `toolbelt agent import`.
#[derive(Debug, Args)]
pub struct AgentImportArgs {
    /// The folder of transcripts (default: <state-dir>/agent/runs).
    pub dir: Option<PathBuf>,
    /// The workspace the runs belong to in the store: a server lists the runs of
    /// its first root. Default: this workspace's first root; name the server's
    /// when its path differs from this machine's.
    #[arg(long, value_name = "ROOT")]
    pub workspace: Option<PathBuf>,
    /// Print the counts as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `toolbelt cron`.
#[derive(Debug, Args)]
pub struct CronArgs {
    #[command(subcommand)]
    pub command: CronCommand,
}

// The subcommands of `toolbelt cron`.
#[derive(Debug, Subcommand)]
pub enum CronCommand {
    /// List this workspace's jobs with their next run (in each job's time zone) and
    /// the outcome of their last run.
    List {
        /// Print the envelope as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add a job that sends MESSAGE to CHANNEL on SCHEDULE, or has the agent
    /// ([agent] in toolbelt.toml) carry out PROMPT and sends its answer.
    Add {
        /// The job's name, unique in the workspace.
        name: String,
        /// A cron expression (5 fields, or 6 with seconds first), `every 10m`, or an
        /// RFC 3339 time (once).
        #[arg(long)]
        schedule: String,
        /// The text the job sends.
        #[arg(long, required_unless_present = "prompt", conflicts_with = "prompt")]
        message: Option<String>,
        /// A task the agent carries out with the tools when the job fires (calls
        /// that an `ask` rule covers are declined); its final answer is sent to
        /// CHANNEL, or kept as the job's last run without one.
        #[arg(long)]
        prompt: Option<String>,
        /// A channel of toolbelt.toml ([channels.NAME]); required with --message.
        #[arg(long, required_unless_present = "prompt")]
        channel: Option<String>,
        /// The chat in the channel (a Telegram chat id, an email address).
        #[arg(long)]
        chat_id: Option<String>,
        /// The IANA time zone of the schedule (default: the machine's).
        #[arg(long)]
        tz: Option<String>,
        /// Print the envelope as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a job.
    Remove {
        /// The job's name.
        name: String,
        /// Print the envelope as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fire due jobs and deliver the outbox in the foreground until Ctrl-C or
    /// SIGTERM: `toolbelt serve`'s scheduler without the HTTP server.
    Run {
        /// Fire what is due now, wait for the prompts it runs, attempt the
        /// messages due, and exit (for a system timer); what is not delivered
        /// yet stays in the outbox.
        #[arg(long)]
        once: bool,
    },
}

/// Arguments of `toolbelt doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `toolbelt hooks`.
#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
}

/// What `toolbelt hooks` does.
#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Every hook, by event: its name, where it is defined, what it runs, and
    /// whether it is trusted; then the workspace's MCP servers not trusted yet.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Trust the workspace's hooks and MCP servers as they are now: shows each,
    /// then asks (y/N), or takes --yes. The hashes go to
    /// $XDG_CONFIG_HOME/toolbelt/trusted.json, outside the workspace.
    Trust {
        /// Trust without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Run the hooks of an event on a call, without running the tool, and print
    /// what they decided.
    Test {
        /// The event (pre_tool_use, post_tool_use, ...).
        event: String,
        /// The tool of the call (its canonical or exposed name).
        #[arg(long)]
        tool: Option<String>,
        /// The call's arguments, as JSON.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print Claude Code's hooks (the "hooks" of a settings.json) as [[hooks.*]]
    /// tables with dialect = "claude", for toolbelt.toml.
    Import {
        /// The settings file (.claude/settings.json).
        path: PathBuf,
    },
}

/// Arguments of `toolbelt checkpoints`.
#[derive(Debug, Args)]
pub struct CheckpointsArgs {
    #[command(subcommand)]
    pub action: CheckpointsAction,
}

/// What `toolbelt checkpoints` does.
#[derive(Debug, Subcommand)]
pub enum CheckpointsAction {
    /// The workspace's checkpoints, newest first: id, time, tool, where the call
    /// came from, how many paths it changed, and whether it is partial or pruned.
    List {
        /// How many to show.
        #[arg(long, default_value_t = 20, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
        limit: i64,
        /// Only those older than this one (the next page: `--before cp-40`).
        #[arg(long, value_name = "ID")]
        before: Option<String>,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// One checkpoint: each path it changed, how (created, modified, deleted,
    /// renamed, mode), its kind and size before and after, and whether its content
    /// before was kept (a path not captured cannot be rewound).
    Show {
        /// The checkpoint (cp-12, or 12).
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One checkpoint's changes as unified diffs (binary files, links and
    /// directories are named without one).
    Diff {
        /// The checkpoint (cp-12, or 12).
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Prune now what is past [checkpoints] max_age_days and max_total_mib (the
    /// oldest first) and remove the content nothing refers to any more. This also
    /// happens by itself as content is kept.
    Gc {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of `toolbelt rewind`.
#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The checkpoint to go back to (cp-12, or 12): the files become as they were
    /// before it (`toolbelt checkpoints list` shows the ids).
    #[arg(required_unless_present = "undo", conflicts_with = "undo")]
    pub id: Option<String>,
    /// Take the last rewind back (rewinds to the checkpoint that rewind took of
    /// itself).
    #[arg(long)]
    pub undo: bool,
    /// Only paths matching this glob (repeatable; `src/**`, `*.rs`); the others
    /// are left as they are.
    #[arg(long = "files", value_name = "GLOB")]
    pub files: Vec<String>,
    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Rewind without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Leave the files in conflict (changed outside toolbelt since it last wrote
    /// them) as they are and rewind the others.
    #[arg(long, conflicts_with = "force")]
    pub skip_conflicts: bool,
    /// Rewind the files in conflict too, overwriting what was changed outside
    /// toolbelt (the rewind's own checkpoint keeps it: --undo brings it back).
    #[arg(long)]
    pub force: bool,
    /// Print the plan and the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}
