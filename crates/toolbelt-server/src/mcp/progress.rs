//! Progress reports of a call forwarded to the client as
//! `notifications/progress`, in order, all before the call's result.

use std::sync::Arc;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolbelt_core::ProgressSink;

/// One progress report on its way to the client.
type Report = (f64, Option<f64>, Option<String>);

/// A [`ProgressSink`] that queues reports for [`ProgressForwarder`].
pub(super) struct ChannelSink {
    tx: mpsc::UnboundedSender<Report>,
}

impl ProgressSink for ChannelSink {
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        // A closed channel means the call already answered; late reports are dropped.
        let _ = self.tx.send((progress, total, message.map(str::to_owned)));
    }
}

/// Sends a call's progress reports, in order, as `notifications/progress`.
pub(super) struct ProgressForwarder {
    pub(super) sink: Arc<ChannelSink>,
    done: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressForwarder {
    pub(super) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> ProgressForwarder {
        let (tx, mut rx) = mpsc::unbounded_channel::<Report>();
        let done = CancellationToken::new();
        let finished = done.clone();
        let task = tokio::spawn(async move {
            let send = |(progress, total, message): Report| {
                let mut param = ProgressNotificationParam::new(token.clone(), progress);
                param.total = total;
                param.message = message;
                let peer = peer.clone();
                async move {
                    if let Err(e) = peer.notify_progress(param).await {
                        tracing::debug!("cannot send a progress notification: {e}");
                    }
                }
            };
            loop {
                tokio::select! {
                    biased;
                    report = rx.recv() => match report {
                        Some(report) => send(report).await,
                        None => return,
                    },
                    () = finished.cancelled() => break,
                }
            }
            // The call is over: send what is queued, so that every notification
            // precedes the result.
            rx.close();
            while let Some(report) = rx.recv().await {
                send(report).await;
            }
        });
        ProgressForwarder {
            sink: Arc::new(ChannelSink { tx }),
            done,
            task,
        }
    }

    /// Waits until every queued report is sent.
    pub(super) async fn finish(self) {
        self.done.cancel();
        drop(self.sink);
        if let Err(e) = self.task.await {
            tracing::debug!("the progress task failed: {e}");
        }
    }
}
