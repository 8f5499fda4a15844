//! `toolbelt batch`: several calls from one JSON array (`[{"tool": "createProject",
//! "params": {...}}, ...]`), each with its envelope.

use std::fmt::Write as _;
use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use toolbelt_core::human::plural;
use toolbelt_core::{BatchMode, CallOptions, Envelope, ToolCall};
use toolbelt_wire::batch::parse_calls;

use super::{exit_code, out, out_json};
use crate::cli::BatchArgs;
use crate::render;
use crate::runtime;
use crate::workspace::Workspace;

/// Runs the batch and prints the envelopes; the status is 1 when any call failed.
///
/// # Errors
/// The batch cannot be read or is malformed (then no call runs), the runtime
/// cannot be started, or standard output cannot be written.
pub fn run(args: BatchArgs, mut ws: Workspace) -> Result<ExitCode> {
    let calls = args.read_calls()?;
    let opts = CallOptions {
        timeout: args.timeout_ms.map(Duration::from_millis),
        origin: Some(toolbelt_core::Origin::new("batch")),
        ..CallOptions::default()
    };
    let envs = runtime::run_calls(&mut ws, calls, args.mode(), &opts)?;
    if args.json {
        out_json(&envs)?;
    } else {
        let n = envs.len();
        let mut text = String::new();
        for (i, env) in envs.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            let _ = write!(text, "[{}/{n}] ", i + 1);
            text.push_str(&render::envelope_human(env));
        }
        let failed = envs.iter().filter(|e| !e.is_ok()).count();
        let _ = writeln!(text, "\n{n} {}, {failed} failed", plural(n as u64, "call"));
        out(&text)?;
    }
    Ok(exit_code(envs.iter().all(Envelope::is_ok)))
}

impl BatchArgs {
    /// How the calls run.
    pub fn mode(&self) -> BatchMode {
        match self.concurrent {
            Some(max) if max > 1 => BatchMode::Concurrent {
                max: usize::from(max),
            },
            _ => BatchMode::Sequential,
        }
    }

    /// The calls, read and checked: nothing runs when any of them is malformed.
    ///
    /// # Errors
    /// The file (or standard input) cannot be read, or the batch is malformed.
    pub fn read_calls(&self) -> Result<Vec<ToolCall>> {
        let json = if self.file == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read the calls from standard input")?;
            bytes
        } else {
            std::fs::read(&self.file)
                .with_context(|| format!("cannot read the calls from {}", self.file))?
        };
        // The parser's message is whole (what is wrong and how a batch looks).
        Ok(parse_calls(&json)?)
    }
}
