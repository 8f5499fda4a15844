//! Background shell sessions: commands that keep running between calls.
//!
//! [`Shells`] starts a command like [`crate::run`] does (its own process group,
//! every process of its tree marked in its environment, the environment given by
//! the caller), but with standard input a pipe, and returns at once with the
//! session's id. Tasks read its output as it comes into one buffer per stream;
//! [`Shells::read`] returns what was written since the previous read. What is not
//! read is bounded: past [`DEFAULT_MAX_UNREAD_BYTES`] per stream the oldest output
//! is dropped and counted.
//!
//! At most [`DEFAULT_MAX_LIVE`] sessions run at once. A finished session stays
//! listed, with its exit code, until its remaining output has been read. Every
//! live session's tree is killed by [`Shells::kill_all`] and when the last handle
//! of the manager is dropped.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolbelt_exec::ShellError> {
//! use std::time::Duration;
//! use toolbelt_exec::{Shells, StartRequest};
//!
//! let shells = Shells::new();
//! let id = shells.start(StartRequest::new("echo hi; sleep 1", "/tmp"))?.id;
//! shells.wait_for_output(&id, Duration::from_secs(5)).await?;
//! let read = shells.read(&id)?;
//! assert_eq!(read.stdout, "hi\n");
//! shells.kill(&id).await?;
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use encoding_rs::Encoding;
use rustix::process::{Pid, Signal};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolbelt_core::sync::lock;

use crate::decode::Transcoder;
use crate::run::{DEFAULT_DRAIN_TIMEOUT, DEFAULT_KILL_GRACE, Marked, SpawnError, spawn_marked};
use crate::tree;

/// Sessions running at once, by default.
pub const DEFAULT_MAX_LIVE: usize = 8;
/// Bytes of unread output kept per stream, by default; older output is dropped.
pub const DEFAULT_MAX_UNREAD_BYTES: usize = 1024 * 1024;
/// Finished sessions kept with unread output; past it the oldest are forgotten.
pub const MAX_FINISHED: usize = 32;
/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 64 * 1024;
/// How long a stream may pause before its encoding is chosen from fewer bytes
/// than the sniff window, so that its output shows at once.
const SETTLE_AFTER: Duration = Duration::from_millis(30);

/// A command to start in the background.
#[derive(Debug, Clone)]
pub struct StartRequest {
    /// The command line, run with `<shell> -c`.
    pub command: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// The whole environment (see [`crate::EnvPolicy::build`]); the tree marker is
    /// added to it.
    pub env: Vec<(String, String)>,
    /// Stop the session after this long; none: it runs until it ends or is killed.
    pub timeout: Option<Duration>,
    /// The shell; default `/bin/bash`, or `/bin/sh` where there is no bash.
    pub shell: Option<PathBuf>,
    /// Wait between `SIGTERM` and `SIGKILL`.
    pub kill_grace: Duration,
    /// The locale's encoding, tried before GB18030 for output that is not UTF-8.
    pub locale: Option<&'static Encoding>,
    /// The sandbox to run in (none: the server's own rights).
    pub sandbox: Option<std::sync::Arc<toolbelt_sandbox::Sandbox>>,
}

impl StartRequest {
    /// A request without timeout, with the default kill grace.
    pub fn new(command: impl Into<String>, cwd: impl Into<PathBuf>) -> StartRequest {
        StartRequest {
            command: command.into(),
            cwd: cwd.into(),
            env: Vec::new(),
            timeout: None,
            shell: None,
            kill_grace: DEFAULT_KILL_GRACE,
            locale: None,
            sandbox: None,
        }
    }
}

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellStatus {
    /// Still running.
    Running,
    /// Ended by itself: the shell's exit code, or 128 + the signal that ended it.
    Exited(i32),
    /// Stopped by [`Shells::kill`] (or [`Shells::kill_all`]).
    Killed,
    /// Stopped by its timeout.
    TimedOut,
}

impl ShellStatus {
    /// Whether the session is still running.
    #[must_use]
    pub fn is_running(self) -> bool {
        self == ShellStatus::Running
    }
}

/// What a session is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellInfo {
    /// Its id (`shell_1`, `shell_2`, ...).
    pub id: String,
    /// The command line.
    pub command: String,
    /// The shell's pid (also the process group's id).
    pub pid: Option<u32>,
    /// Where it is.
    pub status: ShellStatus,
    /// From its start to its end, or to now while it runs.
    pub runtime: Duration,
}

/// The output of a session since the previous read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRead {
    /// The session, as of this read.
    pub info: ShellInfo,
    /// New standard output.
    pub stdout: String,
    /// New standard error.
    pub stderr: String,
    /// Bytes of standard output dropped unread since the previous read.
    pub stdout_dropped: u64,
    /// Bytes of standard error dropped unread since the previous read.
    pub stderr_dropped: u64,
}

/// Why a session could not be started or reached.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShellError {
    /// As many sessions as allowed are running.
    #[error(
        "{max} background shells are running already ({}); stop one with kill_shell or wait for one to finish",
        describe(running)
    )]
    TooMany {
        /// The cap.
        max: usize,
        /// The running sessions.
        running: Vec<ShellInfo>,
    },
    /// No session has that id.
    #[error("no background shell {id:?}{}", known_list(known))]
    NotFound {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: Vec<String>,
    },
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
    /// The session has ended, so its standard input is closed.
    #[error("the standard input of background shell {id:?} is closed: the shell has ended")]
    StdinClosed {
        /// The session.
        id: String,
    },
    /// Writing to the session's standard input failed (it closed it, or ended
    /// meanwhile); the input is closed from now on.
    #[error("the standard input of background shell {id:?} is closed")]
    StdinFailed {
        /// The session.
        id: String,
        /// The write's error.
        #[source]
        source: std::io::Error,
    },
}

impl From<SpawnError> for ShellError {
    fn from(e: SpawnError) -> Self {
        ShellError::Spawn {
            shell: e.program,
            cwd: e.cwd,
            source: e.source,
        }
    }
}

fn describe(running: &[ShellInfo]) -> String {
    running
        .iter()
        .map(|s| format!("{}: {}", s.id, s.command))
        .collect::<Vec<_>>()
        .join("; ")
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "; there are none".to_string()
    } else {
        format!("; there are {}", known.join(", "))
    }
}

/// The unread output of one stream.
#[derive(Debug, Default)]
struct Unread {
    bytes: VecDeque<u8>,
    dropped: u64,
}

impl Unread {
    /// Appends `text`, dropping the oldest bytes (whole characters) past `max`.
    fn push(&mut self, text: &str, max: usize) {
        self.bytes.extend(text.as_bytes());
        if self.bytes.len() > max {
            let mut cut = self.bytes.len() - max;
            // Never leave half a character at the front.
            while self.bytes.get(cut).is_some_and(|b| b & 0xC0 == 0x80) {
                cut += 1;
            }
            self.bytes.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    fn take(&mut self) -> (String, u64) {
        let bytes: Vec<u8> = self.bytes.drain(..).collect();
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        (text, std::mem::take(&mut self.dropped))
    }
}

#[derive(Debug)]
struct State {
    stdout: Unread,
    stderr: Unread,
    status: ShellStatus,
    ended: Option<Instant>,
}

/// One session.
struct Session {
    id: String,
    command: String,
    pid: Option<u32>,
    group: Option<Pid>,
    marker: String,
    started: Instant,
    max_unread: usize,
    state: Mutex<State>,
    /// Bumped at every change of the state.
    changed: watch::Sender<u64>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    kill: CancellationToken,
}

impl Session {
    fn info(&self, state: &State) -> ShellInfo {
        ShellInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            pid: self.pid,
            status: state.status,
            runtime: state
                .ended
                .unwrap_or_else(Instant::now)
                .saturating_duration_since(self.started),
        }
    }

    fn touch(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn has_news(&self) -> bool {
        let state = lock(&self.state);
        !state.status.is_running()
            || !state.stdout.bytes.is_empty()
            || !state.stderr.bytes.is_empty()
            || state.stdout.dropped > 0
            || state.stderr.dropped > 0
    }

    /// Waits until the session has ended.
    async fn ended(&self) {
        let mut rx = self.changed.subscribe();
        loop {
            rx.borrow_and_update();
            if !lock(&self.state).status.is_running() {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }
}

struct Inner {
    sessions: Mutex<BTreeMap<u64, Arc<Session>>>,
    next_id: AtomicU64,
    max_live: usize,
    max_unread: usize,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let sessions = std::mem::take(&mut *lock(&self.sessions));
        for session in sessions.values() {
            if lock(&session.state).status.is_running() {
                session.kill.cancel();
                let _ = tree::kill_tree(session.group, &session.marker);
            }
        }
    }
}

/// The background sessions of a server: cheap to clone, every clone sees the same
/// sessions; the live ones are killed when the last clone is dropped.
///
/// # Security
/// A session runs any command line it is given, with the environment it is given,
/// as the server's user, until it ends or is killed.
#[derive(Clone)]
pub struct Shells {
    inner: Arc<Inner>,
}

impl fmt::Debug for Shells {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shells")
            .field("max_live", &self.inner.max_live)
            .field("max_unread", &self.inner.max_unread)
            .field("sessions", &lock(&self.inner.sessions).len())
            .finish()
    }
}

impl Default for Shells {
    fn default() -> Shells {
        Shells::new()
    }
}

impl Shells {
    /// A manager with [`DEFAULT_MAX_LIVE`] and [`DEFAULT_MAX_UNREAD_BYTES`].
    #[must_use]
    pub fn new() -> Shells {
        Shells::with_limits(DEFAULT_MAX_LIVE, DEFAULT_MAX_UNREAD_BYTES)
    }

    /// A manager running at most `max_live` sessions at once, keeping at most
    /// `max_unread_bytes` of unread output per stream (both at least 1).
    #[must_use]
    pub fn with_limits(max_live: usize, max_unread_bytes: usize) -> Shells {
        Shells {
            inner: Arc::new(Inner {
                sessions: Mutex::new(BTreeMap::new()),
                next_id: AtomicU64::new(1),
                max_live: max_live.max(1),
                max_unread: max_unread_bytes.max(4),
            }),
        }
    }

    /// The most sessions running at once.
    #[must_use]
    pub fn max_live(&self) -> usize {
        self.inner.max_live
    }

    /// Starts `req` in the background and returns at once. Needs a Tokio runtime.
    ///
    /// # Errors
    /// [`ShellError::TooMany`] when [`Shells::max_live`] sessions run already;
    /// [`ShellError::Spawn`] when the shell cannot start.
    ///
    /// # Security
    /// Runs the command line as given; see [`Shells`].
    pub fn start(&self, req: StartRequest) -> Result<ShellInfo, ShellError> {
        let mut sessions = lock(&self.inner.sessions);
        let running: Vec<ShellInfo> = sessions
            .values()
            .filter_map(|s| {
                let state = lock(&s.state);
                state.status.is_running().then(|| s.info(&state))
            })
            .collect();
        if running.len() >= self.inner.max_live {
            return Err(ShellError::TooMany {
                max: self.inner.max_live,
                running,
            });
        }
        forget_oldest_finished(&mut sessions);

        let Marked {
            mut child,
            marker,
            group,
        } = spawn_marked(
            req.shell.as_ref(),
            &req.command,
            &req.cwd,
            &req.env,
            Stdio::piped(),
            req.sandbox.as_deref(),
        )?;
        let pid = child.id();
        let n = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (changed, _) = watch::channel(0);
        let session = Arc::new(Session {
            id: format!("shell_{n}"),
            command: req.command.clone(),
            pid,
            group,
            marker,
            started: Instant::now(),
            max_unread: self.inner.max_unread,
            state: Mutex::new(State {
                stdout: Unread::default(),
                stderr: Unread::default(),
                status: ShellStatus::Running,
                ended: None,
            }),
            changed,
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
            kill: CancellationToken::new(),
        });
        let stop = CancellationToken::new();
        let readers = [
            child.stdout.take().map(|pipe| {
                tokio::spawn(pump(
                    pipe,
                    Arc::clone(&session),
                    false,
                    Transcoder::new(req.locale),
                    stop.clone(),
                ))
            }),
            child.stderr.take().map(|pipe| {
                tokio::spawn(pump(
                    pipe,
                    Arc::clone(&session),
                    true,
                    Transcoder::new(req.locale),
                    stop.clone(),
                ))
            }),
        ];
        tokio::spawn(supervise(
            child,
            Arc::clone(&session),
            readers,
            stop,
            req.timeout,
            req.kill_grace,
        ));
        let info = session.info(&lock(&session.state));
        sessions.insert(n, session);
        Ok(info)
    }

    /// Every session: the running ones, and the finished ones whose output has not
    /// been read to the end; oldest first.
    #[must_use]
    pub fn list(&self) -> Vec<ShellInfo> {
        lock(&self.inner.sessions)
            .values()
            .map(|s| s.info(&lock(&s.state)))
            .collect()
    }

    /// The session `id`, without reading its output.
    ///
    /// # Errors
    /// [`ShellError::NotFound`].
    pub fn info(&self, id: &str) -> Result<ShellInfo, ShellError> {
        let session = self.find(id)?;
        let state = lock(&session.state);
        Ok(session.info(&state))
    }

    /// The output of `id` written since the previous read, and its status. A
    /// finished session whose output has now been read to the end is forgotten.
    ///
    /// # Errors
    /// [`ShellError::NotFound`].
    pub fn read(&self, id: &str) -> Result<ShellRead, ShellError> {
        let session = self.find(id)?;
        let read = {
            let mut state = lock(&session.state);
            let (stdout, stdout_dropped) = state.stdout.take();
            let (stderr, stderr_dropped) = state.stderr.take();
            ShellRead {
                info: session.info(&state),
                stdout,
                stderr,
                stdout_dropped,
                stderr_dropped,
            }
        };
        if !read.info.status.is_running() {
            lock(&self.inner.sessions).retain(|_, s| !Arc::ptr_eq(s, &session));
        }
        Ok(read)
    }

    /// Waits until `id` has output not read yet, or has ended, or `timeout` passed.
    ///
    /// # Errors
    /// [`ShellError::NotFound`].
    pub async fn wait_for_output(&self, id: &str, timeout: Duration) -> Result<(), ShellError> {
        let session = self.find(id)?;
        let mut rx = session.changed.subscribe();
        let wait = async {
            loop {
                rx.borrow_and_update();
                if session.has_news() {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, wait).await;
        Ok(())
    }

    /// Writes `bytes` to the standard input of `id` (nothing for none).
    ///
    /// # Errors
    /// [`ShellError::NotFound`]; [`ShellError::StdinClosed`] when the session has
    /// ended or its input is closed.
    pub async fn write_stdin(&self, id: &str, bytes: &[u8]) -> Result<(), ShellError> {
        let session = self.find(id)?;
        if bytes.is_empty() {
            return Ok(());
        }
        let closed = || ShellError::StdinClosed {
            id: session.id.clone(),
        };
        if !lock(&session.state).status.is_running() {
            return Err(closed());
        }
        let mut stdin = session.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(closed());
        };
        let written = async {
            pipe.write_all(bytes).await?;
            pipe.flush().await
        };
        if let Err(e) = written.await {
            *stdin = None;
            return Err(ShellError::StdinFailed {
                id: session.id.clone(),
                source: e,
            });
        }
        Ok(())
    }

    /// Kills the whole tree of `id` (`SIGTERM`, a grace period, `SIGKILL`, then
    /// every marked process) and waits until it has ended. A session that has
    /// ended already is left as it is.
    ///
    /// # Errors
    /// [`ShellError::NotFound`].
    pub async fn kill(&self, id: &str) -> Result<ShellInfo, ShellError> {
        let session = self.find(id)?;
        session.kill.cancel();
        session.ended().await;
        let state = lock(&session.state);
        Ok(session.info(&state))
    }

    /// Kills every running session and waits until they have ended.
    pub async fn kill_all(&self) {
        let sessions: Vec<Arc<Session>> = lock(&self.inner.sessions).values().cloned().collect();
        for session in &sessions {
            session.kill.cancel();
        }
        for session in &sessions {
            session.ended().await;
        }
    }

    fn find(&self, id: &str) -> Result<Arc<Session>, ShellError> {
        let sessions = lock(&self.inner.sessions);
        sessions
            .values()
            .find(|s| s.id == id)
            .cloned()
            .ok_or_else(|| ShellError::NotFound {
                id: id.to_string(),
                known: sessions.values().map(|s| s.id.clone()).collect(),
            })
    }
}

/// Forgets the oldest finished sessions past [`MAX_FINISHED`].
fn forget_oldest_finished(sessions: &mut BTreeMap<u64, Arc<Session>>) {
    let finished: Vec<u64> = sessions
        .iter()
        .filter(|(_, s)| !lock(&s.state).status.is_running())
        .map(|(&n, _)| n)
        .collect();
    let excess = (finished.len() + 1).saturating_sub(MAX_FINISHED);
    for n in finished.into_iter().take(excess) {
        sessions.remove(&n);
    }
}

type Reader = Option<tokio::task::JoinHandle<()>>;

/// Waits for the shell to end, its timeout or a kill; then stops the tree, lets the
/// output drain and records the status.
async fn supervise(
    mut child: tokio::process::Child,
    session: Arc<Session>,
    readers: [Reader; 2],
    stop: CancellationToken,
    timeout: Option<Duration>,
    kill_grace: Duration,
) {
    let (mut timed_out, mut killed) = (false, false);
    let deadline = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let waited = tokio::select! {
        status = child.wait() => Some(status),
        () = deadline => { timed_out = true; None }
        () = session.kill.cancelled() => { killed = true; None }
    };
    let (group, marker) = (session.group, session.marker.clone());
    let status = match waited {
        Some(status) => status.ok(),
        None => {
            tree::signal_tree(group, &marker, Signal::TERM);
            match tokio::time::timeout(kill_grace, child.wait()).await {
                Ok(status) => status.ok(),
                Err(_) => {
                    tree::signal_tree(group, &marker, Signal::KILL);
                    child.wait().await.ok()
                }
            }
        }
    };
    *session.stdin.lock().await = None;
    let drained = async {
        for reader in readers.into_iter().flatten() {
            let _ = reader.await;
        }
    };
    tokio::pin!(drained);
    tokio::select! {
        () = &mut drained => {}
        () = tokio::time::sleep(DEFAULT_DRAIN_TIMEOUT) => {
            stop.cancel();
            drained.await;
        }
    }
    let _ = tokio::task::spawn_blocking(move || tree::kill_tree(group, &marker)).await;
    let exit = if timed_out {
        ShellStatus::TimedOut
    } else if killed {
        ShellStatus::Killed
    } else {
        let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
        ShellStatus::Exited(
            status
                .and_then(|s| s.code())
                .or_else(|| signal.map(|s| 128 + s))
                .unwrap_or(-1),
        )
    };
    {
        let mut state = lock(&session.state);
        state.status = exit;
        state.ended = Some(Instant::now());
    }
    session.touch();
}

/// Reads `pipe` to its end (or until `stop`) into the session's buffer.
async fn pump(
    mut pipe: impl AsyncRead + Unpin,
    session: Arc<Session>,
    is_stderr: bool,
    mut decoder: Transcoder,
    stop: CancellationToken,
) {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut text = String::new();
    let push = |text: &str| {
        if text.is_empty() {
            return;
        }
        {
            let mut state = lock(&session.state);
            let unread = if is_stderr {
                &mut state.stderr
            } else {
                &mut state.stdout
            };
            unread.push(text, session.max_unread);
        }
        session.touch();
    };
    let mut sniffing = false;
    loop {
        let pause = async {
            if sniffing {
                tokio::time::sleep(SETTLE_AFTER).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let read = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            read = pipe.read(&mut buf) => read,
            () = pause => {
                text.clear();
                decoder.settle(&mut text);
                push(&text);
                sniffing = false;
                continue;
            }
        };
        match read {
            Ok(0) => break,
            Ok(n) => {
                text.clear();
                decoder.push(&buf[..n], &mut text);
                push(&text);
                sniffing = decoder.encoding().is_none();
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    text.clear();
    decoder.finish(&mut text);
    push(&text);
}

#[cfg(test)]
#[path = "background_tests.rs"]
mod tests;
