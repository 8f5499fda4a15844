//! `bash_output`: the new output and status of a background shell, and what the
//! background-shell tools (`write_stdin`, `kill_shell`, `list_shells`) share.

use std::fmt::Write as _;
use std::time::Duration;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_exec::{ShellInfo, ShellRead, ShellStatus, Shells};

/// Seconds `bash_output` waits for new output by default.
pub const DEFAULT_BLOCK_SECS: u64 = 30;
/// The longest wait `bash_output` may ask for, in seconds.
pub const MAX_BLOCK_SECS: u64 = 600;

/// Arguments of `bash_output`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashOutputParams {
    /// The id of a background shell, from `bash` with `run_in_background`.
    #[schemars(length(min = 1))]
    pub shell_id: String,
    /// Wait for new output (or the end of the shell) before answering; default true.
    #[serde(default)]
    pub block: Option<bool>,
    /// Seconds to wait at most when blocking; default 30, at most 600.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600))]
    pub timeout: Option<u64>,
    /// A regular expression: only the new lines that match it are shown (the others
    /// are read and discarded).
    #[serde(default)]
    pub filter: Option<String>,
}

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

/// The `bash_output` tool.
#[derive(Debug, Default)]
pub struct BashOutputTool {
    shells: Shells,
}

impl BashOutputTool {
    /// A `bash_output` reading the sessions of `shells`.
    #[must_use]
    pub fn new(shells: Shells) -> BashOutputTool {
        BashOutputTool { shells }
    }
}

impl TypedTool for BashOutputTool {
    type Params = BashOutputParams;
    type Output = ShellReport;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("bash_output", include_str!("bash_output.md"))
            .title("Read Background Shell Output")
            .category(Category::Shell)
            .permission("shell:exec")
            .hints(Hints::read_only().not_idempotent())
            .key_argument("shell_id")
            .own_timeout()
            .example(
                "Wait for a dev server to say it is ready",
                serde_json::json!({"shell_id": "shell_1", "timeout": 60, "filter": "ready|error"}),
                serde_json::json!({
                    "shell_id": "shell_1", "command": "npm run dev", "status": "running",
                    "exit_code": null, "stdout": "ready on http://localhost:3000\n", "stderr": "",
                    "dropped_bytes": 0, "filtered_lines": 4, "runtime_ms": 5210
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: BashOutputParams) -> ToolResult<ShellReport> {
        let filter = compile_filter(p.filter.as_deref())?;
        self.shells.info(&p.shell_id)?;
        if p.block.unwrap_or(true) {
            let secs = p
                .timeout
                .unwrap_or(DEFAULT_BLOCK_SECS)
                .clamp(1, MAX_BLOCK_SECS);
            wait(&self.shells, ctx, &p.shell_id, Duration::from_secs(secs)).await?;
        }
        let read = self.shells.read(&p.shell_id)?;
        Ok(report(read, filter.as_ref()))
    }
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

/// The filter's regex.
fn compile_filter(filter: Option<&str>) -> Result<Option<Regex>, ToolError> {
    match filter.filter(|f| !f.is_empty()) {
        None => Ok(None),
        Some(pattern) => Regex::new(pattern).map(Some).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidParams,
                format!("filter {pattern:?} is not a valid regular expression: {e}"),
            )
            .hint("use Rust regex syntax, e.g. \"error|warning\"; escape literal ( [ . * with \\")
        }),
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
