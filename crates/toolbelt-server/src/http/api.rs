//! The JSON API's own routes: the tool list and the OpenAPI document, one tool
//! call, a batch of calls; and the answer to a route that
//! does not exist. Each call carries where it came from ([`caller_origin`]): the
//! API, or the web page.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio_util::sync::{CancellationToken, DropGuard};
use toolbelt_core::{BatchMode, CallOptions, Envelope, ErrorCode, Origin, Registry, ToolCall};

use super::body::read_body;
use crate::error::ApiError;

/// Shared state of the routes.
pub(super) struct AppState {
    pub(super) registry: Arc<Registry>,
    pub(super) openapi: Value,
    pub(super) max_body_bytes: usize,
    /// Whether the server asks for a token.
    pub(super) token_required: bool,
}

/// Where a request's calls come from: `web` for the page (a request without a
/// bearer token, authenticated by the page's session cookie, or from the page of
/// a server that asks for no token), `api` otherwise. The server holds one token,
/// without a label, so no `token` is named.
pub(super) fn caller_origin(headers: &HeaderMap, token_required: bool) -> Origin {
    let bearer = super::security::bearer(headers).is_some();
    let same_origin_page = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site.eq_ignore_ascii_case("same-origin"));
    let page = !bearer && (token_required || same_origin_page);
    Origin::new(if page { "web" } else { "api" })
}

pub(super) async fn not_found() -> ApiError {
    ApiError::NotFound("no such route; see GET /v1/openapi.json".into())
}

pub(super) async fn list_tools(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({ "tools": state.registry.definitions() })).into_response()
}

pub(super) async fn openapi(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(state.openapi.clone()).into_response()
}

pub(super) async fn call_tool(
    State(state): State<Arc<AppState>>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
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
    let (mut options, _cancel_on_drop) = cancelled_when_dropped();
    options.origin = Some(caller_origin(&headers, state.token_required));
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

/// `POST /v1/batch`: a JSON array of calls (`{"tool", "params"}`), run in order;
/// the answer is their envelopes, in the same order. A batch that cannot be read
/// runs nothing and is answered 400.
pub(super) async fn call_batch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = read_body(body, state.max_body_bytes)?;
    let calls = toolbelt_wire::batch::parse_calls(&body).map_err(ApiError::InvalidBatch)?;
    let (mut options, _cancel_on_drop) = cancelled_when_dropped();
    options.origin = Some(caller_origin(&headers, state.token_required));
    let envelopes = state
        .registry
        .execute_batch_with(calls, BatchMode::Sequential, &options)
        .await;
    Ok((StatusCode::OK, axum::Json(envelopes)).into_response())
}
