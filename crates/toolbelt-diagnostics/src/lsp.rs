//! Language servers, as a source of problems after an edit: never stale, never
//! blocking the edit, bounded in processes, documents and memory.
//!
//! [`Servers`] holds the configured [`ServerSpec`]s and starts one server per
//! (language, root) in the background, on the first file of its language
//! ([`Servers::warm`]) or the first change. [`Servers::change`] sends a change of a
//! file and returns its problems before and after it ([`Change`]);
//! [`Servers::check`] returns a file's current problems ([`Answer`]). Both return
//! by their deadline whatever the server does.
//!
//! # Freshness
//!
//! Every content change goes out as `didChange` with a higher version and the
//! whole text (a change event without a range, which the protocol allows
//! whatever `textDocumentSync` kind the server asks for; `didSave` follows when
//! the server asks for saves). An answer counts for a content only when it is
//!
//! - a `publishDiagnostics` whose `version` is that content's version or later,
//! - the answer to a `textDocument/diagnostic` pull request sent after the
//!   change (when the server offers pull diagnostics), taken only while no later
//!   change was sent, or
//! - a `publishDiagnostics` **without** a version that arrived after the change
//!   was written to the server. This rule is weaker: a publish the server made
//!   for the previous content, still in the pipe when the change was written, is
//!   taken for the new content. Servers that send versions are not affected.
//!
//! Anything else gives [`Answer::Pending`] (`"basedpyright-langserver still
//! indexing (2.4 s)"`), never an older content's problems. Positions are
//! converted with the text of the version the problems belong to.
//!
//! # Other documents
//!
//! A change can break (or fix) other files: [`Change::others`] lists the open
//! documents of the same server whose problems the server published anew after
//! the change was sent, each with its problems before (its last answer, for the
//! version it holds, when the change was sent; a document without one is
//! skipped) and after (an answer for that same version, or without a version,
//! taken after the change was sent). Only documents whose problems differ are
//! listed, at most [`MAX_OTHER_FILES`]. Nothing is waited for beyond the
//! changed file's own answer, except by a server seen publishing again for
//! documents it had answered: up to [`OTHERS_GRACE`] more, never past the
//! deadline. A publish the server made before it read the change but that
//! arrived after the change was sent is taken as the change's effect (the
//! protocol tells no more); for the document's own version it is never stale.
//!
//! # Failures
//!
//! - A program not on `PATH`: [`Answer::Unavailable`] and one note per language
//!   ([`Servers::take_notes`]); it is looked for again after [`MISSING_RETRY`].
//!   Nothing is downloaded.
//! - A server that exits, writes something that is not an LSP frame on stdout
//!   (a header block over 64 KiB, a body over 32 MiB), or does not answer
//!   `initialize` within its startup timeout is killed and counts as a stop; it is
//!   restarted on the next need after a backoff (0.5 s, doubled each time) and
//!   turned off, with a note, after its sixth stop.
//! - Each server runs in its own process group, its tree marked; its whole tree
//!   is killed when it stops and its process reaped.
//!
//! # Bounds
//!
//! At most [`MAX_OPEN_DOCUMENTS`] documents per server (the least recently used
//! is closed), servers stopped after [`IDLE_TIMEOUT`] unused, stderr drained
//! with only its last lines kept.
//!
//! # Example
//!
//! ```no_run
//! use std::path::{Path, PathBuf};
//! use std::time::{Duration, Instant};
//! use toolbelt_diagnostics::lsp::{Answer, ServerSpec, Servers};
//!
//! # async fn demo() {
//! let mut python = ServerSpec::new(
//!     "python",
//!     vec!["basedpyright-langserver".into(), "--stdio".into()],
//!     vec![".py".into(), ".pyi".into()],
//! );
//! python.root_markers = vec!["pyproject.toml".into(), ".git".into()];
//! python.install_hint = Some("`pip install basedpyright`".into());
//! let servers = Servers::new(vec![python], vec![PathBuf::from("/work/project")]);
//! let file = Path::new("/work/project/x.py");
//! servers.warm(file);
//! let deadline = Instant::now() + Duration::from_secs(3);
//! let change = servers
//!     .change(file, "x.py", Some("def f(a: int) -> int: return a\n"), "def f(a: int) -> str: return a\n", deadline)
//!     .await;
//! match change.after {
//!     Answer::Fresh(problems) => println!("{} problems", problems.len()),
//!     Answer::Pending(why) => println!("diagnostics pending: {why}"),
//!     Answer::Unavailable => {}
//! }
//! for other in &change.others {
//!     println!("{}: {} problems now", other.file.display(), other.after.len());
//! }
//! for note in servers.take_notes() {
//!     println!("{note}");
//! }
//! servers.shutdown().await;
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use lsp_types::Url;
use toolbelt_core::diagnostics::Diagnostic;

mod convert;
mod docs;
mod guard;
mod others;
mod process;
mod registry;
mod server;

pub use others::{MAX_OTHER_FILES, OTHERS_GRACE};
pub use registry::{
    DEFAULT_BACKOFF, IDLE_TIMEOUT, MAX_OPEN_DOCUMENTS, MAX_RESTARTS, MISSING_RETRY,
};

use registry::{Acquired, Inner};
use server::Server;

/// How long a server may take to answer `initialize` by default.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// How long [`Servers::shutdown`] waits for servers to go before killing them.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(3);

/// One configured server: `[lsp.python] command = ["basedpyright-langserver",
/// "--stdio"], extensions = [".py",".pyi"], root_markers = ["pyproject.toml",
/// ".git"]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// The language (`python`), for notes and as the documents' language id.
    pub language: String,
    /// The program and its arguments (exec form, no shell).
    pub command: Vec<String>,
    /// The file extensions it handles (`.py`; the dot is optional).
    pub extensions: Vec<String>,
    /// Files or folders that mark a project root (`pyproject.toml`, `.git`).
    pub root_markers: Vec<String>,
    /// How long `initialize` may take before the server is killed (default 60 s).
    pub startup_timeout: Duration,
    /// Sent as `initializationOptions`.
    pub initialization_options: Option<serde_json::Value>,
    /// How to install the program, shown when it is missing.
    pub install_hint: Option<String>,
}

impl ServerSpec {
    /// A spec with no root markers, the default startup timeout, no options and
    /// no install hint.
    pub fn new(
        language: impl Into<String>,
        command: Vec<String>,
        extensions: Vec<String>,
    ) -> ServerSpec {
        ServerSpec {
            language: language.into(),
            command,
            extensions,
            root_markers: Vec::new(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            initialization_options: None,
            install_hint: None,
        }
    }

    /// The program's name (the file name of the command's first word).
    pub fn program(&self) -> &str {
        let first = self.command.first().map_or("", String::as_str);
        Path::new(first)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(first)
    }
}

/// A server's problems with a content, as far as it could tell by the deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The problems of exactly this content (or a later one).
    Fresh(Vec<Diagnostic>),
    /// No answer for this content in time: why (`basedpyright-langserver still
    /// indexing (2.4 s)`, `... starting (0.3 s)`).
    Pending(String),
    /// No server for this file (none configured, missing, turned off).
    Unavailable,
}

/// The problems before and after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The problems of the old content (None: no old content, or no answer for
    /// it in time).
    pub before: Option<Vec<Diagnostic>>,
    /// The problems of the new content.
    pub after: Answer,
    /// Other open documents of the same server whose problems changed after
    /// this change: for each, its problems before the change and the fresh ones
    /// after (at most [`MAX_OTHER_FILES`], most recently used first).
    pub others: Vec<OtherFile>,
}

/// Another open document whose problems a change changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherFile {
    /// Its absolute path.
    pub file: PathBuf,
    /// Its problems when the change was sent (their `path` the absolute path).
    pub before: Vec<Diagnostic>,
    /// Its problems published after the change, for the same content (their
    /// `path` the absolute path).
    pub after: Vec<Diagnostic>,
}

/// A spec as `toolbelt doctor` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The language.
    pub language: String,
    /// The program (the command's first word).
    pub program: String,
    /// The whole command.
    pub command: Vec<String>,
    /// Whether the program is found (on `PATH`, or at its path).
    pub found: bool,
    /// Where it was found.
    pub path: Option<PathBuf>,
    /// How to install it.
    pub install_hint: Option<String>,
}

/// The language servers of a process: started in the background on the first
/// file of their language, one per (language, root). Clones share them; the
/// last clone dropped kills them.
///
/// Construction needs no runtime; [`Servers::warm`], [`Servers::change`] and
/// [`Servers::check`] must run inside a tokio runtime (they spawn tasks).
///
/// # Security
/// Servers are programs from the configuration, run with this process's rights
/// in the file's root, with secret-looking environment variables removed. Their
/// output is bounded ([`MAX_OPEN_DOCUMENTS`], 64 KiB headers, 32 MiB bodies).
#[derive(Debug, Clone)]
pub struct Servers {
    inner: Arc<Inner>,
}

impl Servers {
    /// The servers of `specs`, for files within `roots` (the first spec
    /// handling an extension wins).
    pub fn new(specs: Vec<ServerSpec>, roots: Vec<PathBuf>) -> Servers {
        Servers {
            inner: Arc::new(Inner::new(specs, roots)),
        }
    }

    /// Sets the first restart backoff (doubled after each stop; default
    /// [`DEFAULT_BACKOFF`]).
    #[must_use]
    pub fn with_backoff(self, base: Duration) -> Servers {
        self.inner.configure(|c| c.backoff = base);
        self
    }

    /// Sets how long a server may stay unused before it is stopped (default
    /// [`IDLE_TIMEOUT`]).
    #[must_use]
    pub fn with_idle_timeout(self, idle: Duration) -> Servers {
        self.inner.configure(|c| c.idle = idle);
        self
    }

    /// Sets how many documents a server holds open (default
    /// [`MAX_OPEN_DOCUMENTS`]).
    #[must_use]
    pub fn with_max_open_documents(self, max: usize) -> Servers {
        self.inner.configure(|c| c.max_open = max.max(1));
        self
    }

    /// Sets how long a missing program is not looked for again (default
    /// [`MISSING_RETRY`]).
    #[must_use]
    pub fn with_missing_retry(self, retry: Duration) -> Servers {
        self.inner.configure(|c| c.missing_retry = retry);
        self
    }

    /// Whether a spec handles `file` (by extension).
    pub fn handles(&self, file: &Path) -> bool {
        self.inner.spec_for(file).is_some()
    }

    /// Starts the server for `file`'s language and root in the background if it
    /// is not running (returns at once; does nothing outside a tokio runtime).
    pub fn warm(&self, file: &Path) {
        if tokio::runtime::Handle::try_current().is_ok() {
            let _ = self.inner.acquire(file);
        }
    }

    /// A change of `file` (shown to the model as `shown`) from `old` (None: a
    /// new file, or unknown) to `new`, which is on disk: the server's problems
    /// before (from what it last answered for a version whose text equals
    /// `old`, else by sending the old text first, within half the time left)
    /// and after, and the other open documents whose problems the server
    /// published anew after it ([`Change::others`]). Returns by `deadline`
    /// whatever happens (a server hung in `initialize`, a cold server still
    /// indexing, a crash).
    ///
    /// Cancel-safe: dropped at any point, it leaves the documents consistent
    /// (the next call sends what is needed).
    pub async fn change(
        &self,
        file: &Path,
        shown: &str,
        old: Option<&str>,
        new: &str,
        deadline: Instant,
    ) -> Change {
        let (server, uri) = match self.server_for(file) {
            Ok(found) => found,
            Err(after) => {
                return Change {
                    before: None,
                    after,
                    others: Vec::new(),
                };
            }
        };
        server.touch();
        if !server.wait_ready(deadline).await {
            server.sync(&uri, new, true);
            return Change {
                before: None,
                after: Answer::Pending(server.pending(&uri)),
                others: Vec::new(),
            };
        }
        let before = match old {
            Some(old) => before(&server, &uri, old, deadline)
                .await
                .map(|d| shown_as(d, shown)),
            None => None,
        };
        let Some((version, baselines)) = server.sync_watched(&uri, new, true, true) else {
            return Change {
                before,
                after: Answer::Pending(server.pending(&uri)),
                others: Vec::new(),
            };
        };
        let after = match server.answer(&uri, version, deadline).await {
            Some(answered) => Answer::Fresh(shown_as(answered.diagnostics, shown)),
            None => Answer::Pending(server.pending(&uri)),
        };
        let others = match baselines {
            Some(baselines) => {
                let answered = matches!(after, Answer::Fresh(_));
                others::others(&server, &baselines, answered, deadline).await
            }
            None => Vec::new(),
        };
        Change {
            before,
            after,
            others,
        }
    }

    /// The current problems of `file` (its content `text`), for the on-demand
    /// diagnostics tool.
    pub async fn check(&self, file: &Path, shown: &str, text: &str, deadline: Instant) -> Answer {
        let (server, uri) = match self.server_for(file) {
            Ok(found) => found,
            Err(answer) => return answer,
        };
        server.touch();
        if !server.wait_ready(deadline).await {
            server.sync(&uri, text, false);
            return Answer::Pending(server.pending(&uri));
        }
        if server.pulls()
            && let Some(version) = server.sync(&uri, text, false)
        {
            // Other files may have changed its problems: ask again.
            let _ = tokio::time::timeout_at(deadline.into(), server.pull(&uri, version, deadline))
                .await;
        }
        answer(&server, &uri, shown, text, deadline).await
    }

    /// The server for `file` and the file's URI, or the answer to give.
    fn server_for(&self, file: &Path) -> Result<(Arc<Server>, Url), Answer> {
        let server = match self.inner.acquire(file) {
            Acquired::Server(server) => server,
            Acquired::Waiting(why) => return Err(Answer::Pending(why)),
            Acquired::Unavailable => return Err(Answer::Unavailable),
        };
        let uri = Url::from_file_path(file).map_err(|()| Answer::Unavailable)?;
        Ok((server, uri))
    }

    /// Notes to show once each (a server missing, turned off after stops, not
    /// started within its startup timeout); each is returned by exactly one call.
    pub fn take_notes(&self) -> Vec<String> {
        self.inner.take_notes()
    }

    /// For `toolbelt doctor`: each spec, whether its program is on `PATH`, and
    /// its install hint.
    pub fn report(&self) -> Vec<ServerStatus> {
        self.inner
            .specs()
            .iter()
            .map(|spec| {
                let path = spec.command.first().and_then(|p| process::find_program(p));
                ServerStatus {
                    language: spec.language.clone(),
                    program: spec.command.first().cloned().unwrap_or_default(),
                    command: spec.command.clone(),
                    found: path.is_some(),
                    path,
                    install_hint: spec.install_hint.clone(),
                }
            })
            .collect()
    }

    /// Stops every server (`shutdown` and `exit`, then a kill of its whole tree
    /// after a short grace) and starts none any more. Also done, without the
    /// grace, when the last clone is dropped.
    pub async fn shutdown(&self) {
        let servers = self.inner.close();
        for server in &servers {
            server.request_stop();
        }
        let until = Instant::now() + SHUTDOWN_WAIT;
        let waits = servers.iter().map(|s| s.wait_stopped(until));
        futures::future::join_all(waits).await;
        for server in servers {
            if server.phase() != server::Phase::Stopped {
                let marker = server.marker.clone();
                process::kill_marked_async(marker).await;
            }
        }
    }
}

/// The problems of `old` for `before`: an answer already there for that text,
/// else the old text sent and answered within half the time left.
async fn before(
    server: &Server,
    uri: &Url,
    old: &str,
    deadline: Instant,
) -> Option<Vec<Diagnostic>> {
    if let Some(answered) = server.answer_for_text(uri, old) {
        return Some(answered.diagnostics);
    }
    let now = Instant::now();
    let half = now + deadline.saturating_duration_since(now) / 2;
    let version = server.sync(uri, old, false)?;
    let answered = server.answer(uri, version, half).await?;
    (*answered.text == *old).then_some(answered.diagnostics)
}

/// The problems of `text` once the server holds it, or why there are none.
async fn answer(server: &Server, uri: &Url, shown: &str, text: &str, deadline: Instant) -> Answer {
    let Some(version) = server.sync(uri, text, false) else {
        return Answer::Pending(server.pending(uri));
    };
    match server.answer(uri, version, deadline).await {
        Some(answered) => Answer::Fresh(shown_as(answered.diagnostics, shown)),
        None => Answer::Pending(server.pending(uri)),
    }
}

/// `diagnostics` with their path set to `shown`.
fn shown_as(mut diagnostics: Vec<Diagnostic>, shown: &str) -> Vec<Diagnostic> {
    for d in &mut diagnostics {
        d.path = shown.to_string();
    }
    diagnostics
}

/// Locks `mutex`, recovering from a panic of another holder (the state stays
/// usable: every update is a whole assignment).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
