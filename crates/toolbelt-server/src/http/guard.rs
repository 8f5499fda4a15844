//! The layers in front of the routes: the security checks of every request, in
//! order (Host, Origin, token or the page's session, content type, body size, MCP
//! session cap), the security headers of every answer, and every failure under
//! `/v1` and `/mcp` answered in JSON.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::mcp_endpoint::{MCP_SESSION_HEADER, McpEndpoint};
use super::security::{
    bearer, check_host, check_origin, constant_time_eq, content_length, digest, is_json, preflight,
    token_in_query, with_cors,
};
use crate::conn::Peer;
use crate::error::{ApiError, error_body};
use crate::web::{self, Web};

/// What the security layer checks requests against.
pub(super) struct Guard {
    /// `None` when the server asks for no token.
    pub(super) token_digest: Option<[u8; 32]>,
    pub(super) bind: SocketAddr,
    pub(super) allowed_origins: Vec<String>,
    pub(super) max_body_bytes: usize,
    pub(super) max_sessions: usize,
    pub(super) sessions: Option<McpEndpoint>,
    /// The page's sessions and the wrong-token limiter.
    pub(super) web: Arc<Web>,
}

/// The checks of [`checks`], and the security headers on every answer.
pub(super) async fn security(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
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
    if let Err(reason) = check_host(guard.bind, &request) {
        tracing::info!(target: "toolbelt::serve", %method, %path, reason, "refused: Host");
        return ApiError::ForbiddenHost(reason).into_response();
    }
    let origin = match check_origin(&guard.allowed_origins, request.headers()) {
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
                if let Some(wait) = web::hold_back_wrong_token(&guard.web, peer.as_ref()).await {
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
pub(super) async fn json_errors(request: Request, next: Next) -> Response {
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
