//! What the client answers to the server: diagnostics are recorded, the
//! requests servers commonly make of a client get harmless answers, and any
//! other notification is ignored (async-lsp's default would end the loop).

use std::future::ready;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use async_lsp::router::Router;
use async_lsp::{AnyNotification, MainLoop};
use lsp_types::notification::{Notification, PublishDiagnostics};
use lsp_types::request::{
    RegisterCapability, ShowMessageRequest, UnregisterCapability, WorkDoneProgressCreate,
    WorkspaceConfiguration, WorkspaceFoldersRequest,
};
use lsp_types::{PublishDiagnosticsParams, Url, WorkspaceFolder};

use super::Shared;

/// The main loop of one server.
pub(crate) type ClientLoop = MainLoop<Router<ClientState>>;

/// An event queued after a document's content message: once the main loop
/// handles it, that version has been written to the server.
#[derive(Debug)]
pub(crate) struct Written {
    /// The document.
    pub(crate) uri: Url,
    /// The version written.
    pub(crate) version: i32,
}

/// The state of the client's handlers.
#[derive(Debug)]
pub(crate) struct ClientState {
    shared: Arc<Shared>,
    program: String,
    folder: Option<WorkspaceFolder>,
}

impl ClientState {
    /// Handlers recording into `shared`.
    pub(crate) fn new(
        shared: Arc<Shared>,
        program: &str,
        folder: Option<WorkspaceFolder>,
    ) -> ClientState {
        ClientState {
            shared,
            program: program.to_string(),
            folder,
        }
    }

    /// A notification: diagnostics are recorded, the rest ignored.
    fn notified(&mut self, notif: AnyNotification) -> ControlFlow<async_lsp::Result<()>> {
        if notif.method != PublishDiagnostics::METHOD {
            tracing::trace!(server = %self.program, method = %notif.method, "notification");
            return ControlFlow::Continue(());
        }
        match serde_json::from_value::<PublishDiagnosticsParams>(notif.params) {
            Ok(p) => {
                self.shared.update(|s| {
                    s.docs
                        .published(&p.uri, p.version, &p.diagnostics, &self.program)
                });
            }
            Err(err) => {
                tracing::debug!(server = %self.program, %err, "unreadable publishDiagnostics");
            }
        }
        ControlFlow::Continue(())
    }
}

/// The workspace folder of `root`.
pub(crate) fn folder(root: &Path) -> Option<WorkspaceFolder> {
    let uri = Url::from_directory_path(root).ok()?;
    let name = root.file_name().map_or_else(
        || root.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Some(WorkspaceFolder { uri, name })
}

/// The client's router.
pub(crate) fn build(state: ClientState) -> Router<ClientState> {
    let mut router = Router::new(state);
    router
        .request::<WorkspaceConfiguration, _>(|_, params| {
            ready(Ok(vec![serde_json::Value::Null; params.items.len()]))
        })
        .request::<RegisterCapability, _>(|state, params| {
            if params
                .registrations
                .iter()
                .any(|r| r.method == "textDocument/diagnostic")
            {
                state.shared.update(|s| s.caps.pull = true);
            }
            ready(Ok(()))
        })
        .request::<UnregisterCapability, _>(|_, _| ready(Ok(())))
        .request::<WorkDoneProgressCreate, _>(|_, _| ready(Ok(())))
        .request::<WorkspaceFoldersRequest, _>(|state, _| {
            ready(Ok(state.folder.clone().map(|f| vec![f])))
        })
        .request::<ShowMessageRequest, _>(|_, _| ready(Ok(None)))
        .unhandled_notification(ClientState::notified)
        .event::<Written>(|state, w| {
            state.shared.update(|s| s.docs.written(&w.uri, w.version));
            ControlFlow::Continue(())
        });
    router
}
