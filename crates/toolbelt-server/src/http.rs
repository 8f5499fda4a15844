//! The HTTP server: MCP streamable HTTP at `/mcp` and a small JSON API at `/v1`.
//!
//! Routes:
//! - `GET /healthz`: liveness, no token needed.
//! - `GET /v1/tools`: the tool specs, with the names the active profile exposes.
//! - `POST /v1/tools/{name}`: the body is the arguments (JSON), the answer the
//!   result envelope. Tool errors are envelopes with status 200; an unknown tool
//!   answers 404 and a body that is not JSON 400, both with an envelope.
//! - `GET /v1/openapi.json`: an OpenAPI 3.1 description of these routes.
//! - `GET /v1/calls`, `/v1/calls/stream`, `/v1/todos`, `/v1/planner/...`,
//!   `/v1/tools/{name}/schemas`: what the web page reads (see [`crate::web`]).
//! - `GET /v1/questions`, `POST /v1/questions/{id}`: the questions of agent runs
//!   waiting for an answer, and their answers.
//! - `/mcp`: MCP streamable HTTP (POST, GET for the server stream, DELETE).
//! - `GET /`, `/assets/...`, `POST /login`, `POST /logout`: the web page.
//!
//! Every route but `/healthz` and the page's own needs `Authorization: Bearer
//! <token>` or the page's session cookie; the token is compared in constant time,
//! refused in the query string, and a client's wrong tokens past a burst are
//! answered late (the right token never waits). `Host` and `Origin` are checked
//! against DNS rebinding on every route, bodies and MCP sessions are capped, and
//! connections have deadlines from accept and make room for a new client at the
//! cap (the `conn` module). Every failure under `/v1` and `/mcp` is JSON. Every
//! response carries a strict Content-Security-Policy, `X-Content-Type-Options`
//! and `Referrer-Policy`.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::McpServer;
use crate::conn::{Conn, Connections, Deadlines, Peer, Tracked, WithDeadline};
use crate::error::{ApiError, error_body};
use crate::questions::PendingQuestions;
use crate::web::{self, Web, api::ApiState};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use toolbelt_core::{BatchMode, CallOptions, Envelope, ErrorCode, Registry, ToolCall};
use toolbelt_store::StoreHandle;

/// The address `toolbelt serve` binds by default.
pub const DEFAULT_BIND: &str = "127.0.0.1:8750";
/// Default cap on a request body, in bytes (4 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default cap on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Default cap on live MCP sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// Default time a client has to send a request's headers, in seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 10;
/// How long shutdown waits for open connections to finish, in seconds.
pub const SHUTDOWN_GRACE_SECS: u64 = 10;
/// The file, in the state directory, that holds the generated token.
pub const TOKEN_FILE_NAME: &str = "serve-token";
/// Random bytes in a generated token (printed as twice as many hex digits).
pub const TOKEN_BYTES: usize = 32;
/// Pause after a failed `accept` (for example out of file descriptors), in milliseconds.
const ACCEPT_ERROR_BACKOFF_MS: u64 = 50;
/// Query parameters that would carry a token in the URL, where it leaks into logs.
const TOKEN_QUERY_NAMES: [&str; 3] = ["access_token", "token", "api_key"];
/// The MCP session header.
const MCP_SESSION_HEADER: &str = "mcp-session-id";
/// The header naming the MCP protocol revision of a request.
const MCP_PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// How the HTTP server runs.
#[derive(Clone)]
pub struct ServeConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// The bearer token every request but `/healthz` must carry; `None` asks for no
    /// token, which only a loopback address may do.
    pub token: Option<String>,
    /// Browser origins allowed besides loopback ones, such as `https://app.example.com`
    /// (scheme, host and port, compared exactly; `null` allows `Origin: null`).
    pub allowed_origins: Vec<String>,
    /// Cap on a request body, in bytes; larger bodies get 413.
    pub max_body_bytes: usize,
    /// Cap on open connections; further clients wait in the listen backlog.
    pub max_connections: usize,
    /// Cap on live MCP sessions; a new session beyond it gets 503.
    pub max_sessions: usize,
    /// Time a client has to send a request's headers before the connection is closed.
    pub header_read_timeout: Duration,
    /// The store the web page reads (call log, todos, planner); without it those
    /// endpoints answer 503.
    pub store: Option<StoreHandle>,
    /// A one-time login code for the web page ([`crate::web::new_login_code`]),
    /// good for one login within [`crate::web::LOGIN_CODE_TTL_SECS`].
    pub login_code: Option<String>,
    /// How `/mcp` shapes its results (structured content, output budget).
    pub mcp: crate::mcp::McpOptions,
    /// The other MCP servers, whose prompts `/mcp` serves too.
    pub upstreams: Option<std::sync::Arc<toolbelt_upstream::Upstreams>>,
    /// The questions of agent runs waiting for an answer, listed and answered at
    /// `/v1/questions` (and on the web page); `toolbelt serve` asks through the
    /// same ones in its scheduled jobs.
    pub questions: PendingQuestions,
    /// How long a connection may wait for its first request, stay idle, and take
    /// to send a request body.
    pub(crate) deadlines: Deadlines,
}

impl ServeConfig {
    /// A configuration with the default limits.
    pub fn new(bind: SocketAddr, token: impl Into<String>) -> ServeConfig {
        ServeConfig {
            token: Some(token.into()),
            ..ServeConfig::without_token(bind)
        }
    }

    /// A configuration that asks for no token, for a loopback address only (other
    /// local programs can then call every tool; Host and Origin checks still keep
    /// web pages out). [`serve`] refuses it on any other address.
    pub fn without_token(bind: SocketAddr) -> ServeConfig {
        ServeConfig {
            bind,
            token: None,
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_sessions: DEFAULT_MAX_SESSIONS,
            header_read_timeout: Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECS),
            store: None,
            login_code: None,
            mcp: crate::mcp::McpOptions::default(),
            upstreams: None,
            questions: PendingQuestions::new(),
            deadlines: Deadlines::default(),
        }
    }
}

impl std::fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token never appears in logs or debug output.
        f.debug_struct("ServeConfig")
            .field("bind", &self.bind)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_connections", &self.max_connections)
            .field("max_sessions", &self.max_sessions)
            .field("header_read_timeout", &self.header_read_timeout)
            .field(
                "store",
                &self.store.as_ref().map(|s| s.location().describe()),
            )
            .field(
                "login_code",
                &self.login_code.as_ref().map(|_| "<redacted>"),
            )
            .field("questions", &self.questions)
            .finish()
    }
}

/// Why the HTTP server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpServeError {
    /// The listening socket could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: io::Error,
    },
    /// The configuration cannot work.
    #[error("invalid server configuration: {0}")]
    Config(String),
}

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

/// The whole application as a router (MCP, JSON API, health check, and the
/// security checks in front of them), for tests and embedding.
pub fn router(registry: Arc<Registry>, config: &ServeConfig) -> Router {
    build_router(registry, config, CancellationToken::new())
}

/// Shared state of the routes.
struct AppState {
    registry: Arc<Registry>,
    openapi: Value,
    max_body_bytes: usize,
}

/// What the security layer checks requests against.
struct Guard {
    /// `None` when the server asks for no token.
    token_digest: Option<[u8; 32]>,
    bind: SocketAddr,
    allowed_origins: Vec<String>,
    max_body_bytes: usize,
    max_sessions: usize,
    sessions: Option<McpEndpoint>,
    /// The page's sessions and the wrong-token limiter.
    web: Arc<Web>,
}

/// Counts the live MCP sessions.
type McpSessions = rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

fn build_router(
    registry: Arc<Registry>,
    config: &ServeConfig,
    cancel: CancellationToken,
) -> Router {
    let state = Arc::new(AppState {
        openapi: openapi_document(&registry),
        registry: Arc::clone(&registry),
        max_body_bytes: config.max_body_bytes,
    });
    let token_digest = config.token.as_deref().map(|t| digest(t.trim()));
    let web = Arc::new(Web::new(
        token_digest,
        config.bind.port(),
        config.login_code.as_deref(),
    ));
    let page_api = web::api::routes(Arc::new(ApiState {
        registry: Arc::clone(&registry),
        store: config.store.clone(),
        cancel: cancel.clone(),
    }));
    let api = Router::new()
        .route("/healthz", get(healthz))
        .route("/v1/tools", get(list_tools))
        .route("/v1/tools/{name}", post(call_tool))
        .route("/v1/batch", post(call_batch))
        .route("/v1/openapi.json", get(openapi))
        .with_state(state)
        .merge(page_api)
        .merge(web::questions::routes(
            config.questions.clone(),
            config.max_body_bytes,
        ))
        .merge(web::routes(Arc::clone(&web)))
        .fallback(not_found);
    let (app, sessions) = mount_mcp(api, &registry, config, cancel);
    let guard = Arc::new(Guard {
        token_digest,
        bind: config.bind,
        allowed_origins: config
            .allowed_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
            .collect(),
        max_body_bytes: config.max_body_bytes,
        max_sessions: config.max_sessions,
        sessions,
        web,
    });
    let app = app
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(middleware::from_fn_with_state(guard, security));
    // Around the whole router, so that it sees the `Allow` header axum adds to a 405
    // outside the routes' own layers.
    Router::new()
        .fallback_service(app)
        .layer(middleware::from_fn(json_errors))
}

/// Adds the MCP endpoint (one [`McpServer`] per session over the shared registry);
/// returns it for the session cap. Host and Origin are checked by [`security`] in
/// front of it, so rmcp's own checks are off; its body limit is ours.
fn mount_mcp(
    api: Router,
    registry: &Arc<Registry>,
    config: &ServeConfig,
    cancel: CancellationToken,
) -> (Router, Option<McpEndpoint>) {
    let registry = Arc::clone(registry);
    let options = config.mcp;
    // The skills are served as prompts too, as over stdio, and the other servers'.
    let skills = toolbelt_tools::Skills::from_env(registry.session().roots());
    let upstreams = config.upstreams.clone();
    let factory = move || {
        let server = McpServer::new(Arc::clone(&registry))
            .with_skills(skills.clone())
            .with_options(options);
        Ok(match &upstreams {
            Some(upstreams) => server.with_upstreams(Arc::clone(upstreams)),
            None => server,
        })
    };
    let mcp_config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(config.max_body_bytes)
        .with_cancellation_token(cancel);
    let modern_sessions = Arc::new(McpSessions::default());
    let mut legacy_sessions = McpSessions::default();
    legacy_sessions.session_config.sse_retry = None;
    let legacy_sessions = Arc::new(legacy_sessions);
    let endpoint = McpEndpoint {
        modern: StreamableHttpService::new(
            factory.clone(),
            Arc::clone(&modern_sessions),
            mcp_config.clone(),
        ),
        legacy: StreamableHttpService::new(
            factory,
            Arc::clone(&legacy_sessions),
            mcp_config.with_sse_retry(None),
        ),
        modern_sessions,
        legacy_sessions,
        max_body_bytes: config.max_body_bytes,
    };
    let app = api.route(
        "/mcp",
        axum::routing::any(mcp_endpoint).with_state(endpoint.clone()),
    );
    (app, Some(endpoint))
}

/// The protocol revision from which streams open with a priming event (an event
/// id and a retry time with empty data, SEP-1699) so that a client can resume
/// them. Clients of older revisions parse every event's data as JSON and fail on
/// an empty one (the TypeScript SDK before 2025-11-25: "Unexpected end of JSON
/// input", and gemini-cli then lists no tools).
const PRIMING_SINCE: &str = "2025-11-25";

/// The MCP endpoint: the same server twice over, with priming events for clients
/// of [`PRIMING_SINCE`] and later and without for older ones, each with its own
/// sessions (a session keeps the revision it was opened with).
#[derive(Clone)]
struct McpEndpoint {
    modern: StreamableHttpService<McpServer, McpSessions>,
    legacy: StreamableHttpService<McpServer, McpSessions>,
    modern_sessions: Arc<McpSessions>,
    legacy_sessions: Arc<McpSessions>,
    max_body_bytes: usize,
}

impl McpEndpoint {
    /// The live sessions.
    async fn sessions(&self) -> usize {
        self.modern_sessions.sessions.read().await.len()
            + self.legacy_sessions.sessions.read().await.len()
    }

    /// Whether `request` comes from a client of a revision before
    /// [`PRIMING_SINCE`]: by the session it names (which keeps the revision it
    /// was opened with), else, for `initialize`, by the revision it asks for, else
    /// by its `MCP-Protocol-Version` header. The body, when read, comes back in
    /// the request.
    async fn is_legacy(&self, request: Request) -> Result<(bool, Request), ApiError> {
        let headers = request.headers();
        if let Some(session) = headers
            .get(MCP_SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            let legacy = self
                .legacy_sessions
                .sessions
                .read()
                .await
                .contains_key(session);
            return Ok((legacy, request));
        }
        let by_header = headers
            .get(MCP_PROTOCOL_VERSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|version| version.trim() < PRIMING_SINCE);
        if request.method() != Method::POST {
            return Ok((by_header, request));
        }
        let (parts, body) = request.into_parts();
        let bytes = axum::body::to_bytes(body, self.max_body_bytes)
            .await
            .map_err(|e| unread_body(&e, self.max_body_bytes))?;
        let legacy = match initialize_version(&bytes) {
            Some(asked) => asked.as_str() < PRIMING_SINCE,
            None => by_header,
        };
        Ok((
            legacy,
            Request::from_parts(parts, axum::body::Body::from(bytes)),
        ))
    }
}

/// The refusal of a request whose body could not be read whole: 413 over the
/// limit, 408 when it stopped coming (the body deadline), else 400.
fn unread_body(e: &(dyn std::error::Error + 'static), max_body_bytes: usize) -> ApiError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>()
            && io.kind() == io::ErrorKind::TimedOut
        {
            return ApiError::BodyTimedOut(io.to_string());
        }
        if cause.to_string().contains("length limit") {
            return ApiError::TooLarge {
                max_bytes: max_body_bytes,
            };
        }
        source = cause.source();
    }
    ApiError::UnreadableBody(e.to_string())
}

/// The protocol revision an `initialize` request asks for (`""` when it names
/// none); `None` for any other message.
fn initialize_version(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Message {
        method: Option<String>,
        #[serde(default)]
        params: Option<Value>,
    }
    let message: Message = serde_json::from_slice(body).ok()?;
    (message.method.as_deref() == Some("initialize")).then(|| {
        message
            .params
            .as_ref()
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    })
}

/// `/mcp`: hands the request to the server of its client's revision.
async fn mcp_endpoint(State(endpoint): State<McpEndpoint>, request: Request) -> Response {
    use tower::ServiceExt as _;
    let (legacy, request) = match endpoint.is_legacy(request).await {
        Ok(routed) => routed,
        Err(refused) => return refused.into_response(),
    };
    let service = if legacy {
        endpoint.legacy
    } else {
        endpoint.modern
    };
    match service.oneshot(request).await {
        Ok(response) => response.map(axum::body::Body::new),
        Err(never) => match never {},
    }
}

// ---------------------------------------------------------------- security

/// The checks of [`checks`], and the security headers on every answer.
async fn security(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let mut response = checks(&guard, request, next).await;
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    web::add_security_headers(headers);
    response
}

/// Host, Origin, token (or the page's session), body size and session checks, in
/// that order.
async fn checks(guard: &Guard, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    if let Err(reason) = check_host(guard, &request) {
        tracing::info!(target: "toolbelt::serve", %method, %path, reason, "refused: Host");
        return ApiError::ForbiddenHost(reason).into_response();
    }
    let origin = match check_origin(guard, request.headers()) {
        Ok(origin) => origin,
        Err(reason) => {
            tracing::info!(target: "toolbelt::serve", %method, %path, "refused: Origin");
            return ApiError::ForbiddenOrigin(reason).into_response();
        }
    };
    if method == Method::OPTIONS && origin.is_some() {
        return with_cors(preflight(), origin.as_ref());
    }
    let needs_token = path != "/healthz" && !web::is_public(&path);
    if let Some(expected) = guard.token_digest.as_ref().filter(|_| needs_token) {
        if let Some(name) = token_in_query(request.uri().query()) {
            tracing::info!(target: "toolbelt::serve", %method, %path, "refused: token in the query string");
            return ApiError::Unauthorized {
                challenge: Some("invalid_request"),
                message: format!(
                    "a token in the URL (query parameter {name:?}) is never accepted: URLs end up in logs; \
                     send it as the header `Authorization: Bearer <token>` and treat this token as leaked"
                ),
            }
            .into_response();
        }
        let bearer = bearer(request.headers());
        match bearer {
            None if guard.web.has_session(request.headers())
                && web::same_origin_request(&method, request.headers()) => {}
            None => {
                return ApiError::Unauthorized {
                    challenge: None,
                    message: "this server needs the header `Authorization: Bearer <token>`; \
                              the token is printed by `toolbelt serve` at start"
                        .into(),
                }
                .into_response();
            }
            Some(token) if !constant_time_eq(&digest(token), expected) => {
                tracing::info!(target: "toolbelt::serve", %method, %path, "refused: wrong token");
                let peer = request.extensions().get::<Peer>().cloned();
                if let Some(wait) = hold_back_wrong_token(&guard.web, peer.as_ref()).await {
                    return ApiError::TooManyAttempts {
                        secs: wait.as_secs().max(1),
                    }
                    .into_response();
                }
                return ApiError::Unauthorized {
                    challenge: Some("invalid_token"),
                    message: "the bearer token is wrong".into(),
                }
                .into_response();
            }
            Some(_) => {}
        }
    }
    // JSON bodies only: the content types a browser may send to another site
    // without asking first (forms, text/plain) are refused; none at all is taken.
    if method == Method::POST
        && path.starts_with("/v1/")
        && request.headers().contains_key(header::CONTENT_TYPE)
        && !is_json(request.headers())
    {
        return ApiError::UnsupportedMediaType.into_response();
    }
    if content_length(request.headers()).is_some_and(|n| n > guard.max_body_bytes) {
        return ApiError::TooLarge {
            max_bytes: guard.max_body_bytes,
        }
        .into_response();
    }
    if let Some(endpoint) = &guard.sessions {
        let new_session = path == "/mcp"
            && method == Method::POST
            && !request.headers().contains_key(MCP_SESSION_HEADER);
        if new_session && endpoint.sessions().await >= guard.max_sessions {
            return ApiError::TooManySessions {
                max: guard.max_sessions,
            }
            .into_response();
        }
    }
    tracing::debug!(target: "toolbelt::serve", %method, %path, "request");
    let response = next.run(request).await;
    with_cors(response, origin.as_ref())
}

/// Most bytes of an error answer read to turn it into JSON.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Every failure under `/v1` and `/mcp` answered in JSON (`{"error": {"code",
/// "message"}}`), as the OpenAPI document says: a path that does not decode, a
/// wrong method (with `Allow`), an answer of rmcp's in plain text. Answers that are
/// JSON already pass unchanged.
async fn json_errors(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let api = path == "/mcp" || path == "/v1" || path.starts_with("/v1/");
    let method = request.method().clone();
    let sent_json = is_json(request.headers());
    let mut response = next.run(request).await;
    if api && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE && sent_json {
        // rmcp says 415 for a JSON body it cannot parse: the content type was
        // right, the body was not.
        *response.status_mut() = StatusCode::BAD_REQUEST;
    }
    let status = response.status();
    if !api
        || !(status.is_client_error() || status.is_server_error())
        || is_json(response.headers())
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_ERROR_BODY_BYTES)
        .await
        .unwrap_or_default();
    let said = String::from_utf8_lossy(&text).trim().to_string();
    let reason = status.canonical_reason().unwrap_or("error");
    let message = if status == StatusCode::METHOD_NOT_ALLOWED {
        let allowed = parts
            .headers
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("another method");
        format!("{method} is not allowed here; use {allowed}")
    } else if said.is_empty() {
        reason.to_lowercase()
    } else {
        said
    };
    let code = reason.to_ascii_uppercase().replace([' ', '-'], "_");
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(
        parts,
        axum::body::Body::from(error_body(&code, &message).to_string()),
    )
}

/// True for a JSON content type (`application/json`, `application/problem+json`).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| v == "application/json" || v.ends_with("+json"))
}

/// Counts a wrong token of `peer`'s client and, past its burst, holds the answer
/// back for as long as the client has to wait for another prompt answer: the
/// sender is slowed, and its connection stays free to close for another client.
/// Returns the wait, when there was one. A request with the right token never
/// comes here.
pub(crate) async fn hold_back_wrong_token(web: &Web, peer: Option<&Peer>) -> Option<Duration> {
    let client = peer.map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |p| p.addr.ip());
    let wait = web.wrong_token(client)?;
    let _held = peer.map(|p| p.conn.hold());
    tokio::time::sleep(wait.min(Duration::from_secs(web::LOGIN_REFILL_SECS))).await;
    Some(wait)
}

/// The request's `Host` (or, for HTTP/2, its `:authority`) must name this machine
/// by a loopback name or address, or the address the server is bound to. A DNS
/// rebinding page reaches the server under its own host name, which fails here.
fn check_host(guard: &Guard, request: &Request) -> Result<(), &'static str> {
    let authority = match request.headers().get(header::HOST) {
        Some(value) => {
            let Ok(text) = value.to_str() else {
                return Err("the Host header is not text");
            };
            text
        }
        None => request
            .uri()
            .authority()
            .map(|a| a.as_str())
            .ok_or("the request has no Host header")?,
    };
    let host = host_of(authority);
    if is_loopback_host(host) {
        return Ok(());
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        // A bare IP address cannot be a rebinding attack (that needs a name the
        // attacker controls); on an unspecified bind any of ours may be used.
        if ip == guard.bind.ip() || guard.bind.ip().is_unspecified() {
            return Ok(());
        }
    }
    Err("the Host header does not name this server; use http://127.0.0.1 or http://localhost")
}

/// A present `Origin` must be a loopback origin, the request's own host, or listed
/// in the allowed origins. Returns the origin to echo in CORS headers.
fn check_origin(guard: &Guard, headers: &HeaderMap) -> Result<Option<HeaderValue>, &'static str> {
    let Some(value) = headers.get(header::ORIGIN) else {
        return Ok(None);
    };
    const REFUSED: &str = "requests from this Origin are not allowed; \
                           start the server with the origin in its allowed origins";
    let Ok(origin) = value.to_str() else {
        return Err(REFUSED);
    };
    let normalized = origin.trim_end_matches('/').to_ascii_lowercase();
    if guard.allowed_origins.contains(&normalized) {
        return Ok(Some(value.clone()));
    }
    let Some((scheme, authority)) = normalized.split_once("://") else {
        return Err(REFUSED);
    };
    if scheme != "http" && scheme != "https" {
        return Err(REFUSED);
    }
    let host = host_of(authority);
    let same_host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| host_of(h).eq_ignore_ascii_case(host));
    if is_loopback_host(host) || same_host {
        Ok(Some(value.clone()))
    } else {
        Err(REFUSED)
    }
}

/// The host part of an authority: `[::1]:8750` gives `::1`, `localhost:80` gives `localhost`.
fn host_of(authority: &str) -> &str {
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(h, _)| h);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The name of a query parameter that looks like it carries a token.
fn token_in_query(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|pair| {
        let name = pair.split_once('=').map_or(pair, |(n, _)| n);
        TOKEN_QUERY_NAMES
            .iter()
            .find(|t| t.eq_ignore_ascii_case(name))
            .copied()
    })
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Compares two digests in time independent of where they differ. Comparing
/// digests rather than the tokens also hides the token's length.
pub(crate) fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a
        .iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn content_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version",
        ),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

/// Echoes an allowed origin (never `*`).
fn with_cors(mut response: Response, origin: Option<&HeaderValue>) -> Response {
    if let Some(origin) = origin {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("mcp-session-id"),
        );
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
    response
}

// ---------------------------------------------------------------- routes

async fn healthz() -> Response {
    axum::Json(json!({ "status": "ok" })).into_response()
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route; see GET /v1/openapi.json".into())
}

async fn list_tools(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({ "tools": state.registry.definitions() })).into_response()
}

async fn openapi(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(state.openapi.clone()).into_response()
}

async fn call_tool(
    State(state): State<Arc<AppState>>,
    UrlPath(name): UrlPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = read_body(body, state.max_body_bytes)?;
    let arguments = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Map::new())
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(arguments) => arguments,
            Err(e) => {
                let mut envelope = Envelope::error(
                    ErrorCode::InvalidParams,
                    format!("the request body is not JSON: {e}"),
                    Some("send the arguments as one JSON object in the body".into()),
                );
                envelope.context.tool = name;
                return Ok((StatusCode::BAD_REQUEST, axum::Json(envelope)).into_response());
            }
        }
    };
    let (options, _cancel_on_drop) = cancelled_when_dropped();
    let envelope = state
        .registry
        .execute_call(ToolCall::new(name, arguments), options)
        .await;
    let status = if envelope.error_code() == Some(ErrorCode::UnknownTool) {
        StatusCode::NOT_FOUND
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(envelope)).into_response())
}

/// Call options whose cancellation fires when the guard drops: a client that goes
/// away drops the handler's future, and with it the guard, cancelling its calls.
fn cancelled_when_dropped() -> (CallOptions, DropGuard) {
    let cancel = CancellationToken::new();
    let guard = cancel.clone().drop_guard();
    let options = CallOptions {
        cancel: Some(cancel),
        ..CallOptions::default()
    };
    (options, guard)
}

/// The request body, or the refusal of a body that could not be read (over the
/// limit, cut off).
pub(crate) fn read_body(
    body: Result<Bytes, BytesRejection>,
    max_body_bytes: usize,
) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge {
                max_bytes: max_body_bytes,
            }
        } else {
            unread_body(&rejection, max_body_bytes)
        }
    })
}

/// `POST /v1/batch`: a JSON array of calls (`{"tool", "params"}`), run in order;
/// the answer is their envelopes, in the same order. A batch that cannot be read
/// runs nothing and is answered 400.
async fn call_batch(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = read_body(body, state.max_body_bytes)?;
    let calls = match toolbelt_wire::batch::parse_calls(&body) {
        Ok(calls) => calls,
        Err(message) => return Err(ApiError::InvalidBatch(message.to_string())),
    };
    let (options, _cancel_on_drop) = cancelled_when_dropped();
    let envelopes = state
        .registry
        .execute_batch_with(calls, BatchMode::Sequential, &options)
        .await;
    Ok((StatusCode::OK, axum::Json(envelopes)).into_response())
}

// ---------------------------------------------------------------- OpenAPI

/// An OpenAPI 3.1 document for the JSON API: one path per tool, whose request body
/// is the tool's input schema (under `components.schemas`, with its own `$id` so
/// that the schema's internal references keep resolving).
fn openapi_document(registry: &Registry) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert("Envelope".into(), envelope_schema());
    schemas.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": { "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": { "code": { "type": "string" }, "message": { "type": "string" } }
            } }
        }),
    );
    let envelope_ref = json!({ "$ref": "#/components/schemas/Envelope" });
    let error_ref = json!({ "$ref": "#/components/schemas/Error" });
    let unauthorized = json!({
        "description": "Missing or wrong bearer token.",
        "content": { "application/json": { "schema": error_ref } }
    });
    paths.insert(
        "/healthz".into(),
        json!({ "get": {
            "operationId": "healthz",
            "summary": "Liveness check (no token needed).",
            "security": [],
            "responses": { "200": { "description": "The server is up.",
                "content": { "application/json": { "schema": {
                    "type": "object", "properties": { "status": { "const": "ok" } } } } } } }
        } }),
    );
    paths.insert(
        "/v1/tools".into(),
        json!({ "get": {
            "operationId": "listTools",
            "summary": "The tool specs, with the names the active profile exposes.",
            "responses": {
                "200": { "description": "The tools.", "content": { "application/json": { "schema": {
                    "type": "object", "required": ["tools"],
                    "properties": { "tools": { "type": "array", "items": { "type": "object" } } } } } } },
                "401": unauthorized
            }
        } }),
    );
    paths.insert(
        "/v1/batch".into(),
        json!({ "post": {
            "operationId": "batch",
            "summary": "Several calls, run in order (each sees what the ones before it did; a failed call does not stop the rest).",
            "requestBody": { "required": true, "content": { "application/json": { "schema": {
                "type": "array", "maxItems": toolbelt_wire::batch::MAX_BATCH_CALLS,
                "items": { "type": "object", "required": ["tool"], "additionalProperties": false,
                    "properties": {
                        "tool": { "type": "string", "description": "The tool's name (canonical or as the profile exposes it)." },
                        "params": { "type": "object", "description": "Its arguments (also accepted as `arguments`)." },
                        "arguments": { "type": "object" },
                        "id": { "type": "string", "description": "A call id, echoed in the envelope's context." }
                    } } } } } },
            "responses": {
                "200": { "description": "One envelope per call, in order.", "content": { "application/json": {
                    "schema": { "type": "array", "items": envelope_ref } } } },
                "400": { "description": "The batch cannot be read; no call ran.",
                    "content": { "application/json": { "schema": error_ref } } },
                "401": unauthorized
            }
        } }),
    );
    paths.insert(
        "/v1/openapi.json".into(),
        json!({ "get": {
            "operationId": "openapi",
            "summary": "This document.",
            "responses": { "200": { "description": "OpenAPI 3.1 document.",
                "content": { "application/json": { "schema": { "type": "object" } } } },
                "401": unauthorized }
        } }),
    );
    web::api::openapi_paths(&mut paths, &unauthorized);
    web::questions::openapi_paths(&mut paths, &unauthorized);
    let mut tools = BTreeMap::new();
    for spec in registry.definitions() {
        tools.insert(spec.name.clone(), spec);
    }
    for (name, spec) in tools {
        let schema_name = format!("{name}.arguments");
        let mut input = spec.input_schema.clone();
        if let Value::Object(map) = &mut input {
            map.remove("$schema");
            map.insert(
                "$id".into(),
                Value::String(format!("urn:toolbelt:tool:{name}:arguments")),
            );
        }
        schemas.insert(schema_name.clone(), input);
        let mut operation = json!({
            "operationId": name,
            "summary": spec.title,
            "description": spec.description,
            "tags": [spec.category.as_str()],
            "requestBody": { "required": false, "content": { "application/json": {
                "schema": { "$ref": format!("#/components/schemas/{schema_name}") } } } },
            "responses": {
                "200": { "description": "The result envelope; `status` is success, partial or error \
                    (tool errors such as invalid arguments are envelopes too).",
                    "content": { "application/json": { "schema": envelope_ref } } },
                "400": { "description": "The body is not JSON (an error envelope).",
                    "content": { "application/json": { "schema": envelope_ref } } },
                "401": unauthorized,
                "413": { "description": "The body is over the size limit.",
                    "content": { "application/json": { "schema": error_ref } } }
            }
        });
        if let (Some(output), Value::Object(op)) = (&spec.output_schema, &mut operation) {
            op.insert(
                "x-toolbelt-output-schema".into(),
                strip_dialect(output.clone()),
            );
        }
        paths.insert(format!("/v1/tools/{name}"), json!({ "post": operation }));
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "toolbelt",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "toolbelt's tools over HTTP. MCP streamable HTTP is served at /mcp."
        },
        "servers": [{ "url": "/" }],
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": schemas
        }
    })
}

fn strip_dialect(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}

fn envelope_schema() -> Value {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    json!({
        "type": "object",
        "required": ["status", "data", "text", "stats", "context"],
        "properties": {
            "status": { "enum": ["success", "partial", "error"] },
            "data": { "description": "Machine-readable result (the tool's output schema on success)." },
            "text": { "type": "string", "description": "What a model reads." },
            "stats": { "type": "object", "properties": { "time_ms": { "type": "integer" } } },
            "context": { "type": "object", "properties": {
                "tool": { "type": "string" }, "call_id": { "type": "string" } } },
            "error": { "type": "object", "required": ["code", "message"], "properties": {
                "code": { "enum": codes },
                "message": { "type": "string" },
                "hint": { "type": ["string", "null"] }
            } }
        }
    })
}

// ---------------------------------------------------------------- token file

/// The token in `<state_dir>/serve-token`, created on first use: [`TOKEN_BYTES`]
/// random bytes as hex, in a file only the owner can read (mode 0600).
///
/// # Errors
/// When the directory or the file cannot be created or read, the system has no
/// randomness source, or the file holds no token.
pub fn load_or_create_token(state_dir: &Path) -> io::Result<String> {
    let path = state_dir.join(TOKEN_FILE_NAME);
    match read_token(&path) {
        Ok(token) => return Ok(token),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(state_dir)?;
    let token = crate::random_hex(TOKEN_BYTES)
        .map_err(|e| io::Error::other(format!("no randomness for the token: {e}")))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(&path) {
        Ok(mut file) => {
            io::Write::write_all(&mut file, format!("{token}\n").as_bytes())?;
            file.sync_all()?;
            Ok(token)
        }
        // Another process created it first: use that one.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_token(&path),
        Err(e) => Err(e),
    }
}

fn read_token(path: &PathBuf) -> io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    let token = text.trim();
    if token.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is empty; delete it to get a new token", path.display()),
        ));
    }
    Ok(token.to_string())
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
