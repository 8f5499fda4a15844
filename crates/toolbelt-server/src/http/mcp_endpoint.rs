//! The MCP endpoint at `/mcp`: rmcp's streamable HTTP service over one
//! [`McpServer`] per session, twice over (with and without priming events, by the
//! client's protocol revision).
//!
//! Behind a load balancer: clients of the 2026-07-28 revision have no session,
//! and any replica serves any of their requests. Older clients' sessions live in
//! the replica that opened them; a request naming a session this replica does not
//! know (opened elsewhere, or ended) is answered 404, as the MCP specification
//! says, so that the client opens a new one, never a 5xx.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_core::Registry;

use super::ServeConfig;
use super::body::unread_body;
use crate::McpServer;
use crate::error::ApiError;

/// The MCP session header.
pub(super) const MCP_SESSION_HEADER: &str = "mcp-session-id";
/// The header naming the MCP protocol revision of a request.
const MCP_PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// Counts the live MCP sessions.
type McpSessions = rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// Adds the MCP endpoint (one [`McpServer`] per session over the shared registry);
/// returns it for the session cap. Host and Origin are checked by [`security`] in
/// front of it (the `guard` module), so rmcp's own checks are off; its body limit is ours.
pub(super) fn mount_mcp(
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
pub(super) struct McpEndpoint {
    modern: StreamableHttpService<McpServer, McpSessions>,
    legacy: StreamableHttpService<McpServer, McpSessions>,
    modern_sessions: Arc<McpSessions>,
    legacy_sessions: Arc<McpSessions>,
    max_body_bytes: usize,
}

impl McpEndpoint {
    /// Whether session `id` is live here.
    async fn knows(&self, id: &str) -> bool {
        self.modern_sessions.sessions.read().await.contains_key(id)
            || self.legacy_sessions.sessions.read().await.contains_key(id)
    }

    /// The live sessions.
    pub(super) async fn sessions(&self) -> usize {
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
            .map_err(|e| unread_body(Box::new(e), self.max_body_bytes))?;
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

/// The answer to a request naming a session that is not live here.
fn unknown_session() -> Response {
    ApiError::NotFound(
        "no such MCP session on this server (it ended, or another server opened it); \
         start a new one with initialize"
            .into(),
    )
    .into_response()
}

/// `/mcp`: hands the request to the server of its client's revision. A session
/// this replica does not know is 404, with a message saying what to do: its end
/// (`DELETE`, which rmcp accepts for any id), a request rmcp found no session
/// for, and one that failed because the session ended meanwhile. A session
/// ended is 204 (rmcp says 202, which the Python SDK takes for a failure).
async fn mcp_endpoint(State(endpoint): State<McpEndpoint>, request: Request) -> Response {
    use tower::ServiceExt as _;
    let method = request.method().clone();
    let session = request
        .headers()
        .get(MCP_SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && method == Method::DELETE
        && !endpoint.knows(id).await
    {
        return unknown_session();
    }
    let (legacy, request) = match endpoint.is_legacy(request).await {
        Ok(routed) => routed,
        Err(refused) => return refused.into_response(),
    };
    let service = if legacy {
        endpoint.legacy.clone()
    } else {
        endpoint.modern.clone()
    };
    let response = match service.oneshot(request).await {
        Ok(response) => response.map(axum::body::Body::new),
        Err(never) => match never {},
    };
    let status = response.status();
    if (status.is_server_error() || status == StatusCode::NOT_FOUND)
        && let Some(id) = &session
        && !endpoint.knows(id).await
    {
        return unknown_session();
    }
    if method == Method::DELETE && status == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    response
}
