//! One running language server, as the calls see it: its phase, its documents,
//! and the waits on both, each bounded by the caller's deadline.
//!
//! Every call works under one short-held lock and never waits while holding it:
//! messages are queued to async-lsp's main loop (an unbounded channel) under the
//! lock so that their order matches the document versions, and waits go through
//! a `watch` channel bumped on every change of state.

mod router;
mod supervise;

pub(super) use self::supervise::{StopReason, StopReport};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_lsp::ServerSocket;
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
};
use lsp_types::request::DocumentDiagnosticRequest;
use lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DidSaveTextDocumentParams, DocumentDiagnosticParams, DocumentDiagnosticReport,
    DocumentDiagnosticReportResult, PartialResultParams, TextDocumentContentChangeEvent,
    TextDocumentIdentifier, TextDocumentItem, Url, VersionedTextDocumentIdentifier,
    WorkDoneProgressParams,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use self::router::{ClientState, Written};
use self::supervise::{Launch, OnStop};
use super::docs::{Answered, Baselines, Docs, Outgoing, SaveMode};
use super::process::{self, StderrTail};
use super::{ServerSpec, lock};

/// How long to wait before asking again when a pull request was cancelled.
const PULL_RETRY: Duration = Duration::from_millis(50);

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Spawned, `initialize` not answered yet.
    Starting,
    /// Initialized: documents are synced.
    Ready,
    /// Gone (its processes killed and reaped).
    Stopped,
}

/// What the server offers that the client uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// Pull diagnostics (`textDocument/diagnostic`).
    pub(crate) pull: bool,
    /// Whether and how to send `didSave` after a change.
    pub(crate) save: SaveMode,
}

/// The state shared by the calls, the main loop's handlers and the supervisor.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) phase: Phase,
    pub(crate) caps: Caps,
    pub(crate) docs: Docs,
    pub(crate) last_used: Instant,
    pub(crate) ready_at: Option<Instant>,
}

/// [`State`] and the channel that tells waiters it changed.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
    changed: watch::Sender<u64>,
}

impl Shared {
    /// Runs `f` on the state under the lock and wakes the waiters.
    pub(crate) fn update<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut lock(&self.state));
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        out
    }

    /// Runs `f` on the state under the lock.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&lock(&self.state))
    }

    /// Waits until `f` returns something or the server stops (None).
    async fn wait_for<T>(&self, mut f: impl FnMut(&State) -> Option<T>) -> Option<T> {
        let mut rx = self.changed.subscribe();
        loop {
            {
                let state = lock(&self.state);
                if let Some(out) = f(&state) {
                    return Some(out);
                }
                if state.phase == Phase::Stopped {
                    return None;
                }
            }
            rx.changed().await.ok()?;
        }
    }
}

/// One server process and its connection.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) spec: Arc<ServerSpec>,
    /// The command's program name, for messages.
    pub(crate) program: String,
    pub(crate) root: PathBuf,
    pub(crate) started: Instant,
    pub(crate) socket: ServerSocket,
    pub(crate) marker: String,
    pub(crate) shared: Arc<Shared>,
    pub(crate) stop: CancellationToken,
    pub(crate) stderr: StderrTail,
}

/// What a server needs to start.
pub(crate) struct StartArgs {
    /// Its configuration.
    pub(crate) spec: Arc<ServerSpec>,
    /// The program found on `PATH`.
    pub(crate) program_path: PathBuf,
    /// Its workspace root.
    pub(crate) root: PathBuf,
    /// Documents it may hold open.
    pub(crate) max_open: usize,
    /// Stopped after this long unused.
    pub(crate) idle: Duration,
    /// Told when it stops.
    pub(crate) on_stop: OnStop,
}

impl std::fmt::Debug for StartArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartArgs")
            .field("program_path", &self.program_path)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Spawns the server and its supervisor (needs a tokio runtime).
    pub(crate) fn start(args: StartArgs) -> std::io::Result<Arc<Server>> {
        let marker = process::new_marker();
        let mut child = process::spawn(
            &args.program_path,
            args.spec.command.get(1..).unwrap_or_default(),
            &args.root,
            &marker,
        )?;
        let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
            return Err(std::io::Error::other("the server's pipes are missing"));
        };
        let (changed, _) = watch::channel(0);
        let now = Instant::now();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                phase: Phase::Starting,
                caps: Caps {
                    pull: false,
                    save: SaveMode::No,
                },
                docs: Docs::new(args.max_open),
                last_used: now,
                ready_at: None,
            }),
            changed,
        });
        let program = args.spec.program().to_string();
        let folder = router::folder(&args.root);
        let (mainloop, socket) = async_lsp::MainLoop::new_client(|_| {
            router::build(ClientState::new(shared.clone(), &program, folder))
        });
        let server = Arc::new(Server {
            spec: args.spec,
            program: program.clone(),
            root: args.root,
            started: now,
            socket,
            marker,
            shared,
            stop: CancellationToken::new(),
            stderr: StderrTail::default(),
        });
        let server_stderr = server.stderr.clone();
        tokio::spawn(process::drain_stderr(program, stderr, server_stderr));
        let launch = Launch {
            child,
            mainloop,
            stdin,
            stdout,
            idle: args.idle,
            on_stop: args.on_stop,
        };
        tokio::spawn(supervise::supervise(server.clone(), launch));
        Ok(server)
    }

    /// The language id sent with documents.
    fn language_id(&self) -> &str {
        &self.spec.language
    }

    /// Marks the server used now (for the idle stop).
    pub(crate) fn touch(&self) {
        lock(&self.shared.state).last_used = Instant::now();
    }

    /// The current phase.
    pub(crate) fn phase(&self) -> Phase {
        self.shared.read(|s| s.phase)
    }

    /// Waits until the server is initialized; false when `until` came first or
    /// the server stopped.
    pub(crate) async fn wait_ready(&self, until: Instant) -> bool {
        let ready = self
            .shared
            .wait_for(|s| (s.phase == Phase::Ready).then_some(()));
        matches!(
            tokio::time::timeout_at(until.into(), ready).await,
            Ok(Some(()))
        )
    }

    /// Waits until the server's processes are gone.
    pub(crate) async fn wait_stopped(&self, until: Instant) -> bool {
        let mut rx = self.shared.changed.subscribe();
        let stopped = async {
            while self.phase() != Phase::Stopped {
                if rx.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::time::timeout_at(until.into(), stopped).await.is_ok()
    }

    /// Makes the server hold `text` for `uri` (or records it for when it is
    /// ready); the version holding it, None when not ready.
    pub(crate) fn sync(&self, uri: &Url, text: &str, save: bool) -> Option<i32> {
        self.sync_watched(uri, text, save, false).map(|(v, _)| v)
    }

    /// [`Server::sync`], and when `watch` and the text went out (an open or a
    /// change), the other documents' answers at that moment.
    pub(crate) fn sync_watched(
        &self,
        uri: &Url,
        text: &str,
        save: bool,
        watch: bool,
    ) -> Option<(i32, Option<Baselines>)> {
        let mut state = lock(&self.shared.state);
        let mut out = Vec::new();
        let synced = if state.phase == Phase::Ready {
            let mode = if save { state.caps.save } else { SaveMode::No };
            let version = state
                .docs
                .sync(uri, self.language_id(), text, mode, &mut out);
            let sent = out.iter().any(|m| match m {
                Outgoing::Open { uri: u, .. } | Outgoing::Change { uri: u, .. } => u == uri,
                Outgoing::Save { .. } | Outgoing::Close { .. } => false,
            });
            let baselines = (watch && sent).then(|| state.docs.baselines(uri));
            Some((version, baselines))
        } else {
            state.docs.want(uri, self.language_id(), text, &mut out);
            None
        };
        state.last_used = Instant::now();
        self.send(out);
        drop(state);
        synced
    }

    /// Waits, when the server publishes again for documents another change
    /// affects, until each of `baselines` is answered after their mark (or is
    /// closed or changed), or `until`.
    pub(crate) async fn wait_others(&self, baselines: &Baselines, until: Instant) {
        let settled = self.shared.wait_for(|s| {
            let done = !s.docs.republishes()
                || baselines
                    .docs
                    .iter()
                    .all(|b| s.docs.settled(&b.uri, b.answer.version, baselines.mark));
            done.then_some(())
        });
        let _ = tokio::time::timeout_at(until.into(), settled).await;
    }

    /// Sends `out` in order (called with the state locked). After each content
    /// message an event tells the main loop's handlers it was written.
    pub(crate) fn send(&self, out: Vec<Outgoing>) {
        for message in out {
            // A failure means the main loop ended: the supervisor sees it too.
            let _ = self.send_one(message);
        }
    }

    fn send_one(&self, message: Outgoing) -> async_lsp::Result<()> {
        let socket = &self.socket;
        match message {
            Outgoing::Open {
                uri,
                language_id,
                version,
                text,
            } => {
                socket.notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
                    text_document: TextDocumentItem::new(
                        uri.clone(),
                        language_id,
                        version,
                        text.to_string(),
                    ),
                })?;
                socket.emit(Written { uri, version })
            }
            Outgoing::Change { uri, version, text } => {
                socket.notify::<DidChangeTextDocument>(DidChangeTextDocumentParams {
                    text_document: VersionedTextDocumentIdentifier::new(uri.clone(), version),
                    content_changes: vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text: text.to_string(),
                    }],
                })?;
                socket.emit(Written { uri, version })
            }
            Outgoing::Save { uri, text } => {
                socket.notify::<DidSaveTextDocument>(DidSaveTextDocumentParams {
                    text_document: TextDocumentIdentifier::new(uri),
                    text: text.map(|t| t.to_string()),
                })
            }
            Outgoing::Close { uri } => {
                socket.notify::<DidCloseTextDocument>(DidCloseTextDocumentParams {
                    text_document: TextDocumentIdentifier::new(uri),
                })
            }
        }
    }

    /// The answer for `version` of `uri` or a later one, asking for it with a
    /// pull request when the server offers them; None when `until` came first.
    pub(crate) async fn answer(&self, uri: &Url, version: i32, until: Instant) -> Option<Answered> {
        let pushed = self.shared.wait_for(|s| s.docs.answer(uri, version));
        let pull = self.shared.read(|s| s.caps.pull);
        let pulled = async {
            if pull {
                self.pull(uri, version, until).await;
            }
            std::future::pending::<()>().await;
        };
        let both = async {
            tokio::select! {
                biased;
                answer = pushed => answer,
                () = pulled => None,
            }
        };
        tokio::time::timeout_at(until.into(), both)
            .await
            .ok()
            .flatten()
    }

    /// Asks for the problems of `uri` (sent after `version`), retrying while
    /// the server cancels, and records them.
    pub(crate) async fn pull(&self, uri: &Url, version: i32, until: Instant) {
        loop {
            let params = DocumentDiagnosticParams {
                text_document: TextDocumentIdentifier::new(uri.clone()),
                identifier: None,
                previous_result_id: None,
                work_done_progress_params: WorkDoneProgressParams::default(),
                partial_result_params: PartialResultParams::default(),
            };
            match self
                .socket
                .request::<DocumentDiagnosticRequest>(params)
                .await
            {
                Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(r))) => {
                    let items = r.full_document_diagnostic_report.items;
                    self.shared
                        .update(|s| s.docs.pulled(uri, version, &items, &self.program));
                    return;
                }
                Ok(_) => return,
                Err(async_lsp::Error::Response(err)) if retryable(err.code) => {
                    if Instant::now() + PULL_RETRY >= until {
                        return;
                    }
                    tokio::time::sleep(PULL_RETRY).await;
                }
                Err(err) => {
                    tracing::debug!(server = %self.program, %err, "pull diagnostics failed");
                    return;
                }
            }
        }
    }

    /// The answer already there for `uri` when it was given for `text`.
    pub(crate) fn answer_for_text(&self, uri: &Url, text: &str) -> Option<Answered> {
        self.shared.read(|s| s.docs.answer_for_text(uri, text))
    }

    /// Whether the server offers pull diagnostics.
    pub(crate) fn pulls(&self) -> bool {
        self.shared.read(|s| s.caps.pull)
    }

    /// What to say when `uri` has no fresh answer: starting, indexing or stopped.
    pub(crate) fn pending(&self, uri: &Url) -> String {
        let now = Instant::now();
        self.shared.read(|s| match s.phase {
            Phase::Starting => format!(
                "{} starting ({})",
                self.program,
                seconds(now - self.started)
            ),
            Phase::Ready => {
                let since = s
                    .docs
                    .waiting_since(uri)
                    .or(s.ready_at)
                    .unwrap_or(self.started);
                format!(
                    "{} still indexing ({})",
                    self.program,
                    seconds(now.saturating_duration_since(since))
                )
            }
            Phase::Stopped => format!("{} stopped; it restarts on the next change", self.program),
        })
    }

    /// Asks the supervisor to stop the server (shutdown, exit, then kill).
    pub(crate) fn request_stop(&self) {
        self.stop.cancel();
    }

    /// Kills the server's processes at once (blocking briefly).
    pub(crate) fn kill_now(&self) {
        self.stop.cancel();
        process::kill_marked(&self.marker);
    }

    /// The workspace root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }
}

/// Whether a pull request that failed with `code` is worth sending again
/// (`ServerCancelled`, `ContentModified`).
fn retryable(code: async_lsp::ErrorCode) -> bool {
    code == async_lsp::ErrorCode::SERVER_CANCELLED || code == async_lsp::ErrorCode::CONTENT_MODIFIED
}

/// `2.4 s`.
pub(crate) fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}
