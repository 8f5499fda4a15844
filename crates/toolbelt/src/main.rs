//! `toolbelt`: list the tools, export their schemas for any model API, call them.
// The doc comments of the command-line types are the text of `--help` (clap reads
// them): `[mcp] output_budget` and `<state-dir>` there are words for the terminal,
// not rustdoc links or HTML.
#![allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls
)]

mod agent;
mod batch;
mod config;
mod cron;
mod leftovers;
mod log;
mod render;
mod stamps;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::Value;
use toolbelt_agent::Subagents;
use toolbelt_core::output::OutputBudget;
use toolbelt_core::state::{self, StateLocation, StateSource};
use toolbelt_core::{BatchMode, CallOptions, Category, Registry, Session, ToolCall};
use toolbelt_net::search::Backend;
use toolbelt_sandbox::{Sandbox, SandboxMode, Support};
use toolbelt_store::{CallLogWriter, Location, StoreHandle};
use toolbelt_tools::{BuiltinOptions, WebOptions};
use toolbelt_wire::export::{self, Format};

use crate::config::FileConfig;

#[derive(Debug, Parser)]
#[command(
    name = "toolbelt",
    version,
    about = "The tool layer for LLM agents: typed, validated, jailed tools for any model API."
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct Global {
    /// Workspace root (repeatable). Defaults to the current directory.
    #[arg(
        long = "root",
        global = true,
        env = "TOOLBELT_ROOT",
        value_delimiter = ','
    )]
    roots: Vec<PathBuf>,
    /// Name profile: default, claude, kimi, exec, run-command or camel-planner (seed001, seed002 and seed003 are older names of the last three).
    #[arg(long, global = true, env = "TOOLBELT_PROFILE")]
    profile: Option<String>,
    /// Configuration file (default: <root>/toolbelt.toml when it exists).
    #[arg(long, global = true, env = "TOOLBELT_CONFIG")]
    config: Option<PathBuf>,
    /// State directory: the store, saved outputs, agent runs, the serve token
    /// (default: $XDG_STATE_HOME/toolbelt/<workspace id>, else
    /// ~/.local/state/toolbelt/<workspace id>; a workspace whose .toolbelt/ already
    /// holds a store keeps it).
    #[arg(long, global = true, env = "TOOLBELT_STATE_DIR")]
    state_dir: Option<PathBuf>,
    /// Sandbox of shell commands: none, read-only or workspace-write (default: the
    /// config file's [shell] sandbox, else none). Refused when this machine cannot
    /// enforce it; `toolbelt doctor` shows what it can.
    #[arg(long, global = true, env = "TOOLBELT_SANDBOX")]
    sandbox: Option<String>,
    /// Network for shell commands: on or off (default: off in a sandbox, on without).
    #[arg(long, global = true, env = "TOOLBELT_NETWORK", value_parser = parse_on_off)]
    network: Option<bool>,
    /// Let web_fetch reach loopback and private addresses (a local development
    /// server); the SSRF guard refuses them by default.
    #[arg(long, global = true)]
    allow_private_network: bool,
    /// The store of todos, the planner and the call log: postgres://user:password@host/db
    /// for PostgreSQL, or a SQLite file (default: <state-dir>/toolbelt.db).
    #[arg(
        long,
        global = true,
        env = "TOOLBELT_DATABASE_URL",
        hide_env_values = true
    )]
    database_url: Option<String>,
    /// Record every call in the call log (`toolbelt log`): on or off (default: the
    /// config file's [store] call_log, else on).
    #[arg(long, global = true, env = "TOOLBELT_CALL_LOG", value_parser = parse_on_off)]
    call_log: Option<bool>,
    /// The tools to serve, by toolset (files, search, shell, web, todos, planner,
    /// agent, schedule, message; coding = files, search, shell, todos, think and
    /// read_output) or by name, comma-separated; `-NAME` leaves a set or tool out
    /// (`coding,web,-bash`). Default: the config file's [tools], else every tool.
    #[arg(
        long = "tools",
        global = true,
        env = "TOOLBELT_TOOLS",
        value_name = "LIST",
        allow_hyphen_values = true
    )]
    tool_selection: Option<String>,
}

/// `on`/`off` (also `true`/`false`, `yes`/`no`, `1`/`0`).
fn parse_on_off(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("{value:?} is not on or off")),
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools.
    Tools {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Only tools of this category (files, search, shell, web, planning, ...).
        #[arg(long)]
        category: Option<String>,
    },
    /// Print tool schemas for a model API.
    Schema {
        /// openai, openai-strict, openai-responses, anthropic, gemini, mcp or text.
        #[arg(long, short, default_value = "openai")]
        format: String,
        /// Only these tools (exposed names); all when none are given.
        tools: Vec<String>,
    },
    /// Call a tool and print its result envelope.
    ///
    /// Exit status: 0 for success or partial, 1 for an error envelope, 2 for bad usage.
    Call {
        /// The tool's name (canonical or as exposed by the profile).
        tool: String,
        /// Arguments as JSON (default `{}`; `-` reads them from standard input).
        args: Option<String>,
        /// Print the exact envelope as JSON.
        #[arg(long)]
        json: bool,
        /// Timeout for this call in milliseconds (at most 600000).
        #[arg(long)]
        timeout_ms: Option<u64>,
    },
    /// Run several calls from a JSON array, in order: `[{"tool": "createProject",
    /// "params": {"name": "A"}}, {"tool": "createTask", "params": {...}}]`.
    ///
    /// Every call runs, also after one fails; each gets its envelope. Exit status: 0
    /// when every call succeeded (or was partial), 1 when any failed, 2 for a batch
    /// that cannot be read (then no call runs).
    Batch(batch::BatchArgs),
    /// Serve the tools over HTTP: MCP streamable HTTP at /mcp, a JSON API at /v1,
    /// and a web page at / (log in with the token).
    ///
    /// Every request but GET /healthz needs `Authorization: Bearer <token>`. Without
    /// --token the token is generated on first start into <state-dir>/serve-token and
    /// printed. Stops on SIGINT or SIGTERM after open requests finish.
    Serve {
        /// Address to listen on; one that is not loopback needs an explicit token.
        #[arg(long, default_value = toolbelt_server::http::DEFAULT_BIND)]
        bind: SocketAddr,
        /// Bearer token clients must send (default: the generated one).
        #[arg(long, env = "TOOLBELT_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Ask for no token at all: loopback addresses only, for clients that cannot
        /// send one. Every program on this machine can then call the tools; Host and
        /// Origin checks still keep web pages out.
        #[arg(long, conflicts_with = "token")]
        no_token: bool,
        /// A browser origin allowed to call the server, such as
        /// https://app.example.com (repeatable; loopback origins are always allowed).
        #[arg(long = "allow-origin")]
        allowed_origins: Vec<String>,
        /// Print a one-time login URL for the web page at / (good for one login,
        /// for 10 minutes), besides the token.
        #[arg(long)]
        open: bool,
        #[command(flatten)]
        mcp: config::McpFlags,
    },
    /// Serve the tools over MCP on standard input and output.
    ///
    /// Standard output carries MCP messages only; logs go to standard error
    /// (set RUST_LOG, e.g. RUST_LOG=info). Without --root the workspace is the
    /// current directory.
    #[command(after_help = MCP_CLIENT_HELP)]
    Mcp(config::McpFlags),
    /// Show the call log: the last calls made through any interface, newest last, with
    /// their status, error code, duration, bytes returned and arguments (secrets
    /// redacted).
    Log(log::LogArgs),
    /// Work on a task with a model and the tools: interactively, or with -p to its
    /// final answer.
    ///
    /// The model is any OpenAI-compatible Chat Completions server or Anthropic's
    /// Messages API ([agent] in toolbelt.toml, or the flags). The key comes from
    /// OPENAI_API_KEY / ANTHROPIC_API_KEY (or [agent] api_key_env) and is never
    /// written anywhere. Runs are kept in <state-dir>/agent/runs (--list, --continue,
    /// --resume). Calls an `ask` permission rule covers need approval: the
    /// interactive screen asks, -p declines them unless --yes.
    ///
    /// Exit status with -p: 0 for a final answer, 1 when the run ended otherwise
    /// (an error, the step limit, a repeated call, Ctrl-C), 2 for bad usage.
    Agent(agent::AgentArgs),
    /// Scheduled jobs: list, add, remove (as the `cron` tool), or run the scheduler
    /// in the foreground.
    Cron(cron::CronArgs),
    /// Check this machine and the configuration: roots, config file, tools, and what
    /// the shell sandbox can enforce here.
    ///
    /// Exit status: 0 when the configuration can be served, 1 when not (a sandbox
    /// this machine cannot enforce, a bad config file).
    Doctor {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

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

fn main() -> ExitCode {
    // Re-run as the sandbox helper: sets the sandbox up, runs a command, exits.
    toolbelt_sandbox::dispatch();
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(cli) {
        Ok(code) => code,
        // A reader that stopped reading (`toolbelt schema | head`) is not an error.
        Err(e) if e.is::<ClosedStdout>() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("toolbelt: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Standard output was closed by its reader.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
struct ClosedStdout;

/// Writes `text` to standard output and flushes it.
fn out(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(ClosedStdout.into()),
        r => r.context("cannot write to standard output"),
    }
}

/// The configuration the command line, the environment and the config file make.
struct Settings {
    roots: Vec<PathBuf>,
    file: FileConfig,
    state_dir: PathBuf,
    /// Why `state_dir` is where it is.
    state_source: StateSource,
    sandbox: SandboxMode,
    network: bool,
    store: Location,
    call_log: bool,
}

fn settings(g: &Global) -> Result<Settings> {
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
    Ok(Settings {
        roots,
        file,
        state_dir,
        state_source,
        sandbox,
        network,
        store,
        call_log,
    })
}

/// `$XDG_STATE_HOME/toolbelt`, else `$HOME/.local/state/toolbelt`.
fn user_state_home() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).map(PathBuf::from);
    state::user_state_home(var("XDG_STATE_HOME").as_deref(), var("HOME").as_deref())
}

/// Where `toolbelt serve` keeps its token: the state directory, unless that is
/// inside a workspace root (a workspace's own `.toolbelt/`), where any command
/// could read it; then the workspace's directory in the user's state directory.
fn token_dir(session: &Session) -> Result<PathBuf> {
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
fn real_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Makes `dir` (and its parents) when missing, readable by this user only.
fn private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

/// A registry and the store its tools share.
struct Built {
    registry: Registry,
    store: StoreHandle,
    /// Whether calls are recorded in the call log.
    call_log: bool,
    /// `[agent]` of the config file.
    agent: config::AgentConfig,
    /// `[mcp]` of the config file.
    mcp: config::McpConfig,
    /// The channels, outbox and scheduler (`message`, `cron`, `toolbelt serve`).
    messaging: toolbelt_sched::Messaging,
    /// What runs the prompts of jobs, when `[agent]` names a model.
    jobs: Option<Arc<cron::AgentJobs>>,
    /// The subagent tools' runtime, when they are served (`toolbelt agent`, or a
    /// model set in `[agent]`); [`Subagents::attach`] it to the finished registry.
    subagents: Option<Subagents>,
}

/// `sandbox`, hiding from commands the state directory, the serve token's and
/// every workspace's state in the user's state directory (made first, so that
/// there is something to hide).
fn hide_state(sandbox: Sandbox, roots: &[PathBuf], state_dir: &Path) -> Result<Sandbox> {
    let mut dirs = vec![state_dir.to_path_buf()];
    if let Some(home) = user_state_home() {
        dirs.push(home);
    }
    let probe = Session::new(&roots[0])
        .with_roots(roots.to_vec())
        .with_state_dir(state_dir);
    if let Ok(dir) = token_dir(&probe) {
        dirs.push(dir);
    }
    // A state directory holding a root (`--state-dir .`) cannot be hidden without
    // hiding the workspace.
    dirs.retain(|dir| {
        !roots
            .iter()
            .any(|r| real_path(r).starts_with(real_path(dir)))
    });
    for dir in &dirs {
        // The user's directories are made; a workspace's own is used only if there.
        if !roots.iter().any(|r| dir.starts_with(r)) {
            private_dir(dir)?;
        }
    }
    sandbox
        .hiding(&dirs)
        .context("the shell sandbox cannot be set up (see `toolbelt doctor`)")
}

/// Runs `calls` (what `call` and `batch` do) on a single-threaded runtime (it starts
/// fastest; blocking file work and searches run on their own threads), with the
/// files the agent has seen loaded and saved around them when a file tool takes
/// part, and the calls logged.
fn run_calls(
    registry: &mut Registry,
    store: &StoreHandle,
    call_log: bool,
    calls: Vec<ToolCall>,
    mode: BatchMode,
    opts: &CallOptions,
    subagents: Option<&Subagents>,
) -> Result<Vec<toolbelt_core::Envelope>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // Only file tools read or refresh what the agent has seen of files.
    let uses_files = calls.iter().any(|call| {
        registry
            .get(&call.name)
            .is_some_and(|t| t.spec().permissions.iter().any(|p| p.starts_with("fs:")))
    });
    if uses_files {
        stamps::load(registry.session());
    }
    // The store is opened before the calls (the call log writes to it after): a
    // store that cannot be opened costs the log, not the calls.
    if call_log && let Err(e) = rt.block_on(store.store()) {
        eprintln!("toolbelt: warning: the calls will not be logged: {e}");
    }
    let log = {
        let _entered = rt.enter();
        start_call_log(registry, store, call_log)
    };
    if let Some(subagents) = subagents {
        subagents.attach(registry);
    }
    let envs = rt.block_on(registry.execute_batch_with(calls, mode, opts));
    rt.block_on(flush_log(log.as_ref()));
    if uses_files {
        stamps::save_or_warn(registry.session());
    }
    Ok(envs)
}

/// Records every call of `registry` in the call log of `store` (unless the log is
/// switched off); flush the writer before the process ends. Needs a Tokio runtime
/// entered.
fn start_call_log(registry: &mut Registry, store: &StoreHandle, on: bool) -> Option<CallLogWriter> {
    if !on {
        return None;
    }
    let workspace = registry
        .session()
        .roots()
        .first()
        .map(|r| r.display().to_string())
        .unwrap_or_default();
    let writer = CallLogWriter::start(store.clone(), workspace);
    registry.set_call_log(Some(Arc::new(writer.clone())));
    Some(writer)
}

/// Waits until `writer` has written what it was given.
async fn flush_log(writer: Option<&CallLogWriter>) {
    if let Some(w) = writer {
        w.flush().await;
    }
}

/// Opens the store now: a server refuses to start on a corrupt, foreign or newer
/// database (which is left untouched) rather than failing its first planner call.
async fn open_store(store: &StoreHandle) -> Result<()> {
    store
        .store()
        .await
        .map(|_| ())
        .context("the store cannot be opened")
}

/// Builds the registry of the command line's tools. `for_agent`: the subagent tools
/// are served (their model is set by `toolbelt agent`); otherwise they are when
/// `[agent]` (or the environment) names a model.
///
/// `inline_files`: small file operations run on the calling thread (see
/// [`Session::with_inline_file_work`]): for `toolbelt mcp`, whose single-threaded
/// runtime answers one request at a time.
fn build_registry(g: &Global, for_agent: bool, inline_files: bool) -> Result<Built> {
    let Settings {
        roots,
        file,
        state_dir,
        sandbox,
        network,
        store,
        call_log,
        ..
    } = settings(g)?;
    let first = roots[0].clone();
    let sandbox = Sandbox::new(sandbox, network, &roots)
        .context("the shell sandbox cannot be set up (see `toolbelt doctor`)")?
        .map(|sandbox| hide_state(sandbox, &roots, &state_dir))
        .transpose()?
        .map(Arc::new);
    let budget = file
        .output
        .max_bytes
        .map_or_else(OutputBudget::default, OutputBudget::with_max_bytes);
    let mut session = Session::new(first)
        .with_roots(roots)
        .with_state_dir(state_dir)
        .with_budget(budget)
        .with_inline_file_work(inline_files);
    if let Some(ms) = file.timeout_ms {
        session = session.with_timeout(Duration::from_millis(ms));
    }
    let session = leftovers::sweep_at_start(session);
    let mut registry = Registry::new(session);
    let profile_name = g.profile.clone().or(file.profile.clone());
    if let Some(name) = profile_name {
        let profile = toolbelt_tools::profiles::by_name(&name).with_context(|| {
            format!(
                "unknown profile {name:?}; choose one of: {}",
                toolbelt_tools::profiles::NAMES.join(", ")
            )
        })?;
        registry.set_profile(profile);
    }
    let policy = file
        .permissions
        .as_ref()
        .map(|rules| {
            rules
                .build()
                .context("invalid [permissions] in the config file")
        })
        .transpose()?;
    let web = web_options(&file, g.allow_private_network)?;
    let store = StoreHandle::lazy(store);
    let (messaging, jobs) = cron::messaging(
        &file.channels,
        &file.agent,
        registry.session().state_dir(),
        &store,
    )?;
    toolbelt_tools::register_builtins_with(
        &mut registry,
        BuiltinOptions {
            sandbox,
            web,
            store: Some(store.clone()),
            ..BuiltinOptions::default()
        },
    )?;
    if let Some(policy) = policy {
        toolbelt_tools::apply_policy(&mut registry, policy)
            .context("invalid [permissions] in the config file")?;
    }
    toolbelt_tools::register_messaging(&mut registry, &messaging)?;
    let subagents = if for_agent || agent::job_settings(&file.agent).is_ok() {
        let roots = registry.session().roots().to_vec();
        let subagents = agent::subagents(&file.agent, &roots, &store);
        subagents.register(&mut registry)?;
        if !for_agent {
            agent::configure_subagents_for_jobs(&subagents, &file.agent, &registry);
        }
        Some(subagents)
    } else {
        None
    };
    let selection = file.tools.selection(g.tool_selection.as_deref());
    registry
        .select(&selection, toolbelt_tools::TOOLSETS)
        .map_err(anyhow::Error::new)
        .context("invalid --tools, TOOLBELT_TOOLS or [tools]")?;
    Ok(Built {
        registry,
        store,
        call_log,
        agent: file.agent,
        mcp: file.mcp,
        messaging,
        jobs,
        subagents,
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    if let Command::Doctor { json } = cli.command {
        return doctor(&cli.global, json);
    }
    let Built {
        mut registry,
        store,
        call_log,
        agent,
        mcp,
        messaging,
        jobs,
        subagents,
    } = build_registry(
        &cli.global,
        matches!(cli.command, Command::Agent(_)),
        matches!(cli.command, Command::Mcp(_)),
    )?;
    match cli.command {
        Command::Tools { json, category } => {
            let category = match category {
                Some(c) => Some(Category::parse(&c).with_context(|| {
                    let all: Vec<_> = Category::ALL.iter().map(|c| c.as_str()).collect();
                    format!("unknown category {c:?}; choose one of: {}", all.join(", "))
                })?),
                None => None,
            };
            let specs: Vec<_> = registry
                .definitions()
                .into_iter()
                .filter(|s| category.is_none_or(|c| s.category == c))
                .collect();
            if json {
                out(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&render::tools_json(&specs))?
                ))?;
            } else {
                out(&render::tools_table(&specs))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema { format, tools } => {
            let fmt = Format::parse(&format).with_context(|| {
                let all: Vec<_> = Format::ALL.iter().map(|f| f.as_str()).collect();
                format!(
                    "unknown format {format:?}; choose one of: {}",
                    all.join(", ")
                )
            })?;
            let mut specs = registry.definitions();
            if !tools.is_empty() {
                for t in &tools {
                    if !specs.iter().any(|s| &s.name == t) {
                        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
                        bail!("unknown tool {t:?}; available: {}", names.join(", "));
                    }
                }
                specs.retain(|s| tools.contains(&s.name));
            }
            match export::export(&specs, fmt) {
                Value::String(s) => out(&s)?,
                v => out(&format!("{}\n", serde_json::to_string_pretty(&v)?))?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            tool,
            args,
            json,
            timeout_ms,
        } => {
            let raw = match args.as_deref() {
                None => "{}".to_string(),
                Some("-") => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .context("cannot read arguments from standard input")?;
                    s
                }
                Some(s) => s.to_string(),
            };
            // Malformed JSON is passed on as a string: the registry repairs what it
            // safely can and otherwise answers INVALID_PARAMS, as it would for a model.
            let arguments = serde_json::from_str::<Value>(&raw).unwrap_or(Value::String(raw));
            let opts = CallOptions {
                timeout: timeout_ms.map(Duration::from_millis),
                ..CallOptions::default()
            };
            let envs = run_calls(
                &mut registry,
                &store,
                call_log,
                vec![ToolCall::new(tool, arguments)],
                BatchMode::Sequential,
                &opts,
                subagents.as_ref(),
            )?;
            let Some(env) = envs.into_iter().next() else {
                bail!("the call gave no result");
            };
            if json {
                out(&format!("{}\n", serde_json::to_string_pretty(&env)?))?;
            } else {
                out(&render::envelope_human(&env))?;
            }
            Ok(if env.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Serve {
            bind,
            token,
            no_token,
            allowed_origins,
            open,
            mcp: flags,
        } => {
            let token = if no_token {
                Token::Nothing
            } else {
                Token::Given(token)
            };
            serve(
                registry,
                &store,
                call_log,
                bind,
                token,
                allowed_origins,
                (&messaging, jobs.as_deref()),
                open,
                mcp.options(&flags)?,
                subagents,
            )
        }
        Command::Batch(args) => {
            let calls = args.read_calls()?;
            let opts = CallOptions {
                timeout: args.timeout_ms.map(Duration::from_millis),
                ..CallOptions::default()
            };
            let envs = run_calls(
                &mut registry,
                &store,
                call_log,
                calls,
                args.mode(),
                &opts,
                subagents.as_ref(),
            )?;
            if args.json {
                out(&format!("{}\n", serde_json::to_string_pretty(&envs)?))?;
            } else {
                let n = envs.len();
                let mut text = String::new();
                for (i, env) in envs.iter().enumerate() {
                    if i > 0 {
                        text.push('\n');
                    }
                    text.push_str(&format!("[{}/{n}] ", i + 1));
                    text.push_str(&render::envelope_human(env));
                }
                let failed = envs.iter().filter(|e| !e.is_ok()).count();
                text.push_str(&format!(
                    "\n{n} call{}, {failed} failed\n",
                    if n == 1 { "" } else { "s" }
                ));
                out(&text)?;
            }
            Ok(if envs.iter().all(toolbelt_core::Envelope::is_ok) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Mcp(flags) => {
            let options = mcp.options(&flags)?;
            serve_mcp(
                registry,
                &store,
                call_log,
                &cli.global,
                (options, &messaging),
                subagents,
            )
        }
        Command::Agent(args) => agent::run(args, registry, &store, call_log, &agent, subagents),
        Command::Log(args) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            rt.block_on(async {
                let opened = store.store().await.context("the store cannot be opened")?;
                let mut stdout = std::io::stdout().lock();
                log::run(opened, &args, &mut stdout).await
            })
            .map_err(|e| match e.downcast_ref::<std::io::Error>() {
                Some(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ClosedStdout.into(),
                _ => e,
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Cron(args) => cron::run(
            args,
            registry,
            &store,
            call_log,
            &messaging,
            jobs.as_deref(),
            subagents.as_ref(),
        ),
        Command::Doctor { .. } => unreachable!("answered above"),
    }
}

/// The token `toolbelt serve` asks for.
enum Token {
    /// `--token` / `TOOLBELT_TOKEN`, or the generated one when not given.
    Given(Option<String>),
    /// `--no-token`.
    Nothing,
}

/// `toolbelt serve`: listens until SIGINT or SIGTERM.
// The subcommand's flags, one by one, as clap parsed them.
#[allow(clippy::too_many_arguments)]
fn serve(
    mut registry: Registry,
    store: &StoreHandle,
    call_log: bool,
    bind: SocketAddr,
    token: Token,
    allowed_origins: Vec<String>,
    (messaging, jobs): (&toolbelt_sched::Messaging, Option<&cron::AgentJobs>),
    open: bool,
    mcp: toolbelt_server::McpOptions,
    subagents: Option<Subagents>,
) -> Result<ExitCode> {
    let (mut config, shown) = match token {
        Token::Nothing => {
            if !bind.ip().is_loopback() {
                bail!(
                    "refusing to listen on {bind}, which is reachable from other machines, \
                     without a token; --no-token is for loopback addresses only"
                );
            }
            (
                toolbelt_server::ServeConfig::without_token(bind),
                "none (--no-token: every program on this machine can call the tools)".to_string(),
            )
        }
        Token::Given(token) => {
            let explicit = token
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty());
            if explicit.is_none() && !bind.ip().is_loopback() {
                bail!(
                    "refusing to listen on {bind}, which is reachable from other machines, with a \
                     generated token; pass --token or set TOOLBELT_TOKEN (use a long random value)"
                );
            }
            let (token, shown) = match explicit {
                Some(token) => (token, "from --token or TOOLBELT_TOKEN".to_string()),
                None => {
                    let dir = &token_dir(registry.session())?;
                    let token = toolbelt_server::load_or_create_token(dir).with_context(|| {
                        format!("cannot read or create the token in {}", dir.display())
                    })?;
                    let shown = token.clone();
                    (token, shown)
                }
            };
            (toolbelt_server::ServeConfig::new(bind, token), shown)
        }
    };
    config.allowed_origins = allowed_origins;
    config.mcp = mcp;
    // The web page reads the call log, todos and planner from the tools' store.
    config.store = Some(store.clone());
    if open && config.token.is_some() {
        config.login_code =
            Some(toolbelt_server::web::new_login_code().context("cannot make a login code")?);
    }
    let login_code = config.login_code.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(open_store(store))?;
    let log = {
        let _entered = rt.enter();
        start_call_log(&mut registry, store, call_log)
    };
    if let Some(subagents) = &subagents {
        subagents.attach(&registry);
    }
    // Jobs fire and the outbox drains while the server runs.
    let scheduler = {
        let _entered = rt.enter();
        cron::spawn(messaging, jobs, &registry)
    };
    let served = rt.block_on(async move {
        let listener = toolbelt_server::http::bind(bind).await?;
        let addr = listener.local_addr().unwrap_or(bind);
        eprintln!(
            "toolbelt listening on http://{addr} (web page at /, MCP at /mcp, JSON API at /v1)"
        );
        eprintln!("token: {shown}");
        if let Some(code) = &login_code {
            eprintln!(
                "log in (once, within 10 minutes): {}",
                toolbelt_server::web::login_url(addr, code)
            );
        } else if open {
            eprintln!("open http://{addr}/ (no token needed)");
        }
        toolbelt_server::http::serve_listener(
            listener,
            Arc::new(registry),
            config,
            toolbelt_server::http::shutdown_signal(),
        )
        .await
    });
    // Prompt runs cut off by the stop record that they were.
    rt.block_on(scheduler.stop());
    rt.block_on(flush_log(log.as_ref()));
    // Calls cut off by the shutdown may still be reading files on blocking threads.
    rt.shutdown_timeout(Duration::from_millis(100));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Serves `registry` over MCP on standard input and output until the client
/// closes standard input. Without `--root`, the client's roots become the
/// workspace roots once it announces them.
fn serve_mcp(
    mut registry: Registry,
    store: &StoreHandle,
    call_log: bool,
    g: &Global,
    (options, messaging): (toolbelt_server::McpOptions, &toolbelt_sched::Messaging),
    subagents: Option<Subagents>,
) -> Result<ExitCode> {
    // One client, one request at a time mostly: a single-threaded runtime answers
    // without handing each message between threads (blocking file work still runs on
    // tokio's blocking pool), and holds less memory.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(open_store(store))?;
    // The client's roots may bring registries with stores of their own: every
    // writer is flushed at the end.
    let logs = Arc::new(std::sync::Mutex::new(vec![{
        let _entered = rt.enter();
        start_call_log(&mut registry, store, call_log)
    }]));
    if let Some(subagents) = &subagents {
        subagents.attach(&registry);
    }
    // Messages the `message` tool could not deliver at once (and those left by an
    // earlier run) go out while the session lasts, as under `toolbelt serve`.
    let outbox = tokio_util::sync::CancellationToken::new();
    if !messaging.channels().is_empty() {
        let (deliverer, stop) = (messaging.outbox().clone(), outbox.clone());
        rt.spawn(async move { deliverer.run(stop).await });
    }
    let session = Arc::clone(registry.session());
    stamps::load(&session);
    // The skills are served as prompts too, following the workspace's roots.
    let skills = toolbelt_tools::Skills::from_env(session.roots());
    let mut server = toolbelt_server::McpServer::new(Arc::new(registry))
        .with_skills(skills)
        .with_options(options);
    if g.roots.is_empty() {
        let (profile, config, state_dir) =
            (g.profile.clone(), g.config.clone(), g.state_dir.clone());
        let (sandbox, network) = (g.sandbox.clone(), g.network);
        let allow_private_network = g.allow_private_network;
        let database_url = g.database_url.clone();
        let call_log_flag = g.call_log;
        let tool_selection = g.tool_selection.clone();
        let logs = Arc::clone(&logs);
        server = server.with_client_roots(move |roots| {
            let global = Global {
                roots,
                profile: profile.clone(),
                config: config.clone(),
                state_dir: state_dir.clone(),
                sandbox: sandbox.clone(),
                network,
                allow_private_network,
                database_url: database_url.clone(),
                call_log: call_log_flag,
                tool_selection: tool_selection.clone(),
            };
            let Built {
                mut registry,
                store,
                call_log,
                subagents,
                ..
            } = build_registry(&global, false, true).map_err(|e| format!("{e:#}"))?;
            let writer = start_call_log(&mut registry, &store, call_log);
            if let Some(subagents) = &subagents {
                subagents.attach(&registry);
            }
            if let Ok(mut all) = logs.lock() {
                all.push(writer);
            }
            Ok(registry)
        });
    }
    // SIGINT or SIGTERM ends the session like the end of standard input does: the
    // registry is dropped, which stops the background shells it started.
    let served = rt.block_on(async move {
        tokio::select! {
            served = toolbelt_server::mcp::serve(server) => served,
            () = toolbelt_server::http::shutdown_signal() => Ok(()),
        }
    });
    outbox.cancel();
    let writers: Vec<Option<CallLogWriter>> = logs.lock().map(|l| l.clone()).unwrap_or_default();
    for writer in writers.iter().flatten() {
        rt.block_on(writer.flush());
    }
    drop(rt);
    stamps::save_or_warn(&session);
    served.context("the MCP server stopped")?;
    Ok(ExitCode::SUCCESS)
}

/// The web tools' settings from `[web]` and `--allow-private-network`.
fn web_options(file: &FileConfig, allow_private_network: bool) -> Result<WebOptions> {
    let cfg = &file.web;
    let url = cfg
        .search_url
        .as_deref()
        .map(|u| url::Url::parse(u).with_context(|| format!("invalid [web] search_url {u:?}")))
        .transpose()?;
    let search = match cfg.search.as_deref().unwrap_or("duckduckgo") {
        "duckduckgo" => Backend::duckduckgo(),
        "brave" => Backend::brave(std::env::var("BRAVE_API_KEY").unwrap_or_default()),
        "searxng" => Backend::Searxng {
            base_url: url
                .clone()
                .context("[web] search = \"searxng\" needs search_url, the instance's address")?,
        },
        other => bail!("unknown [web] search {other:?}; choose one of: duckduckgo, brave, searxng"),
    };
    let search = match url {
        Some(url) => search.with_base_url(url),
        None => search,
    };
    Ok(WebOptions {
        allow_private_network: allow_private_network || cfg.allow_private_network.unwrap_or(false),
        user_agent: cfg.user_agent.clone(),
        proxy: cfg.proxy.clone(),
        search,
    })
}

/// The store as `toolbelt doctor` reports it. A SQLite file that does not exist yet
/// is not created.
fn doctor_store(location: &Location) -> Result<String> {
    if let Location::Sqlite(path) = location
        && !path.exists()
    {
        return Ok(format!("SQLite {} (created on first use)", path.display()));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let store = toolbelt_store::Store::open(location)
            .await
            .context("the store cannot be opened")?;
        let version = store.schema_version().await?;
        store.close().await;
        let kind = match store.backend() {
            toolbelt_store::Backend::Sqlite => "SQLite",
            toolbelt_store::Backend::Postgres => "PostgreSQL",
        };
        Ok(format!(
            "{kind} {} (schema version {version})",
            location.describe()
        ))
    })
}

/// How many skills each directory gives (the first of a name counts).
fn skills_by_dir(
    skills: &toolbelt_tools::Skills,
    scan: &toolbelt_tools::SkillScan,
) -> Vec<(PathBuf, usize)> {
    skills
        .dirs()
        .into_iter()
        .map(|dir| {
            let count = scan.skills.iter().filter(|s| s.source == dir).count();
            (dir, count)
        })
        .collect()
}

/// `doctor`'s lines on skills: how many from where, then each problem as a warning.
fn skills_text(skills: &toolbelt_tools::Skills, scan: &toolbelt_tools::SkillScan) -> String {
    let by_dir = skills_by_dir(skills, scan);
    let mut text = if scan.skills.is_empty() {
        let dirs: Vec<String> = by_dir
            .iter()
            .map(|(d, _)| d.display().to_string())
            .collect();
        format!("skills: none (looked in {})\n", dirs.join(", "))
    } else {
        let from: Vec<String> = by_dir
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(d, n)| format!("{n} in {}", d.display()))
            .collect();
        format!("skills: {} ({})\n", scan.skills.len(), from.join(", "))
    };
    for p in &scan.problems {
        text.push_str(&format!("warning: skill skipped: {p}\n"));
    }
    text
}

/// `doctor --json`'s `skills`: the count, each directory searched with its count,
/// and the problems.
fn skills_json(skills: &toolbelt_tools::Skills, scan: &toolbelt_tools::SkillScan) -> Value {
    let dirs: Vec<Value> = skills_by_dir(skills, scan)
        .into_iter()
        .map(|(path, count)| serde_json::json!({"path": path, "count": count}))
        .collect();
    let problems: Vec<Value> = scan
        .problems
        .iter()
        .map(|p| serde_json::json!({"path": p.path, "message": p.message}))
        .collect();
    serde_json::json!({"count": scan.skills.len(), "dirs": dirs, "problems": problems})
}

/// `toolbelt doctor`: what this machine and the configuration allow.
fn doctor(g: &Global, json: bool) -> Result<ExitCode> {
    let settings = settings(g);
    let helper = toolbelt_sandbox::locate_helper();
    let support = Support::probe();
    let mut ok = true;
    let mut problems: Vec<String> = Vec::new();
    let store_report = match &settings {
        Ok(s) => match doctor_store(&s.store) {
            Ok(report) => Some(report),
            Err(e) => {
                problems.push(format!("{e:#}"));
                ok = false;
                Some(format!("{}: refused", s.store.describe()))
            }
        },
        Err(_) => None,
    };
    let (roots, sandbox, network, state_dir) = match &settings {
        Ok(s) => (
            s.roots.clone(),
            s.sandbox,
            s.network,
            Some(StateLocation {
                dir: s.state_dir.clone(),
                source: s.state_source,
            }),
        ),
        Err(e) => {
            ok = false;
            problems.push(format!("{e:#}"));
            (Vec::new(), SandboxMode::None, true, None)
        }
    };
    // A sandbox hides the state directory (the store, the serve token) from
    // commands with a mount namespace; where none can be made, they can read it.
    let mut state_readable = false;
    let verdict = if settings.is_ok() {
        match Sandbox::new(sandbox, network, &roots) {
            Ok(Some(_)) if !support.mount_namespace => {
                state_readable = true;
                "enforced, but commands can read the state directory".to_string()
            }
            Ok(Some(_)) => "enforced".to_string(),
            Ok(None) => "no sandbox: commands run with the server's own rights".to_string(),
            Err(e) => {
                ok = false;
                problems.push(e.to_string());
                format!("refused: {e}")
            }
        }
    } else {
        "unknown".to_string()
    };
    let tools = if ok {
        build_registry(g, false, false)
            .map(|b| b.registry.definitions().len())
            .ok()
    } else {
        None
    };
    // Broken skills are skipped where they are served: warnings, not failures.
    let skills = toolbelt_tools::Skills::from_env(&roots);
    let skill_scan = skills.scan();
    // The same for agent types, checked against the tools subagents would get.
    let agent_types = if ok {
        build_registry(g, true, false).ok().and_then(|b| {
            let subagents = b.subagents?;
            subagents.attach(&b.registry);
            Some((
                subagents.types().names().join(", "),
                subagents.types().searched().to_vec(),
                subagents.problems(),
            ))
        })
    } else {
        None
    };
    if json {
        let value = serde_json::json!({
            "ok": ok,
            "version": env!("CARGO_PKG_VERSION"),
            "roots": roots,
            "state_dir": state_dir.as_ref().map(|s| &s.dir),
            "state_source": state_dir.as_ref().map(|s| s.source),
            "state_reason": state_dir.as_ref().map(|s| s.source.reason()),
            "tools": tools,
            "store": store_report,
            "shell": toolbelt_exec::default_shell(),
            "sandbox": {
                "mode": sandbox.as_str(),
                "network": network,
                "verdict": verdict,
                "state_hidden": !state_readable && sandbox != SandboxMode::None,
                "helper": helper,
                "support": support,
            },
            "skills": skills_json(&skills, &skill_scan),
            "agent_types": agent_types.as_ref().map(|(names, dirs, problems)| serde_json::json!({
                "names": names.split(", ").collect::<Vec<_>>(),
                "dirs": dirs,
                "problems": problems
                    .iter()
                    .map(|p| serde_json::json!({"path": p.path, "message": p.message}))
                    .collect::<Vec<_>>(),
            })),
            "problems": problems,
        });
        out(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
    } else {
        let mut text = format!("toolbelt {}\n", env!("CARGO_PKG_VERSION"));
        for r in &roots {
            text.push_str(&format!("root: {}\n", r.display()));
        }
        if let Some(state) = &state_dir {
            text.push_str(&format!(
                "state dir: {} ({})\n",
                state.dir.display(),
                state.source.reason()
            ));
        }
        if let Some(n) = tools {
            text.push_str(&format!("tools: {n}\n"));
        }
        text.push_str(&skills_text(&skills, &skill_scan));
        if let Some((names, dirs, type_problems)) = &agent_types {
            let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            text.push_str(&format!(
                "agent types: {names} (looked in {})\n",
                dirs.join(", ")
            ));
            for p in type_problems {
                text.push_str(&format!(
                    "warning: agent type skipped: {}: {}\n",
                    p.path.display(),
                    p.message
                ));
            }
        }
        if let Some(store) = &store_report {
            text.push_str(&format!("store: {store}\n"));
        }
        text.push_str(&format!(
            "shell: {}\n",
            toolbelt_exec::default_shell().display()
        ));
        text.push_str(&format!(
            "sandbox helper: {}\n",
            helper.map_or_else(|| "none found".to_string(), |h| h.display().to_string())
        ));
        text.push_str("\nWhat this machine enforces:\n");
        for line in support.report().lines() {
            text.push_str(&format!("  {line}\n"));
        }
        text.push_str(&format!(
            "\nConfigured: sandbox {sandbox}, network {}: {verdict}\n",
            if network { "on" } else { "off" }
        ));
        if state_readable {
            let dir = state_dir.as_ref().map_or_else(
                || "the state directory".to_string(),
                |s| s.dir.display().to_string(),
            );
            text.push_str(&format!(
                "warning: sandboxed commands can read {dir} (the store, saved outputs, the serve \
                 token): this machine cannot make the mount namespace that hides it; keep \
                 --state-dir out of reach some other way, or run where user namespaces are allowed\n"
            ));
        }
        for p in &problems {
            text.push_str(&format!("problem: {p}\n"));
        }
        out(&text)?;
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
