//! `toolbelt cron`: the `cron` tool's jobs from the command line (list, add, remove),
//! and `run`, the scheduler of `toolbelt serve` in the foreground without its HTTP
//! server. Also builds the [`Messaging`] (channels, outbox, scheduler) that
//! `toolbelt serve` runs.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::{BatchMode, CallOptions, Registry, ToolCall};
use toolbelt_sched::{ChannelConfig, Channels, Messaging};
use toolbelt_store::StoreHandle;

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
    /// Add a job that sends MESSAGE to CHANNEL on SCHEDULE.
    Add {
        /// The job's name, unique in the workspace.
        name: String,
        /// A cron expression (5 fields, or 6 with seconds first), `every 10m`, or an
        /// RFC 3339 time (once).
        #[arg(long)]
        schedule: String,
        /// The text the job sends.
        #[arg(long)]
        message: String,
        /// A channel of toolbelt.toml ([channels.NAME]).
        #[arg(long)]
        channel: String,
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
    Run,
}

/// The channels of the config file over `store`, secrets read from the environment.
pub fn messaging(
    channels: &BTreeMap<String, ChannelConfig>,
    state_dir: &Path,
    store: &StoreHandle,
) -> Result<Messaging> {
    let env = |name: &str| std::env::var(name).ok();
    let channels = Channels::from_config(channels, &env, state_dir)
        .context("invalid [channels] in the config file")?;
    Ok(Messaging::new(store.clone(), channels))
}

/// Runs `toolbelt cron ...`.
pub fn run(
    args: CronArgs,
    mut registry: Registry,
    store: &StoreHandle,
    call_log: bool,
    messaging: &Messaging,
) -> Result<ExitCode> {
    let (arguments, json_out) = match args.command {
        CronCommand::Run => return run_foreground(store, messaging),
        CronCommand::List { json } => (json!({"action": "list"}), json),
        CronCommand::Add {
            name,
            schedule,
            message,
            channel,
            chat_id,
            tz,
            json,
        } => {
            let mut a = json!({
                "action": "add",
                "name": name,
                "schedule": schedule,
                "message": message,
                "channel": channel,
            });
            if let Some(c) = chat_id {
                a["chat_id"] = Value::String(c);
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
            "no channel is configured, so there is no cron tool: add a [channels.NAME] table to toolbelt.toml (see the README)"
        );
    }
    let envs = crate::run_calls(
        &mut registry,
        store,
        call_log,
        vec![ToolCall::new("cron", arguments)],
        BatchMode::Sequential,
        &CallOptions::default(),
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

/// `toolbelt cron run`.
fn run_foreground(store: &StoreHandle, messaging: &Messaging) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(crate::open_store(store))?;
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
    Ok(ExitCode::SUCCESS)
}

/// Starts `messaging` on the current runtime until the token is cancelled: the
/// scheduler and the outbox of `toolbelt serve`.
pub fn spawn(messaging: &Messaging) -> CancellationToken {
    let cancel = CancellationToken::new();
    let m = messaging.clone();
    let c = cancel.clone();
    tokio::spawn(async move { m.run(c).await });
    cancel
}
