//! An `http` hook: the hook's JSON POSTed to a URL (this machine's loopback
//! unless the hook allows more), the answer read from the response's body as a
//! command hook's standard output is.

use std::net::IpAddr;
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::Url;

use crate::config::ConfigError;
use crate::ended::{Ended, HttpFailed, MAX_HOOK_OUTPUT_BYTES};

/// The URL of hook `name`'s `http`, checked: http or https, and a loopback host
/// (`localhost`, `127.0.0.0/8`, `::1`) unless `allow_remote`.
pub(crate) fn checked_url(name: &str, text: &str, allow_remote: bool) -> Result<Url, ConfigError> {
    let bad = |why| ConfigError::Http {
        name: name.to_string(),
        url: text.to_string(),
        why,
    };
    let url = Url::parse(text).map_err(|_| bad("is not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("is not an http or https URL"));
    }
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => return Err(bad("has no host")),
    };
    if !loopback && !allow_remote {
        return Err(bad(
            "is not on this machine's loopback; set allow_remote = true to send calls there",
        ));
    }
    Ok(url)
}

/// The client every `http` hook shares (made on first use).
fn client() -> Result<&'static reqwest::Client, HttpFailed> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client);
    }
    let tls = toolbelt_net::tls::client_config(&[], toolbelt_net::tls::ALPN_H2_HTTP1)
        .map_err(|e| HttpFailed::Client(Box::new(e)))?;
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(HttpFailed::Send)?;
    Ok(CLIENT.get_or_init(|| client))
}

/// POSTs `payload` to `url` within `timeout_ms`: a 2xx answer's body (at most
/// [`MAX_HOOK_OUTPUT_BYTES`]) is read as exit 0 with it on standard output.
pub(crate) async fn post(url: &Url, payload: Vec<u8>, timeout_ms: u64) -> Ended {
    let client = match client() {
        Ok(c) => c,
        Err(failed) => return Ended::Http(failed),
    };
    let send = async {
        let mut response = client
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(payload)
            .send()
            .await?;
        let status = response.status();
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_HOOK_OUTPUT_BYTES {
                cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok::<_, reqwest::Error>((status, body, cut))
    };
    match tokio::time::timeout(Duration::from_millis(timeout_ms), send).await {
        Err(_) => Ended::Timeout(timeout_ms),
        Ok(Err(e)) => Ended::Http(HttpFailed::Send(e)),
        Ok(Ok((status, body, cut))) if status.is_success() => Ended::Exit {
            code: 0,
            stdout: String::from_utf8_lossy(&body).into_owned(),
            stderr: String::new(),
            cut,
        },
        Ok(Ok((status, ..))) => Ended::Http(HttpFailed::Status(status)),
    }
}
