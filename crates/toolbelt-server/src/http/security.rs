//! The checks every request passes, as plain functions: the `Host` against DNS
//! rebinding, the `Origin`, the bearer token (compared by digest, in constant
//! time; refused in the query string), the declared body size, and the CORS
//! headers of an allowed origin. The middleware that applies them in order is the
//! `guard` module; the web page's login uses the same token comparison.

use std::net::{IpAddr, SocketAddr};

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// Query parameters that would carry a token in the URL, where it leaks into logs.
const TOKEN_QUERY_NAMES: [&str; 3] = ["access_token", "token", "api_key"];

/// True for a JSON content type (`application/json`, `application/problem+json`).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| v == "application/json" || v.ends_with("+json"))
}

/// The request's `Host` (or, for HTTP/2, its `:authority`) must name this machine
/// by a loopback name or address, or the address the server is bound to. A DNS
/// rebinding page reaches the server under its own host name, which fails here.
pub(crate) fn check_host(bind: SocketAddr, request: &Request) -> Result<(), &'static str> {
    let authority = match request.headers().get(header::HOST) {
        Some(value) => {
            let Ok(text) = value.to_str() else {
                return Err("the Host header is not text");
            };
            text
        }
        None => request
            .uri()
            .authority()
            .map(|a| a.as_str())
            .ok_or("the request has no Host header")?,
    };
    let host = host_of(authority);
    if is_loopback_host(host) {
        return Ok(());
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        // A bare IP address cannot be a rebinding attack (that needs a name the
        // attacker controls); on an unspecified bind any of ours may be used.
        if ip == bind.ip() || bind.ip().is_unspecified() {
            return Ok(());
        }
    }
    Err("the Host header does not name this server; use http://127.0.0.1 or http://localhost")
}

/// A present `Origin` must be a loopback origin, the request's own host, or listed
/// in the allowed origins. Returns the origin to echo in CORS headers.
pub(crate) fn check_origin(
    allowed_origins: &[String],
    headers: &HeaderMap,
) -> Result<Option<HeaderValue>, &'static str> {
    let Some(value) = headers.get(header::ORIGIN) else {
        return Ok(None);
    };
    const REFUSED: &str = "requests from this Origin are not allowed; \
                           start the server with the origin in its allowed origins";
    let Ok(origin) = value.to_str() else {
        return Err(REFUSED);
    };
    let normalized = origin.trim_end_matches('/').to_ascii_lowercase();
    if allowed_origins.contains(&normalized) {
        return Ok(Some(value.clone()));
    }
    let Some((scheme, authority)) = normalized.split_once("://") else {
        return Err(REFUSED);
    };
    if scheme != "http" && scheme != "https" {
        return Err(REFUSED);
    }
    let host = host_of(authority);
    let same_host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| host_of(h).eq_ignore_ascii_case(host));
    if is_loopback_host(host) || same_host {
        Ok(Some(value.clone()))
    } else {
        Err(REFUSED)
    }
}

/// The host part of an authority: `[::1]:8750` gives `::1`, `localhost:80` gives `localhost`.
pub(crate) fn host_of(authority: &str) -> &str {
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(h, _)| h);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

/// `localhost` or a loopback address.
fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The name of a query parameter that looks like it carries a token.
pub(crate) fn token_in_query(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|pair| {
        let name = pair.split_once('=').map_or(pair, |(n, _)| n);
        TOKEN_QUERY_NAMES
            .iter()
            .find(|t| t.eq_ignore_ascii_case(name))
            .copied()
    })
}

/// The token of an `Authorization: Bearer <token>` header.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The SHA-256 digest of a token, the form in which tokens are kept and compared.
pub(crate) fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Compares two digests in time independent of where they differ. Comparing
/// digests rather than the tokens also hides the token's length.
pub(crate) fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a
        .iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// The declared `Content-Length`, when it is a number.
pub(crate) fn content_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The answer to a CORS preflight from an allowed origin.
pub(crate) fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version",
        ),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

/// Echoes an allowed origin (never `*`).
pub(crate) fn with_cors(mut response: Response, origin: Option<&HeaderValue>) -> Response {
    if let Some(origin) = origin {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("mcp-session-id"),
        );
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
    response
}
