//! The HTTP channels: webhook, Telegram, Slack, Discord.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::{Value, json};
use toolbelt_net::tls::{self, TlsError};

use super::{Outgoing, SEND_TIMEOUT_MS, Secret, SendError, config_error, config_failed};
use crate::error::{SchedError, SchedResult};

/// The header carrying the message id.
pub(crate) const IDEMPOTENCY_KEY: &str = "Idempotency-Key";
/// Characters of a channel's answer kept in an error.
const MAX_ERROR_CHARS: usize = 500;
const USER_AGENT: &str = concat!("toolbelt/", env!("CARGO_PKG_VERSION"));

/// The client of the HTTP channels: rustls with the web's roots (the shared
/// [`toolbelt_net::tls`] configuration), no redirects (a webhook that redirects
/// is misconfigured, and a redirect could carry the message elsewhere), a
/// timeout per attempt.
pub(crate) fn client() -> SchedResult<reqwest::Client> {
    Ok(build_client()?)
}

/// Why the HTTP channels' client cannot be built.
#[derive(Debug, thiserror::Error)]
enum ClientError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// Held without its URL.
    #[error("the HTTP client cannot be built")]
    Build(#[source] reqwest::Error),
}

impl From<reqwest::Error> for ClientError {
    fn from(e: reqwest::Error) -> Self {
        ClientError::Build(e.without_url())
    }
}

/// The client is shared by every HTTP channel: none of them is named.
impl From<ClientError> for SchedError {
    fn from(e: ClientError) -> Self {
        const ALL: &str = "(all HTTP channels)";
        match e {
            // The TLS error's own message is this layer's: nothing goes before it.
            ClientError::Tls(TlsError::RootCertificate(e)) => {
                config_failed(ALL, "root certificate", e)
            }
            ClientError::Tls(TlsError::Setup(e)) => config_failed(ALL, "TLS", e),
            ClientError::Tls(e) => config_error(ALL, toolbelt_core::error_chain(&e)),
            ClientError::Build(e) => config_failed(ALL, "the HTTP client cannot be built", e),
        }
    }
}

fn build_client() -> Result<reqwest::Client, ClientError> {
    let tls = tls::client_config(&[], tls::ALPN_NONE)?;
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_millis(SEND_TIMEOUT_MS))
        .user_agent(USER_AGENT)
        .build()?)
}

/// A failure to get an answer: always worth another try. The URL (which may hold
/// a token) is left out.
impl From<reqwest::Error> for SendError {
    fn from(e: reqwest::Error) -> SendError {
        let kind = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "cannot connect"
        } else {
            "request failed"
        };
        let e = e.without_url();
        SendError::Retry {
            detail: format!("{kind}: {}", toolbelt_core::error_chain(&e)),
            retry_after: None,
        }
    }
}

/// `Retry-After`: seconds, or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    toolbelt_core::retry_after(value, std::time::SystemTime::now())
}

fn clip(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= MAX_ERROR_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MAX_ERROR_CHARS).collect();
    out.push('…');
    out
}

/// Sorts an answer: 2xx is delivered; 429 and 5xx are worth another try (after
/// `Retry-After`, or the wait `retry_in_body` finds); other statuses are refused
/// with the text `explain` finds in the body.
async fn outcome(
    response: reqwest::Response,
    explain: impl Fn(&str) -> String,
    retry_in_body: impl Fn(&str) -> Option<Duration>,
) -> Result<String, SendError> {
    let status = response.status();
    let header_wait = retry_after(response.headers());
    let body = response.text().await.unwrap_or_default();
    if status.is_success() {
        return Ok(body);
    }
    let detail = format!(
        "{} {}: {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        clip(&explain(&body))
    );
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        return Err(SendError::Retry {
            detail,
            retry_after: header_wait.or_else(|| retry_in_body(&body)),
        });
    }
    Err(SendError::Refused { detail })
}

fn no_wait(_: &str) -> Option<Duration> {
    None
}

/// `POST url` of `body` as JSON with the message's `Idempotency-Key`, sorted by
/// [`outcome`]; the answer's body.
async fn post_json(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    body: &Value,
    explain: impl Fn(&str) -> String,
    retry_in_body: impl Fn(&str) -> Option<Duration>,
) -> Result<String, SendError> {
    let response = http
        .post(url)
        .header(IDEMPOTENCY_KEY, key)
        .json(body)
        .send()
        .await?;
    outcome(response, explain, retry_in_body).await
}

/// [`post_json`] of `body` for `message` to a webhook whose errors are its body
/// and that names no wait in it.
async fn post_plain(
    http: &reqwest::Client,
    url: &Secret,
    message: &Outgoing,
    body: &Value,
) -> Result<(), SendError> {
    post_json(
        http,
        url.expose(),
        &message.id,
        body,
        |b| b.to_string(),
        no_wait,
    )
    .await
    .map(drop)
}

/// The text at `pointer` in a JSON body, else the body.
fn text_at(body: &str, pointer: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| body.to_string())
}

/// The seconds (fractional ones too) at `pointer` in a JSON body.
fn seconds_at(body: &str, pointer: &str) -> Option<Duration> {
    let v: Value = serde_json::from_str(body).ok()?;
    v.pointer(pointer)?
        .as_f64()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

fn media_json(message: &Outgoing) -> Value {
    Value::Array(
        message
            .media
            .iter()
            .map(|m| json!({"name": m.name, "content_type": m.content_type, "data_base64": m.data}))
            .collect(),
    )
}

/// `POST url` with `{channel, chat_id, content, id}` (and `reply_to`, `media` when given).
pub(crate) async fn webhook(
    http: &reqwest::Client,
    url: &Secret,
    channel: &str,
    message: &Outgoing,
) -> Result<(), SendError> {
    let mut body = json!({
        "channel": channel,
        "chat_id": message.chat_id,
        "content": message.content,
        "id": message.id,
    });
    if let Some(reply_to) = &message.reply_to {
        body["reply_to"] = json!(reply_to);
    }
    if !message.media.is_empty() {
        body["media"] = media_json(message);
    }
    post_plain(http, url, message, &body).await
}

/// Telegram's `description`, else the body.
fn telegram_text(body: &str) -> String {
    text_at(body, "/description")
}

/// Telegram's `parameters.retry_after` (seconds).
fn telegram_wait(body: &str) -> Option<Duration> {
    seconds_at(body, "/parameters/retry_after")
}

/// `POST {base}/bot{token}/sendMessage` `{chat_id, text}`; then each attachment
/// with `sendDocument`. Each is a part, counted through `parts_sent` once Telegram
/// confirmed it; the parts an earlier attempt delivered are not sent again.
pub(crate) async fn telegram(
    http: &reqwest::Client,
    base: &str,
    token: &Secret,
    chat_id: &str,
    message: &Outgoing,
    parts_sent: super::PartsSent<'_>,
) -> Result<(), SendError> {
    if message.parts_sent == 0 {
        telegram_message(http, base, token, chat_id, message).await?;
        parts_sent(1).await;
    }
    telegram_documents(http, base, token, chat_id, message, parts_sent).await
}

/// The text of a Telegram message: `sendMessage`.
async fn telegram_message(
    http: &reqwest::Client,
    base: &str,
    token: &Secret,
    chat_id: &str,
    message: &Outgoing,
) -> Result<(), SendError> {
    let mut body = json!({"chat_id": chat_id, "text": message.content});
    if let Some(reply_to) = &message.reply_to {
        match reply_to.trim().parse::<i64>() {
            Ok(id) => body["reply_parameters"] = json!({"message_id": id}),
            Err(_) => {
                return Err(SendError::Refused {
                    detail: format!(
                        "reply_to {reply_to:?} is not a Telegram message id (a number)"
                    ),
                });
            }
        }
    }
    let url = format!("{base}/bot{}/sendMessage", token.expose());
    let answer = post_json(http, &url, &message.id, &body, telegram_text, telegram_wait).await?;
    // Telegram answers 200 with {"ok": true, ...}; anything else is not a delivery.
    let ok = serde_json::from_str::<Value>(&answer)
        .ok()
        .and_then(|v| v["ok"].as_bool())
        .unwrap_or(false);
    if !ok {
        return Err(SendError::Refused {
            detail: format!(
                "Telegram did not confirm the message: {}",
                clip(&telegram_text(&answer))
            ),
        });
    }
    Ok(())
}

/// The attachments of a Telegram message not delivered yet: `sendDocument` each.
async fn telegram_documents(
    http: &reqwest::Client,
    base: &str,
    token: &Secret,
    chat_id: &str,
    message: &Outgoing,
    parts_sent: super::PartsSent<'_>,
) -> Result<(), SendError> {
    for (i, media) in message.media.iter().enumerate() {
        // Part 1 is the text; attachment i is part i + 2.
        let part_no = u32::try_from(i).unwrap_or(u32::MAX).saturating_add(2);
        if part_no <= message.parts_sent {
            continue;
        }
        let bytes = media.bytes()?;
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(media.name.clone())
            .mime_str(&media.content_type)
            .map_err(|_| SendError::Refused {
                detail: format!(
                    "attachment {} has a bad type {:?}",
                    media.name, media.content_type
                ),
            })?;
        let form = reqwest::multipart::Form::new()
            .text("chat_id", chat_id.to_string())
            .part("document", part);
        let url = format!("{base}/bot{}/sendDocument", token.expose());
        let response = http
            .post(url)
            .header(IDEMPOTENCY_KEY, format!("{}-{}", message.id, i + 1))
            .multipart(form)
            .send()
            .await?;
        outcome(response, telegram_text, telegram_wait).await?;
        parts_sent(part_no).await;
    }
    Ok(())
}

/// `POST url` `{text}` (`thread_ts` for a reply). Slack answers `ok`, or a short
/// error word (`invalid_payload`, `channel_not_found`...).
pub(crate) async fn slack(
    http: &reqwest::Client,
    url: &Secret,
    message: &Outgoing,
) -> Result<(), SendError> {
    let mut body = json!({"text": message.content});
    if let Some(reply_to) = &message.reply_to {
        body["thread_ts"] = json!(reply_to);
    }
    post_plain(http, url, message, &body).await
}

/// Discord's `message`, else the body.
fn discord_text(body: &str) -> String {
    text_at(body, "/message")
}

/// Discord's `retry_after` (seconds, fractional).
fn discord_wait(body: &str) -> Option<Duration> {
    seconds_at(body, "/retry_after")
}

/// `POST url` `{content}`; Discord answers 204.
pub(crate) async fn discord(
    http: &reqwest::Client,
    url: &Secret,
    message: &Outgoing,
) -> Result<(), SendError> {
    let body = json!({"content": message.content});
    post_json(
        http,
        url.expose(),
        &message.id,
        &body,
        discord_text,
        discord_wait,
    )
    .await
    .map(drop)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        assert_eq!(retry_after(&headers("1")), Some(Duration::from_secs(1)));
        assert_eq!(
            retry_after(&headers(" 2.5 ")),
            Some(Duration::from_millis(2_500))
        );
        assert_eq!(
            retry_after(&headers("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO)
        );
        let later = chrono::Utc::now() + chrono::TimeDelta::seconds(30);
        let wait = retry_after(&headers(&later.to_rfc2822())).unwrap();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert_eq!(retry_after(&headers("soon")), None);
        assert_eq!(retry_after(&headers("-3")), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn channel_texts_are_found_in_their_bodies() {
        assert_eq!(
            telegram_text(
                r#"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#
            ),
            "Bad Request: chat not found"
        );
        assert_eq!(
            telegram_wait(r#"{"ok":false,"parameters":{"retry_after":7}}"#),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            discord_text(r#"{"message":"Unknown Webhook","code":10015}"#),
            "Unknown Webhook"
        );
        assert_eq!(
            discord_wait(r#"{"retry_after":0.25,"global":false}"#),
            Some(Duration::from_millis(250))
        );
        assert_eq!(clip(&"x".repeat(600)).chars().count(), MAX_ERROR_CHARS + 1);
    }
}
