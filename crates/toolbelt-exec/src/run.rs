//! Running one command to its end: spawn, stream, time out, kill the tree, drain.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use encoding_rs::Encoding;
use rustix::process::{Pid, Signal};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;
use toolbelt_core::output::{Captured, OutputBudget, OutputSink};
use toolbelt_sandbox::Sandbox;

use crate::decode::Transcoder;
use crate::tree::{self, MARKER_VAR};

/// Exit code reported for a command stopped by its timeout (as `timeout(1)` does).
pub const TIMEOUT_EXIT_CODE: i32 = 124;
/// Exit code reported for a command stopped because its call was cancelled.
pub const CANCELLED_EXIT_CODE: i32 = 130;
/// Default wait between `SIGTERM` and `SIGKILL`.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(1);
/// Default wait for the output pipes to close after the shell has exited (a
/// background process may hold them open).
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(1);
/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 64 * 1024;

/// One command to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The command line, run with `<shell> -c`.
    pub command: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// The whole environment (see [`crate::EnvPolicy::build`]); the tree marker is
    /// added to it.
    pub env: Vec<(String, String)>,
    /// Stop the command after this long.
    pub timeout: Duration,
    /// Budget of the standard output's text.
    pub stdout_budget: OutputBudget,
    /// Budget of the standard error's text.
    pub stderr_budget: OutputBudget,
    /// Where output over budget is saved whole (none: it is cut and lost).
    pub spill_dir: Option<PathBuf>,
    /// The shell; default `/bin/bash`, or `/bin/sh` where there is no bash.
    pub shell: Option<PathBuf>,
    /// Wait between `SIGTERM` and `SIGKILL`.
    pub kill_grace: Duration,
    /// Wait for the pipes to close after the shell exits.
    pub drain_timeout: Duration,
    /// The locale's encoding, tried before GB18030 for output that is not UTF-8.
    pub locale: Option<&'static Encoding>,
    /// The sandbox to run in (none: the server's own rights).
    pub sandbox: Option<Arc<Sandbox>>,
    /// Bytes written to the command's standard input, which is then closed (none:
    /// standard input is closed from the start). A command that does not read
    /// them all is not an error.
    pub stdin: Option<Vec<u8>>,
}

impl ExecRequest {
    /// A request with the default budgets, grace and drain timeout, no spill.
    pub fn new(
        command: impl Into<String>,
        cwd: impl Into<PathBuf>,
        timeout: Duration,
    ) -> ExecRequest {
        ExecRequest {
            command: command.into(),
            cwd: cwd.into(),
            env: Vec::new(),
            timeout,
            stdout_budget: OutputBudget::default(),
            stderr_budget: OutputBudget::default(),
            spill_dir: None,
            shell: None,
            kill_grace: DEFAULT_KILL_GRACE,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            locale: None,
            sandbox: None,
            stdin: None,
        }
    }
}

/// One output stream of a finished command.
#[derive(Debug, Clone)]
pub struct StreamOutput {
    /// The text within budget, and where the whole output went.
    pub captured: Captured,
    /// The encoding the bytes were decoded from (`None`: there were none).
    pub encoding: Option<&'static str>,
}

/// How a command ended.
#[derive(Debug, Clone)]
pub struct ExecOutcome {
    /// Standard output.
    pub stdout: StreamOutput,
    /// Standard error.
    pub stderr: StreamOutput,
    /// The exit code: the shell's, 128 + the signal that ended it,
    /// [`TIMEOUT_EXIT_CODE`] or [`CANCELLED_EXIT_CODE`].
    pub exit_code: i32,
    /// The signal that ended the shell, if one did.
    pub signal: Option<i32>,
    /// Stopped by the timeout.
    pub timed_out: bool,
    /// Stopped because the call was cancelled.
    pub cancelled: bool,
    /// From spawn to the end of the output.
    pub duration: Duration,
    /// The pipes were still held open by a background process when the drain
    /// timeout passed: output written after that was not read.
    pub drain_timed_out: bool,
    /// Processes of the tree still running after the shell ended (background
    /// jobs, daemons) that were killed.
    pub leftovers_killed: usize,
    /// Processes of the tree that survived `SIGKILL` (pids).
    pub survivors: Vec<u32>,
}

/// Why a command could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The shell could not be started.
    #[error("cannot start {shell} in {cwd}", shell = shell.display(), cwd = cwd.display())]
    Spawn {
        /// The shell.
        shell: PathBuf,
        /// The working directory.
        cwd: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The output could not be saved.
    #[error("cannot save the command's output")]
    Output(#[from] std::io::Error),
}

/// A command that [`spawn_marked`] could not start: [`ExecError::Spawn`] or
/// [`ShellError::Spawn`](crate::background::ShellError::Spawn) to its caller.
#[derive(Debug)]
pub(crate) struct SpawnError {
    /// The program started: the shell, or the sandbox helper.
    pub(crate) program: PathBuf,
    /// The working directory.
    pub(crate) cwd: PathBuf,
    /// The failure.
    pub(crate) source: std::io::Error,
}

impl From<SpawnError> for ExecError {
    fn from(e: SpawnError) -> Self {
        ExecError::Spawn {
            shell: e.program,
            cwd: e.cwd,
            source: e.source,
        }
    }
}

/// The default shell: bash where there is one.
#[must_use]
pub fn default_shell() -> PathBuf {
    ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// Kills the tree when dropped while armed: a call whose future is dropped
/// (cancelled, timed out by its caller) leaves nothing running.
struct TreeGuard {
    group: Option<Pid>,
    marker: String,
    armed: bool,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = tree::kill_tree(self.group, &self.marker);
        }
    }
}

/// A command started by [`spawn_marked`].
pub(crate) struct Marked {
    pub(crate) child: tokio::process::Child,
    /// The value of [`MARKER_VAR`] every process of its tree carries.
    pub(crate) marker: String,
    /// Its process group.
    pub(crate) group: Option<Pid>,
}

/// Starts `command` with `<shell> -c` (default [`default_shell`]) in `cwd` with
/// exactly `env` plus a fresh tree marker, in a new session (its own process
/// group, no controlling terminal), stdout and
/// stderr piped; inside `sandbox` when given (through its helper, with `TMPDIR`
/// its private directory). On failure, the program that could not start and why.
pub(crate) fn spawn_marked(
    shell: Option<&PathBuf>,
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    stdin: Stdio,
    sandbox: Option<&Sandbox>,
) -> Result<Marked, SpawnError> {
    let shell = shell.cloned().unwrap_or_else(default_shell);
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let mut cmd = match sandbox {
        None => {
            let mut cmd = tokio::process::Command::new(&shell);
            cmd.arg("-c").arg(command).env_clear();
            cmd
        }
        Some(sandbox) => {
            let (program, args) = sandbox.command(&shell, command);
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args).env_clear();
            cmd
        }
    };
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(sandbox) = sandbox {
        // The one temporary directory sandboxed commands can write.
        cmd.env("TMPDIR", sandbox.tmp_dir());
    }
    crate::session::detach(&mut cmd);
    let child = cmd
        .current_dir(cwd)
        .env(MARKER_VAR, &marker)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| SpawnError {
            // Name what failed to start: the sandbox helper, when there is one.
            program: sandbox.map_or(shell, |s| s.helper().to_path_buf()),
            cwd: cwd.to_path_buf(),
            source,
        })?;
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw);
    Ok(Marked {
        child,
        marker,
        group,
    })
}

/// Runs `req` to its end, or until `cancel` fires.
///
/// # Errors
/// [`ExecError::Spawn`] when the shell cannot start (a missing working
/// directory, no shell); [`ExecError::Output`] when output over budget cannot be
/// saved.
pub async fn run(req: ExecRequest, cancel: &CancellationToken) -> Result<ExecOutcome, ExecError> {
    let started = Instant::now();
    let Marked {
        mut child,
        marker,
        group,
    } = spawn_marked(
        req.shell.as_ref(),
        &req.command,
        &req.cwd,
        &req.env,
        if req.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        },
        req.sandbox.as_deref(),
    )?;
    if let (Some(bytes), Some(mut pipe)) = (req.stdin.clone(), child.stdin.take()) {
        // Written beside the readers: a command that fills its output before
        // reading its input does not deadlock. A command that exits without
        // reading it all closes the pipe; that is its choice, not an error.
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        });
    }
    let mut guard = TreeGuard {
        group,
        marker: marker.clone(),
        armed: true,
    };

    let stop = CancellationToken::new();
    let sink = |budget: &OutputBudget| match &req.spill_dir {
        Some(dir) => OutputSink::new(budget.clone(), dir.clone()),
        None => OutputSink::without_spill(budget.clone()),
    };
    let mut out_task = child.stdout.take().map(|pipe| {
        tokio::spawn(pump(
            pipe,
            sink(&req.stdout_budget),
            Transcoder::new(req.locale),
            stop.clone(),
        ))
    });
    let mut err_task = child.stderr.take().map(|pipe| {
        tokio::spawn(pump(
            pipe,
            sink(&req.stderr_budget),
            Transcoder::new(req.locale),
            stop.clone(),
        ))
    });

    let (mut timed_out, mut cancelled) = (false, false);
    let waited = tokio::select! {
        status = child.wait() => Some(status),
        () = tokio::time::sleep(req.timeout) => { timed_out = true; None }
        () = cancel.cancelled() => { cancelled = true; None }
    };
    let status: Option<ExitStatus> = match waited {
        Some(status) => status.ok(),
        None => {
            tree::signal_tree(group, &marker, Signal::TERM);
            match tokio::time::timeout(req.kill_grace, child.wait()).await {
                Ok(status) => status.ok(),
                Err(_) => {
                    tree::signal_tree(group, &marker, Signal::KILL);
                    child.wait().await.ok()
                }
            }
        }
    };

    // The shell is gone; its output ends when every process holding the pipes is.
    let mut drain_timed_out = false;
    let readers = async {
        let out = match out_task.take() {
            Some(task) => Some(task.await),
            None => None,
        };
        let err = match err_task.take() {
            Some(task) => Some(task.await),
            None => None,
        };
        (out, err)
    };
    tokio::pin!(readers);
    let (out, err) = tokio::select! {
        both = &mut readers => both,
        () = tokio::time::sleep(req.drain_timeout) => {
            // A background process holds the pipes: keep what was read.
            drain_timed_out = true;
            stop.cancel();
            readers.await
        }
    };
    let killed = tokio::task::spawn_blocking(move || tree::kill_tree(group, &marker))
        .await
        .unwrap_or_default();
    guard.armed = false;

    let stdout = joined(out)?;
    let stderr = joined(err)?;
    let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    let exit_code = if timed_out {
        TIMEOUT_EXIT_CODE
    } else if cancelled {
        CANCELLED_EXIT_CODE
    } else {
        status
            .and_then(|s| s.code())
            .or_else(|| signal.map(|s| 128 + s))
            .unwrap_or(-1)
    };
    Ok(ExecOutcome {
        stdout,
        stderr,
        exit_code,
        signal,
        timed_out,
        cancelled,
        duration: started.elapsed(),
        drain_timed_out,
        leftovers_killed: killed.killed,
        survivors: killed.survivors,
    })
}

type Pumped = Result<StreamOutput, std::io::Error>;

/// The output of a reader task, or an empty one when there was no pipe.
fn joined(
    result: Option<Result<Pumped, tokio::task::JoinError>>,
) -> Result<StreamOutput, ExecError> {
    match result {
        None => Ok(StreamOutput {
            captured: OutputSink::without_spill(OutputBudget::default()).finish()?,
            encoding: None,
        }),
        Some(Ok(pumped)) => Ok(pumped?),
        Some(Err(e)) => Err(ExecError::Output(std::io::Error::other(e))),
    }
}

/// Reads `pipe` to its end (or until `stop`), decoding into `sink`.
async fn pump(
    mut pipe: impl AsyncRead + Unpin,
    mut sink: OutputSink,
    mut decoder: Transcoder,
    stop: CancellationToken,
) -> Pumped {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut text = String::new();
    loop {
        let read = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            read = pipe.read(&mut buf) => read,
        };
        match read {
            Ok(0) => break,
            Ok(n) => {
                text.clear();
                decoder.push(&buf[..n], &mut text);
                sink.write(text.as_bytes())?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // A broken pipe ends the output like its end does.
            Err(_) => break,
        }
    }
    text.clear();
    decoder.finish(&mut text);
    sink.write(text.as_bytes())?;
    Ok(StreamOutput {
        encoding: decoder.encoding().map(Encoding::name),
        captured: sink.finish()?,
    })
}
