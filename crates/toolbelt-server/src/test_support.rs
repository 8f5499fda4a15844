//! What the tests of the HTTP API and of the web page share.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use tower::ServiceExt;

/// Every async test finishes well within this.
pub(crate) const TEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends `request` to `app`: the answer's status, headers and body.
pub(crate) async fn respond(
    app: axum::Router,
    request: Request<Body>,
) -> (StatusCode, HeaderMap, Bytes) {
    let response = tokio::time::timeout(TEST_TIMEOUT, app.oneshot(request))
        .await
        .expect("no timeout")
        .expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, headers, bytes)
}
