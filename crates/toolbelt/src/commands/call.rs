//! `toolbelt call`: one call, its envelope printed.

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use toolbelt_core::{BatchMode, CallOptions, ToolCall};

use super::{exit_code, out, out_json};
use crate::cli::CallArgs;
use crate::render;
use crate::runtime;
use crate::workspace::Workspace;

/// Calls the tool and prints its envelope; the status is 1 for an error envelope.
///
/// # Errors
/// The arguments cannot be read, the runtime cannot be started, or standard
/// output cannot be written.
pub fn run(args: CallArgs, mut ws: Workspace) -> Result<ExitCode> {
    let raw = match args.args.as_deref() {
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
        timeout: args.timeout_ms.map(Duration::from_millis),
        origin: Some(toolbelt_core::Origin::new("cli")),
        ..CallOptions::default()
    };
    let envs = runtime::run_calls(
        &mut ws,
        vec![ToolCall::new(args.tool, arguments)],
        BatchMode::Sequential,
        &opts,
    )?;
    let Some(env) = envs.into_iter().next() else {
        bail!("the call gave no result");
    };
    if args.json {
        out_json(&env)?;
    } else {
        out(&render::envelope_human(&env))?;
    }
    Ok(exit_code(env.is_ok()))
}
