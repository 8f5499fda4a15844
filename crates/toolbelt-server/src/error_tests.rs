use axum::http::header;
use axum::response::IntoResponse;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_store::StoreError;

use super::ApiError;

/// The status, the content type, the extra header asked for and the body of a
/// refusal.
async fn answer(
    e: ApiError,
    extra: Option<header::HeaderName>,
) -> (u16, String, Option<String>, Value) {
    let response = e.into_response();
    let status = response.status().as_u16();
    let text = |name: &header::HeaderName| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = text(&header::CONTENT_TYPE).unwrap_or_default();
    let extra = extra.and_then(|name| text(&name));
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        content_type,
        extra,
        serde_json::from_slice(&body).unwrap(),
    )
}

/// A refusal, the header to look at, and the status, that header's value and the
/// body it should give.
type Case = (
    ApiError,
    Option<header::HeaderName>,
    u16,
    Option<&'static str>,
    Value,
);

fn body(code: &str, message: &str) -> Value {
    json!({ "error": { "code": code, "message": message } })
}

#[tokio::test]
async fn every_refusal_keeps_its_status_code_message_and_header() {
    let www = Some(header::WWW_AUTHENTICATE);
    let retry = Some(header::RETRY_AFTER);
    let cases: Vec<Case> = vec![
        (
            ApiError::ForbiddenHost("the Host header is not text"),
            None,
            403,
            None,
            body("FORBIDDEN_HOST", "the Host header is not text"),
        ),
        (
            ApiError::ForbiddenOrigin("log in from the page this server serves"),
            None,
            403,
            None,
            body(
                "FORBIDDEN_ORIGIN",
                "log in from the page this server serves",
            ),
        ),
        (
            ApiError::Unauthorized {
                challenge: None,
                message: "no token".into(),
            },
            www.clone(),
            401,
            Some("Bearer realm=\"toolbelt\""),
            body("UNAUTHORIZED", "no token"),
        ),
        (
            ApiError::Unauthorized {
                challenge: Some("invalid_token"),
                message: "the bearer token is wrong".into(),
            },
            www,
            401,
            Some("Bearer realm=\"toolbelt\", error=\"invalid_token\""),
            body("UNAUTHORIZED", "the bearer token is wrong"),
        ),
        (
            ApiError::TooManyAttempts { secs: 7 },
            retry.clone(),
            429,
            Some("7"),
            body(
                "TOO_MANY_ATTEMPTS",
                "too many wrong tokens; try again in 7 seconds",
            ),
        ),
        (
            ApiError::UnsupportedMediaType,
            None,
            415,
            None,
            body(
                "UNSUPPORTED_MEDIA_TYPE",
                "the body is JSON: send it with the header `Content-Type: application/json`",
            ),
        ),
        (
            ApiError::TooLarge { max_bytes: 64 },
            None,
            413,
            None,
            body(
                "TOO_LARGE",
                "the request body is over the limit of 64 bytes",
            ),
        ),
        (
            ApiError::BodyTimedOut("the body did not arrive within 30 s".into()),
            None,
            408,
            None,
            body("REQUEST_TIMEOUT", "the body did not arrive within 30 s"),
        ),
        (
            ApiError::UnreadableBody("connection reset".into()),
            None,
            400,
            None,
            body(
                "BAD_REQUEST",
                "the request body could not be read: connection reset",
            ),
        ),
        (
            ApiError::TooManySessions { max: 2 },
            retry,
            503,
            Some("5"),
            body(
                "TOO_MANY_SESSIONS",
                "the server holds its maximum of 2 MCP sessions; close one (DELETE /mcp) or retry later",
            ),
        ),
        (
            ApiError::NotFound("no such file".into()),
            None,
            404,
            None,
            body("NOT_FOUND", "no such file"),
        ),
        (
            ApiError::UnknownTool("nope".into()),
            None,
            404,
            None,
            body(
                "UNKNOWN_TOOL",
                "no tool is named \"nope\"; see GET /v1/tools",
            ),
        ),
        (
            ApiError::InvalidBatch(toolbelt_wire::batch::BatchError::TooManyCalls { calls: 1001 }),
            None,
            400,
            None,
            body(
                "INVALID_BATCH",
                "the batch has 1001 calls; at most 1000 run at once, split it",
            ),
        ),
        (
            ApiError::NoStore,
            None,
            503,
            None,
            body("STORE_UNAVAILABLE", "this server has no store"),
        ),
        (
            ApiError::RunsUnreadable("permission denied".into()),
            None,
            503,
            None,
            body(
                "RUNS_UNAVAILABLE",
                "the agent's runs cannot be read: permission denied",
            ),
        ),
        (
            ApiError::Internal("no session could be started (no randomness)"),
            None,
            500,
            None,
            body("INTERNAL", "no session could be started (no randomness)"),
        ),
    ];
    for (error, extra, status, header_value, expected) in cases {
        let shown = format!("{error:?}");
        assert_eq!(
            answer(error, extra).await,
            (
                status,
                "application/json".to_string(),
                header_value.map(str::to_string),
                expected
            ),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn store_errors_answer_by_their_kind() {
    assert_eq!(
        answer(
            ApiError::from(StoreError::NotFound("no project-3".into())),
            None
        )
        .await,
        (
            404,
            "application/json".into(),
            None,
            body("NOT_FOUND", "no project-3")
        )
    );
    assert_eq!(
        answer(ApiError::from(StoreError::Invalid("limit: 0".into())), None).await,
        (
            400,
            "application/json".into(),
            None,
            body("INVALID_PARAMS", "limit: 0")
        )
    );
    let conflict = StoreError::Conflict("taken".into());
    let message = format!("the store cannot answer: {conflict}");
    assert_eq!(
        answer(ApiError::from(conflict), None).await,
        (
            503,
            "application/json".into(),
            None,
            body("STORE_UNAVAILABLE", &message)
        )
    );
}

#[tokio::test]
async fn a_cause_is_told_once_after_its_layer() {
    let not_json = serde_json::from_str::<Value>("{").unwrap_err();
    let message = format!("the body is not an answer: {not_json}");
    assert_eq!(
        answer(ApiError::NotAnAnswer(not_json), None).await,
        (
            400,
            "application/json".into(),
            None,
            body("INVALID_PARAMS", &message)
        )
    );
}
