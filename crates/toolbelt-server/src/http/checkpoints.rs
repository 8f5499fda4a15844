//! The checkpoints of the served workspace over the JSON API (and on the web
//! page): what each call changed, its diffs, and a restore, which is a dry run
//! unless the body says otherwise.
//!
//! - `GET /v1/checkpoints?limit=&before=`: newest first, paged by id.
//! - `GET /v1/checkpoints/{id}`: one, with its files (how each was before and
//!   after the call).
//! - `GET /v1/checkpoints/{id}/diff`: its files with unified diffs.
//! - `POST /v1/checkpoints/{id}/restore`: `{"dry_run": true, "files": [globs],
//!   "skip_conflicts": false}`; every file changed from the checkpoint on goes
//!   back to how it was before it. Files changed outside toolbelt since are a
//!   409 naming them (with the plan); an unknown id a 404; a server that keeps
//!   no checkpoints answers 501.
//!
//! Ids are `cp-12` or `12`. A restore is not a tool call: the person asked for
//! it over the API or on the page, so no permission rule asks first; it keeps a
//! checkpoint of its own (its origin is the API's or the page's), so it can be
//! undone by restoring that one.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolbelt_checkpoint::{CheckpointError, Checkpoints, RewindRequest, display_id, parse_id};
use toolbelt_core::{Origin, error_chain};
use toolbelt_store::CheckpointRecord;

use super::body::read_body;
use crate::error::error_body;

/// Checkpoints listed when no `limit` is given.
const DEFAULT_LIMIT: i64 = 50;
/// Most checkpoints one page lists.
const MAX_LIMIT: i64 = 200;

/// What the routes share.
pub(super) struct CheckpointState {
    /// None: the server keeps no checkpoints.
    pub(super) checkpoints: Option<Checkpoints>,
    /// Whether the server asks for a token (a request without one then came from
    /// the page, with its session).
    pub(super) token_required: bool,
    pub(super) max_body_bytes: usize,
    /// One restore at a time: each writes the same journal.
    pub(super) restoring: tokio::sync::Mutex<()>,
}

/// The routes, to merge into the API router.
pub(super) fn routes(state: Arc<CheckpointState>) -> Router {
    Router::new()
        .route("/v1/checkpoints", get(list))
        .route("/v1/checkpoints/{id}", get(one))
        .route("/v1/checkpoints/{id}/diff", get(diff))
        .route("/v1/checkpoints/{id}/restore", post(restore))
        .with_state(state)
}

/// Why a checkpoint route refused, as JSON (`{"error": {"code", "message"}}`,
/// and what the refusal carries besides).
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    code: &'static str,
    message: String,
    extra: Map<String, Value>,
}

impl Refusal {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
            extra: Map::new(),
        }
    }

    fn with(mut self, key: &str, value: Value) -> Refusal {
        self.extra.insert(key.to_string(), value);
        self
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut body = error_body(self.code, &self.message);
        if let Value::Object(map) = &mut body {
            map.extend(self.extra);
        }
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<CheckpointError> for Refusal {
    fn from(e: CheckpointError) -> Refusal {
        let message = error_chain(&e);
        match e {
            CheckpointError::NotFound(_) => {
                Refusal::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
            }
            CheckpointError::BadId(_) | CheckpointError::BadGlob { .. } => {
                Refusal::new(StatusCode::BAD_REQUEST, "INVALID_PARAMS", message)
            }
            CheckpointError::Pruned(_) => Refusal::new(StatusCode::GONE, "PRUNED", message),
            CheckpointError::Conflicts(paths) => {
                Refusal::new(StatusCode::CONFLICT, "CONFLICT", message)
                    .with("conflicts", json!(paths))
            }
            CheckpointError::NoRewind => Refusal::new(StatusCode::NOT_FOUND, "NOT_FOUND", message),
            CheckpointError::Outside { .. } => {
                Refusal::new(StatusCode::FORBIDDEN, "OUTSIDE_WORKSPACE", message)
            }
            CheckpointError::Store(_) => {
                tracing::warn!(target: "toolbelt::serve", error = %message, "checkpoints: store failure");
                Refusal::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "STORE_UNAVAILABLE",
                    message,
                )
            }
            CheckpointError::Io { .. }
            | CheckpointError::Damaged { .. }
            | CheckpointError::NoSpace
            | CheckpointError::Task(_) => {
                tracing::error!(target: "toolbelt::serve", error = %message, "checkpoints: restore failed");
                Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, "RESTORE_FAILED", message)
            }
        }
    }
}

impl From<toolbelt_store::StoreError> for Refusal {
    fn from(e: toolbelt_store::StoreError) -> Refusal {
        Refusal::from(CheckpointError::Store(e))
    }
}

type Answer = Result<Response, Refusal>;

/// The server's checkpoints, or 501 when it keeps none.
fn checkpoints(state: &CheckpointState) -> Result<&Checkpoints, Refusal> {
    state.checkpoints.as_ref().ok_or_else(|| {
        Refusal::new(
            StatusCode::NOT_IMPLEMENTED,
            "CHECKPOINTS_OFF",
            "this server keeps no checkpoints: they are turned off (`[checkpoints] enabled = false` \
             in toolbelt.toml), so there is nothing to list or restore",
        )
    })
}

/// The number of an id in the path (`cp-12` or `12`).
fn number(id: &str) -> Result<i64, Refusal> {
    Ok(parse_id(id)?)
}

/// A checkpoint as the API answers it: its id as people see it, its origin as
/// an object and as one line, and its files when it has them.
pub(super) fn record_json(record: &CheckpointRecord, with_files: bool) -> Value {
    let origin: Option<Origin> = serde_json::from_str(&record.origin).ok();
    let mut value = json!({
        "id": display_id(record.id),
        "number": record.id,
        "at_ms": record.at_ms,
        "tool": record.tool,
        "call_id": record.call_id,
        "origin": origin,
        "origin_text": origin.as_ref().map_or_else(|| "unknown".to_string(), ToString::to_string),
        "status": record.status,
        "problem": record.problem,
        "rewind_of": record.rewind_of.map(display_id),
        "bytes": record.bytes,
        "file_count": record.file_count,
    });
    if with_files && let Value::Object(map) = &mut value {
        map.insert("files".into(), json!(record.files));
    }
    value
}

/// `GET /v1/checkpoints`.
async fn list(
    State(state): State<Arc<CheckpointState>>,
    Query(params): Query<HashMap<String, String>>,
) -> Answer {
    let checkpoints = checkpoints(&state)?;
    let int = |name: &str| -> Result<Option<i64>, Refusal> {
        match params.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| {
                    Refusal::new(
                        StatusCode::BAD_REQUEST,
                        "INVALID_PARAMS",
                        format!("{name}: {v:?} is not a positive number"),
                    )
                }),
        }
    };
    let limit = int("limit")?.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let before = int("before")?;
    let store = checkpoints.store().await?;
    let page =
        toolbelt_store::list_checkpoints(store, checkpoints.workspace(), before, limit).await?;
    let next_before = (page.len() as i64 == limit)
        .then(|| page.last().map(|r| r.id))
        .flatten();
    let listed: Vec<Value> = page.iter().map(|r| record_json(r, false)).collect();
    Ok(axum::Json(json!({
        "workspace": checkpoints.workspace(),
        "checkpoints": listed,
        "next_before": next_before,
    }))
    .into_response())
}

/// Checkpoint `id` of the served workspace, with its files.
async fn find(checkpoints: &Checkpoints, id: i64) -> Result<CheckpointRecord, Refusal> {
    let store = checkpoints.store().await?;
    toolbelt_store::get_checkpoint(store, id)
        .await?
        .filter(|r| r.workspace == checkpoints.workspace())
        .ok_or_else(|| Refusal::from(CheckpointError::NotFound(display_id(id))))
}

/// `GET /v1/checkpoints/{id}`.
async fn one(State(state): State<Arc<CheckpointState>>, UrlPath(id): UrlPath<String>) -> Answer {
    let checkpoints = checkpoints(&state)?;
    let record = find(checkpoints, number(&id)?).await?;
    Ok(axum::Json(record_json(&record, true)).into_response())
}

/// `GET /v1/checkpoints/{id}/diff`.
async fn diff(State(state): State<Arc<CheckpointState>>, UrlPath(id): UrlPath<String>) -> Answer {
    let checkpoints = checkpoints(&state)?;
    let (record, files) = toolbelt_checkpoint::checkpoint_diff(checkpoints, number(&id)?).await?;
    Ok(axum::Json(json!({
        "checkpoint": record_json(&record, false),
        "files": files,
    }))
    .into_response())
}

/// The body of a restore.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RestoreBody {
    /// Plan only (the default).
    #[serde(default = "yes")]
    dry_run: bool,
    /// Only paths matching these globs.
    #[serde(default)]
    files: Vec<String>,
    /// Leave conflicting paths alone and restore the others.
    #[serde(default)]
    skip_conflicts: bool,
}

fn yes() -> bool {
    true
}

/// `POST /v1/checkpoints/{id}/restore`.
async fn restore(
    State(state): State<Arc<CheckpointState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Response> {
    let body = read_body(body, state.max_body_bytes).map_err(IntoResponse::into_response)?;
    let asked: RestoreBody = if body.iter().all(u8::is_ascii_whitespace) {
        RestoreBody {
            dry_run: true,
            files: Vec::new(),
            skip_conflicts: false,
        }
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            Refusal::new(
                StatusCode::BAD_REQUEST,
                "INVALID_PARAMS",
                format!(
                    "the body is not a restore ({}); send {{\"dry_run\": bool, \"files\": [globs], \"skip_conflicts\": bool}}",
                    error_chain(&e)
                ),
            )
            .into_response()
        })?
    };
    let checkpoints = checkpoints(&state).map_err(IntoResponse::into_response)?;
    let request = RewindRequest {
        to: number(&id).map_err(IntoResponse::into_response)?,
        files: asked.files,
        skip_conflicts: asked.skip_conflicts,
        force: false,
        dry_run: asked.dry_run,
        only: false,
        origin: super::api::caller_origin(&headers, state.token_required),
    };
    let _one_at_a_time = state.restoring.lock().await;
    match checkpoints.rewind(&request).await {
        Ok(outcome) => Ok(axum::Json(outcome).into_response()),
        Err(CheckpointError::Conflicts(paths)) => {
            // The plan too, so that the page can show what the rest would do.
            let plan = checkpoints.plan_rewind(&request).await.ok();
            Err(Refusal::from(CheckpointError::Conflicts(paths))
                .with("plan", json!(plan))
                .into_response())
        }
        Err(e) => Err(Refusal::from(e).into_response()),
    }
}

/// The OpenAPI paths of these routes.
pub(super) fn openapi_paths(paths: &mut Map<String, Value>, unauthorized: &Value) {
    let error_ref = json!({ "$ref": "#/components/schemas/Error" });
    let error = |description: &str| json!({ "description": description, "content": { "application/json": { "schema": error_ref } } });
    let ok = |description: &str, schema: Value| json!({ "description": description, "content": { "application/json": { "schema": schema } } });
    let id_param = json!({ "name": "id", "in": "path", "required": true,
        "description": "The checkpoint's id, `cp-12` or `12`.", "schema": { "type": "string" } });
    let checkpoint = json!({ "type": "object", "properties": {
        "id": { "type": "string" }, "number": { "type": "integer" }, "at_ms": { "type": "integer" },
        "tool": { "type": "string" }, "call_id": { "type": "string" },
        "origin": { "type": ["object", "null"], "description": "Where the call came from: `front_end` (cli, mcp, mcp-http, api, web, agent, cron, rewind...) and, when known, `session`, `client`, `token`, `run_id`, `turn`, `job`." },
        "origin_text": { "type": "string" }, "status": { "enum": ["complete", "partial", "pruned"] },
        "problem": { "type": ["string", "null"] }, "rewind_of": { "type": ["string", "null"] },
        "bytes": { "type": "integer" }, "file_count": { "type": "integer" },
        "files": { "type": "array", "items": { "type": "object" } } } });
    let off = error("The server keeps no checkpoints (`[checkpoints] enabled = false`).");
    let missing = error("No such checkpoint in the served workspace.");
    let bad_id = error("The id (or a parameter) is not valid.");
    paths.insert(
        "/v1/checkpoints".into(),
        json!({ "get": {
            "operationId": "listCheckpoints",
            "summary": "The served workspace's checkpoints, newest first: one per tool call that changed files (files not included; see file_count).",
            "parameters": [
                { "name": "limit", "in": "query", "required": false, "description": "At most this many (default 50, at most 200).", "schema": { "type": "integer" } },
                { "name": "before", "in": "query", "required": false, "description": "Only checkpoints older than this one (`next_before` of the last page).", "schema": { "type": "integer" } }
            ],
            "responses": {
                "200": ok("A page of checkpoints.", json!({ "type": "object", "properties": {
                    "workspace": { "type": "string" },
                    "checkpoints": { "type": "array", "items": checkpoint },
                    "next_before": { "type": ["integer", "null"] } } })),
                "400": bad_id, "401": unauthorized, "501": off
            }
        } }),
    );
    paths.insert(
        "/v1/checkpoints/{id}".into(),
        json!({ "get": {
            "operationId": "getCheckpoint",
            "summary": "One checkpoint with its files: how each path was before and after the call.",
            "parameters": [id_param],
            "responses": { "200": ok("The checkpoint.", checkpoint.clone()), "400": bad_id,
                "401": unauthorized, "404": missing, "501": off }
        } }),
    );
    paths.insert(
        "/v1/checkpoints/{id}/diff".into(),
        json!({ "get": {
            "operationId": "checkpointDiff",
            "summary": "What one checkpoint's call changed, with a unified diff per text file.",
            "parameters": [id_param],
            "responses": { "200": ok("The checkpoint and its files.", json!({ "type": "object", "properties": {
                    "checkpoint": checkpoint,
                    "files": { "type": "array", "items": { "type": "object", "properties": {
                        "path": { "type": "string" }, "change": { "type": "string" },
                        "renamed_from": { "type": "string" }, "captured": { "type": "boolean" },
                        "note": { "type": "string" }, "diff": { "type": "string" } } } } } })),
                "400": bad_id, "401": unauthorized, "404": missing, "501": off }
        } }),
    );
    paths.insert(
        "/v1/checkpoints/{id}/restore".into(),
        json!({ "post": {
            "operationId": "restoreCheckpoint",
            "summary": "Every file changed from this checkpoint on goes back to how it was before it. A dry run unless `dry_run` is false; the restore keeps a checkpoint of its own (`checkpoint`), so restoring that one undoes it.",
            "parameters": [id_param],
            "requestBody": { "required": false, "content": { "application/json": { "schema": {
                "type": "object", "additionalProperties": false, "properties": {
                    "dry_run": { "type": "boolean", "default": true, "description": "Only say what would change." },
                    "files": { "type": "array", "items": { "type": "string" }, "description": "Only paths matching these globs (relative to the workspace root)." },
                    "skip_conflicts": { "type": "boolean", "default": false, "description": "Leave files changed outside toolbelt alone and restore the others." }
                } } } } },
            "responses": {
                "200": ok("What was (or would be) done: `plan` (`to`, `undoes`, `items` with each path's action), `restored`, `skipped`, `checkpoint`, `dry_run`.", json!({ "type": "object" })),
                "400": bad_id, "401": unauthorized, "404": missing,
                "409": ok("Files changed outside toolbelt since it last wrote them: `conflicts` names them, `plan` says what would be done; nothing was changed.", json!({ "type": "object", "properties": {
                    "error": { "type": "object" }, "conflicts": { "type": "array", "items": { "type": "string" } },
                    "plan": { "type": "object" } } })),
                "410": error("The checkpoint's content was pruned."),
                "501": off
            }
        } }),
    );
}

#[cfg(test)]
#[path = "../checkpoints_tests.rs"]
mod tests;
