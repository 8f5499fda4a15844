//! `toolbelt agent`: a model working with the tools, in the terminal.
//!
//! - `-p PROMPT` (or `-p -`, or a prompt on standard input): runs to the final
//!   answer, prints it on standard output and the progress on standard error;
//!   `--json` prints the run's events instead, one JSON object a line.
//! - Without a prompt, on a terminal: the interactive screen ([`tui`]).
//! - `--resume ID --rewind-to TURN`: back to before a turn of a run ([`rewind`]):
//!   the conversation in a new run, the files through their checkpoints; on the
//!   screen, `/rewind` ([`tui::rewind_screen`]).
//! - `import [DIR]`: the runs' transcripts copied into the store ([`import`]),
//!   for `toolbelt serve`.
//!
//! The tools are the same registry the other commands build (roots, profile,
//! permission rules, sandbox, output budget, store, call log); calls an `ask` rule
//! covers go through an approver ([`approve`] asks on the screen; a run with `-p`
//! has [`Unattended`]), and `ask_user`'s questions through an asker ([`ask`]: the
//! screen's [`picker`]; a run with `-p` tells the model to ask in its reply).
//! Subagents ask nobody. Everything that reaches the screen is one [`UiEvent`].

mod approve;
mod ask;
mod event;
mod import;
mod picker;
mod render;
mod rewind;
mod tui;

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::{
    Agent, AgentEvent, Outcome, Protocol, RunOutcome, ToolEventForwarder, build_provider,
    is_local_url, transcript,
};
use toolbelt_store::CallLogWriter;

use super::{out, out_json};
use crate::cli::{AgentArgs, AgentCommand};
use crate::config::AgentConfig;
use crate::model::{self, UNATTENDED_REASON, Unattended};
use crate::runtime::{self, Threads};
use crate::settings::AgentSettings;
use crate::workspace::Workspace;
use render::{EventLines, Paint};

/// How long calls cut off at the end may take to clean up.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);
/// How long background subagents may take to stop, and record that they did,
/// when the process ends.
const SUBAGENTS_GRACE: Duration = Duration::from_secs(5);

/// `toolbelt agent`: the workspace's tools (with the subagent tools) worked with by
/// the model of `args` over `config`.
///
/// # Errors
/// Bad usage (settings, a run to continue that is not there, an empty prompt), the
/// provider cannot be set up, or the terminal fails.
pub fn run(args: AgentArgs, ws: Workspace, config: &AgentConfig) -> Result<ExitCode> {
    let Workspace {
        mut registry,
        store,
        call_log,
        subagents,
        upstreams,
        checkpoints,
        ..
    } = ws;
    let state_dir = registry.session().state_dir().to_path_buf();
    let runs_dir = model::runs_dir(&registry);
    if let Some(AgentCommand::Import(import)) = &args.command {
        let workspace = toolbelt_store::workspace_key(registry.session());
        return import::run(import, &runs_dir, workspace, &store);
    }
    if args.list {
        return list(&runs_dir, args.json);
    }
    let mut resume = match (&args.resume, args.continue_latest) {
        // The error of `find` says it all: no run, which runs the prefix fits, or
        // why the folder cannot be read (its cause).
        (Some(id), _) => Some(transcript::find(&runs_dir, id)?),
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
    let rt = runtime::start(Threads::Many)?;
    if args.rewind_to.is_some() {
        let Some(path) = &resume else {
            bail!("--rewind-to needs the run to go back in: --resume ID or --continue");
        };
        // Only -p gives the new run a prompt; without it the screen opens on it.
        let goes_on = !args.code && (args.prompt.is_some() || std::io::stdin().is_terminal());
        match rewind::run(&rt, &args, path, &runs_dir, checkpoints.as_ref(), goes_on)? {
            rewind::Next::Exit(code) => return Ok(code),
            rewind::Next::Resume(forked) => resume = Some(forked),
        }
    }
    let mut settings = AgentSettings::for_command(&args, config)?;
    let prompt = prompt(&args)?;
    for learnt in rt.block_on(settings.ask_server()) {
        eprintln!("toolbelt: {learnt}");
    }
    let mut options = model::options(&settings, &registry, runs_dir);
    // Nobody is there to start another turn: the reports of background subagents
    // are waited for.
    options.wait_for_background = prompt.is_some();
    if settings.provider.api_key.is_none() && !is_local_url(&settings.provider.base_url) {
        eprintln!(
            "toolbelt: warning: {} is not set; {} will probably refuse the requests",
            settings.key_env, settings.provider.base_url
        );
    }
    let provider = build_provider(settings.provider.clone())?;
    if let Some(subagents) = &subagents {
        model::configure_subagents(subagents, &settings, &options, Arc::clone(&provider));
    }

    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    registry.set_events(Some(Arc::new(ToolEventForwarder::new(
        events_tx.clone(),
        registry.profile().clone(),
    ))));
    let (ui_tx, ui_rx) = std::sync::mpsc::channel();
    if prompt.is_none() && !args.yes {
        registry.set_approver(Some(Arc::new(approve::Prompted::new(
            ui_tx.clone(),
            &registry,
        ))));
    } else {
        registry.set_approver(Some(Arc::new(Unattended {
            approve_all: args.yes,
            reason: UNATTENDED_REASON,
        })));
    }
    // Subagents work on a fork of the registry, which has no asker.
    if prompt.is_none() {
        registry.set_asker(Some(Arc::new(ask::Prompted::new(ui_tx.clone()))));
    } else {
        registry.set_asker(Some(Arc::new(ask::Unattended)));
    }

    rt.block_on(upstreams.start());
    // The store is opened first: one that cannot be opened costs the log, not the run.
    runtime::open_store_for_log(&rt, &store, call_log);
    let log = runtime::start_call_log_on(&rt, &mut registry, &store, call_log);
    if let Some(subagents) = &subagents {
        subagents.attach(&registry);
    }
    let registry = Arc::new(registry);
    // What `/rewind` makes to go on with a forked run: an agent like this one.
    let resume_agent: tui::rewind_screen::Resume = {
        let registry = Arc::clone(&registry);
        let provider = Arc::clone(&provider);
        let options = options.clone();
        let events = events_tx.clone();
        let subagents = subagents.clone();
        Box::new(move |path: &Path| {
            let mut agent = Agent::resume(
                Arc::clone(&registry),
                Arc::clone(&provider),
                options.clone(),
                events.clone(),
                path,
            )
            .context("cannot continue the run")?;
            if let Some(subagents) = &subagents {
                agent.set_subagents(subagents.clone());
            }
            Ok(agent)
        })
    };
    let mut agent = match &resume {
        Some(path) => Agent::resume(Arc::clone(&registry), provider, options, events_tx, path)
            .context("cannot continue the run")?,
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
            print_outcome(&outcome, args.json)?
        }
        None => {
            tui::run(tui::Parts {
                rt: &rt,
                agent,
                events: events_rx,
                ui_tx,
                ui_rx,
                registry: Arc::clone(&registry),
                history: state_dir.join("agent").join("history"),
                resumed: resume.is_some(),
                rewinder: tui::rewind_screen::Rewinder {
                    runs_dir: model::runs_dir(&registry),
                    checkpoints,
                    resume: resume_agent,
                },
            })?;
            ExitCode::SUCCESS
        }
    };
    if let Some(subagents) = &subagents {
        rt.block_on(subagents.shutdown(SUBAGENTS_GRACE));
    }
    rt.block_on(runtime::flush_log(log.as_ref()));
    rt.shutdown_timeout(SHUTDOWN_GRACE);
    Ok(code)
}

/// The end of a `-p` run: the final answer on standard output (unless `--json`
/// printed the events), or on standard error what ended it otherwise.
fn print_outcome(outcome: &RunOutcome, json: bool) -> Result<ExitCode> {
    Ok(match outcome.outcome {
        Outcome::FinalAnswer => {
            if !json {
                let mut answer = outcome.message.trim_end().to_string();
                answer.push('\n');
                out(&answer)?;
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
    })
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

/// Standard input, whole.
fn read_stdin() -> Result<String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the prompt from standard input")?;
    Ok(text)
}

/// `--list`: the runs, oldest first.
fn list(dir: &Path, json: bool) -> Result<ExitCode> {
    let runs = transcript::list(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if json {
        out_json(&runs)?;
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        out(&format!("no runs in {}\n", dir.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    for run in &runs {
        let started = chrono::DateTime::parse_from_rfc3339(&run.started).map_or_else(
            |_| run.started.clone(),
            |t| t.format("%Y-%m-%d %H:%M").to_string(),
        );
        let turns = render::count(run.turns, "turn");
        let outcome = run.outcome.as_deref().unwrap_or("unfinished");
        text.push_str(&format!(
            "{}  {started}  {turns}, {outcome}  {}\n",
            run.id,
            render::clip(&run.prompt, 80)
        ));
    }
    out(&text)?;
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
            return out(&line);
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
    log: Option<CallLogWriter>,
) -> Result<RunOutcome> {
    let cancel = CancellationToken::new();
    let run_cancel = cancel.clone();
    let mut task = tokio::spawn(async move {
        let outcome = agent.run(&prompt, &run_cancel).await;
        // The session ends with its one run: its `session_end` hooks run now.
        agent.end(outcome.outcome.as_str()).await;
        outcome
    });
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
                    let _ = tokio::time::timeout(QUIT_FLUSH, runtime::flush_log(log.as_ref())).await;
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
    use super::*;

    #[test]
    fn local_servers_need_no_key() {
        assert!(is_local_url("http://127.0.0.1:8080/v1"));
        assert!(is_local_url("http://localhost:11434/v1"));
        assert!(is_local_url("http://192.168.1.20:8000/v1"));
        assert!(is_local_url("http://[::1]:9000"));
        assert!(!is_local_url("https://api.openai.com/v1"));
        assert!(!is_local_url("not a url"));
    }
}
