//! Refusals over HTTP, in one place: [`ApiError`] is every answer the server gives
//! instead of what was asked for, from the security checks, the JSON API and the
//! web page alike. Each variant knows its status, its code and the headers it
//! adds; the body is always `{"error": {"code", "message"}}`, whose message is
//! the error's chain joined once, in [`ApiError::message`].

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolbelt_core::error_chain;
use toolbelt_store::StoreError;
use toolbelt_wire::batch::BatchError;

/// Why a request was refused. Handlers return it with `?`; a store's failure
/// converts into it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    /// The `Host` header does not name this server (DNS rebinding).
    #[error("{0}")]
    ForbiddenHost(&'static str),
    /// The request comes from a page of another origin.
    #[error("{0}")]
    ForbiddenOrigin(&'static str),
    /// No token, a wrong one, or one in the URL.
    #[error("{message}")]
    Unauthorized {
        /// The `error` parameter of the `WWW-Authenticate` challenge
        /// (`invalid_token`, `invalid_request`), if any.
        challenge: Option<&'static str>,
        /// What to do.
        message: String,
    },
    /// Wrong tokens past the client's burst.
    #[error("too many wrong tokens; try again in {secs} seconds")]
    TooManyAttempts {
        /// Seconds until the client may try again (`Retry-After`).
        secs: u64,
    },
    /// A body that is not declared as JSON.
    #[error("the body is JSON: send it with the header `Content-Type: application/json`")]
    UnsupportedMediaType,
    /// A body over the limit.
    #[error("the request body is over the limit of {max_bytes} bytes")]
    TooLarge {
        /// The limit, in bytes.
        max_bytes: usize,
    },
    /// A body that stopped coming before its deadline.
    ///
    /// The text is the whole message, as the connection's body deadline words it
    /// (`the request body did not arrive within 30 s`): that deadline is this
    /// server's own layer, found as an `io::Error` inside the body's error chain,
    /// which is only borrowed there.
    #[error("{0}")]
    BodyTimedOut(String),
    /// A body that could not be read for another reason.
    #[error("the request body could not be read")]
    UnreadableBody(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A new MCP session beyond the cap.
    #[error(
        "the server holds its maximum of {max} MCP sessions; close one (DELETE /mcp) or retry later"
    )]
    TooManySessions {
        /// The cap.
        max: usize,
    },
    /// No such route, file, run or record.
    #[error("{0}")]
    NotFound(String),
    /// No tool of that name.
    #[error("no tool is named {0:?}; see GET /v1/tools")]
    UnknownTool(String),
    /// A batch that cannot be read: its error words its own cause (mid-sentence,
    /// with what to do).
    #[error(transparent)]
    InvalidBatch(BatchError),
    /// A query parameter (or a value the store refused) is invalid.
    #[error("{0}")]
    InvalidParams(String),
    /// A body that does not parse as the answer to questions.
    #[error("the body is not an answer")]
    NotAnAnswer(#[source] serde_json::Error),
    /// The server was started without a store.
    #[error("this server has no store")]
    NoStore,
    /// The store failed.
    #[error("the store cannot answer")]
    Store(#[source] StoreError),
    /// The agent's transcripts cannot be read.
    #[error("the agent's runs cannot be read")]
    RunsUnreadable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Questions kept in the store cannot be read.
    #[error(transparent)]
    QuestionsUnreadable(crate::questions::ReplyError),
    /// A fault of the server's own.
    #[error("{0}")]
    Internal(&'static str),
}

impl ApiError {
    /// The HTTP status.
    fn status(&self) -> StatusCode {
        match self {
            ApiError::ForbiddenHost(_) | ApiError::ForbiddenOrigin(_) => StatusCode::FORBIDDEN,
            ApiError::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            ApiError::TooManyAttempts { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::BodyTimedOut(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnreadableBody(_)
            | ApiError::InvalidBatch(_)
            | ApiError::InvalidParams(_)
            | ApiError::NotAnAnswer(_) => StatusCode::BAD_REQUEST,
            ApiError::TooManySessions { .. }
            | ApiError::NoStore
            | ApiError::Store(_)
            | ApiError::RunsUnreadable(_)
            | ApiError::QuestionsUnreadable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::NotFound(_) | ApiError::UnknownTool(_) => StatusCode::NOT_FOUND,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The `code` of the body.
    fn code(&self) -> &'static str {
        match self {
            ApiError::ForbiddenHost(_) => "FORBIDDEN_HOST",
            ApiError::ForbiddenOrigin(_) => "FORBIDDEN_ORIGIN",
            ApiError::Unauthorized { .. } => "UNAUTHORIZED",
            ApiError::TooManyAttempts { .. } => "TOO_MANY_ATTEMPTS",
            ApiError::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::TooLarge { .. } => "TOO_LARGE",
            ApiError::BodyTimedOut(_) => "REQUEST_TIMEOUT",
            ApiError::UnreadableBody(_) => "BAD_REQUEST",
            ApiError::TooManySessions { .. } => "TOO_MANY_SESSIONS",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::UnknownTool(_) => "UNKNOWN_TOOL",
            ApiError::InvalidBatch(_) => "INVALID_BATCH",
            ApiError::InvalidParams(_) | ApiError::NotAnAnswer(_) => "INVALID_PARAMS",
            ApiError::NoStore | ApiError::Store(_) | ApiError::QuestionsUnreadable(_) => {
                "STORE_UNAVAILABLE"
            }
            ApiError::RunsUnreadable(_) => "RUNS_UNAVAILABLE",
            ApiError::Internal(_) => "INTERNAL",
        }
    }

    /// The message of the body: the error's chain, joined here once.
    ///
    /// A rejection of axum's (an unreadable body) already words its own cause,
    /// so only that one cause is added to it.
    fn message(&self) -> String {
        match self {
            ApiError::UnreadableBody(rejection) => format!("{self}: {rejection}"),
            _ => error_chain(self),
        }
    }

    /// The header the answer carries besides the body's, if any.
    fn header(&self) -> Option<(header::HeaderName, HeaderValue)> {
        match self {
            ApiError::Unauthorized { challenge, .. } => {
                let value = match challenge {
                    None => "Bearer realm=\"toolbelt\"".to_string(),
                    Some(error) => format!("Bearer realm=\"toolbelt\", error=\"{error}\""),
                };
                let value = HeaderValue::from_str(&value).ok()?;
                Some((header::WWW_AUTHENTICATE, value))
            }
            ApiError::TooManyAttempts { secs } => {
                let value = HeaderValue::from_str(&secs.to_string()).ok()?;
                Some((header::RETRY_AFTER, value))
            }
            ApiError::TooManySessions { .. } => {
                Some((header::RETRY_AFTER, HeaderValue::from_static("5")))
            }
            _ => None,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::NotFound(m) => ApiError::NotFound(m),
            StoreError::Invalid(m) => ApiError::InvalidParams(m),
            e => ApiError::Store(e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = self.message();
        match &self {
            ApiError::Store(_) => {
                tracing::warn!(target: "toolbelt::serve", error = %message, "store failure");
            }
            ApiError::RunsUnreadable(_) => {
                tracing::warn!(target: "toolbelt::serve", error = %message, "agent runs cannot be read");
            }
            ApiError::QuestionsUnreadable(_) => {
                tracing::warn!(target: "toolbelt::serve", error = %message, "questions cannot be read");
            }
            _ => {}
        }
        let body = error_body(self.code(), &message);
        let mut response = (self.status(), Json(body)).into_response();
        if let Some((name, value)) = self.header() {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// The body of every error answer under `/v1` and `/mcp`.
pub(crate) fn error_body(code: &str, message: &str) -> Value {
    json!({ "error": { "code": code, "message": message } })
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
