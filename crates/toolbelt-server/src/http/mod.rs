//! The HTTP server: MCP streamable HTTP at `/mcp` and a small JSON API at `/v1`.
//!
//! Routes:
//! - `GET /healthz`: what a load balancer asks (the `health` module): the
//!   replica, its store and scheduler; 503 while the store does not answer or
//!   the server drains. No token needed.
//! - `GET /v1/tools`: the tool specs, with the names the active profile exposes.
//! - `POST /v1/tools/{name}`: the body is the arguments (JSON), the answer the
//!   result envelope. Tool errors are envelopes with status 200; an unknown tool
//!   answers 404 and a body that is not JSON 400, both with an envelope.
//! - `GET /v1/openapi.json`: an OpenAPI 3.1 description of these routes.
//! - `GET /v1/calls`, `/v1/calls/stream`, `/v1/todos`, `/v1/planner/...`,
//!   `/v1/tools/{name}/schemas`: what the web page reads (see [`crate::web`]).
//! - `GET /v1/questions`, `POST /v1/questions/{id}`: the questions of agent runs
//!   waiting for an answer, and their answers.
//! - `GET /v1/checkpoints`, `GET /v1/checkpoints/{id}`, `GET
//!   /v1/checkpoints/{id}/diff`, `POST /v1/checkpoints/{id}/restore`: what each
//!   call changed in the files, and putting them back (a dry run by default).
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
//!
//! The modules: `serve` runs the accept loop, `guard` puts the checks of
//! `security` in front of every route, `health` answers `/healthz`, `api` holds
//! the JSON API's routes and `openapi` their description, `checkpoints` the checkpoint routes,
//! `mcp_endpoint` the MCP endpoint, `body` reads request bodies, `token` keeps
//! the generated token.

mod api;
pub(crate) mod body;
mod checkpoints;
mod guard;
mod health;
mod mcp_endpoint;
mod openapi;
pub(crate) mod security;
mod serve;
mod token;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;
use toolbelt_core::Registry;
use toolbelt_store::StoreHandle;

use crate::conn::Deadlines;
use crate::questions::PendingQuestions;
use crate::web::{self, Web, api::ApiState};

pub use health::{Health, STORE_CHECK_TIMEOUT_MS, SchedulerState};
pub use serve::{armed_shutdown_signal, bind, serve, serve_listener, shutdown_signal};
pub use token::load_or_create_token;

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
    /// endpoints answer 503. `/healthz` checks that it answers.
    pub store: Option<StoreHandle>,
    /// What `/healthz` says of this replica (its name, version, scheduler); the
    /// server marks it draining when it is told to stop.
    pub health: Health,
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
    /// The served workspace's checkpoints, listed, shown and restored at
    /// `/v1/checkpoints` (and on the web page); without them those routes answer
    /// 501.
    pub checkpoints: Option<toolbelt_checkpoint::Checkpoints>,
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
            health: Health::default(),
            login_code: None,
            mcp: crate::mcp::McpOptions::default(),
            upstreams: None,
            questions: PendingQuestions::new(),
            checkpoints: None,
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
            .field("health", &self.health)
            .field(
                "login_code",
                &self.login_code.as_ref().map(|_| "<redacted>"),
            )
            .field("questions", &self.questions)
            .field("checkpoints", &self.checkpoints)
            .finish()
    }
}

/// Why the HTTP server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpServeError {
    /// The listening socket could not be opened (the address is taken, or not
    /// this machine's, or not allowed).
    #[error("cannot bind {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The configuration cannot work.
    #[error("invalid server configuration: {0}")]
    Config(String),
}

/// The whole application as a router (MCP, JSON API, health check, and the
/// security checks in front of them), for tests and embedding.
pub fn router(registry: Arc<Registry>, config: &ServeConfig) -> Router {
    build_router(registry, config, CancellationToken::new())
}

/// The router of [`router`], its MCP streams ended by `cancel`.
fn build_router(
    registry: Arc<Registry>,
    config: &ServeConfig,
    cancel: CancellationToken,
) -> Router {
    let state = Arc::new(api::AppState {
        openapi: openapi::openapi_document(&registry),
        registry: Arc::clone(&registry),
        max_body_bytes: config.max_body_bytes,
        token_required: config.token.is_some(),
    });
    let checkpoint_routes = checkpoints::routes(Arc::new(checkpoints::CheckpointState {
        checkpoints: config.checkpoints.clone(),
        token_required: config.token.is_some(),
        max_body_bytes: config.max_body_bytes,
        restoring: tokio::sync::Mutex::new(()),
    }));
    let token_digest = config.token.as_deref().map(|t| security::digest(t.trim()));
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
        .route("/v1/tools", get(api::list_tools))
        .route("/v1/tools/{name}", post(api::call_tool))
        .route("/v1/batch", post(api::call_batch))
        .route("/v1/openapi.json", get(api::openapi))
        .with_state(state)
        .merge(health::routes(health::HealthState {
            health: config.health.clone(),
            store: config.store.clone(),
        }))
        .merge(page_api)
        .merge(checkpoint_routes)
        .merge(web::questions::routes(
            config.questions.clone(),
            config.max_body_bytes,
        ))
        .merge(web::routes(Arc::clone(&web)))
        .fallback(api::not_found);
    let (app, sessions) = mcp_endpoint::mount_mcp(api, &registry, config, cancel);
    let guard = Arc::new(guard::Guard {
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
        .layer(middleware::from_fn_with_state(guard, guard::security));
    // Around the whole router, so that it sees the `Allow` header axum adds to a 405
    // outside the routes' own layers.
    Router::new()
        .fallback_service(app)
        .layer(middleware::from_fn(guard::json_errors))
}

#[cfg(test)]
#[path = "../http_tests.rs"]
mod tests;
