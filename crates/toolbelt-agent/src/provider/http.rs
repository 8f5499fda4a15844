//! HTTP plumbing shared by the providers: one client per provider, the retry loop,
//! error bodies and server-sent events.
//!
//! A wire format contributes only what differs: the request body, and a [`Decoder`]
//! that turns the answer's events (or a plain JSON answer) into a [`ModelResponse`]
//! ([`Wire`]); those, and the provider's words in an error, are in `decode`.
//! Everything else lives here, so a third provider is one file:
//!
//! - [`Http::new`] builds the client (rustls with the `ring` provider and the
//!   webpki roots, like the rest of the workspace), the endpoint URL and the headers,
//!   the API key marked sensitive;
//! - [`Http::run`] sends the request, retries 429, 5xx, dropped connections and
//!   streams that broke off before their end ([`RetryPolicy`]: exponential backoff
//!   with jitter, `Retry-After` / `retry-after-ms` honoured up to `max_delay`) but
//!   not a server's word that it could not read the model's tool call
//!   ([`ProviderError::MalformedCall`], at once), reads
//!   the answer with an idle timeout between chunks, and drops everything at once
//!   when the call is cancelled.
//!
//! # Security
//! The key travels only in a header marked sensitive. It is never logged, and every
//! message that leaves this module has it replaced by `***` should a server echo it.
//! URLs in errors carry neither user info nor a query.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use reqwest::Url;
use reqwest::header::{
    CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, InvalidHeaderValue, USER_AGENT,
};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;
use toolbelt_core::sync::lock;

use super::decode::{
    Decoder, Failure, Flow, MAX_ERROR_MESSAGE_CHARS, Wire, clip, error_event, error_message,
    is_malformed_call_message,
};
use super::{
    ModelResponse, ProviderConfig, ProviderError, ProviderKind, RetryPolicy, Secret, StreamEvent,
    StreamSink,
};

/// The most bytes of an error body read.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The most bytes of a plain (non-streamed) JSON answer.
const MAX_JSON_BODY_BYTES: usize = 64 * 1024 * 1024;
/// The user agent sent.
const USER_AGENT_VALUE: &str = concat!("toolbelt/", env!("CARGO_PKG_VERSION"));

/// Fills `headers` (the key, when there is one, the user agent, the content type)
/// and builds the client.
///
/// # Security
/// The key goes only into that header.
fn setup(
    config: &ProviderConfig,
    headers: &mut HeaderMap,
    auth_header: HeaderName,
    auth_prefix: &str,
) -> Result<reqwest::Client, SetupError> {
    if let Some(key) = &config.api_key {
        let mut value = HeaderValue::from_str(&format!("{auth_prefix}{}", key.expose()))?;
        value.set_sensitive(true);
        headers.insert(auth_header, value);
    }
    headers.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));

    let tls = toolbelt_net::tls::client_config(&[], toolbelt_net::tls::ALPN_H2_HTTP1)?;
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(config.connect_timeout)
        .build()?)
}

/// Why [`setup`] failed, before it is said of which provider
/// ([`SetupError::for_provider`]).
#[derive(Debug)]
enum SetupError {
    /// The key holds characters a header cannot carry. Its cause is left out: it
    /// says no more than that, and it is the key that is wrong.
    Key,
    /// The TLS configuration cannot be built.
    Tls(toolbelt_net::tls::TlsError),
    /// The client cannot be built.
    Client(reqwest::Error),
}

impl From<InvalidHeaderValue> for SetupError {
    fn from(_: InvalidHeaderValue) -> SetupError {
        SetupError::Key
    }
}

impl From<toolbelt_net::tls::TlsError> for SetupError {
    fn from(e: toolbelt_net::tls::TlsError) -> SetupError {
        SetupError::Tls(e)
    }
}

impl From<reqwest::Error> for SetupError {
    fn from(e: reqwest::Error) -> SetupError {
        SetupError::Client(e)
    }
}

impl SetupError {
    /// The configuration error of provider `kind`.
    fn for_provider(self, kind: ProviderKind) -> ProviderError {
        match self {
            SetupError::Key => ProviderError::Config(format!(
                "the {kind} API key contains characters an HTTP header cannot carry"
            )),
            SetupError::Tls(e) => e.into(),
            SetupError::Client(source) => ProviderError::Client {
                provider: kind,
                source,
            },
        }
    }
}

/// Parses and checks a configured base URL: `http` or `https`, with a host. A
/// trailing slash is dropped.
///
/// # Errors
/// [`ProviderError::BaseUrl`] or [`ProviderError::Config`], naming the URL without
/// its user info or query.
pub(crate) fn parse_base_url(kind: ProviderKind, base_url: &str) -> Result<Url, ProviderError> {
    let trimmed = base_url.trim();
    let url = Url::parse(trimmed).map_err(|source| ProviderError::BaseUrl {
        provider: kind,
        url: clip(&redact_url_text(trimmed), 200),
        source,
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(ProviderError::Config(format!(
            "{kind} base URL {} must be an http:// or https:// URL with a host",
            display_url(&url)
        )));
    }
    Ok(url)
}

/// `base` with `path` appended (`base`'s trailing slash dropped first), query and
/// fragment kept off.
pub(crate) fn join_url(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}{path}", base.path().trim_end_matches('/'));
    url.set_path(&joined);
    url.set_fragment(None);
    url
}

/// `url` as errors and logs show it: no user info, no query, no fragment.
pub(crate) fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// A URL that did not parse, without what looks like user info or a query.
fn redact_url_text(text: &str) -> String {
    let text = text.split(['?', '#']).next().unwrap_or_default();
    match (text.find("://"), text.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}***@{}", &text[..scheme_end + 3], &text[at + 1..])
        }
        _ => text.to_string(),
    }
}

/// One provider's HTTP side: the client, the endpoint, the headers, the policy.
#[derive(Debug)]
pub(crate) struct Http {
    kind: ProviderKind,
    client: reqwest::Client,
    url: Url,
    shown_url: String,
    headers: HeaderMap,
    secret: Option<Secret>,
    retry: RetryPolicy,
    idle_timeout: Duration,
    first_byte_timeout: Duration,
    /// The server is on this machine or the local network: a first byte that does
    /// not come is not a reason to send the prompt again (the server is most likely
    /// still reading it, and a new request would start over).
    local: bool,
    /// The tools of the last request and their JSON: a run sends the same tools
    /// with every call, so they are serialized once.
    tools: std::sync::Mutex<Option<(Arc<Value>, Arc<RawValue>)>>,
}

impl Http {
    /// A client for `url`, sending `headers` plus, when `config` has a key,
    /// `auth_header: auth_prefix + key` (marked sensitive).
    ///
    /// # Errors
    /// [`ProviderError::Config`] when the key cannot be a header value;
    /// [`ProviderError::Tls`] or [`ProviderError::Client`] when TLS or the client
    /// cannot be set up.
    ///
    /// # Security
    /// The key goes only into that header; no message names it.
    pub(crate) fn new(
        config: &ProviderConfig,
        url: Url,
        mut headers: HeaderMap,
        auth_header: HeaderName,
        auth_prefix: &str,
    ) -> Result<Http, ProviderError> {
        let kind = config.kind;
        let client = setup(config, &mut headers, auth_header, auth_prefix)
            .map_err(|e| e.for_provider(kind))?;
        Ok(Http {
            kind,
            client,
            shown_url: display_url(&url),
            url,
            headers,
            secret: config.api_key.clone(),
            retry: config.retry.clone(),
            idle_timeout: config.idle_timeout,
            first_byte_timeout: config.first_byte_timeout,
            local: config.is_local(),
            tools: std::sync::Mutex::new(None),
        })
    }

    /// `tools` as JSON, serialized once per tool list (the same `Arc` again is
    /// served from the last time).
    ///
    /// # Errors
    /// [`ProviderError::Encode`] when the tools cannot be encoded.
    pub(crate) fn serialized_tools(
        &self,
        tools: Option<&Arc<Value>>,
    ) -> Result<Option<Arc<RawValue>>, ProviderError> {
        let Some(tools) = tools else {
            return Ok(None);
        };
        let mut last = lock(&self.tools);
        if let Some((seen, raw)) = last.as_ref()
            && Arc::ptr_eq(seen, tools)
        {
            return Ok(Some(Arc::clone(raw)));
        }
        let raw: Arc<RawValue> = serde_json::value::to_raw_value(&**tools)
            .map_err(|source| ProviderError::Encode {
                what: "tools",
                source,
            })?
            .into();
        *last = Some((Arc::clone(tools), Arc::clone(&raw)));
        Ok(Some(raw))
    }

    /// Sends `body` (as JSON) until an answer comes, the retries run out, or
    /// `cancel` fires, and decodes the answer with `wire`.
    ///
    /// # Errors
    /// [`ProviderError`] after the retries; [`ProviderError::Cancelled`] at once
    /// when `cancel` fires (also during a backoff wait).
    pub(crate) async fn run<W: Wire>(
        &self,
        wire: &W,
        body: &impl serde::Serialize,
        sink: StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ProviderError> {
        let body = serde_json::to_vec(body).map_err(|source| ProviderError::Encode {
            what: "request",
            source,
        })?;
        let max_attempts = self.retry.max_attempts.max(1);
        let mut attempt: u32 = 1;
        loop {
            if cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            tracing::debug!(provider = %self.kind, url = %self.shown_url, attempt, "model request");
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                outcome = self.attempt(wire, &body, sink) => outcome,
            };
            let failure = match outcome {
                Ok(response) => return Ok(response),
                Err(failure) => self.redact_failure(failure),
            };
            if let Failure::Status {
                status, message, ..
            } = &failure
                && is_malformed_call_message(message)
            {
                return Err(ProviderError::MalformedCall {
                    provider: self.kind,
                    status: *status,
                    message: message.clone(),
                });
            }
            let retryable = match failure {
                Failure::NoFirstByte(_) => !self.local,
                _ => failure.retryable(),
            };
            if !retryable || attempt >= max_attempts {
                return Err(self.error(failure, attempt));
            }
            let wait = match &failure {
                Failure::Status {
                    retry_after: Some(asked),
                    status,
                    message,
                    ..
                } => {
                    if *asked > self.retry.max_retry_after {
                        return Err(ProviderError::Status {
                            provider: self.kind,
                            status: *status,
                            message: format!(
                                "{message} (the provider asked to wait {} before trying \
                                 again, longer than the {} this client waits)",
                                human(*asked),
                                human(self.retry.max_retry_after),
                            ),
                            attempts: attempt,
                        });
                    }
                    *asked
                }
                _ => backoff(&self.retry, attempt),
            };
            let reason = failure.reason();
            let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
            tracing::warn!(
                provider = %self.kind,
                attempt = attempt + 1,
                wait_ms,
                reason = %reason,
                "retrying model request"
            );
            sink(StreamEvent::Retrying {
                attempt: attempt + 1,
                wait_ms,
                reason,
            });
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
            attempt += 1;
        }
    }

    /// One attempt: send, check the status, read the answer.
    async fn attempt<W: Wire>(
        &self,
        wire: &W,
        body: &[u8],
        sink: StreamSink<'_>,
    ) -> Result<ModelResponse, Failure> {
        let send = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body.to_vec())
            .send();
        let first_byte = FirstByte::new(self.first_byte_timeout);
        let response = match first_byte.wait(send, sink).await {
            None => return Err(first_byte.failure()),
            Some(Err(e)) => return Err(Failure::Connection(describe(e))),
            Some(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = retry_after(response.headers());
            let should_retry = response
                .headers()
                .get("x-should-retry")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| match v.trim() {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ => None,
                });
            let (bytes, _) = self.read_capped(response, MAX_ERROR_BODY_BYTES).await;
            return Err(Failure::Status {
                status,
                message: error_message(&String::from_utf8_lossy(&bytes)),
                retry_after,
                should_retry,
            });
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.contains("json") && !content_type.contains("event-stream") {
            return self.read_json(wire, response, sink).await;
        }
        self.read_events(wire, response, sink, &first_byte).await
    }

    /// Reads a server-sent event stream: the first event within the first-byte
    /// timeout (a server may send its headers at once and the answer only once it
    /// has read the prompt), each later one within the idle timeout.
    async fn read_events<W: Wire>(
        &self,
        wire: &W,
        response: reqwest::Response,
        sink: StreamSink<'_>,
        first_byte: &FirstByte,
    ) -> Result<ModelResponse, Failure> {
        let mut decoder = wire.decoder();
        let mut events = response.bytes_stream().eventsource();
        let mut first = true;
        loop {
            let next = if first {
                first = false;
                first_byte
                    .wait(events.next(), sink)
                    .await
                    .ok_or_else(|| first_byte.failure())?
            } else {
                tokio::time::timeout(self.idle_timeout, events.next())
                    .await
                    .map_err(|_| {
                        Failure::Incomplete(format!(
                            "nothing arrived for {}",
                            human(self.idle_timeout)
                        ))
                    })?
            };
            match next {
                None => return decoder.finish(),
                Some(Err(EventStreamError::Transport(e))) => {
                    return Err(Failure::Incomplete(describe(e)));
                }
                Some(Err(e)) => return Err(Failure::Malformed(format!("bad event stream: {e}"))),
                Some(Ok(event)) => {
                    if decoder.event(&event.event, &event.data, sink)? == Flow::Done {
                        return decoder.finish();
                    }
                }
            }
        }
    }

    /// Reads a plain JSON answer.
    async fn read_json<W: Wire>(
        &self,
        wire: &W,
        response: reqwest::Response,
        sink: StreamSink<'_>,
    ) -> Result<ModelResponse, Failure> {
        let (bytes, error) = self.read_capped(response, MAX_JSON_BODY_BYTES).await;
        if let Some(error) = error {
            return Err(error);
        }
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            let text = String::from_utf8_lossy(&bytes);
            Failure::not_json("the answer", text.trim(), MAX_ERROR_MESSAGE_CHARS, e)
        })?;
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            return Err(error_event(error, 500));
        }
        wire.parse_json(&value, sink)
    }

    /// Up to `limit` bytes of a body, each chunk within the idle timeout, and the
    /// failure that stopped reading early, if one did.
    async fn read_capped(
        &self,
        response: reqwest::Response,
        limit: usize,
    ) -> (Vec<u8>, Option<Failure>) {
        let mut bytes = Vec::new();
        let mut stream = response.bytes_stream();
        loop {
            match tokio::time::timeout(self.idle_timeout, stream.next()).await {
                Err(_) => {
                    let idle = human(self.idle_timeout);
                    return (
                        bytes,
                        Some(Failure::Incomplete(format!("nothing arrived for {idle}"))),
                    );
                }
                Ok(None) => return (bytes, None),
                Ok(Some(Err(e))) => return (bytes, Some(Failure::Incomplete(describe(e)))),
                Ok(Some(Ok(chunk))) => {
                    let room = limit.saturating_sub(bytes.len());
                    bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if bytes.len() >= limit {
                        return (
                            bytes,
                            Some(Failure::Malformed(format!(
                                "the answer is longer than {limit} bytes"
                            ))),
                        );
                    }
                }
            }
        }
    }

    /// `failure` with the key, should a server have echoed it, replaced by `***`.
    fn redact_failure(&self, failure: Failure) -> Failure {
        let Some(secret) = &self.secret else {
            return failure;
        };
        let key = secret.expose();
        if key.is_empty() {
            return failure;
        }
        let redact = |m: String| m.replace(key, "***");
        match failure {
            Failure::Status {
                status,
                message,
                retry_after,
                should_retry,
            } => Failure::Status {
                status,
                message: redact(message),
                retry_after,
                should_retry,
            },
            Failure::Connection(m) => Failure::Connection(redact(m)),
            Failure::Incomplete(m) => Failure::Incomplete(redact(m)),
            Failure::NoFirstByte(m) => Failure::NoFirstByte(redact(m)),
            Failure::Malformed(m) => Failure::Malformed(redact(m)),
            Failure::NotJson { message, source } => Failure::NotJson {
                message: redact(message),
                source,
            },
        }
    }

    /// The error `failure` becomes after `attempts` attempts.
    fn error(&self, failure: Failure, attempts: u32) -> ProviderError {
        let provider = self.kind;
        match failure {
            Failure::Status {
                status, message, ..
            } => ProviderError::Status {
                provider,
                status,
                message,
                attempts,
            },
            Failure::Connection(message) => ProviderError::Connection {
                provider,
                url: self.shown_url.clone(),
                message,
                attempts,
            },
            Failure::Incomplete(message) => ProviderError::Stream {
                provider,
                message: format!("the stream ended before the answer did: {message}"),
                attempts,
                source: None,
            },
            Failure::NoFirstByte(message) => ProviderError::Connection {
                provider,
                url: self.shown_url.clone(),
                message,
                attempts,
            },
            Failure::Malformed(message) => ProviderError::Stream {
                provider,
                message,
                attempts,
                source: None,
            },
            Failure::NotJson { message, source } => ProviderError::Stream {
                provider,
                message,
                attempts,
                source: Some(source.0),
            },
        }
    }
}

/// How often [`StreamEvent::Waiting`] is sent while the first byte is awaited.
const WAITING_EVERY: Duration = Duration::from_secs(5);

/// The wait for an answer's first bytes: one deadline for the response's headers
/// and its first event, with [`StreamEvent::Waiting`] every [`WAITING_EVERY`].
struct FirstByte {
    sent: tokio::time::Instant,
    limit: Duration,
}

impl FirstByte {
    fn new(limit: Duration) -> FirstByte {
        FirstByte {
            sent: tokio::time::Instant::now(),
            limit,
        }
    }

    /// `future`'s output, or `None` when the deadline passed first.
    async fn wait<F: std::future::Future>(
        &self,
        future: F,
        sink: StreamSink<'_>,
    ) -> Option<F::Output> {
        let deadline = self.sent + self.limit;
        let mut ticks = tokio::time::interval_at(self.sent + WAITING_EVERY, WAITING_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        tokio::pin!(future);
        loop {
            tokio::select! {
                biased;
                output = &mut future => return Some(output),
                () = tokio::time::sleep_until(deadline) => return None,
                _ = ticks.tick() => sink(StreamEvent::Waiting {
                    elapsed_ms: u64::try_from(self.sent.elapsed().as_millis()).unwrap_or(u64::MAX),
                }),
            }
        }
    }

    fn failure(&self) -> Failure {
        Failure::NoFirstByte(format!(
            "no answer within {} (the first-byte timeout; a local server reading a long prompt may need more: raise it with --first-byte-timeout)",
            human(self.limit)
        ))
    }
}

/// The wait before attempt `attempt + 1`: `initial_delay` doubled per attempt,
/// capped at `max_delay`, less up to a quarter at random (so clients that failed
/// together do not come back together).
fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let base = policy.backoff(attempt);
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    // A fraction in [0, 1) from the top 53 bits.
    #[allow(clippy::cast_precision_loss)]
    let unit = (random >> 11) as f64 / (1u64 << 53) as f64;
    base.mul_f64(1.0 - 0.25 * unit)
}

/// A wait as people read it: `120 s`, `1.5 s`, `50 ms`.
fn human(wait: Duration) -> String {
    if wait < Duration::from_secs(1) {
        format!("{} ms", wait.as_millis())
    } else {
        format!("{} s", (wait.as_secs_f64() * 10.0).round() / 10.0)
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), or `Retry-After`
/// (seconds, or an HTTP date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    text("retry-after-ms")
        .and_then(toolbelt_core::retry_after_ms)
        .or_else(|| {
            text("retry-after")
                .and_then(|v| toolbelt_core::retry_after(v, std::time::SystemTime::now()))
        })
}

/// A reqwest error without its URL, with its causes, as text: the key is replaced
/// in it before it leaves ([`Http::redact_failure`]).
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A request body: its fields, and the tools, serialized where they are rather than
/// copied into the body (they are the largest part of every request).
#[derive(Debug, serde::Serialize)]
pub(crate) struct RequestBody<'a> {
    /// Every field but `tools` (a JSON object).
    #[serde(flatten)]
    pub(crate) fields: Value,
    /// The tools, already in the provider's format and serialized
    /// ([`Http::serialized_tools`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        let later = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc2822();
        h.insert("retry-after", HeaderValue::from_str(&later).unwrap());
        let wait = retry_after(&h).unwrap();
        assert!(wait > Duration::from_secs(25) && wait <= Duration::from_secs(30));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn the_tools_are_serialized_once_per_list() {
        let config = ProviderConfig::new(ProviderKind::OpenAi, "m");
        let url = Url::parse("http://127.0.0.1:9/v1/chat/completions").unwrap();
        let http = Http::new(&config, url, HeaderMap::new(), USER_AGENT, "").unwrap();
        assert!(http.serialized_tools(None).unwrap().is_none());
        let tools = Arc::new(serde_json::json!([{"name": "a", "description": "\"quoted\""}]));
        let first = http.serialized_tools(Some(&tools)).unwrap().unwrap();
        assert_eq!(first.get(), r#"[{"description":"\"quoted\"","name":"a"}]"#);
        let again = http.serialized_tools(Some(&tools)).unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other = Arc::new(serde_json::json!([]));
        assert_eq!(
            http.serialized_tools(Some(&other)).unwrap().unwrap().get(),
            "[]"
        );
    }

    #[test]
    fn backoff_doubles_within_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 9,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        for (attempt, full) in [(1, 100), (2, 200), (3, 350), (8, 350)] {
            let wait = backoff(&policy, attempt);
            let full = Duration::from_millis(full);
            assert!(
                wait <= full && wait >= full.mul_f64(0.75),
                "{attempt}: {wait:?}"
            );
        }
    }

    #[test]
    fn base_urls_are_checked_and_joined() {
        let url = parse_base_url(ProviderKind::OpenAi, "http://127.0.0.1:8080/v1/").unwrap();
        assert_eq!(
            join_url(&url, "/chat/completions").as_str(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        for bad in [
            "ftp://x/v1",
            "not a url",
            "file:///etc/passwd",
            "unix:/tmp/s",
        ] {
            assert!(matches!(
                parse_base_url(ProviderKind::OpenAi, bad),
                Err(ProviderError::Config(_) | ProviderError::BaseUrl { .. })
            ));
        }
        let err = parse_base_url(ProviderKind::OpenAi, "ftp://user:hunter2@x/?key=k1").unwrap_err();
        let text = err.to_string();
        assert!(!text.contains("hunter2") && !text.contains("k1"), "{text}");
        let err = parse_base_url(ProviderKind::OpenAi, "http://user:hunter2@[::1/?key=k1")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("hunter2") && !err.contains("k1"), "{err}");
    }
}
