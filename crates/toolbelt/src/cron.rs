//! `toolbelt cron`: the `cron` tool's jobs from the command line (list, add, remove),
//! and `run`, the scheduler of `toolbelt serve` in the foreground without its HTTP
//! server. Also builds the [`Messaging`] (channels, outbox, scheduler) that
//! `toolbelt serve` runs, and [`AgentJobs`], which runs the prompts of jobs with
//! the agent of `[agent]`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::{BatchMode, BoxFuture, CallOptions, Registry, ToolCall};
use toolbelt_sched::{ChannelConfig, Channels, Messaging, PromptRun, PromptRunner};
use toolbelt_store::{CronJob, StoreHandle};

use crate::agent;
use crate::config::AgentConfig;

/// `toolbelt cron`.
#[derive(Debug, Args)]
pub struct CronArgs {
    #[command(subcommand)]
    command: CronCommand,
}

#[derive(Debug, Subcommand)]
enum CronCommand {
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

/// The channels of the config file over `store`, secrets read from the
/// environment; jobs run prompts when `[agent]` (or the environment) names a model.
/// Returns the runner of prompts too, to [`AgentJobs::attach`] the tools to.
pub fn messaging(
    channels: &BTreeMap<String, ChannelConfig>,
    agent: &AgentConfig,
    state_dir: &Path,
    store: &StoreHandle,
) -> Result<(Messaging, Option<Arc<AgentJobs>>)> {
    let env = |name: &str| std::env::var(name).ok();
    let channels = Channels::from_config(channels, &env, state_dir)
        .context("invalid [channels] in the config file")?;
    let messaging = Messaging::new(store.clone(), channels);
    // Without a usable [agent], `cron` refuses prompt jobs and says how to set one.
    let Ok(settings) = agent::job_settings(agent) else {
        return Ok((messaging, None));
    };
    let jobs = Arc::new(AgentJobs {
        settings,
        registry: OnceLock::new(),
    });
    let runner: Arc<dyn PromptRunner> = jobs.clone();
    Ok((messaging.with_prompt_runner(runner), Some(jobs)))
}

/// Runs the prompts of jobs with the agent of `[agent]`, on the tools of the
/// command that runs the scheduler (`toolbelt serve`, `toolbelt cron run`): the
/// same roots, rules, sandbox and call log; calls that an `ask` rule covers are
/// declined, as in `toolbelt agent -p`.
#[derive(Debug)]
pub struct AgentJobs {
    settings: agent::Settings,
    registry: OnceLock<Arc<Registry>>,
}

impl AgentJobs {
    /// Gives the runs the tools of `registry` (a fork of it: with its own
    /// approver, which declines what needs approval). Once; later calls are
    /// ignored.
    pub fn attach(&self, registry: &Registry) {
        let mut tools = registry.fork();
        tools.set_approver(Some(Arc::new(agent::Unattended {
            approve_all: false,
            reason: agent::JOB_REASON,
        })));
        let _ = self.registry.set(Arc::new(tools));
    }
}

impl PromptRunner for AgentJobs {
    fn run<'a>(&'a self, job: &'a CronJob, cancel: CancellationToken) -> BoxFuture<'a, PromptRun> {
        Box::pin(async move {
            let (Some(registry), Some(prompt)) = (self.registry.get(), job.prompt.as_deref())
            else {
                return PromptRun::failed(
                    "error",
                    "the process that fired the job has no tools to run its prompt with",
                );
            };
            let (outcome, text, run_id) =
                agent::run_unattended(Arc::clone(registry), &self.settings, prompt, &cancel).await;
            PromptRun {
                outcome: outcome.as_str().to_string(),
                text,
                run_id: (!run_id.is_empty()).then_some(run_id),
            }
        })
    }
}

/// Runs `toolbelt cron ...`.
pub fn run(
    args: CronArgs,
    mut registry: Registry,
    store: &StoreHandle,
    call_log: bool,
    messaging: &Messaging,
    jobs: Option<&AgentJobs>,
    subagents: Option<&toolbelt_agent::Subagents>,
) -> Result<ExitCode> {
    let (arguments, json_out) = match args.command {
        CronCommand::Run { once } => {
            return run_foreground(registry, store, call_log, messaging, jobs, subagents, once);
        }
        CronCommand::List { json } => (json!({"action": "list"}), json),
        CronCommand::Add {
            name,
            schedule,
            message,
            prompt,
            channel,
            chat_id,
            tz,
            json,
        } => {
            let mut a = json!({
                "action": "add",
                "name": name,
                "schedule": schedule,
            });
            for (key, value) in [
                ("message", message),
                ("prompt", prompt),
                ("channel", channel),
                ("chat_id", chat_id),
            ] {
                if let Some(v) = value {
                    a[key] = Value::String(v);
                }
            }
            if let Some(tz) = tz {
                a["tz"] = Value::String(tz);
            }
            (a, json)
        }
        CronCommand::Remove { name, json } => (json!({"action": "remove", "name": name}), json),
    };
    if !registry.has("cron") {
        bail!(
            "no channel and no agent is configured, so there is no cron tool: add a [channels.NAME] table, or a model under [agent], to toolbelt.toml (see the README)"
        );
    }
    let envs = crate::run_calls(
        &mut registry,
        store,
        call_log,
        vec![ToolCall::new("cron", arguments)],
        BatchMode::Sequential,
        &CallOptions::default(),
        None,
    )?;
    let Some(env) = envs.into_iter().next() else {
        bail!("the call gave no result");
    };
    if json_out {
        crate::out(&format!("{}\n", serde_json::to_string_pretty(&env)?))?;
    } else {
        crate::out(&crate::render::envelope_human(&env))?;
    }
    Ok(if env.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `toolbelt cron run`: the jobs' prompts run on `registry`'s tools, their calls
/// logged.
fn run_foreground(
    mut registry: Registry,
    store: &StoreHandle,
    call_log: bool,
    messaging: &Messaging,
    jobs: Option<&AgentJobs>,
    subagents: Option<&toolbelt_agent::Subagents>,
    once: bool,
) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(crate::open_store(store))?;
    let log = {
        let _entered = rt.enter();
        crate::start_call_log(&mut registry, store, call_log)
    };
    if let Some(jobs) = jobs {
        jobs.attach(&registry);
    }
    if let Some(subagents) = subagents {
        subagents.attach(&registry);
    }
    if once {
        let fired = rt.block_on(messaging.run_once())?;
        rt.block_on(crate::flush_log(log.as_ref()));
        eprintln!(
            "toolbelt cron: {} job{} fired",
            fired.len(),
            if fired.len() == 1 { "" } else { "s" }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let names = messaging.channels().names().join(", ");
    eprintln!(
        "toolbelt cron: firing jobs and delivering messages (channels: {}); Ctrl-C stops",
        if names.is_empty() { "none" } else { &names }
    );
    let cancel = CancellationToken::new();
    rt.block_on(async {
        let stop = cancel.clone();
        tokio::spawn(async move {
            toolbelt_server::http::shutdown_signal().await;
            stop.cancel();
        });
        messaging.run(cancel).await;
    });
    rt.block_on(crate::flush_log(log.as_ref()));
    Ok(ExitCode::SUCCESS)
}

/// The scheduler and the outbox running in the background.
pub struct Background {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Background {
    /// Stops them: prompt runs under way are cut off and recorded as interrupted
    /// (within the scheduler's grace period), then this returns.
    pub async fn stop(self) {
        self.cancel.cancel();
        let grace = std::time::Duration::from_millis(toolbelt_sched::STOP_GRACE_MS + 1_000);
        if tokio::time::timeout(grace, self.task).await.is_err() {
            tracing::warn!("the scheduler did not stop within its grace period");
        }
    }
}

/// Starts `messaging` on the current runtime until [`Background::stop`]: the
/// scheduler and the outbox of `toolbelt serve`, the jobs' prompts run on
/// `registry`'s tools.
pub fn spawn(messaging: &Messaging, jobs: Option<&AgentJobs>, registry: &Registry) -> Background {
    if let Some(jobs) = jobs {
        jobs.attach(registry);
    }
    let cancel = CancellationToken::new();
    let m = messaging.clone();
    let c = cancel.clone();
    let task = tokio::spawn(async move { m.run(c).await });
    Background { cancel, task }
}
