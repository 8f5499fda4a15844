//! `toolbelt cron`: the `cron` tool's jobs from the command line (list, add, remove),
//! and `run`, the scheduler of `toolbelt serve` in the foreground without its HTTP
//! server.

use std::process::ExitCode;

use anyhow::{Result, bail};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::human::plural;
use toolbelt_core::{BatchMode, CallOptions, ToolCall};

use super::{exit_code, out, out_json};
use crate::cli::{CronArgs, CronCommand};
use crate::render;
use crate::runtime::{self, Threads};
use crate::workspace::Workspace;

/// Runs `toolbelt cron ...`.
///
/// # Errors
/// There is no `cron` tool (no channel and no model configured), or the runtime
/// cannot be started.
pub fn run(args: CronArgs, mut ws: Workspace) -> Result<ExitCode> {
    let (arguments, json_out) = match args.command {
        CronCommand::Run { once } => return run_foreground(ws, once),
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
    if !ws.registry.has("cron") {
        bail!(
            "no channel and no agent is configured, so there is no cron tool: add a [channels.NAME] table, or a model under [agent], to toolbelt.toml (see docs/messages-and-cron.md)"
        );
    }
    let envs = runtime::run_calls(
        &mut ws,
        vec![ToolCall::new("cron", arguments)],
        BatchMode::Sequential,
        &CallOptions::default(),
    )?;
    let Some(env) = envs.into_iter().next() else {
        bail!("the call gave no result");
    };
    if json_out {
        out_json(&env)?;
    } else {
        out(&render::envelope_human(&env))?;
    }
    Ok(exit_code(env.is_ok()))
}

/// `toolbelt cron run`: the jobs' prompts run on the workspace's tools, their calls
/// logged.
fn run_foreground(mut ws: Workspace, once: bool) -> Result<ExitCode> {
    let rt = runtime::start(Threads::Many)?;
    rt.block_on(runtime::open_store(&ws.store))?;
    let log = runtime::start_call_log_on(&rt, &mut ws.registry, &ws.store, ws.call_log);
    // Nobody is at a page to answer the runs' questions.
    if let Some(jobs) = &ws.jobs {
        jobs.attach(&ws.registry, None, None);
    }
    ws.attach_subagents();
    let messaging = &ws.messaging;
    if once {
        let fired = rt.block_on(messaging.run_once())?;
        rt.block_on(runtime::flush_log(log.as_ref()));
        eprintln!(
            "toolbelt cron: {} {} fired",
            fired.len(),
            plural(fired.len() as u64, "job")
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
    rt.block_on(runtime::flush_log(log.as_ref()));
    Ok(ExitCode::SUCCESS)
}
