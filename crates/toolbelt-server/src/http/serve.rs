//! The serve loop: the listening socket, one task per connection under the
//! connection caps and deadlines of the `conn` module, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::Response;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolbelt_core::Registry;

use super::{HttpServeError, SHUTDOWN_GRACE_SECS, ServeConfig, build_router};
use crate::conn::{Conn, Connections, Deadlines, Peer, Tracked, WithDeadline};

/// Pause after a failed `accept` (for example out of file descriptors), in milliseconds.
const ACCEPT_ERROR_BACKOFF_MS: u64 = 50;

/// Opens the listening socket for `addr`.
///
/// # Errors
/// [`HttpServeError::Bind`] when the address is taken or not allowed.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, HttpServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| HttpServeError::Bind { addr, source })
}

/// Serves the tools on `config.bind` until `shutdown` completes, then lets open
/// connections finish (for at most [`SHUTDOWN_GRACE_SECS`]).
///
/// # Errors
/// [`HttpServeError::Bind`] when the address cannot be bound; [`HttpServeError::Config`]
/// for an empty token or zero caps.
pub async fn serve(
    registry: Arc<Registry>,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), HttpServeError> {
    check_config(&config)?;
    let listener = bind(config.bind).await?;
    serve_listener(listener, registry, config, shutdown).await
}

/// Like [`serve`], on a socket that is already listening (`config.bind` is then
/// only used for the `Host` check).
///
/// # Errors
/// [`HttpServeError::Config`] for an empty token or zero caps.
pub async fn serve_listener(
    listener: TcpListener,
    registry: Arc<Registry>,
    mut config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), HttpServeError> {
    check_config(&config)?;
    if config.bind.port() == 0
        && let Ok(addr) = listener.local_addr()
    {
        // The session cookie is named after the port actually listened on.
        config.bind.set_port(addr.port());
    }
    let cancel = CancellationToken::new();
    let app = build_router(registry, &config, cancel.clone());
    let connections = Connections::new(config.max_connections, config.deadlines);
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let shutdown = std::pin::pin!(shutdown);
    let mut shutdown = shutdown;
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(target: "toolbelt::serve", error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(ACCEPT_ERROR_BACKOFF_MS)).await;
                    continue;
                }
            },
        };
        // At the cap (or the client's share of it), the connection idle the longest
        // makes room, else the new one waits (and the ones after it in the
        // kernel's queue) for a free slot.
        let local = stream.local_addr().unwrap_or(config.bind);
        let client = tokio::select! {
            () = &mut shutdown => break,
            client = connections.room(peer, local) => client,
        };
        // Small request/response exchanges: do not wait to fill packets.
        let _ = stream.set_nodelay(true);
        let conn = connections.accepted(peer, local, client);
        let service = connection_service(
            app.clone(),
            peer,
            Arc::clone(&conn),
            connections.deadlines(),
        );
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service))
            .into_owned();
        let connection = graceful.watch(connection);
        let connections = Arc::clone(&connections);
        tokio::spawn(async move {
            tokio::select! {
                served = connection => if let Err(e) = served {
                    tracing::debug!(target: "toolbelt::serve", %peer, error = %e, "connection ended");
                },
                () = connections.expired(&conn) => {
                    tracing::debug!(target: "toolbelt::serve", %peer, "closed an idle connection");
                }
            }
            connections.closed(&conn);
        });
    }
    drop(listener);
    // From now on /healthz says so, on the connections still open.
    config.health.start_draining();
    tracing::info!(target: "toolbelt::serve", "shutting down");
    // Ends the MCP server streams, which would otherwise hold their connections open.
    cancel.cancel();
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(Duration::from_secs(SHUTDOWN_GRACE_SECS)) => {
            tracing::warn!(target: "toolbelt::serve", "connections still open after the grace period; closing");
        }
    }
    tracing::info!(target: "toolbelt::serve", "stopped");
    Ok(())
}

fn check_config(config: &ServeConfig) -> Result<(), HttpServeError> {
    match &config.token {
        Some(token) if token.trim().is_empty() => {
            return Err(HttpServeError::Config("the token is empty".into()));
        }
        None if !config.bind.ip().is_loopback() => {
            return Err(HttpServeError::Config(format!(
                "refusing to serve {} without a token: the address is reachable from other machines",
                config.bind
            )));
        }
        _ => {}
    }
    if config.max_connections == 0 || config.max_sessions == 0 || config.max_body_bytes == 0 {
        return Err(HttpServeError::Config(
            "max_connections, max_sessions and max_body_bytes must be at least 1".into(),
        ));
    }
    Ok(())
}

/// The service of one connection: the app, each request in flight (with the
/// connection and the peer in its extensions) until its response's body is sent,
/// its body given [`Deadlines::body_read`] to arrive.
fn connection_service(
    app: Router,
    peer: SocketAddr,
    conn: Arc<Conn>,
    deadlines: Deadlines,
) -> impl tower::Service<
    axum::http::Request<hyper::body::Incoming>,
    Response = Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<Response, std::convert::Infallible>> + Send,
> + Clone {
    tower::service_fn(move |request: axum::http::Request<hyper::body::Incoming>| {
        use tower::ServiceExt as _;
        let in_flight = conn.request();
        let mut request =
            request.map(|body| axum::body::Body::new(WithDeadline::new(body, deadlines.body_read)));
        request.extensions_mut().insert(Peer {
            addr: peer,
            conn: Arc::clone(&conn),
        });
        let app = app.clone();
        async move {
            let response = match app.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok(response.map(|body| axum::body::Body::new(Tracked::new(body, in_flight))))
        }
    })
}

/// [`shutdown_signal`] with its handlers in place now, not when first awaited: a
/// server that says it listens before it waits for the signal is stopped cleanly by
/// a SIGTERM that comes in between. Call it inside a Tokio runtime.
pub fn armed_shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let terminate = signal(SignalKind::terminate()).ok();
        let interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = wait(terminate) => {}
                () = wait(interrupt) => {}
            }
        }
    }
    #[cfg(not(unix))]
    shutdown_signal()
}

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM: the usual `shutdown` for [`serve`].
pub async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
