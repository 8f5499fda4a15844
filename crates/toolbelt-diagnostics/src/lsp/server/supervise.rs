//! A server's life, run by one task: the main loop over the guarded pipes,
//! `initialize` within the startup timeout, the idle stop, a requested stop
//! (shutdown, exit, then kill), and after any of them the kill of its whole
//! tree and the reaping of its process.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lsp_types::notification::{Exit, Initialized};
use lsp_types::request::{Initialize, Shutdown};
use lsp_types::{
    ClientCapabilities, ClientInfo, DiagnosticClientCapabilities, InitializeParams,
    InitializeResult, InitializedParams, PublishDiagnosticsClientCapabilities,
    TextDocumentClientCapabilities, TextDocumentSyncCapability, TextDocumentSyncClientCapabilities,
    TextDocumentSyncSaveOptions, Url, WorkspaceClientCapabilities,
};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::super::docs::SaveMode;
use super::super::guard::{FrameGuard, Writer};
use super::super::lock;
use super::super::process::kill_marked_async;
use super::router::{self, ClientLoop};
use super::{Caps, Phase, Server};

/// How long a stopping server gets to answer `shutdown`.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// How long a stopping server gets to exit after `exit`.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// How long reaping a killed server may take.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// Why a server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// Asked to (idle, shutdown): not a failure.
    Requested,
    /// Exited, broke the protocol, or refused `initialize`.
    Crashed,
    /// No answer to `initialize` within the startup timeout.
    StartTimeout,
}

/// What the owner of a server learns when it stops.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StopReport {
    /// Why.
    pub(crate) reason: StopReason,
    /// How long it had been initialized (None: it never was).
    pub(crate) ready_for: Option<Duration>,
}

/// Told once when a server stops.
pub(crate) type OnStop = Box<dyn FnOnce(StopReport) + Send>;

/// What the supervisor takes over from the start.
pub(crate) struct Launch {
    pub(crate) child: Child,
    pub(crate) mainloop: ClientLoop,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) idle: Duration,
    pub(crate) on_stop: OnStop,
}

/// Runs `server` until it stops, then kills its tree, reaps it and reports.
pub(crate) async fn supervise(server: Arc<Server>, launch: Launch) {
    let Launch {
        mut child,
        mainloop,
        stdin,
        stdout,
        idle,
        on_stop,
    } = launch;
    let reason = run(&server, &mut child, mainloop, stdin, stdout, idle).await;
    if reason != StopReason::Requested {
        let tail: Vec<String> = lock(&server.stderr).iter().cloned().collect();
        tracing::warn!(server = %server.program, ?reason, stderr = ?tail, "language server stopped");
    }
    kill_marked_async(server.marker.clone()).await;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
    // The owner first, so that a call seeing this server stopped finds its slot
    // free (or in backoff) and the notes written.
    let ready_for = server.shared.read(|s| s.ready_at.map(|at| at.elapsed()));
    on_stop(StopReport { reason, ready_for });
    server.shared.update(|s| {
        s.phase = Phase::Stopped;
        s.docs.reset();
    });
}

/// The server's life until something stops it.
async fn run(
    server: &Server,
    child: &mut Child,
    mainloop: ClientLoop,
    stdin: ChildStdin,
    stdout: ChildStdout,
    idle: Duration,
) -> StopReason {
    let main = mainloop.run_buffered(FrameGuard::new(stdout), Writer(stdin));
    tokio::pin!(main);
    let init = initialize(server);
    tokio::pin!(init);
    let startup = tokio::time::sleep(server.spec.startup_timeout);
    tokio::pin!(startup);
    let mut ready = false;
    loop {
        let idle_at = server.shared.read(|s| s.last_used) + idle;
        tokio::select! {
            ended = &mut main => {
                tracing::debug!(server = %server.program, ?ended, "main loop ended");
                return StopReason::Crashed;
            }
            status = child.wait() => {
                tracing::debug!(server = %server.program, ?status, "server exited");
                return StopReason::Crashed;
            }
            caps = &mut init, if !ready => match caps {
                Ok(caps) => {
                    ready = true;
                    became_ready(server, caps);
                }
                Err(err) => {
                    tracing::warn!(server = %server.program, %err, "initialize failed");
                    return StopReason::Crashed;
                }
            },
            () = &mut startup, if !ready => return StopReason::StartTimeout,
            () = server.stop.cancelled() => {
                goodbye(server, &mut main, child).await;
                return StopReason::Requested;
            }
            () = tokio::time::sleep_until(idle_at.into()) => {
                if server.shared.read(|s| s.last_used.elapsed() >= idle) {
                    tracing::debug!(server = %server.program, "idle: stopping");
                    goodbye(server, &mut main, child).await;
                    return StopReason::Requested;
                }
            }
        }
    }
}

/// `shutdown` then `exit`, each within its grace, while the main loop runs.
async fn goodbye(
    server: &Server,
    main: &mut std::pin::Pin<&mut impl Future<Output = async_lsp::Result<()>>>,
    child: &mut Child,
) {
    let polite = async {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, server.socket.request::<Shutdown>(())).await;
        let _ = server.socket.notify::<Exit>(());
        let _ = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
    };
    tokio::select! {
        _ = main.as_mut() => {}
        () = polite => {}
    }
}

/// Initialized: documents asked for meanwhile are opened.
fn became_ready(server: &Server, caps: Caps) {
    server.shared.update(|s| {
        s.phase = Phase::Ready;
        s.caps.pull |= caps.pull;
        s.caps.save = caps.save;
        s.ready_at = Some(Instant::now());
        let mut out = Vec::new();
        s.docs.open_wanted(&mut out);
        server.send(out);
    });
}

/// Why `initialize` failed.
#[derive(Debug, thiserror::Error)]
enum InitError {
    /// The request failed.
    #[error("initialize request failed")]
    Request(#[from] async_lsp::Error),
    /// The root is not an absolute path.
    #[error("root {0:?} is not an absolute path")]
    Root(std::path::PathBuf),
}

/// `initialize` then `initialized`; what the server offers.
async fn initialize(server: &Server) -> Result<Caps, InitError> {
    let params = init_params(server.root(), server.spec.initialization_options.clone())?;
    let result = server.socket.request::<Initialize>(params).await?;
    server.socket.notify::<Initialized>(InitializedParams {})?;
    Ok(caps(&result))
}

/// The `initialize` parameters for a workspace at `root`.
#[allow(deprecated)] // root_uri: older servers read only it.
fn init_params(
    root: &Path,
    initialization_options: Option<serde_json::Value>,
) -> Result<InitializeParams, InitError> {
    let uri = Url::from_directory_path(root).map_err(|()| InitError::Root(root.to_path_buf()))?;
    Ok(InitializeParams {
        process_id: Some(std::process::id()),
        root_uri: Some(uri),
        initialization_options,
        capabilities: client_capabilities(),
        workspace_folders: router::folder(root).map(|f| vec![f]),
        client_info: Some(ClientInfo {
            name: "toolbelt".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        ..InitializeParams::default()
    })
}

/// What the client supports: versioned diagnostics, pull diagnostics, saves.
fn client_capabilities() -> ClientCapabilities {
    ClientCapabilities {
        text_document: Some(TextDocumentClientCapabilities {
            synchronization: Some(TextDocumentSyncClientCapabilities {
                did_save: Some(true),
                ..TextDocumentSyncClientCapabilities::default()
            }),
            publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                version_support: Some(true),
                ..PublishDiagnosticsClientCapabilities::default()
            }),
            diagnostic: Some(DiagnosticClientCapabilities {
                dynamic_registration: Some(false),
                related_document_support: Some(false),
            }),
            ..TextDocumentClientCapabilities::default()
        }),
        workspace: Some(WorkspaceClientCapabilities {
            workspace_folders: Some(true),
            ..WorkspaceClientCapabilities::default()
        }),
        ..ClientCapabilities::default()
    }
}

/// What the client uses of the server's capabilities.
fn caps(result: &InitializeResult) -> Caps {
    let save = match &result.capabilities.text_document_sync {
        Some(TextDocumentSyncCapability::Options(o)) => match &o.save {
            Some(TextDocumentSyncSaveOptions::Supported(true)) => SaveMode::Plain,
            Some(TextDocumentSyncSaveOptions::SaveOptions(s)) if s.include_text == Some(true) => {
                SaveMode::WithText
            }
            Some(TextDocumentSyncSaveOptions::SaveOptions(_)) => SaveMode::Plain,
            _ => SaveMode::No,
        },
        _ => SaveMode::No,
    };
    Caps {
        pull: result.capabilities.diagnostic_provider.is_some(),
        save,
    }
}
