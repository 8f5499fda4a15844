//! The bodies of the commands, one module each, and what they share: writing to
//! standard output and the exit status.

pub mod agent;
pub mod batch;
pub mod call;
pub mod checkpoints;
pub mod cron;
pub mod doctor;
pub mod hooks;
pub mod log;
pub mod mcp;
pub mod mcp_servers;
pub mod schema;
pub mod serve;
pub mod tools;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::Serialize;

/// Standard output was closed by its reader.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub struct ClosedStdout;

/// Writes `text` to standard output and flushes it.
///
/// # Errors
/// [`ClosedStdout`] when the reader went away (`toolbelt schema | head`), else the
/// write's error.
pub fn out(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(ClosedStdout.into()),
        r => r.context("cannot write to standard output"),
    }
}

/// Writes `value` to standard output as pretty JSON and a newline.
///
/// # Errors
/// As [`out`].
pub fn out_json(value: &impl Serialize) -> Result<()> {
    out(&format!("{}\n", serde_json::to_string_pretty(value)?))
}

/// 0 when all went well, else 1 (2 is for errors: bad usage, nothing ran).
pub fn exit_code(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
