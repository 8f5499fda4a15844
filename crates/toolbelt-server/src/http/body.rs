//! Request bodies read whole, and the refusal of one that could not be.

use std::io;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;

use crate::error::ApiError;

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
            unread_body(Box::new(rejection), max_body_bytes)
        }
    })
}

/// The refusal of a request whose body could not be read whole: 413 over the
/// limit, 408 when it stopped coming (the body deadline), else 400.
pub(super) fn unread_body(
    e: Box<dyn std::error::Error + Send + Sync>,
    max_body_bytes: usize,
) -> ApiError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&*e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>()
            && io.kind() == io::ErrorKind::TimedOut
        {
            // The deadline's own message (see `ApiError::BodyTimedOut`).
            return ApiError::BodyTimedOut(io.to_string());
        }
        if cause.to_string().contains("length limit") {
            return ApiError::TooLarge {
                max_bytes: max_body_bytes,
            };
        }
        source = cause.source();
    }
    ApiError::UnreadableBody(e)
}
