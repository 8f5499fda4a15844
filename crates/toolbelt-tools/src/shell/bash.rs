//! `bash`: runs a shell command in the workspace (seeds 001 ExecTool, 002
//! run_command, 004 BashTool), through `toolbelt-exec`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use toolbelt_core::error_chain;
use toolbelt_core::output::OutputBudget;
use toolbelt_core::{
    Category, ErrorCode, Hints, MAX_TIMEOUT_MS, Reply, Subject, ToolContext, ToolError, ToolResult,
    ToolSpec, TypedTool,
};
use toolbelt_exec::{EnvPolicy, ExecOutcome, ExecRequest, Shells, StartRequest};
use toolbelt_fs::EntryKind;
use toolbelt_sandbox::{Sandbox, SandboxMode};

use crate::shell::millis;
use crate::workspace::workspace;

/// The longest timeout a call may ask for, in seconds.
pub const MAX_BASH_TIMEOUT_SECS: u64 = MAX_TIMEOUT_MS / 1000;
/// Commands running at once; more calls wait for a slot.
pub const MAX_CONCURRENT_COMMANDS: usize = 16;
/// Bytes of the text budget kept for the status line.
const STATUS_RESERVE_BYTES: usize = 300;
/// The smallest budget of one stream.
const MIN_STREAM_BUDGET: usize = 1_024;

/// Arguments of `bash`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashParams {
    /// The command line, run with `bash -c` (pipes, `&&`, redirections work). Standard
    /// input is closed: nothing can wait for typed input.
    #[schemars(length(min = 1))]
    pub command: String,
    /// The directory to run in, inside the workspace; default: the workspace's working
    /// directory.
    #[serde(default)]
    pub working_dir: Option<String>,
    /// Seconds before the command and everything it started are stopped; default 120,
    /// at most 600.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600))]
    pub timeout: Option<u64>,
    /// Environment variables to set for this command, each as `NAME=value`.
    #[serde(default)]
    pub env: Option<Vec<String>>,
    /// What the command does, in a few words, for the user.
    #[serde(default)]
    pub description: Option<String>,
    /// Start the command as a background shell and return its `shell_id` at once, for
    /// servers, watchers and long builds; read it with `bash_output`, send input with
    /// `write_stdin` (its standard input is open), stop it with `kill_shell`. No timeout
    /// unless `timeout` is given.
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// Result of `bash`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BashOutput {
    /// Standard output (within budget; see `truncated` and `output_id`).
    pub stdout: String,
    /// Standard error (within budget).
    pub stderr: String,
    /// The exit code: the command's, 128 + the signal that ended it, 124 when it timed
    /// out, 130 when it was cancelled.
    pub exit_code: i32,
    /// Stopped by the timeout.
    pub timed_out: bool,
    /// Part of the output is not shown; `output_id` (and `stderr_output_id`) page it.
    pub truncated: bool,
    /// Run time in milliseconds.
    pub duration_ms: u64,
    /// The saved full standard output, for `read_output`, when it was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_id: Option<String>,
    /// The saved full standard error, for `read_output`, when it was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_output_id: Option<String>,
    /// Background processes the command left running, which were stopped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub background_killed: usize,
    /// Processes of the command that could not be stopped (pids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub survivors: Vec<u32>,
    /// The background shell started with `run_in_background`, for `bash_output`,
    /// `write_stdin` and `kill_shell`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell_id: Option<String>,
    /// `running` for a background shell just started (its exit code is not known
    /// yet and reads 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The slots of [`MAX_CONCURRENT_COMMANDS`], shared by every `bash` of the process.
static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_CONCURRENT_COMMANDS);

/// The `bash` tool.
#[derive(Debug, Default)]
pub struct Bash {
    env: EnvPolicy,
    shells: Shells,
    sandbox: Option<Arc<Sandbox>>,
}

impl Bash {
    /// A `bash` tool whose background shells are kept in `shells` (share it with
    /// `bash_output`, `write_stdin`, `kill_shell` and `list_shells`).
    #[must_use]
    pub fn new(shells: Shells) -> Bash {
        Bash {
            env: EnvPolicy::default(),
            shells,
            sandbox: None,
        }
    }

    /// The same tool, running its commands (background shells too) in `sandbox`;
    /// its description says what the sandbox enforces.
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Option<Arc<Sandbox>>) -> Bash {
        self.sandbox = sandbox;
        self
    }
}

impl TypedTool for Bash {
    type Params = BashParams;
    type Output = BashOutput;

    fn spec(&self) -> ToolSpec {
        let sandbox = self.sandbox.as_deref().map_or_else(
            || toolbelt_sandbox::describe(SandboxMode::None, true),
            Sandbox::describe,
        );
        ToolSpec::describe("bash", format!("{}\n{sandbox}\n", include_str!("bash.md")))
            .title("Run Shell Command")
            .category(Category::Shell)
            .subject(Subject::Command)
            .permission("shell:exec")
            .hints(Hints::writes().destructive().open_world())
            .key_argument("command")
            .short_arguments(&[])
            .own_timeout()
            .example(
                "Run the tests",
                serde_json::json!({"command": "cargo test --quiet", "timeout": 300}),
                serde_json::json!({
                    "stdout": "test result: ok. 12 passed; 0 failed\n", "stderr": "",
                    "exit_code": 0, "timed_out": false, "truncated": false, "duration_ms": 5210
                }),
            )
    }

    /// Nothing for a command line that certainly only reads
    /// ([`toolbelt_policy::read_only_command`]), run with no variables of its own
    /// (`env` can set `PATH`, `LD_PRELOAD` or `GIT_EXTERNAL_DIFF`), in the
    /// foreground or the background; anything in the workspace otherwise.
    fn changes(&self, args: &serde_json::Value) -> Option<toolbelt_core::Changes> {
        let command = args.get("command")?.as_str()?;
        let own_env = args
            .get("env")
            .is_some_and(|env| !env.is_null() && env.as_array().is_none_or(|e| !e.is_empty()));
        (!own_env && toolbelt_policy::read_only_command(command))
            .then_some(toolbelt_core::Changes::Nothing)
    }

    async fn call(&self, ctx: &ToolContext, p: BashParams) -> ToolResult<BashOutput> {
        let session = ctx.session();
        let ws = workspace(ctx)?;
        let cwd = match p.working_dir.as_deref().filter(|d| !d.is_empty()) {
            None => ws.cwd.clone(),
            Some(dir) => {
                let path = ws.jail.resolve(&ws.cwd, dir)?;
                let shown = ws.display(&path);
                match ws.jail.metadata(&path) {
                    Ok(meta) if meta.kind == EntryKind::Dir => path.abs().to_path_buf(),
                    Ok(meta) => {
                        return Err(ToolError::new(
                            ErrorCode::InvalidParams,
                            format!(
                                "working_dir {shown} is a {}, not a directory",
                                meta.kind.describe()
                            ),
                        ));
                    }
                    Err(toolbelt_fs::FsError::NotFound { .. }) => return Err(ws.not_found(&path)),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        let timeout_secs = p
            .timeout
            .unwrap_or_else(|| session.timeout().as_secs().max(1))
            .clamp(1, MAX_BASH_TIMEOUT_SECS);
        let budget = ctx.budget();
        let room = budget.max_bytes.saturating_sub(STATUS_RESERVE_BYTES);
        let stdout_budget = (room * 3 / 4).max(MIN_STREAM_BUDGET);
        let stderr_budget = room.saturating_sub(stdout_budget).max(MIN_STREAM_BUDGET);
        let call_env = call_env(p.env.as_deref().unwrap_or_default())?;
        let locale = toolbelt_exec::decode::env_locale_encoding(|name| {
            call_env.get(name).map(String::as_str)
        })
        .or_else(|| {
            let server: BTreeMap<String, String> = ["LC_ALL", "LC_CTYPE", "LANG"]
                .into_iter()
                .filter_map(|n| std::env::var(n).ok().map(|v| (n.to_string(), v)))
                .collect();
            toolbelt_exec::decode::env_locale_encoding(|name| server.get(name).map(String::as_str))
        });
        let mut req = ExecRequest::new(p.command.clone(), cwd, Duration::from_secs(timeout_secs));
        req.env = self.env.build(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
            &call_env,
        );
        let reader = ctx.budget().reader.clone();
        req.stdout_budget = OutputBudget::with_max_bytes(stdout_budget).with_reader(reader.clone());
        req.stderr_budget = OutputBudget::with_max_bytes(stderr_budget).with_reader(reader);
        req.spill_dir = Some(session.spill_dir());
        req.locale = locale;
        req.sandbox.clone_from(&self.sandbox);
        if let Some(description) = &p.description {
            ctx.emit(&format!("$ {description}"));
        }
        if p.run_in_background.unwrap_or(false) {
            let start = StartRequest {
                command: req.command,
                cwd: req.cwd,
                env: req.env,
                timeout: p
                    .timeout
                    .map(|t| Duration::from_secs(t.clamp(1, MAX_BASH_TIMEOUT_SECS))),
                shell: req.shell,
                kill_grace: req.kill_grace,
                locale: req.locale,
                sandbox: req.sandbox,
            };
            return started(self.shells.start(start)?, p.timeout);
        }
        // Calls past the cap wait their turn (and can be cancelled while they wait).
        let _slot = tokio::select! {
            slot = SLOTS.acquire() => slot.map_err(|e| ToolError::new(ErrorCode::Internal, error_chain(&e)))?,
            () = ctx.cancel_token().cancelled() => {
                return Err(ToolError::new(ErrorCode::Cancelled, "the command was cancelled before it started"));
            }
        };
        let outcome = toolbelt_exec::run(req, ctx.cancel_token()).await?;
        if self.sandbox.is_some() {
            refused_by_sandbox(&outcome)?;
        }
        finish(outcome, timeout_secs)
    }
}

/// The result of a background start.
fn started(info: toolbelt_exec::ShellInfo, timeout: Option<u64>) -> ToolResult<BashOutput> {
    let out = BashOutput {
        stdout: String::new(),
        stderr: String::new(),
        exit_code: 0,
        timed_out: false,
        truncated: false,
        duration_ms: millis(info.runtime),
        output_id: None,
        stderr_output_id: None,
        background_killed: 0,
        survivors: Vec::new(),
        shell_id: Some(info.id.clone()),
        status: Some("running".to_string()),
    };
    let id = &info.id;
    let limit = timeout.map_or_else(
        || "no time limit".to_string(),
        |t| format!("stopped after {t} s"),
    );
    let text = format!(
        "Started background shell {id} ({limit}): {}\n\
         Read its new output with bash_output(shell_id=\"{id}\"), send input with \
         write_stdin(shell_id=\"{id}\", chars=...), stop it with kill_shell(shell_id=\"{id}\").\n\
         [{id}: running, 0.0 s]",
        info.command
    );
    Ok(Reply::new(out, text).context("shell_id", info.id))
}

/// The variables a call sets, from its `NAME=value` entries.
fn call_env(entries: &[String]) -> Result<BTreeMap<String, String>, ToolError> {
    let mut env = BTreeMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let valid = entry.split_once('=').filter(|(name, _)| {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        let Some((name, value)) = valid else {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!("env[{i}] is {entry:?}, not NAME=value"),
            )
            .hint("give each variable as \"NAME=value\", e.g. [\"DEBUG=1\", \"RUST_LOG=info\"]"));
        };
        env.insert(name.to_string(), value.to_string());
    }
    Ok(env)
}

/// An `ACCESS_DENIED` error when the sandbox could not be set up for the command
/// (the helper's exit code and message), so it is not mistaken for the command's
/// own failure.
fn refused_by_sandbox(o: &ExecOutcome) -> Result<(), ToolError> {
    let text = &o.stderr.captured.text;
    match text.strip_prefix(toolbelt_sandbox::REFUSAL_PREFIX) {
        Some(why) if o.exit_code == toolbelt_sandbox::SETUP_FAILED_EXIT_CODE => {
            Err(ToolError::new(
                ErrorCode::AccessDenied,
                format!("the sandbox did not run the command: {}", why.trim()),
            )
            .hint("nothing ran; this machine or workspace cannot hold the configured sandbox (see `toolbelt doctor`)"))
        }
        _ => Ok(()),
    }
}

/// The result of a finished command: success for exit code 0, else an error whose
/// text still carries the output.
fn finish(o: ExecOutcome, timeout_secs: u64) -> ToolResult<BashOutput> {
    let truncated = o.stdout.captured.truncated || o.stderr.captured.truncated;
    let out = BashOutput {
        stdout: o.stdout.captured.text.clone(),
        stderr: o.stderr.captured.text.clone(),
        exit_code: o.exit_code,
        timed_out: o.timed_out,
        truncated,
        duration_ms: u64::try_from(o.duration.as_millis()).unwrap_or(u64::MAX),
        output_id: o.stdout.captured.output_id.clone(),
        stderr_output_id: o.stderr.captured.output_id.clone(),
        background_killed: o.leftovers_killed,
        survivors: o.survivors.clone(),
        shell_id: None,
        status: None,
    };
    let text = render(&out, &o);
    if o.exit_code == 0 && !o.timed_out && !o.cancelled {
        let stats = (o.stdout.captured.total_bytes, o.stderr.captured.total_bytes);
        return Ok(Reply::new(out, text)
            .partial(truncated)
            .stat("stdout_bytes", stats.0)
            .stat("stderr_bytes", stats.1)
            .stat("exit_code", o.exit_code));
    }
    let (code, message, hint) = if o.timed_out {
        (
            ErrorCode::Timeout,
            format!(
                "the command did not finish within {timeout_secs} s and was stopped with everything it started"
            ),
            "give a longer timeout (up to 600 s), make the command do less, or stop it from waiting for input",
        )
    } else if o.cancelled {
        (
            ErrorCode::Cancelled,
            "the command was cancelled and stopped".to_string(),
            "",
        )
    } else if o.stdout.captured.total_bytes == 0 && o.stderr.captured.total_bytes == 0 {
        // Nothing to read: say what an exit code without output usually means.
        (
            ErrorCode::NonzeroExit,
            format!(
                "the command exited with code {} and printed nothing",
                o.exit_code
            ),
            "grep exits 1 when no line matches and test and [ when the condition is false; otherwise run it again with more output (-v, or without -q)",
        )
    } else {
        (
            ErrorCode::NonzeroExit,
            format!("the command exited with code {}", o.exit_code),
            "read the output above to see what failed",
        )
    };
    let data = serde_json::to_value(&out).unwrap_or_default();
    let mut err = ToolError::new(code, message).data(data).text(text);
    if !hint.is_empty() {
        err = err.hint(hint);
    }
    Err(err)
}

/// The text the model reads: the output, then a status line.
fn render(out: &BashOutput, o: &ExecOutcome) -> String {
    let mut text = String::new();
    text.push_str(&out.stdout);
    if !out.stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        if !text.is_empty() {
            text.push_str("[stderr]\n");
        }
        text.push_str(&out.stderr);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let secs = o.duration.as_secs_f64();
    let _ = write!(text, "[exit code {} after {secs:.1} s", out.exit_code);
    if let Some(id) = &out.output_id {
        let _ = write!(text, "; full stdout: read_output(\"{id}\")");
    }
    if let Some(id) = &out.stderr_output_id {
        let _ = write!(text, "; full stderr: read_output(\"{id}\")");
    }
    if o.drain_timed_out {
        text.push_str("; a background process kept the output open, so later output was not read");
    }
    if out.background_killed > 0 {
        let _ = write!(
            text,
            "; {} background process(es) left running were stopped",
            out.background_killed
        );
    }
    if !out.survivors.is_empty() {
        let _ = write!(text, "; could not stop processes {:?}", out.survivors);
    }
    text.push(']');
    text
}
