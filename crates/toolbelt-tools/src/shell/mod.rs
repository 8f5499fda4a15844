//! The shell toolset: [`bash::Bash`] runs a command, in the foreground or as a
//! background shell that [`bash_output::BashOutputTool`], [`write_stdin::WriteStdin`],
//! [`kill_shell::KillShell`] and [`list_shells::ListShells`] reach; and what the
//! background-shell tools share: a shell's state, its report, and the wait for
//! its output.

pub(crate) mod bash;
pub(crate) mod bash_output;
pub(crate) mod kill_shell;
pub(crate) mod list_shells;
pub(crate) mod write_stdin;

use std::fmt::Write as _;
use std::time::Duration;

use regex::Regex;
use schemars::JsonSchema;
use serde::Serialize;
use toolbelt_core::{Reply, ToolContext, ToolError};
use toolbelt_exec::{ShellInfo, ShellRead, ShellStatus, Shells};

/// Where a background shell is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ShellState {
    /// Still running.
    Running,
    /// Ended by itself (see `exit_code`).
    Exited,
    /// Stopped by `kill_shell`.
    Killed,
    /// Stopped by its timeout.
    TimedOut,
}

/// The new output and status of a background shell.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShellReport {
    /// The shell's id.
    pub shell_id: String,
    /// Its command line.
    pub command: String,
    /// Where it is.
    pub status: ShellState,
    /// Its exit code once it has exited by itself (128 + the signal that ended it).
    pub exit_code: Option<i32>,
    /// Standard output written since the previous read.
    pub stdout: String,
    /// Standard error written since the previous read.
    pub stderr: String,
    /// Bytes of older output dropped because they were not read in time (at most
    /// 1 MiB per stream is kept unread).
    pub dropped_bytes: u64,
    /// New lines left out by `filter`.
    pub filtered_lines: usize,
    /// Run time in milliseconds, to its end or to now.
    pub runtime_ms: u64,
}

/// Waits for new output of `id`, or until `timeout` or the call is cancelled.
pub(crate) async fn wait(
    shells: &Shells,
    ctx: &ToolContext,
    id: &str,
    timeout: Duration,
) -> Result<(), ToolError> {
    tokio::select! {
        waited = shells.wait_for_output(id, timeout) => Ok(waited?),
        () = ctx.cancel_token().cancelled() => Ok(()),
    }
}

pub(crate) fn state(status: ShellStatus) -> (ShellState, Option<i32>) {
    match status {
        ShellStatus::Running => (ShellState::Running, None),
        ShellStatus::Exited(code) => (ShellState::Exited, Some(code)),
        ShellStatus::Killed => (ShellState::Killed, None),
        ShellStatus::TimedOut => (ShellState::TimedOut, None),
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `running, 12.3 s` / `exited with code 0 after 3.2 s` ...
pub(crate) fn status_words(info: &ShellInfo) -> String {
    let secs = info.runtime.as_secs_f64();
    match info.status {
        ShellStatus::Running => format!("running, {secs:.1} s"),
        ShellStatus::Exited(code) => format!("exited with code {code} after {secs:.1} s"),
        ShellStatus::Killed => format!("killed after {secs:.1} s"),
        ShellStatus::TimedOut => format!("timed out after {secs:.1} s"),
    }
}

/// Keeps the lines of `text` that match `filter`; returns how many were left out.
fn keep_matching(text: &str, filter: &Regex) -> (String, usize) {
    let mut kept = String::new();
    let mut dropped = 0;
    for line in text.split_inclusive('\n') {
        if filter.is_match(line.trim_end_matches(['\n', '\r'])) {
            kept.push_str(line);
        } else {
            dropped += 1;
        }
    }
    (kept, dropped)
}

/// The result of a read: the new output, then a status line.
pub(crate) fn report(read: ShellRead, filter: Option<&Regex>) -> Reply<ShellReport> {
    let (mut stdout, mut stderr, mut filtered) = (read.stdout, read.stderr, 0);
    if let Some(filter) = filter {
        let (out, a) = keep_matching(&stdout, filter);
        let (err, b) = keep_matching(&stderr, filter);
        (stdout, stderr, filtered) = (out, err, a + b);
    }
    let (status, exit_code) = state(read.info.status);
    let dropped_bytes = read.stdout_dropped + read.stderr_dropped;
    let out = ShellReport {
        shell_id: read.info.id.clone(),
        command: read.info.command.clone(),
        status,
        exit_code,
        stdout,
        stderr,
        dropped_bytes,
        filtered_lines: filtered,
        runtime_ms: millis(read.info.runtime),
    };
    let mut text = String::new();
    text.push_str(&out.stdout);
    if !out.stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(&out.stderr);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let _ = write!(text, "[{}: {}", out.shell_id, status_words(&read.info));
    if out.stdout.is_empty() && out.stderr.is_empty() && filtered == 0 {
        text.push_str("; no new output");
    }
    if filtered > 0 {
        let _ = write!(
            text,
            "; {filtered} line(s) not matching the filter left out"
        );
    }
    if dropped_bytes > 0 {
        let _ = write!(
            text,
            "; {dropped_bytes} bytes of older output were dropped unread"
        );
    }
    if status == ShellState::Running {
        text.push_str("; read more with bash_output, stop it with kill_shell");
    }
    text.push(']');
    Reply::new(out, text)
        .stat("dropped_bytes", dropped_bytes)
        .stat("filtered_lines", filtered)
}
