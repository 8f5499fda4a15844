//! The web page: login and sessions, the checks in front of the page and its
//! assets, the headers, the embedded assets themselves, and the endpoints the page
//! reads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::{Registry, Session};
use toolbelt_store::{CallLogWriter, Location, StoreHandle};

use super::*;
use crate::http::{ServeConfig, router};
use crate::test_support::TEST_TIMEOUT;
use tower::ServiceExt;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const BIND: &str = "127.0.0.1:8750";
const ORIGIN: &str = "http://127.0.0.1:8750";
const COOKIE: &str = "toolbelt_session_8750";

/// A registry whose tools share `store`, logging calls to it when a runtime is
/// running.
fn registry(dir: &tempfile::TempDir, store: &StoreHandle) -> (Arc<Registry>, CallLogWriter) {
    let session = Session::new(dir.path()).with_state_dir(dir.path().join(".toolbelt"));
    let mut registry = Registry::new(session);
    toolbelt_tools::register_builtins_with(
        &mut registry,
        toolbelt_tools::BuiltinOptions {
            store: Some(store.clone()),
            ..toolbelt_tools::BuiltinOptions::default()
        },
    )
    .expect("builtins register");
    let writer = CallLogWriter::start(store.clone(), dir.path().display().to_string());
    registry.set_call_log(Some(Arc::new(writer.clone())));
    (Arc::new(registry), writer)
}

struct App {
    router: axum::Router,
    writer: CallLogWriter,
    _dir: tempfile::TempDir,
}

fn app_with(config: impl FnOnce(&mut ServeConfig)) -> App {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreHandle::lazy(Location::in_state_dir(&dir.path().join(".toolbelt")));
    let (registry, writer) = registry(&dir, &store);
    let mut serve = ServeConfig::new(BIND.parse().expect("address"), TOKEN);
    serve.store = Some(store);
    config(&mut serve);
    App {
        router: router(registry, &serve),
        writer,
        _dir: dir,
    }
}

fn app() -> App {
    app_with(|_| {})
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("JSON body")
    }
}

async fn send(app: &App, request: Request<Body>) -> Answer {
    let (status, headers, bytes) = crate::test_support::respond(app.router.clone(), request).await;
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

fn page_get(uri: &str) -> axum::http::request::Builder {
    Request::get(uri).header(header::HOST, BIND)
}

fn login_request(form: &str) -> Request<Body> {
    Request::post("/login")
        .header(header::HOST, BIND)
        .header(header::ORIGIN, ORIGIN)
        .header("sec-fetch-site", "same-origin")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(form.to_string()))
        .expect("request")
}

/// Logs in with the token; returns the `Cookie` header to send.
async fn log_in(app: &App) -> String {
    let answer = send(app, login_request(&format!("token={TOKEN}"))).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert_eq!(answer.headers[header::LOCATION], "/");
    let set = answer.headers[header::SET_COOKIE].to_str().expect("text");
    set.split(';').next().expect("pair").to_string()
}

fn with_cookie(builder: axum::http::request::Builder, cookie: &str) -> Request<Body> {
    builder
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .expect("request")
}

fn assert_security_headers(headers: &HeaderMap, what: &str) {
    assert_eq!(
        headers[header::CONTENT_SECURITY_POLICY],
        CONTENT_SECURITY_POLICY,
        "{what}"
    );
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{what}");
    assert_eq!(headers[header::REFERRER_POLICY], "same-origin", "{what}");
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY", "{what}");
}

// ---------------------------------------------------------------- the page and login

#[tokio::test]
async fn root_without_a_session_is_the_login_page_not_a_json_401() {
    let app = app();
    let answer = send(&app, page_get("/").body(Body::empty()).expect("request")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.headers[header::CONTENT_TYPE],
        "text/html; charset=utf-8"
    );
    assert!(
        answer
            .body
            .contains("<form method=\"post\" action=\"/login\"")
    );
    assert!(answer.body.contains("name=\"token\""));
    assert!(!answer.body.contains("id=\"panel-tools\""));
    assert_security_headers(&answer.headers, "/");
}

#[tokio::test]
async fn login_sets_an_httponly_samesite_strict_cookie_that_opens_the_page_and_the_api() {
    let app = app();
    let answer = send(&app, login_request(&format!("token={TOKEN}"))).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let set = answer.headers[header::SET_COOKIE].to_str().expect("text");
    let parts: Vec<&str> = set.split("; ").collect();
    assert!(parts[0].starts_with(&format!("{COOKIE}=")), "{set}");
    assert_eq!(parts[0].len(), COOKIE.len() + 1 + 64, "a 256-bit id: {set}");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(parts.contains(&attribute), "{attribute} in {set}");
    }
    assert!(!set.contains(TOKEN), "the cookie is not the token");
    let cookie = parts[0].to_string();

    let page = send(&app, with_cookie(page_get("/"), &cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("id=\"panel-tools\""));

    let tools = send(&app, with_cookie(page_get("/v1/tools"), &cookie)).await;
    assert_eq!(tools.status, StatusCode::OK);
    assert!(tools.json()["tools"].as_array().expect("tools").len() > 10);

    // A call from the page: POST with its own Origin.
    let call = Request::post("/v1/tools/think")
        .header(header::HOST, BIND)
        .header(header::ORIGIN, ORIGIN)
        .header(header::COOKIE, &cookie)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"thought": "from the page"}"#))
        .expect("request");
    let answer = send(&app, call).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.json()["status"], "success");

    // The bearer header keeps working beside the cookie.
    let bearer = page_get("/v1/tools")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(&app, bearer).await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_cookie_is_refused_from_another_loopback_origin_or_site() {
    let app = app();
    let cookie = log_in(&app).await;
    // Another port on localhost is same-site for cookies, not same-origin.
    let other_port = Request::post("/v1/tools/think")
        .header(header::HOST, BIND)
        .header(header::ORIGIN, "http://127.0.0.1:3000")
        .header(header::COOKIE, &cookie)
        .body(Body::from("{}"))
        .expect("request");
    assert_eq!(
        send(&app, other_port).await.status,
        StatusCode::UNAUTHORIZED
    );
    let no_origin_post = Request::post("/v1/tools/think")
        .header(header::HOST, BIND)
        .header(header::COOKIE, &cookie)
        .body(Body::from("{}"))
        .expect("request");
    assert_eq!(
        send(&app, no_origin_post).await.status,
        StatusCode::UNAUTHORIZED
    );
    let same_site = page_get("/v1/tools")
        .header("sec-fetch-site", "same-site")
        .header(header::COOKIE, &cookie)
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(&app, same_site).await.status, StatusCode::UNAUTHORIZED);
    let forged = with_cookie(
        page_get("/v1/tools"),
        &format!("{COOKIE}={}", "0".repeat(64)),
    );
    assert_eq!(send(&app, forged).await.status, StatusCode::UNAUTHORIZED);
}

// Paused time: the held-back answers take no real time.
#[tokio::test(start_paused = true)]
async fn a_wrong_token_is_refused_and_then_rate_limited() {
    let app = app();
    for attempt in 0..MAX_LOGIN_FAILURES {
        let answer = send(&app, login_request("token=wrong")).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "attempt {attempt}");
        assert!(answer.headers.get(header::SET_COOKIE).is_none());
        assert!(
            answer.body.contains("That token is wrong"),
            "{}",
            answer.body
        );
    }
    let started = tokio::time::Instant::now();
    let answer = send(&app, login_request("token=wrong")).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    // Held back until the client may try again.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let retry: u64 = answer.headers[header::RETRY_AFTER]
        .to_str()
        .expect("text")
        .parse()
        .expect("seconds");
    assert!((1..=LOGIN_REFILL_SECS).contains(&retry), "{retry}");
    assert!(answer.body.contains("Too many wrong tokens"));
    // The right token is never refused, nor held back: wrong ones cannot lock the
    // owner out.
    let started = tokio::time::Instant::now();
    let answer = send(&app, login_request(&format!("token={TOKEN}"))).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let bearer = page_get("/v1/tools")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .expect("request");
    let answer = send(&app, bearer).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(started.elapsed(), Duration::ZERO);
    // A wrong bearer token now is held back too, and answered 429.
    let wrong = page_get("/v1/tools")
        .header(header::AUTHORIZATION, "Bearer wrong")
        .body(Body::empty())
        .expect("request");
    let answer = send(&app, wrong).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(answer.json()["error"]["code"], "TOO_MANY_ATTEMPTS");
}

#[tokio::test(start_paused = true)]
async fn wrong_bearer_tokens_count_against_the_same_limit() {
    let app = app();
    for _ in 0..MAX_LOGIN_FAILURES {
        let request = page_get("/v1/tools")
            .header(header::AUTHORIZATION, "Bearer wrong")
            .body(Body::empty())
            .expect("request");
        assert_eq!(send(&app, request).await.status, StatusCode::UNAUTHORIZED);
    }
    let answer = send(&app, login_request("token=wrong")).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    let answer = send(&app, login_request(&format!("token={TOKEN}"))).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
}

#[test]
fn the_limiter_drains_one_attempt_per_refill_period() {
    let start = Instant::now();
    let mut limiter = Limiter::new(start);
    for _ in 0..MAX_LOGIN_FAILURES {
        assert_eq!(limiter.locked_for(start), None);
        limiter.fail(start);
    }
    assert_eq!(
        limiter.locked_for(start),
        Some(Duration::from_secs(LOGIN_REFILL_SECS))
    );
    // Asked often, the limiter still refills.
    let mut now = start;
    for _ in 0..(LOGIN_REFILL_SECS * 10) {
        now += Duration::from_millis(99);
        let _ = limiter.locked_for(now);
    }
    assert_eq!(
        limiter.locked_for(start + Duration::from_secs(LOGIN_REFILL_SECS)),
        None
    );
    limiter.fail(start + Duration::from_secs(LOGIN_REFILL_SECS));
    assert!(
        limiter
            .locked_for(start + Duration::from_secs(LOGIN_REFILL_SECS))
            .is_some()
    );
}

#[tokio::test]
async fn logout_ends_the_session_and_clears_the_cookie() {
    let app = app();
    let cookie = log_in(&app).await;
    let logout = Request::post("/logout")
        .header(header::HOST, BIND)
        .header(header::ORIGIN, ORIGIN)
        .header(header::COOKIE, &cookie)
        .body(Body::empty())
        .expect("request");
    let answer = send(&app, logout).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let set = answer.headers[header::SET_COOKIE].to_str().expect("text");
    assert!(set.starts_with(&format!("{COOKIE}=;")), "{set}");
    assert!(set.contains("Max-Age=0"), "{set}");
    let after = send(&app, with_cookie(page_get("/v1/tools"), &cookie)).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
    let page = send(&app, with_cookie(page_get("/"), &cookie)).await;
    assert!(page.body.contains("name=\"token\""), "the login page again");
}

#[tokio::test]
async fn a_one_time_login_code_works_once() {
    let code = new_login_code().expect("code");
    let app = app_with(|c| c.login_code = Some(code.clone()));
    let first = send(&app, login_request(&format!("once={code}"))).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER);
    assert!(first.headers.contains_key(header::SET_COOKIE));
    let again = send(&app, login_request(&format!("once={code}"))).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED);
    assert!(again.body.contains("used already or has expired"));
    assert_eq!(
        login_url("127.0.0.1:8750".parse().expect("address"), "abc"),
        "http://127.0.0.1:8750/#once=abc"
    );
    assert_eq!(
        login_url("0.0.0.0:9000".parse().expect("address"), "abc"),
        "http://127.0.0.1:9000/#once=abc"
    );
}

#[tokio::test]
async fn without_a_token_the_page_needs_no_login() {
    let app = app_with(|c| c.token = None);
    let page = send(&app, page_get("/").body(Body::empty()).expect("request")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("id=\"panel-tools\""));
}

// ---------------------------------------------------------------- Host, Origin, headers

#[tokio::test]
async fn a_foreign_host_or_origin_gets_403_for_the_page_and_its_assets() {
    let app = app();
    let cookie = log_in(&app).await;
    for path in [
        "/",
        "/assets/app.js",
        "/assets/app.css",
        "/assets/login.js",
        "/assets/icon.svg",
    ] {
        let rebinding = Request::get(path)
            .header(header::HOST, "evil.example:8750")
            .header(header::COOKIE, &cookie)
            .body(Body::empty())
            .expect("request");
        let answer = send(&app, rebinding).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "Host for {path}");
        assert_eq!(answer.json()["error"]["code"], "FORBIDDEN_HOST");
        assert_security_headers(&answer.headers, path);

        let foreign = page_get(path)
            .header(header::ORIGIN, "https://evil.example")
            .header(header::COOKIE, &cookie)
            .body(Body::empty())
            .expect("request");
        let answer = send(&app, foreign).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "Origin for {path}");
        assert_eq!(answer.json()["error"]["code"], "FORBIDDEN_ORIGIN");
    }
    let foreign_login = Request::post("/login")
        .header(header::HOST, BIND)
        .header(header::ORIGIN, "https://evil.example")
        .body(Body::from(format!("token={TOKEN}")))
        .expect("request");
    assert_eq!(
        send(&app, foreign_login).await.status,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn assets_are_served_with_their_types_and_the_security_headers() {
    let app = app();
    for (path, content_type) in [
        ("/assets/app.js", "text/javascript; charset=utf-8"),
        ("/assets/app.css", "text/css; charset=utf-8"),
        ("/assets/login.js", "text/javascript; charset=utf-8"),
        ("/assets/icon.svg", "image/svg+xml"),
    ] {
        let answer = send(&app, page_get(path).body(Body::empty()).expect("request")).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(answer.headers[header::CONTENT_TYPE], content_type, "{path}");
        assert_security_headers(&answer.headers, path);
    }
    let missing = send(
        &app,
        page_get("/assets/index.html")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let unauthorized = send(
        &app,
        page_get("/v1/tools").body(Body::empty()).expect("request"),
    )
    .await;
    assert_eq!(unauthorized.status, StatusCode::UNAUTHORIZED);
    assert_security_headers(&unauthorized.headers, "a 401");
}

#[test]
fn the_csp_allows_no_inline_script_or_style_and_nothing_from_elsewhere() {
    let directives: Vec<&str> = CONTENT_SECURITY_POLICY.split("; ").collect();
    for expected in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
        "base-uri 'none'",
    ] {
        assert!(directives.contains(&expected), "{expected}");
    }
    assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    assert!(!CONTENT_SECURITY_POLICY.contains("http"));
}

// ---------------------------------------------------------------- the assets

/// The one URL allowed in the assets: SVG's namespace name, an identifier that is
/// never fetched.
const SVG_NAMESPACE: &str = "http://www.w3.org/2000/svg";

#[test]
fn no_asset_references_an_outside_host() {
    for (name, body) in embedded_assets() {
        let text = std::str::from_utf8(body).expect("text asset");
        let text = text.replace(SVG_NAMESPACE, "");
        let lower = text.to_ascii_lowercase();
        for needle in [
            "http://",
            "https://",
            "ws://",
            "wss://",
            "src=\"//",
            "href=\"//",
            "url(",
            "@import",
        ] {
            assert!(
                !lower.contains(needle),
                "{name} contains {needle:?}: assets load only from this server"
            );
        }
    }
}

#[test]
fn the_html_has_no_inline_script_style_or_handlers() {
    for (name, body) in embedded_assets() {
        if !name.ends_with(".html") {
            continue;
        }
        let html = std::str::from_utf8(body).expect("text");
        let lower = html.to_ascii_lowercase();
        assert_eq!(
            lower.matches("<script").count(),
            lower.matches("<script src=\"/assets/").count(),
            "{name}: every script is an asset"
        );
        assert!(!lower.contains("<style"), "{name}: no style element");
        assert!(!lower.contains(" style="), "{name}: no style attribute");
        for handler in [
            " onclick=",
            " onload=",
            " onsubmit=",
            " onerror=",
            "javascript:",
        ] {
            assert!(!lower.contains(handler), "{name}: {handler}");
        }
    }
    let js = embedded_assets()
        .into_iter()
        .filter(|(n, _)| n.ends_with(".js"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect::<String>();
    for forbidden in [
        "eval(",
        "new Function",
        "innerHTML",
        ".style.cssText",
        "setAttribute('style'",
    ] {
        assert!(!js.contains(forbidden), "the scripts use no {forbidden}");
    }
}

#[test]
fn the_assets_stay_small() {
    let total: usize = embedded_assets().iter().map(|(_, b)| b.len()).sum();
    println!("embedded assets: {total} bytes");
    assert!(
        total < 1024 * 1024,
        "{total} bytes of assets; the limit is 1 MiB"
    );
    // Far below it in fact: a page, not an application bundle.
    assert!(total < 128 * 1024, "{total} bytes");
}

// ---------------------------------------------------------------- the page's endpoints

async fn api_get(app: &App, cookie: &str, uri: &str) -> Value {
    let answer = send(app, with_cookie(page_get(uri), cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", answer.body);
    answer.json()
}

async fn call(app: &App, tool: &str, args: Value) -> Value {
    let request = Request::post(format!("/v1/tools/{tool}"))
        .header(header::HOST, BIND)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(args.to_string()))
        .expect("request");
    let answer = send(app, request).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let envelope = answer.json();
    assert_eq!(envelope["status"], "success", "{envelope}");
    envelope
}

#[tokio::test(flavor = "multi_thread")]
async fn the_call_log_is_listed_filtered_and_paged() {
    let app = app();
    let cookie = log_in(&app).await;
    call(&app, "think", json!({ "thought": "one" })).await;
    call(&app, "think", json!({ "thought": "two" })).await;
    call(&app, "list_projects", json!({})).await;
    app.writer.flush().await;

    let all = api_get(&app, &cookie, "/v1/calls").await;
    let tools: Vec<&str> = all["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["tool"].as_str().expect("tool"))
        .collect();
    assert_eq!(tools, ["list_projects", "think", "think"], "newest first");
    assert_eq!(all["next_before"], Value::Null);
    let first = &all["calls"][2];
    assert_eq!(first["status"], "success");
    assert!(first["args"].as_str().expect("args").contains("one"));
    assert!(first["bytes_out"].as_i64().expect("size") > 0);

    let page = api_get(&app, &cookie, "/v1/calls?tool=think&limit=1").await;
    assert_eq!(page["calls"].as_array().expect("calls").len(), 1);
    let before = page["next_before"].as_i64().expect("a next page");
    let next = api_get(
        &app,
        &cookie,
        &format!("/v1/calls?tool=think&limit=1&before={before}"),
    )
    .await;
    assert!(
        next["calls"][0]["args"]
            .as_str()
            .expect("args")
            .contains("one")
    );
    let errors = api_get(&app, &cookie, "/v1/calls?status=error").await;
    assert_eq!(errors["calls"], json!([]));
    let bad = send(
        &app,
        with_cookie(page_get("/v1/calls?status=maybe"), &cookie),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    // Reading the log through the page logs nothing.
    app.writer.flush().await;
    let again = api_get(&app, &cookie, "/v1/calls").await;
    assert_eq!(again["calls"].as_array().expect("calls").len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn new_calls_arrive_on_the_event_stream() {
    let app = app();
    let cookie = log_in(&app).await;
    call(&app, "think", json!({ "thought": "before" })).await;
    app.writer.flush().await;
    let response = tokio::time::timeout(
        TEST_TIMEOUT,
        app.router
            .clone()
            .oneshot(with_cookie(page_get("/v1/calls/stream"), &cookie)),
    )
    .await
    .expect("no timeout")
    .expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    call(&app, "think", json!({ "thought": "after" })).await;
    app.writer.flush().await;
    let mut stream = response.into_body().into_data_stream();
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = tokio::time::timeout(TEST_TIMEOUT, stream.next())
            .await
            .expect("an event in time")
            .expect("not the end")
            .expect("bytes");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(text.starts_with("event: calls\n"), "{text}");
    assert!(text.contains("after"), "{text}");
    assert!(
        !text.contains("before"),
        "only calls after the stream opened: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn todos_and_the_planner_are_read_from_the_store() {
    let app = app();
    let cookie = log_in(&app).await;
    call(
        &app,
        "set_todo_list",
        json!({ "todos": [
            { "title": "read", "status": "Done" },
            { "title": "write", "status": "In Progress" }
        ] }),
    )
    .await;
    let project = call(&app, "create_project", json!({ "name": "Garden" })).await;
    let id = project["data"]["id"].as_str().expect("id").to_string();
    call(
        &app,
        "create_task",
        json!({ "title": "dig", "project_id": id, "due_date": "2001-01-01" }),
    )
    .await;
    call(
        &app,
        "create_goal",
        json!({ "title": "Grow food", "stage": "yearly" }),
    )
    .await;
    call(
        &app,
        "write_review",
        json!({ "content": "Good day", "type": "daily", "mood": 7, "tags": ["garden"] }),
    )
    .await;

    let todos = api_get(&app, &cookie, "/v1/todos").await;
    assert_eq!(todos["lists"][0]["name"], "default");
    assert_eq!(
        todos["lists"][0]["todos"],
        json!([
            { "id": 1, "title": "read", "status": "Done" },
            { "id": 2, "title": "write", "status": "In Progress" }
        ])
    );

    let projects = api_get(&app, &cookie, "/v1/planner/projects").await;
    assert_eq!(projects["total"], 1);
    let item = &projects["items"][0];
    assert_eq!(item["project"]["name"], "Garden");
    assert_eq!(item["stats"]["total"], 1);
    assert_eq!(item["stats"]["pending"], 1);
    assert_eq!(item["stats"]["overdue_count"], 1);

    let tasks = api_get(&app, &cookie, &format!("/v1/planner/tasks?project={id}")).await;
    assert_eq!(tasks["items"][0]["title"], "dig");
    let none = api_get(&app, &cookie, "/v1/planner/tasks?status=completed").await;
    assert_eq!(none["total"], 0);
    let goals = api_get(&app, &cookie, "/v1/planner/goals?stage=yearly").await;
    assert_eq!(goals["items"][0]["title"], "Grow food");
    let reviews = api_get(&app, &cookie, "/v1/planner/reviews").await;
    assert_eq!(reviews["items"][0]["mood"], 7.0);
    let patterns = api_get(&app, &cookie, "/v1/planner/patterns?range=week").await;
    assert_eq!(patterns["tags"][0]["tag"], "garden");
    assert_eq!(patterns["mood"]["count"], 1);
    let bad = send(
        &app,
        with_cookie(page_get("/v1/planner/tasks?priority=urgent"), &cookie),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_tool_schema_comes_in_every_export_format() {
    let app = app();
    let cookie = log_in(&app).await;
    let schemas = api_get(&app, &cookie, "/v1/tools/think/schemas").await;
    let formats: Vec<&str> = schemas["formats"]
        .as_array()
        .expect("formats")
        .iter()
        .map(|f| f["format"].as_str().expect("name"))
        .collect();
    let expected: Vec<&str> = toolbelt_wire::export::Format::ALL
        .iter()
        .map(|f| f.as_str())
        .collect();
    assert_eq!(formats, expected);
    assert_eq!(schemas["formats"][0]["schema"]["function"]["name"], "think");
    let missing = send(
        &app,
        with_cookie(page_get("/v1/tools/nope/schemas"), &cookie),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn without_a_store_the_page_endpoints_answer_503() {
    let app = app_with(|c| c.store = None);
    let cookie = log_in(&app).await;
    let answer = send(&app, with_cookie(page_get("/v1/calls"), &cookie)).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn the_openapi_document_describes_the_page_endpoints() {
    let app = app();
    let cookie = log_in(&app).await;
    let doc = api_get(&app, &cookie, "/v1/openapi.json").await;
    for path in [
        "/v1/calls",
        "/v1/calls/stream",
        "/v1/todos",
        "/v1/planner/projects",
        "/v1/planner/goals",
        "/v1/planner/tasks",
        "/v1/planner/reviews",
        "/v1/planner/patterns",
        "/v1/tools/{name}/schemas",
        "/v1/agent/runs",
        "/v1/agent/runs/{id}",
        "/v1/cron/jobs",
    ] {
        assert!(
            doc["paths"][path]["get"]["operationId"].is_string(),
            "{path}"
        );
    }
}

/// Writes a transcript as the agent does: a run that read a file through a call,
/// was compacted, noticed something and answered.
fn write_transcript(state_dir: &std::path::Path, id: &str, envelope: &Value) {
    let dir = state_dir.join("agent").join("runs");
    std::fs::create_dir_all(&dir).expect("runs dir");
    let t = "2026-05-01T09:00:00+02:00";
    let lines = [
        json!({"time": t, "type": "run", "run_id": id, "provider": "openai", "model": "m-1", "protocol": "native"}),
        json!({"time": t, "type": "message", "message": {"role": "user", "content": "Plan the\nday"}}),
        json!({"time": t, "type": "message", "message": {"role": "assistant", "content": "Let me think.",
            "tool_calls": [{"id": "c1", "name": "think", "arguments": "{\"thought\":\"plan\"}"}]}}),
        json!({"time": t, "type": "envelope", "call_id": "c1", "envelope": envelope}),
        json!({"time": t, "type": "message", "message": {"role": "tool", "results": [{"call_id": "c1", "name": "think", "content": "ok"}]}}),
        json!({"time": t, "type": "usage", "usage": {"input_tokens": 100, "output_tokens": 20}, "total": {"input_tokens": 100, "output_tokens": 20}}),
        json!({"time": t, "type": "compaction", "kind": "tool_results", "tokens_before": 900, "tokens_after": 300, "shortened": 1}),
        json!({"time": t, "type": "notice", "message": "the same call twice"}),
        json!({"time": t, "type": "message", "message": {"role": "assistant", "content": "Done: three things."}}),
        json!({"time": t, "type": "end", "outcome": "final_answer", "message": "Done: three things.", "steps": 2, "tool_calls": 1,
            "usage": {"input_tokens": 250, "output_tokens": 40, "cached_tokens": 0, "cache_write_tokens": 0}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("{id}.jsonl")), text).expect("transcript");
    // Not a transcript: skipped.
    std::fs::write(dir.join("notes.jsonl"), "{}\n").expect("other file");
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_runs_are_listed_and_read_step_by_step() {
    let app = app();
    let cookie = log_in(&app).await;
    let envelope = call(&app, "think", json!({ "thought": "plan" })).await;
    write_transcript(
        &app._dir.path().join(".toolbelt"),
        "20260501-090000-ab12",
        &envelope,
    );

    let runs = api_get(&app, &cookie, "/v1/agent/runs").await;
    assert_eq!(
        runs,
        json!({ "total": 1, "runs": [{
            "id": "20260501-090000-ab12",
            "started": "2026-05-01T09:00:00+02:00",
            "model": "m-1",
            "prompt": "Plan the day",
            "turns": 1,
            "steps": 2,
            "outcome": "final_answer",
            "usage": { "input_tokens": 250, "output_tokens": 40, "cached_tokens": 0, "cache_write_tokens": 0 }
        }] })
    );

    let run = api_get(&app, &cookie, "/v1/agent/runs/20260501-090000-ab12").await;
    let types: Vec<&str> = run["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        types,
        [
            "run",
            "user",
            "assistant",
            "result",
            "compaction",
            "notice",
            "assistant",
            "end"
        ]
    );
    let entries = &run["entries"];
    assert_eq!(entries[2]["calls"][0]["summary"], "Think: \"plan\"");
    assert_eq!(
        (
            &entries[3]["call_id"],
            &entries[3]["tool"],
            &entries[3]["status"]
        ),
        (&json!("c1"), &json!("think"), &json!("success"))
    );
    assert_eq!(entries[7]["message"], "Done: three things.");

    for missing in ["nope", "..%2F..%2Fetc%2Fpasswd", "notes"] {
        let answer = send(
            &app,
            with_cookie(page_get(&format!("/v1/agent/runs/{missing}")), &cookie),
        )
        .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{missing}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cron_jobs_show_the_next_run_in_their_zone_and_the_last_run() {
    let app = app();
    let cookie = log_in(&app).await;
    let empty = api_get(&app, &cookie, "/v1/cron/jobs").await;
    assert_eq!(empty, json!({ "jobs": [] }));
    let handle = StoreHandle::lazy(Location::in_state_dir(&app._dir.path().join(".toolbelt")));
    let store = handle.store().await.expect("store");
    // 2026-07-01T07:07:00Z is 09:07 in Berlin (summer time).
    let next_at = 1_782_889_620_000;
    toolbelt_store::create_cron_job(
        store,
        &toolbelt_store::NewCronJob {
            workspace: "/w".into(),
            name: "triage".into(),
            schedule: "7 9 * * *".into(),
            tz: "Europe/Berlin".into(),
            prompt: Some("Triage the inbox".into()),
            next_at: Some(next_at),
            ..toolbelt_store::NewCronJob::default()
        },
        0,
    )
    .await
    .expect("job");
    let jobs = api_get(&app, &cookie, "/v1/cron/jobs").await;
    assert_eq!(
        jobs,
        json!({ "jobs": [{
            "workspace": "/w",
            "name": "triage",
            "schedule": "7 9 * * *",
            "tz": "Europe/Berlin",
            "message": "",
            "prompt": "Triage the inbox",
            "channel": null,
            "chat_id": null,
            "next_run": "2026-07-01T09:07:00+02:00",
            "next_at": next_at,
            "last_run": null
        }] })
    );
}
