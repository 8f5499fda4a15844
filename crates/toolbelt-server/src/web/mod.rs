//! The web page served at `/`: its embedded assets, the login that turns the
//! server's token into a session cookie, logout, and the headers every response
//! carries. The JSON endpoints the page reads are in the `api` module (the agent's
//! runs in `runs`, what they share in `params`), those of the questions agent runs
//! put to the person in the `questions` module.
//!
//! Routes (all behind the Host and Origin checks of [`crate::http`]):
//! - `GET /`: the page with a session (or when the server asks for no token), the
//!   login page without one.
//! - `GET /assets/{file}`: the page's scripts, styles and icon.
//! - `POST /login`: a form with `token` (or `once`, the one-time code of
//!   `toolbelt serve --open`); sets the session cookie and redirects to `/`.
//!   Wrong tokens are counted: past [`MAX_LOGIN_FAILURES`] the server answers 429
//!   until the count drains, one attempt every [`LOGIN_REFILL_SECS`] seconds.
//! - `POST /logout`: ends the session and clears the cookie.
//!
//! # Security
//! The session cookie is `HttpOnly`, `SameSite=Strict` and scoped to the path `/`;
//! it is named after the port, so two servers on one host keep their sessions
//! apart. A request authenticated by the cookie must come from the page itself:
//! `Sec-Fetch-Site`, when sent, is `same-origin` or `none`, and `Origin`, when sent
//! (always for a POST), is the server's own origin — another loopback origin, which
//! is same-site for cookies, is refused.

pub(crate) mod api;
mod params;
pub(crate) mod questions;
mod runs;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolbelt_core::sync::lock;

use crate::conn::Peer;
use crate::error::ApiError;
use crate::http::security::{constant_time_eq, digest};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

/// How long a session lasts after login, in seconds (12 hours).
pub const SESSION_TTL_SECS: u64 = 12 * 60 * 60;
/// Most sessions held at once; a new login past it ends the oldest.
pub const MAX_SESSIONS: usize = 128;
/// Wrong tokens from one client answered at once; past them, each of its wrong
/// tokens is answered (429) only after a delay. The right token is never delayed.
pub const MAX_LOGIN_FAILURES: u32 = 10;
/// After a burst of wrong tokens, a client regains one prompt answer every this
/// many seconds; its wrong tokens wait until then (at most this long).
pub const LOGIN_REFILL_SECS: u64 = 6;
/// Clients whose wrong tokens are remembered at once; past it, those that have
/// recovered their whole burst are forgotten first.
const MAX_LIMITED_CLIENTS: usize = 4096;
/// How long the one-time login code of `toolbelt serve --open` stays valid, in seconds.
pub const LOGIN_CODE_TTL_SECS: u64 = 10 * 60;
/// Random bytes in a session id or a one-time login code.
const SECRET_BYTES: usize = 32;

/// The Content-Security-Policy of every response: only this server's own scripts,
/// styles, images and connections; no inline script or style, no frames, no forms
/// posting elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// An embedded file of the page.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

/// The file `assets/<name>`, embedded, served as `content_type`.
macro_rules! asset {
    ($name:literal, $content_type:literal) => {
        Asset {
            name: $name,
            content_type: $content_type,
            body: include_bytes!(concat!("assets/", $name)),
        }
    };
}

/// Every embedded file.
const ASSETS: [Asset; 5] = [
    asset!("app.js", "text/javascript; charset=utf-8"),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("login.js", "text/javascript; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("index.html", "text/html; charset=utf-8"),
];

const LOGIN_HTML: &str = include_str!("assets/login.html");
/// Where the login page shows why a login failed.
const LOGIN_MESSAGE_MARK: &str = "<!--message-->";

/// The bytes of every embedded file, with their names: what the page adds to the binary.
pub fn embedded_assets() -> Vec<(&'static str, &'static [u8])> {
    let mut all: Vec<(&'static str, &'static [u8])> =
        ASSETS.iter().map(|a| (a.name, a.body)).collect();
    all.push(("login.html", LOGIN_HTML.as_bytes()));
    all
}

/// Sessions, the login limiter and the one-time code, shared by the security layer
/// and the page's routes.
pub(crate) struct Web {
    /// Whether the server asks for a token at all.
    token_required: bool,
    token_digest: Option<[u8; 32]>,
    cookie_name: String,
    sessions: Mutex<HashMap<[u8; 32], Instant>>,
    /// Wrong tokens, per client address.
    limiters: Mutex<HashMap<IpAddr, Limiter>>,
    login_code: Mutex<Option<([u8; 32], Instant)>>,
}

impl Web {
    pub(crate) fn new(token_digest: Option<[u8; 32]>, port: u16, login_code: Option<&str>) -> Web {
        Web {
            token_required: token_digest.is_some(),
            token_digest,
            cookie_name: format!("toolbelt_session_{port}"),
            sessions: Mutex::new(HashMap::new()),
            limiters: Mutex::new(HashMap::new()),
            login_code: Mutex::new(
                login_code
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(|c| (digest(c), Instant::now())),
            ),
        }
    }

    /// True when the request carries the cookie of a live session.
    pub(crate) fn has_session(&self, headers: &HeaderMap) -> bool {
        let Some(id) = cookie(headers, &self.cookie_name) else {
            return false;
        };
        let key = digest(id);
        let now = Instant::now();
        let Ok(mut sessions) = self.sessions.lock() else {
            return false;
        };
        match sessions.get(&key) {
            Some(expires) if *expires > now => true,
            Some(_) => {
                sessions.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Counts a wrong token from `client`; past its burst, how long its answer
    /// waits (then 429).
    pub(crate) fn wrong_token(&self, client: IpAddr) -> Option<Duration> {
        let now = Instant::now();
        let mut limiters = lock(&self.limiters);
        if limiters.len() >= MAX_LIMITED_CLIENTS && !limiters.contains_key(&client) {
            limiters.retain(|_, l| l.locked_for(now).is_some());
            if limiters.len() >= MAX_LIMITED_CLIENTS {
                limiters.clear();
            }
        }
        let limiter = limiters.entry(client).or_insert_with(|| Limiter::new(now));
        let wait = limiter.locked_for(now);
        limiter.fail(now);
        wait
    }

    fn start_session(&self) -> Option<String> {
        let id = random_hex()?;
        let now = Instant::now();
        let mut sessions = self.sessions.lock().ok()?;
        sessions.retain(|_, expires| *expires > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.iter().min_by_key(|(_, e)| **e).map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(digest(&id), now + Duration::from_secs(SESSION_TTL_SECS));
        Some(id)
    }

    fn end_session(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, &self.cookie_name)
            && let Ok(mut sessions) = self.sessions.lock()
        {
            sessions.remove(&digest(id));
        }
    }

    /// Whether `token` is the server's token, or the unused, unexpired one-time code
    /// (which it then uses up).
    fn accepts(&self, token: Option<&str>, once: Option<&str>) -> bool {
        if let (Some(token), Some(expected)) = (token, &self.token_digest) {
            return constant_time_eq(&digest(token.trim()), expected);
        }
        let Some(once) = once else {
            return false;
        };
        let Ok(mut code) = self.login_code.lock() else {
            return false;
        };
        match *code {
            Some((expected, created))
                if created.elapsed() < Duration::from_secs(LOGIN_CODE_TTL_SECS)
                    && constant_time_eq(&digest(once.trim()), &expected) =>
            {
                *code = None;
                true
            }
            _ => false,
        }
    }

    fn session_cookie(&self, id: &str) -> String {
        format!(
            "{}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={SESSION_TTL_SECS}",
            self.cookie_name
        )
    }

    fn cleared_cookie(&self) -> String {
        format!(
            "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
            self.cookie_name
        )
    }
}

/// Whether a request authenticated by the session cookie comes from the page itself
/// (see the module's `# Security`).
pub(crate) fn same_origin_request(method: &Method, headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or_default();
        if site != "same-origin" && site != "none" {
            return false;
        }
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    match headers.get(header::ORIGIN).map(|o| o.to_str()) {
        Some(Ok(origin)) => host.is_some_and(|host| {
            let origin = origin.trim_end_matches('/');
            origin.eq_ignore_ascii_case(&format!("http://{host}"))
                || origin.eq_ignore_ascii_case(&format!("https://{host}"))
        }),
        Some(Err(_)) => false,
        None => matches!(*method, Method::GET | Method::HEAD),
    }
}

/// Paths served without a token or session (the security layer still checks Host
/// and Origin).
pub(crate) fn is_public(path: &str) -> bool {
    matches!(path, "/" | "/login" | "/logout" | "/favicon.ico") || path.starts_with("/assets/")
}

/// The headers every response carries.
pub(crate) fn add_security_headers(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        // Not `no-referrer`: that makes a browser send `Origin: null` with the
        // page's own forms. Nothing leaves this origin either way.
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
}

/// The page's routes.
pub(crate) fn routes(web: Arc<Web>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
        .route("/favicon.ico", get(favicon))
        .route("/login", post(login))
        .route("/logout", post(logout))
        .with_state(web)
}

async fn index(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
    if !web.token_required || web.has_session(&headers) {
        return html(StatusCode::OK, ASSETS[4].body.to_vec());
    }
    login_page(StatusCode::OK, None)
}

async fn asset(UrlPath(file): UrlPath<String>) -> Response {
    match ASSETS
        .iter()
        .find(|a| a.name == file && a.name != "index.html")
    {
        Some(a) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(a.content_type),
            )],
            a.body,
        )
            .into_response(),
        None => ApiError::NotFound("no such file".into()).into_response(),
    }
}

/// What browsers ask for on their own, also on pages that are not ours (a JSON error).
async fn favicon() -> Response {
    asset(UrlPath("icon.svg".to_string())).await
}

fn html(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

fn login_page(status: StatusCode, message: Option<&str>) -> Response {
    let body = match message {
        Some(m) => LOGIN_HTML.replace(
            LOGIN_MESSAGE_MARK,
            &format!(
                "<p class=\"error\" role=\"alert\" id=\"login-error\">{}</p>",
                escape(m)
            ),
        ),
        None => LOGIN_HTML.to_string(),
    };
    html(status, body.into_bytes())
}

/// Counts a wrong token of `peer`'s client and, past its burst, holds the answer
/// back for as long as the client has to wait for another prompt answer: the
/// sender is slowed, and its connection stays free to close for another client.
/// Returns the wait, when there was one. A request with the right token never
/// comes here.
pub(crate) async fn hold_back_wrong_token(web: &Web, peer: Option<&Peer>) -> Option<Duration> {
    let client = peer.map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |p| p.addr.ip());
    let wait = web.wrong_token(client)?;
    let _held = peer.map(|p| p.conn.hold());
    tokio::time::sleep(wait.min(Duration::from_secs(LOGIN_REFILL_SECS))).await;
    Some(wait)
}

/// `POST /login`: a form (`token=...` or `once=...`).
async fn login(
    State(web): State<Arc<Web>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let peer = peer.map(|axum::Extension(peer)| peer);
    if !same_origin_request(&Method::POST, &headers) {
        return ApiError::ForbiddenOrigin("log in from the page this server serves")
            .into_response();
    }
    if !web.token_required {
        return redirect_home(None);
    }
    let mut token = None;
    let mut once = None;
    for (name, value) in url::form_urlencoded::parse(&body) {
        match name.as_ref() {
            "token" if !value.trim().is_empty() => token = Some(value.into_owned()),
            "once" if !value.trim().is_empty() => once = Some(value.into_owned()),
            _ => {}
        }
    }
    if !web.accepts(token.as_deref(), once.as_deref()) {
        tracing::info!(target: "toolbelt::serve", "refused: wrong token at login");
        if let Some(wait) = hold_back_wrong_token(&web, peer.as_ref()).await {
            let secs = wait.as_secs().max(1);
            let mut response = login_page(
                StatusCode::TOO_MANY_REQUESTS,
                Some(&format!(
                    "Too many wrong tokens. Try again in {secs} seconds."
                )),
            );
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return response;
        }
        let message = if once.is_some() && token.is_none() {
            "This login link was used already or has expired. Enter the token instead."
        } else {
            "That token is wrong. Use the one `toolbelt serve` printed."
        };
        return login_page(StatusCode::UNAUTHORIZED, Some(message));
    }
    match web.start_session() {
        Some(id) => redirect_home(Some(web.session_cookie(&id))),
        None => ApiError::Internal("no session could be started (no randomness)").into_response(),
    }
}

/// `POST /logout`.
async fn logout(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
    if !same_origin_request(&Method::POST, &headers) {
        return ApiError::ForbiddenOrigin("log out from the page this server serves")
            .into_response();
    }
    web.end_session(&headers);
    redirect_home(Some(web.cleared_cookie()))
}

fn redirect_home(cookie: Option<String>) -> Response {
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    if let Some(value) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The value of the cookie `name`.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (n, v) = pair.trim().split_once('=')?;
            (n == name && !v.is_empty()).then_some(v)
        })
}

/// [`SECRET_BYTES`] random bytes as hex; `None` without a randomness source.
fn random_hex() -> Option<String> {
    crate::random_hex(SECRET_BYTES).ok()
}

/// A new one-time login code for `toolbelt serve --open` (put it in
/// [`crate::ServeConfig::login_code`] and the URL from [`login_url`]).
///
/// # Errors
/// The system has no randomness source.
pub fn new_login_code() -> std::io::Result<String> {
    random_hex().ok_or_else(|| std::io::Error::other("no randomness for the login code"))
}

/// The URL that logs a browser in with the one-time `code`: the code travels in the
/// fragment, which browsers never send to a server nor put in a `Referer`.
pub fn login_url(addr: std::net::SocketAddr, code: &str) -> String {
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    format!("http://{host}:{}/#once={code}", addr.port())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Failed logins as a token bucket: [`MAX_LOGIN_FAILURES`] in a burst, then one
/// every [`LOGIN_REFILL_SECS`].
struct Limiter {
    /// Failures still allowed, in thousandths (refilled continuously).
    allowance_milli: u64,
    at: Instant,
}

impl Limiter {
    fn new(now: Instant) -> Limiter {
        Limiter {
            allowance_milli: u64::from(MAX_LOGIN_FAILURES) * 1000,
            at: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed_ms =
            u64::try_from(now.saturating_duration_since(self.at).as_millis()).unwrap_or(u64::MAX);
        // Thousandths of an attempt regained: one attempt per LOGIN_REFILL_SECS.
        let gained = elapsed_ms / LOGIN_REFILL_SECS;
        let full = u64::from(MAX_LOGIN_FAILURES) * 1000;
        self.allowance_milli = self.allowance_milli.saturating_add(gained).min(full);
        if self.allowance_milli == full {
            self.at = now;
        } else {
            // Keep the remainder that did not make a whole thousandth yet.
            self.at += Duration::from_millis(gained.saturating_mul(LOGIN_REFILL_SECS));
        }
    }

    fn locked_for(&mut self, now: Instant) -> Option<Duration> {
        self.refill(now);
        if self.allowance_milli >= 1000 {
            return None;
        }
        let missing = 1000 - self.allowance_milli;
        Some(Duration::from_millis(missing * LOGIN_REFILL_SECS))
    }

    fn fail(&mut self, now: Instant) {
        self.refill(now);
        self.allowance_milli = self.allowance_milli.saturating_sub(1000);
    }
}

#[cfg(test)]
#[path = "../web_tests.rs"]
mod tests;
