//! The questions of agent runs waiting for the person ([`PendingQuestions`]), over
//! the JSON API (with the same authentication as the rest of `/v1`):
//!
//! - `GET /v1/questions`: `{"questions": [{"id", "asked_at", "expires_at",
//!   "run_id", "questions"}]}`, the oldest first (times in milliseconds since the
//!   epoch; `run_id` null when the run is not known).
//! - `POST /v1/questions/{id}`: `{"answers": [{"header", "selected", "text"}]}`,
//!   one answer per question, or `{"decline": true, "reason": "..."}`. Answers
//!   `{"id", "status": "answered" | "declined"}`; 400 when the body does not fit
//!   the questions (they stay pending), 404 when nothing waits under the id
//!   (answered already, expired, withdrawn, never asked).
//!
//! Under `toolbelt serve` the questions are kept in the store: every replica
//! lists the questions of all of them and takes an answer to any, once.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path as UrlPath, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::questions::{PendingQuestions, Reply, ReplyError};

/// What the routes share.
struct QuestionsState {
    questions: PendingQuestions,
    max_body_bytes: usize,
}

/// The routes, to merge into the API router.
pub(crate) fn routes(questions: PendingQuestions, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/v1/questions", get(list))
        .route("/v1/questions/{id}", post(answer))
        .with_state(Arc::new(QuestionsState {
            questions,
            max_body_bytes,
        }))
}

/// `GET /v1/questions`.
async fn list(State(state): State<Arc<QuestionsState>>) -> Result<Response, ApiError> {
    let waiting = state.questions.waiting().await.map_err(ApiError::Store)?;
    Ok(axum::Json(json!({ "questions": waiting })).into_response())
}

/// `POST /v1/questions/{id}`.
async fn answer(
    State(state): State<Arc<QuestionsState>>,
    UrlPath(id): UrlPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = crate::http::body::read_body(body, state.max_body_bytes)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::InvalidParams(
            "the body is empty: send {\"answers\": [...]} or {\"decline\": true}".into(),
        ));
    }
    let reply: Reply = serde_json::from_slice(&body).map_err(ApiError::NotAnAnswer)?;
    match state.questions.answer(&id, reply).await {
        Ok(answered) => {
            let status = if answered { "answered" } else { "declined" };
            Ok(axum::Json(json!({ "id": id, "status": status })).into_response())
        }
        Err(e @ (ReplyError::NotPending(_) | ReplyError::Answered(_) | ReplyError::Expired(_))) => {
            Err(ApiError::NotFound(e.to_string()))
        }
        Err(ReplyError::Invalid(invalid)) => Err(ApiError::InvalidParams(invalid.to_string())),
        Err(ReplyError::Store(e)) => Err(ApiError::Store(e)),
        Err(e) => Err(ApiError::QuestionsUnreadable(e)),
    }
}

/// The OpenAPI paths of these routes.
pub(crate) fn openapi_paths(paths: &mut Map<String, Value>, unauthorized: &Value) {
    let error = json!({ "content": { "application/json": {
        "schema": { "$ref": "#/components/schemas/Error" } } } });
    let described = |description: &str| {
        let mut answer = error.clone();
        answer["description"] = Value::String(description.into());
        answer
    };
    let option = json!({ "type": "object", "properties": {
        "label": { "type": "string" }, "description": { "type": "string" } } });
    let question = json!({ "type": "object", "properties": {
        "header": { "type": "string" }, "question": { "type": "string" },
        "options": { "type": "array", "items": option },
        "multi_select": { "type": "boolean" } } });
    paths.insert(
        "/v1/questions".into(),
        json!({ "get": {
            "operationId": "listQuestions",
            "summary": "The questions of agent runs waiting for an answer, the oldest first (times in ms since the epoch).",
            "responses": {
                "200": { "description": "The questions waiting.", "content": { "application/json": { "schema": {
                    "type": "object", "properties": { "questions": { "type": "array", "items": {
                        "type": "object", "required": ["id", "asked_at", "expires_at", "run_id", "questions"],
                        "properties": {
                            "id": { "type": "string" },
                            "asked_at": { "type": "integer" },
                            "expires_at": { "type": "integer", "description": "When they count as declined unanswered." },
                            "run_id": { "type": ["string", "null"], "description": "The agent run that asks (see /v1/agent/runs/{id})." },
                            "questions": { "type": "array", "items": question }
                        } } } } } } } },
                "401": unauthorized
            }
        } }),
    );
    paths.insert(
        "/v1/questions/{id}".into(),
        json!({ "post": {
            "operationId": "answerQuestions",
            "summary": "Answers the questions waiting under the id (one answer per question, labels among the question's options, several only where multi_select), or declines them.",
            "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } }],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "oneOf": [
                { "type": "object", "required": ["answers"], "additionalProperties": false, "properties": {
                    "answers": { "type": "array", "items": { "type": "object", "required": ["header"],
                        "additionalProperties": false, "properties": {
                            "header": { "type": "string" },
                            "selected": { "type": "array", "items": { "type": "string" } },
                            "text": { "type": "string", "description": "An answer in one's own words." } } } } } },
                { "type": "object", "required": ["decline"], "additionalProperties": false, "properties": {
                    "decline": { "const": true }, "reason": { "type": "string" } } }
            ] } } } },
            "responses": {
                "200": { "description": "Taken; the run goes on.", "content": { "application/json": { "schema": {
                    "type": "object", "properties": { "id": { "type": "string" },
                        "status": { "enum": ["answered", "declined"] } } } } } },
                "400": described("The body does not fit the questions; they stay pending."),
                "401": unauthorized,
                "404": described("Nothing waits under this id (answered, declined or withdrawn).")
            }
        } }),
    );
}
