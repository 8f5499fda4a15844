//! `toolbelt agent`: a model working with the tools, in the terminal.
//!
//! - `-p PROMPT` (or `-p -`, or a prompt on standard input): runs to the final
//!   answer, prints it on standard output and the progress on standard error;
//!   `--json` prints the run's events instead, one JSON object a line.
//! - Without a prompt, on a terminal: the interactive screen ([`tui`]).
//!
//! The tools are the same registry the other commands build (roots, profile,
//! permission rules, sandbox, output budget, store, call log); calls an `ask` rule
//! covers go through an approver ([`approve`]).

mod approve;
mod render;
mod tui;

pub use approve::{JOB_REASON, Unattended};

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::{
    Agent, AgentEvent, AgentOptions, AgentTypes, Outcome, Protocol, Provider, ProviderConfig,
    ProviderKind, RunOutcome, Secret, SubagentLimits, SubagentModel, SubagentSettings, Subagents,
    ToolEventForwarder, build_provider, transcript,
};
use toolbelt_core::Registry;
use toolbelt_store::StoreHandle;

use crate::config::AgentConfig;
use render::{EventLines, Paint};

/// Project instructions read from the first workspace root, in this order.
const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];
/// The most of one instructions file put into the system prompt.
const MAX_INSTRUCTIONS_BYTES: usize = 64 * 1024;
/// The smallest context window accepted, in tokens.
const MIN_CONTEXT_WINDOW: u64 = 2_000;
/// How long calls cut off at the end may take to clean up.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);
/// How long background subagents may take to stop, and record that they did,
/// when the process ends.
pub const SUBAGENTS_GRACE: Duration = Duration::from_secs(5);

/// How to set a model, shown when none is set.
const NO_MODEL: &str = "no model is set: pass --model NAME, set TOOLBELT_AGENT_MODEL, \
     or add `model = \"...\"` under [agent] in toolbelt.toml";

/// Arguments of `toolbelt agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Run this prompt to its final answer and exit (`-` reads it from standard
    /// input). The answer goes to standard output, the progress to standard error.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    prompt: Option<String>,
    /// The API: openai (any Chat Completions server: OpenAI, vLLM, Ollama,
    /// llama.cpp, OpenRouter...) or anthropic. Default: [agent] provider, else openai.
    #[arg(long, env = "TOOLBELT_AGENT_PROVIDER")]
    provider: Option<String>,
    /// The model. Default: [agent] model.
    #[arg(long, env = "TOOLBELT_AGENT_MODEL")]
    model: Option<String>,
    /// The API's base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, then
    /// [agent] base_url, then the provider's own).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// How the model calls tools: native (function calling) or text (`Action:
    /// tool[{...}]` lines, for models without function calling).
    #[arg(long)]
    protocol: Option<String>,
    /// Model calls one prompt may take (default 100).
    #[arg(long, value_name = "N")]
    max_steps: Option<usize>,
    /// The same call with the same arguments this many times in a row ends the
    /// run (default 8; the model is reminded before).
    #[arg(long, value_name = "N")]
    max_repeats: Option<usize>,
    /// The model's context window in tokens (default 128000); older history is
    /// compacted to fit.
    #[arg(long, value_name = "TOKENS")]
    context_window: Option<u64>,
    /// Print the run's events on standard output, one JSON object a line (with
    /// -p); with --list, the runs as JSON.
    #[arg(long)]
    json: bool,
    /// Approve every call an `ask` permission rule covers (without it, a run with
    /// -p declines them, and the interactive screen asks).
    #[arg(long)]
    yes: bool,
    /// Continue the latest run.
    #[arg(long = "continue", conflicts_with = "resume")]
    continue_latest: bool,
    /// Continue run ID (a unique prefix will do; --list shows the runs).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// List the runs and exit.
    #[arg(long, conflicts_with_all = ["prompt", "continue_latest", "resume"])]
    list: bool,
}

/// What the command line, the environment and `[agent]` make.
#[derive(Debug, Clone)]
pub struct Settings {
    provider: ProviderConfig,
    /// The variable the key was looked for in.
    key_env: String,
    protocol: Protocol,
    max_steps: usize,
    max_repeats: usize,
    context_window: u64,
}

/// `toolbelt agent`. `registry` is built as for every command; the store is the
/// one its tools use.
pub fn run(
    args: AgentArgs,
    mut registry: Registry,
    store: &StoreHandle,
    call_log: bool,
    config: &AgentConfig,
    subagents: Option<Subagents>,
) -> Result<ExitCode> {
    let state_dir = registry.session().state_dir().to_path_buf();
    let runs_dir = state_dir.join("agent").join("runs");
    if args.list {
        return list(&runs_dir, args.json);
    }
    let settings = settings(&args, config, &non_empty_env)?;
    let resume = match (&args.resume, args.continue_latest) {
        (Some(id), _) => Some(transcript::find(&runs_dir, id).map_err(anyhow::Error::msg)?),
        (None, true) => Some(
            transcript::latest(&runs_dir)
                .with_context(|| format!("cannot read {}", runs_dir.display()))?
                .with_context(|| {
                    format!(
                        "there is no earlier run to continue in {}",
                        runs_dir.display()
                    )
                })?,
        ),
        (None, false) => None,
    };
    let prompt = prompt(&args)?;
    let mut options = options(&settings, &registry, runs_dir);
    // Nobody is there to start another turn: the reports of background subagents
    // are waited for.
    options.wait_for_background = prompt.is_some();
    if settings.provider.api_key.is_none() && !is_local(&settings.provider.base_url) {
        eprintln!(
            "toolbelt: warning: {} is not set; {} will probably refuse the requests",
            settings.key_env, settings.provider.base_url
        );
    }
    let provider = build_provider(settings.provider.clone()).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(subagents) = &subagents {
        configure_subagents(subagents, &settings, &options, Arc::clone(&provider));
    }

    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    registry.set_events(Some(Arc::new(ToolEventForwarder::new(
        events_tx.clone(),
        registry.profile().clone(),
    ))));
    let interactive = prompt.is_none();
    let (ui_tx, ui_rx) = std::sync::mpsc::channel();
    if interactive && !args.yes {
        registry.set_approver(Some(Arc::new(approve::Prompted::new(
            ui_tx.clone(),
            &registry,
        ))));
    } else {
        registry.set_approver(Some(Arc::new(approve::Unattended {
            approve_all: args.yes,
            reason: approve::UNATTENDED_REASON,
        })));
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The store is opened first: one that cannot be opened costs the log, not the run.
    if call_log && let Err(e) = rt.block_on(store.store()) {
        eprintln!("toolbelt: warning: the calls will not be logged: {e}");
    }
    let log = {
        let _entered = rt.enter();
        crate::start_call_log(&mut registry, store, call_log)
    };
    if let Some(subagents) = &subagents {
        subagents.attach(&registry);
    }
    let registry = Arc::new(registry);
    let mut agent = match &resume {
        Some(path) => Agent::resume(Arc::clone(&registry), provider, options, events_tx, path)
            .map_err(|e| anyhow::anyhow!("cannot continue the run: {e}"))?,
        None => Agent::new(Arc::clone(&registry), provider, options, events_tx),
    };
    if let Some(subagents) = &subagents {
        agent.set_subagents(subagents.clone());
    }

    let code = match prompt {
        Some(prompt) => {
            let paint = Paint::for_terminal(std::io::stderr().is_terminal());
            let progress = Progress {
                lines: EventLines::new(paint, Arc::clone(&registry), false),
                paint,
                json: args.json,
                native: settings.protocol == Protocol::Native,
            };
            let outcome = rt.block_on(run_once(agent, prompt, events_rx, progress, log.clone()))?;
            match outcome.outcome {
                Outcome::FinalAnswer => {
                    if !args.json {
                        let mut answer = outcome.message.trim_end().to_string();
                        answer.push('\n');
                        crate::out(&answer)?;
                    }
                    ExitCode::SUCCESS
                }
                Outcome::Cancelled => {
                    eprintln!("toolbelt: the run was cancelled");
                    ExitCode::from(1)
                }
                other => {
                    eprintln!(
                        "toolbelt: the run ended without a final answer ({}): {}",
                        other.as_str(),
                        outcome.message
                    );
                    ExitCode::from(1)
                }
            }
        }
        None => {
            let history = state_dir.join("agent").join("history");
            tui::run(tui::Parts {
                rt: &rt,
                agent,
                events: events_rx,
                ui_tx,
                ui_rx,
                registry: Arc::clone(&registry),
                history,
                resumed: resume.is_some(),
            })?;
            ExitCode::SUCCESS
        }
    };
    if let Some(subagents) = &subagents {
        rt.block_on(subagents.shutdown(SUBAGENTS_GRACE));
    }
    rt.block_on(crate::flush_log(log.as_ref()));
    rt.shutdown_timeout(SHUTDOWN_GRACE);
    Ok(code)
}

/// The subagents of the agents of this workspace (`task`, `spawn`): the agent
/// types of `.toolbelt/agents/` in the roots and `agents/` in the user's config
/// directory, the limits of `[agent.subagents]`, background reports kept in
/// `store`. Their model is set later ([`configure_subagents`]).
pub fn subagents(
    config: &AgentConfig,
    roots: &[std::path::PathBuf],
    store: &StoreHandle,
) -> Subagents {
    let config_home = toolbelt_core::state::user_config_home_from_env();
    let types = AgentTypes::load(&AgentTypes::dirs(roots, config_home.as_deref()));
    let limits = subagent_limits(&config.subagents);
    let mut settings = SubagentSettings::new(types);
    settings.limits = limits;
    settings.store = Some(store.clone());
    Subagents::new(settings)
}

/// `[agent.subagents]` over the defaults.
fn subagent_limits(c: &crate::config::SubagentsConfig) -> SubagentLimits {
    let d = SubagentLimits::default();
    SubagentLimits {
        max_depth: c.max_depth.unwrap_or(d.max_depth),
        max_running: c.max_running.unwrap_or(d.max_running),
        max_steps: c.max_steps.unwrap_or(d.max_steps),
        timeout: c.timeout_secs.map_or(d.timeout, Duration::from_secs),
        background_timeout: c
            .background_timeout_secs
            .map_or(d.background_timeout, Duration::from_secs),
        token_budget: c.token_budget.or(d.token_budget),
    }
}

/// Gives `subagents` the model of `settings` (its provider already built), their
/// options derived from the parent's `options`.
pub fn configure_subagents(
    subagents: &Subagents,
    settings: &Settings,
    options: &AgentOptions,
    provider: Arc<dyn Provider>,
) {
    let mut options = options.clone();
    options.system_prompt = None;
    subagents.configure(SubagentModel {
        provider,
        provider_config: Some(settings.provider.clone()),
        options,
    });
}

/// Gives `subagents` the model that scheduled jobs use (`[agent]` and the
/// environment); false when none is set.
pub fn configure_subagents_for_jobs(
    subagents: &Subagents,
    file: &AgentConfig,
    registry: &Registry,
) -> bool {
    let Ok(settings) = job_settings(file) else {
        return false;
    };
    let Ok(provider) = build_provider(settings.provider.clone()) else {
        return false;
    };
    let runs_dir = registry.session().state_dir().join("agent").join("runs");
    let options = options(&settings, registry, runs_dir);
    configure_subagents(subagents, &settings, &options, provider);
    true
}

/// The options of a run on `registry`, its transcript in `runs_dir`.
fn options(settings: &Settings, registry: &Registry, runs_dir: std::path::PathBuf) -> AgentOptions {
    let first_root = registry
        .session()
        .roots()
        .first()
        .cloned()
        .unwrap_or_else(|| registry.session().cwd().to_path_buf());
    AgentOptions {
        protocol: settings.protocol,
        max_steps: settings.max_steps,
        repeat_warn: AgentOptions::default()
            .repeat_warn
            .min(settings.max_repeats - 1)
            .max(2),
        repeat_stop: settings.max_repeats,
        context_window: settings.context_window,
        instructions: instructions(&first_root),
        transcript_dir: Some(runs_dir),
        ..AgentOptions::default()
    }
}

/// The settings of runs nobody started from the command line (scheduled jobs):
/// the environment (`TOOLBELT_AGENT_PROVIDER`, `TOOLBELT_AGENT_MODEL`, the base URL
/// and key variables), then `[agent]`, then the defaults, as `toolbelt agent`
/// without flags.
///
/// # Errors
/// No model is set, or a setting is invalid; the message says how to fix it.
pub fn job_settings(file: &AgentConfig) -> Result<Settings> {
    let args = AgentArgs {
        prompt: None,
        provider: non_empty_env("TOOLBELT_AGENT_PROVIDER"),
        model: non_empty_env("TOOLBELT_AGENT_MODEL"),
        base_url: None,
        protocol: None,
        max_steps: None,
        max_repeats: None,
        context_window: None,
        json: false,
        yes: false,
        continue_latest: false,
        resume: None,
        list: false,
    };
    settings(&args, file, &non_empty_env)
}

/// Runs `prompt` on `registry` to its end or until `cancel`, without anyone to
/// approve calls (its approver is the caller's: [`Unattended`]), its transcript in
/// `<state>/agent/runs`. Returns the outcome, the answer (or what ended the run)
/// and the run's id.
pub async fn run_unattended(
    registry: Arc<Registry>,
    settings: &Settings,
    prompt: &str,
    cancel: &CancellationToken,
) -> (Outcome, String, String) {
    let runs_dir = registry.session().state_dir().join("agent").join("runs");
    let options = options(settings, &registry, runs_dir);
    let provider = match build_provider(settings.provider.clone()) {
        Ok(p) => p,
        Err(e) => return (Outcome::Error, e.to_string(), String::new()),
    };
    // Nobody watches the events: the transcript keeps the run.
    let (events_tx, _events_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::new(registry, provider, options, events_tx);
    let ended = agent.run(prompt, cancel).await;
    (ended.outcome, ended.message, agent.run_id().to_string())
}

/// Flags, then the environment (`env` reads a variable), then `[agent]`, then the
/// defaults.
fn settings(
    args: &AgentArgs,
    file: &AgentConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings> {
    let name = args
        .provider
        .as_deref()
        .or(file.provider.as_deref())
        .unwrap_or("openai");
    let kind = ProviderKind::parse(name)
        .with_context(|| format!("unknown provider {name:?}; choose one of: openai, anthropic"))?;
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
    Ok(Settings {
        provider,
        key_env,
        protocol,
        max_steps,
        max_repeats,
        context_window,
    })
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// True for a server on this machine or the local network (no key needed).
fn is_local(base_url: &str) -> bool {
    let Ok(url) = url::Url::parse(base_url) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost")
                || d.ends_with(".localhost")
                || d.ends_with(".local")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The prompt of a non-interactive run, or `None` for the interactive screen.
fn prompt(args: &AgentArgs) -> Result<Option<String>> {
    let text = match args.prompt.as_deref() {
        Some("-") => read_stdin()?,
        Some(p) => p.to_string(),
        None if !std::io::stdin().is_terminal() => read_stdin()?,
        None if args.json => {
            bail!("--json needs a prompt: -p PROMPT, or -p - to read it from standard input")
        }
        None => return Ok(None),
    };
    if text.trim().is_empty() {
        bail!("the prompt is empty");
    }
    Ok(Some(text.trim().to_string()))
}

fn read_stdin() -> Result<String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the prompt from standard input")?;
    Ok(text)
}

/// `AGENTS.md` and `CLAUDE.md` of `root`, as (name, text).
fn instructions(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in INSTRUCTION_FILES {
        let path = root.join(name);
        let Ok(mut text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        if text.len() > MAX_INSTRUCTIONS_BYTES {
            let mut cut = MAX_INSTRUCTIONS_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[... cut: the file is longer]");
        }
        out.push((name.to_string(), text));
    }
    out
}

/// `--list`: the runs, oldest first.
fn list(dir: &Path, json: bool) -> Result<ExitCode> {
    let runs = transcript::list(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if json {
        crate::out(&format!("{}\n", serde_json::to_string_pretty(&runs)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        crate::out(&format!("no runs in {}\n", dir.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    for run in &runs {
        let started = chrono::DateTime::parse_from_rfc3339(&run.started).map_or_else(
            |_| run.started.clone(),
            |t| t.format("%Y-%m-%d %H:%M").to_string(),
        );
        let turns = if run.turns == 1 {
            "1 turn".to_string()
        } else {
            format!("{} turns", run.turns)
        };
        let outcome = run.outcome.as_deref().unwrap_or("unfinished");
        text.push_str(&format!(
            "{}  {started}  {turns}, {outcome}  {}\n",
            run.id,
            render::clip(&run.prompt, 80)
        ));
    }
    crate::out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The progress of a `-p` run on standard error, or (`--json`) its events on
/// standard output.
struct Progress {
    lines: EventLines,
    paint: Paint,
    json: bool,
    /// What the model says between calls is shown (in the text protocol it is
    /// the whole reply, Action lines and all, so it is not).
    native: bool,
}

impl Progress {
    fn event(&mut self, event: &AgentEvent) -> Result<()> {
        if self.json {
            let mut line = serde_json::to_string(event)?;
            line.push('\n');
            return crate::out(&line);
        }
        if let AgentEvent::AssistantMessage { text, tool_calls } = event
            && *tool_calls > 0
            && self.native
            && !text.trim().is_empty()
        {
            eprintln!("{}", self.paint.dim(text.trim()));
        }
        for line in self.lines.event(event) {
            eprintln!("{line}");
        }
        if let AgentEvent::RunEnded {
            steps,
            tool_calls,
            usage,
            ..
        } = event
        {
            eprintln!(
                "{}",
                self.paint.dim(&render::footer(*steps, *tool_calls, usage))
            );
        }
        Ok(())
    }
}

/// How long a second Ctrl-C waits for the call log to be written before quitting.
const QUIT_FLUSH: Duration = Duration::from_secs(2);

/// Runs one prompt to its end, showing the progress; the first Ctrl-C cancels the
/// run (running tools are stopped, a shell's processes killed), a second quits at
/// once, after the calls made so far are written to the call log (for at most
/// [`QUIT_FLUSH`]).
async fn run_once(
    mut agent: Agent,
    prompt: String,
    mut events: UnboundedReceiver<AgentEvent>,
    mut progress: Progress,
    log: Option<crate::CallLogWriter>,
) -> Result<RunOutcome> {
    let cancel = CancellationToken::new();
    let run_cancel = cancel.clone();
    let mut task = tokio::spawn(async move { agent.run(&prompt, &run_cancel).await });
    let (sigint_tx, mut sigint) = tokio::sync::mpsc::unbounded_channel();
    let watcher = tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if sigint_tx.send(()).is_err() {
                break;
            }
        }
    });
    let mut interrupted = false;
    let outcome = loop {
        tokio::select! {
            biased;
            Some(event) = events.recv() => progress.event(&event)?,
            Some(()) = sigint.recv() => {
                if interrupted {
                    eprintln!("toolbelt: the run was cancelled");
                    let _ = tokio::time::timeout(QUIT_FLUSH, crate::flush_log(log.as_ref())).await;
                    std::process::exit(1);
                }
                interrupted = true;
                cancel.cancel();
                eprintln!("{}", progress.paint.yellow("⏹ cancelling (Ctrl-C again to quit at once)"));
            }
            joined = &mut task => {
                while let Ok(event) = events.try_recv() {
                    progress.event(&event)?;
                }
                break joined.context("the agent stopped unexpectedly")?;
            }
        }
    };
    watcher.abort();
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use pretty_assertions::assert_eq;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: AgentArgs,
    }

    fn args(line: &[&str]) -> AgentArgs {
        let mut all = vec!["agent"];
        all.extend(line);
        Cli::try_parse_from(all).unwrap().args
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn flags_then_environment_then_file() {
        let file = AgentConfig {
            provider: Some("anthropic".into()),
            model: Some("file-model".into()),
            base_url: Some("http://file.example/".into()),
            api_key_env: Some("MY_KEY".into()),
            max_steps: Some(7),
            max_repeats: Some(3),
            protocol: Some("text".into()),
            context_window: Some(50_000),
            max_tokens: Some(1_000),
            subagents: crate::config::SubagentsConfig::default(),
        };
        let s = settings(&args(&[]), &file, &env(&[("MY_KEY", "sk-1")])).unwrap();
        assert_eq!(s.provider.kind, ProviderKind::Anthropic);
        assert_eq!(s.provider.model, "file-model");
        assert_eq!(s.provider.base_url, "http://file.example");
        assert_eq!(s.provider.api_key, Some(Secret::new("sk-1")));
        assert_eq!(s.provider.max_tokens, 1_000);
        assert_eq!(
            (s.protocol, s.max_steps, s.max_repeats, s.context_window),
            (Protocol::Text, 7, 3, 50_000)
        );
        let from_env = env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")]);
        let s = settings(&args(&[]), &file, &from_env).unwrap();
        assert_eq!(s.provider.base_url, "http://127.0.0.1:9");
        assert_eq!(s.provider.api_key, None);
        assert_eq!(s.key_env, "MY_KEY");
        let s = settings(
            &args(&[
                "--provider",
                "openai",
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:1/v1",
                "--protocol",
                "native",
                "--max-steps",
                "2",
            ]),
            &file,
            &from_env,
        )
        .unwrap();
        assert_eq!(s.provider.kind, ProviderKind::OpenAi);
        assert_eq!(s.provider.base_url, "http://127.0.0.1:1/v1");
        assert_eq!((s.protocol, s.max_steps), (Protocol::Native, 2));
    }

    #[test]
    fn defaults_and_usage_errors() {
        let none = env(&[]);
        let err = settings(&args(&[]), &AgentConfig::default(), &none).unwrap_err();
        assert_eq!(err.to_string(), NO_MODEL);
        let s = settings(&args(&["--model", "m"]), &AgentConfig::default(), &none).unwrap();
        assert_eq!(s.provider.kind, ProviderKind::OpenAi);
        assert_eq!(s.provider.base_url, "https://api.openai.com/v1");
        assert_eq!(s.key_env, "OPENAI_API_KEY");
        for bad in [
            &["--model", "m", "--provider", "gemini"][..],
            &["--model", "m", "--protocol", "xml"],
            &["--model", "m", "--max-steps", "0"],
            &["--model", "m", "--max-repeats", "1"],
            &["--model", "m", "--base-url", "ftp://x"],
        ] {
            assert!(
                settings(&args(bad), &AgentConfig::default(), &none).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn local_servers_need_no_key() {
        assert!(is_local("http://127.0.0.1:8080/v1"));
        assert!(is_local("http://localhost:11434/v1"));
        assert!(is_local("http://192.168.1.20:8000/v1"));
        assert!(is_local("http://[::1]:9000"));
        assert!(!is_local("https://api.openai.com/v1"));
        assert!(!is_local("not a url"));
    }

    #[test]
    fn instructions_come_from_the_first_root() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(instructions(dir.path()), Vec::new());
        std::fs::write(dir.path().join("CLAUDE.md"), "Use tabs.\n").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Run cargo test.\n").unwrap();
        assert_eq!(
            instructions(dir.path()),
            vec![
                ("AGENTS.md".to_string(), "Run cargo test.\n".to_string()),
                ("CLAUDE.md".to_string(), "Use tabs.\n".to_string()),
            ]
        );
    }
}
