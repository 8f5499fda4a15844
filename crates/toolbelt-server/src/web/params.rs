//! What the page's JSON endpoints share: reading query parameters and answering
//! JSON.

use std::collections::HashMap;

use axum::extract::Query;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The query parameters of a request.
pub(crate) type Params = Query<HashMap<String, String>>;

/// What a handler answers.
pub(crate) type Answer = Result<Response, ApiError>;

/// `value` as the JSON answer.
pub(crate) fn json_answer(value: impl serde::Serialize) -> Answer {
    Ok(axum::Json(value).into_response())
}

/// Parameter `name`, trimmed, when given and not empty.
pub(crate) fn text(params: &HashMap<String, String>, name: &str) -> Option<String> {
    params
        .get(name)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// Parameter `name` as a number, when given.
///
/// # Errors
/// It is given but not a number.
pub(crate) fn number<T: std::str::FromStr>(
    params: &HashMap<String, String>,
    name: &str,
) -> Result<Option<T>, ApiError> {
    match text(params, name) {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| ApiError::InvalidParams(format!("{name}: {v:?} is not a number"))),
    }
}
