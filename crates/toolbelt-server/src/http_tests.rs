use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolbelt_core::{Registry, Session};

use super::security::{constant_time_eq, digest, host_of, token_in_query};
use super::*;
use crate::test_support::TEST_TIMEOUT;
use axum::body::Bytes;
use axum::http::HeaderValue;
use std::io;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const BIND: &str = "127.0.0.1:8750";

fn registry(dir: &tempfile::TempDir) -> Arc<Registry> {
    let session = Session::new(dir.path()).with_state_dir(dir.path().join(".toolbelt"));
    let mut registry = Registry::new(session);
    toolbelt_tools::register_builtins(&mut registry).expect("builtins register");
    Arc::new(registry)
}

fn config() -> ServeConfig {
    ServeConfig::new(BIND.parse().expect("address"), TOKEN)
}

fn app(dir: &tempfile::TempDir) -> axum::Router {
    router(registry(dir), &config())
}

/// A request with a loopback Host and the right token.
fn request(method: &str, uri: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, BIND)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
}

async fn send(app: axum::Router, request: Request<Body>) -> (StatusCode, HeaderMap, Value) {
    let (status, headers, bytes) = crate::test_support::respond(app, request).await;
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("JSON body")
    };
    (status, headers, body)
}

async fn get(app: axum::Router, uri: &str) -> (StatusCode, HeaderMap, Value) {
    send(
        app,
        request("GET", uri).body(Body::empty()).expect("request"),
    )
    .await
}

async fn post(app: axum::Router, uri: &str, body: &str) -> (StatusCode, HeaderMap, Value) {
    let request = request("POST", uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request");
    send(app, request).await
}

// ---------------------------------------------------------------- auth

#[tokio::test]
async fn no_token_is_401_with_a_bearer_challenge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let request = Request::get("/v1/tools")
        .header(header::HOST, BIND)
        .body(Body::empty())
        .expect("request");
    let (status, headers, body) = send(app(&dir), request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        headers[header::WWW_AUTHENTICATE],
        "Bearer realm=\"toolbelt\""
    );
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
}

#[tokio::test]
async fn wrong_token_is_401_invalid_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    for presented in [
        "Bearer nope",
        "Bearer 0123456789abcdef0123456789abcdeX",
        "Basic abc",
    ] {
        let request = Request::get("/v1/tools")
            .header(header::HOST, BIND)
            .header(header::AUTHORIZATION, presented)
            .body(Body::empty())
            .expect("request");
        let (status, headers, _) = send(app(&dir), request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{presented}");
        assert!(
            headers[header::WWW_AUTHENTICATE]
                .to_str()
                .expect("text")
                .starts_with("Bearer realm=\"toolbelt\""),
            "{presented}"
        );
    }
}

#[tokio::test]
async fn token_in_the_query_string_is_refused_even_with_the_header() {
    let dir = tempfile::tempdir().expect("tempdir");
    let request = Request::get(format!("/v1/tools?access_token={TOKEN}"))
        .header(header::HOST, BIND)
        .body(Body::empty())
        .expect("request");
    let (status, headers, _) = send(app(&dir), request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        headers[header::WWW_AUTHENTICATE],
        "Bearer realm=\"toolbelt\", error=\"invalid_request\""
    );
    let (status, _, body) = get(app(&dir), &format!("/v1/tools?token={TOKEN}")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("never accepted")
    );
}

#[tokio::test]
async fn healthz_needs_no_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let request = Request::get("/healthz")
        .header(header::HOST, "localhost:8750")
        .body(Body::empty())
        .expect("request");
    let (status, _, body) = send(app(&dir), request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ok", "{body}");
}

// ---------------------------------------------------------------- Host and Origin

#[tokio::test]
async fn foreign_host_is_403() {
    let dir = tempfile::tempdir().expect("tempdir");
    for host in ["evil.example", "evil.example:8750", "10.1.2.3:8750"] {
        let request = request("GET", "/v1/tools")
            .header(header::HOST, host)
            .body(Body::empty())
            .expect("request");
        let mut request = request;
        request
            .headers_mut()
            .insert(header::HOST, host.parse().expect("header"));
        let (status, _, body) = send(app(&dir), request).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{host}");
        assert_eq!(body["error"]["code"], "FORBIDDEN_HOST");
    }
}

#[tokio::test]
async fn loopback_and_bind_hosts_are_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&dir);
    let config = ServeConfig::new("192.168.7.9:8750".parse().expect("address"), TOKEN);
    for host in ["localhost", "127.0.0.1:1", "[::1]:8750", "192.168.7.9:8750"] {
        let mut request = request("GET", "/healthz")
            .body(Body::empty())
            .expect("request");
        request
            .headers_mut()
            .insert(header::HOST, host.parse().expect("header"));
        let (status, _, _) = send(router(Arc::clone(&registry), &config), request).await;
        assert_eq!(status, StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn foreign_origin_is_403_and_no_wildcard_cors() {
    let dir = tempfile::tempdir().expect("tempdir");
    for origin in [
        "https://evil.example",
        "null",
        "file://",
        "http://127.0.0.1.evil.example",
    ] {
        let request = request("GET", "/v1/tools")
            .header(header::ORIGIN, origin)
            .body(Body::empty())
            .expect("request");
        let (status, headers, body) = send(app(&dir), request).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}");
        assert_eq!(body["error"]["code"], "FORBIDDEN_ORIGIN");
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
    }
}

#[tokio::test]
async fn loopback_and_listed_origins_are_echoed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.allowed_origins = vec!["https://app.example.com/".into()];
    let registry = registry(&dir);
    for origin in ["http://localhost:3000", "https://app.example.com"] {
        let request = request("GET", "/v1/tools")
            .header(header::ORIGIN, origin)
            .body(Body::empty())
            .expect("request");
        let (status, headers, _) = send(router(Arc::clone(&registry), &config), request).await;
        assert_eq!(status, StatusCode::OK, "{origin}");
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], origin);
    }
}

// ---------------------------------------------------------------- body limit

#[tokio::test]
async fn big_body_is_413() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.max_body_bytes = 1024;
    let registry = registry(&dir);
    let big = format!("{{\"thought\": \"{}\"}}", "x".repeat(4096));
    // Announced by Content-Length.
    let announced = request("POST", "/v1/tools/think")
        .header(header::CONTENT_LENGTH, big.len())
        .body(Body::from(big.clone()))
        .expect("request");
    let (status, _, body) = send(router(Arc::clone(&registry), &config), announced).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["error"]["code"], "TOO_LARGE");
    // Streamed without a length.
    let stream = futures_stream(big);
    let request = request("POST", "/v1/tools/think")
        .body(stream)
        .expect("request");
    let (status, _, _) = send(router(registry, &config), request).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

/// A body of unknown length.
fn futures_stream(text: String) -> Body {
    let chunks: Vec<Result<Bytes, std::io::Error>> = text
        .into_bytes()
        .chunks(512)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Body::from_stream(futures::stream::iter(chunks))
}

// ---------------------------------------------------------------- JSON API

#[tokio::test]
async fn list_tools_gives_every_builtin_with_exposed_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&dir);
    let (status, _, body) = get(router(Arc::clone(&registry), &config()), "/v1/tools").await;
    assert_eq!(status, StatusCode::OK);
    let tools = body["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 35);
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    let expected: Vec<String> = registry.definitions().into_iter().map(|s| s.name).collect();
    assert_eq!(names, expected);
    assert!(tools.iter().all(|t| t["input_schema"].is_object()));
}

#[tokio::test]
async fn calling_think_returns_the_envelope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (status, _, body) = post(
        app(&dir),
        "/v1/tools/think",
        r#"{"thought": "the cache key misses the locale"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "success");
    assert_eq!(body["context"]["tool"], "think");
    assert_eq!(body["data"]["thought"], "the cache key misses the locale");
    assert!(body["text"].is_string());
}

#[tokio::test]
async fn invalid_arguments_are_an_error_envelope_with_status_200() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (status, _, body) = post(app(&dir), "/v1/tools/think", r#"{"thougth": "x"}"#).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "error");
    assert_eq!(body["error"]["code"], "INVALID_PARAMS");
}

#[tokio::test]
async fn a_batch_runs_in_order_and_answers_every_envelope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (status, _, body) = post(
        app(&dir),
        "/v1/batch",
        r#"[
            {"tool": "think", "params": {"thought": "first"}, "id": "a"},
            {"tool": "think", "params": {"thougth": "typo"}},
            {"tool": "thinkk"},
            {"tool": "think", "arguments": {"thought": "last"}}
        ]"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let envelopes = body.as_array().expect("an array");
    let statuses: Vec<&str> = envelopes
        .iter()
        .map(|e| e["status"].as_str().expect("status"))
        .collect();
    assert_eq!(statuses, ["success", "error", "error", "success"]);
    assert_eq!(envelopes[0]["context"]["call_id"], "a");
    assert_eq!(envelopes[1]["error"]["code"], "INVALID_PARAMS");
    assert_eq!(envelopes[2]["error"]["code"], "UNKNOWN_TOOL");
    assert_eq!(envelopes[3]["data"]["thought"], "last");
}

#[tokio::test]
async fn a_malformed_batch_is_400_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (batch, message) in [
        ("{}", "the batch is an object, not an array"),
        (
            r#"[{"tool": "think", "params": {"thought": "x"}}, {"params": {}}]"#,
            "call 2 (index 1) has no \"tool\"",
        ),
        ("[", "the batch is not valid JSON"),
    ] {
        let (status, _, body) = post(app(&dir), "/v1/batch", batch).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{batch}");
        assert_eq!(body["error"]["code"], "INVALID_BATCH", "{body}");
        let text = body["error"]["message"].as_str().expect("message");
        assert!(text.starts_with(message), "{text}");
    }
}

#[tokio::test]
async fn unknown_tool_is_404_with_the_envelope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (status, _, body) = post(app(&dir), "/v1/tools/thinkk", "{}").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["status"], "error");
    assert_eq!(body["error"]["code"], "UNKNOWN_TOOL");
}

#[tokio::test]
async fn body_that_is_not_json_is_400_with_the_envelope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (status, _, body) = post(app(&dir), "/v1/tools/think", "thought=hello").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "INVALID_PARAMS");
    assert_eq!(body["context"]["tool"], "think");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .starts_with("the request body is not JSON")
    );
}

#[tokio::test]
async fn unknown_route_is_a_json_404() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (status, _, body) = get(app(&dir), "/v2/nothing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "NOT_FOUND");
}

#[tokio::test]
async fn openapi_describes_every_route_and_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&dir);
    let (status, _, doc) = get(router(Arc::clone(&registry), &config()), "/v1/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().expect("paths");
    for route in [
        "/healthz",
        "/v1/tools",
        "/v1/openapi.json",
        "/v1/batch",
        "/v1/tools/think",
    ] {
        assert!(paths.contains_key(route), "{route}");
    }
    // Four routes, the page's twelve endpoints, the two of the questions, the four
    // of the checkpoints, and one route per tool.
    assert_eq!(paths.len(), 4 + 12 + 2 + 4 + registry.definitions().len());
    for spec in registry.definitions() {
        let reference = &doc["paths"][format!("/v1/tools/{}", spec.name)]["post"]["requestBody"]["content"]
            ["application/json"]["schema"]["$ref"];
        let name = reference
            .as_str()
            .expect("$ref")
            .strip_prefix("#/components/schemas/")
            .expect("local ref");
        let schema = &doc["components"]["schemas"][name];
        assert_eq!(
            schema["properties"], spec.input_schema["properties"],
            "{}",
            spec.name
        );
    }
    assert_eq!(doc["paths"]["/healthz"]["get"]["security"], json!([]));
}

// ---------------------------------------------------------------- helpers

#[test]
fn host_of_strips_ports_brackets_and_userinfo() {
    let cases = [
        ("localhost:8750", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]:8750", "::1"),
        ("[::1]", "::1"),
        ("user@evil.example:80", "evil.example"),
        ("evil.example:", "evil.example"),
    ];
    for (authority, host) in cases {
        assert_eq!(host_of(authority), host, "{authority}");
    }
}

#[test]
fn token_query_parameters_are_found_by_name() {
    assert_eq!(
        token_in_query(Some("a=1&Access_Token=x")),
        Some("access_token")
    );
    assert_eq!(token_in_query(Some("token")), Some("token"));
    assert_eq!(token_in_query(Some("tokens=1&page=2")), None);
    assert_eq!(token_in_query(None), None);
}

#[test]
fn constant_time_eq_compares_digests() {
    assert!(constant_time_eq(&digest("abc"), &digest("abc")));
    assert!(!constant_time_eq(&digest("abc"), &digest("abd")));
    assert!(!constant_time_eq(&digest("abc"), &digest("abcabc")));
}

#[test]
fn token_file_is_created_once_with_mode_0600() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let token = load_or_create_token(&state).expect("token");
    assert_eq!(token.len(), 2 * TOKEN_BYTES);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(load_or_create_token(&state).expect("token again"), token);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(state.join(TOKEN_FILE_NAME))
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let other = tempfile::tempdir().expect("tempdir");
    assert_ne!(load_or_create_token(other.path()).expect("token"), token);
}

#[test]
fn empty_token_file_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(TOKEN_FILE_NAME), "\n").expect("write");
    let e = load_or_create_token(dir.path()).expect_err("empty");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(e.to_string().contains(TOKEN_FILE_NAME));
}

#[tokio::test]
async fn a_taken_port_names_the_address_and_the_os_error_once() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = taken.local_addr().expect("address");
    let e = bind(addr).await.expect_err("taken");
    assert_eq!(e.to_string(), format!("cannot bind {addr}"));
    let os = std::error::Error::source(&e)
        .expect("the OS error")
        .to_string();
    assert_eq!(
        toolbelt_core::error_chain(&e),
        format!("cannot bind {addr}: {os}")
    );
}

#[test]
fn config_debug_never_shows_the_token() {
    assert!(!format!("{:?}", config()).contains(TOKEN));
}

// ---------------------------------------------------------------- real server

struct Running {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), HttpServeError>>,
}

async fn start(dir: &tempfile::TempDir, mut config: ServeConfig) -> Running {
    let listener = bind("127.0.0.1:0".parse().expect("address"))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    config.bind = addr;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve_listener(
        listener,
        registry(dir),
        config,
        async move {
            let _ = stopped.await;
        },
    ));
    Running {
        addr,
        stop: Some(stop),
        task,
    }
}

impl Running {
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = tokio::time::timeout(TEST_TIMEOUT, self.task)
            .await
            .expect("the server stops")
            .expect("no panic");
        assert!(result.is_ok(), "{result:?}");
    }
}

/// Sends raw HTTP/1.1 and returns the whole answer (the server closes after it).
async fn raw(addr: SocketAddr, text: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(text.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn real_server_answers_and_stops_on_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(&dir, config()).await;
    let addr = server.addr;
    let answer = tokio::time::timeout(
        TEST_TIMEOUT,
        raw(
            addr,
            &format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
        ),
    )
    .await
    .expect("no timeout");
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    let answer = tokio::time::timeout(
        TEST_TIMEOUT,
        raw(
            addr,
            &format!(
                "POST /v1/tools/think HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Type: application/json\r\nContent-Length: 16\r\nConnection: close\r\n\r\n\
                 {{\"thought\": \"a\"}}"
            ),
        ),
    )
    .await
    .expect("no timeout");
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.contains("\"status\":\"success\""), "{answer}");
    server.stop().await;
    assert!(TcpStream::connect(addr).await.is_err(), "still listening");
}

#[tokio::test]
async fn slow_headers_are_cut_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.header_read_timeout = Duration::from_millis(200);
    let server = start(&dir, config).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("write");
    let mut answer = Vec::new();
    // The server closes the connection instead of waiting for the rest.
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .expect("closed by the server within the timeout");
    assert!(read.is_ok() || read.is_err());
    assert!(!String::from_utf8_lossy(&answer).contains("200 OK"));
    server.stop().await;
}

/// Reads from `stream` until it ends: true when the server closed it within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let end = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(end, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

/// `GET /v1/tools` with the token on a new connection: the status line, and how
/// long the answer took.
async fn owner_request(addr: SocketAddr) -> (String, Duration) {
    let started = tokio::time::Instant::now();
    let answer = raw(
        addr,
        &format!(
            "GET /healthz HTTP/1.1\r\nHost: {BIND}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    let status = answer.lines().next().unwrap_or_default().to_string();
    (status, started.elapsed())
}

#[tokio::test]
async fn an_idle_connection_makes_room_and_a_busy_one_is_waited_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.max_connections = 1;
    let server = start(&dir, config).await;
    let addr = server.addr;
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    // The first connection is answered and stays open (keep-alive), idle.
    let mut first = TcpStream::connect(addr).await.expect("connect");
    first.write_all(request.as_bytes()).await.expect("write");
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(TEST_TIMEOUT, first.read(&mut buf))
        .await
        .expect("no timeout")
        .expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200 OK"));
    // A new client gets its place: the idle one is closed.
    let mut second = TcpStream::connect(addr).await.expect("connect");
    second.write_all(request.as_bytes()).await.expect("write");
    let n = tokio::time::timeout(TEST_TIMEOUT, second.read(&mut buf))
        .await
        .expect("served at once")
        .expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200 OK"));
    assert!(closed_within(&mut first, TEST_TIMEOUT).await);
    // A request in flight (its body still on the way) keeps its connection: the
    // next one waits for the slot.
    let busy = format!(
        "POST /v1/tools/think HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{{\"thought\""
    );
    second.write_all(busy.as_bytes()).await.expect("write");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = TcpStream::connect(addr).await.expect("connect");
    third.write_all(request.as_bytes()).await.expect("write");
    let waiting = tokio::time::timeout(Duration::from_millis(300), third.read(&mut buf)).await;
    assert!(
        waiting.is_err(),
        "served past the cap while the other was busy"
    );
    drop(second);
    let n = tokio::time::timeout(TEST_TIMEOUT, third.read(&mut buf))
        .await
        .expect("served once the slot is free")
        .expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200 OK"));
    drop(third);
    server.stop().await;
}

/// One client (here, this user) holds at most three quarters of the cap: past
/// that, with its connections busy, its next one waits although the cap is not
/// reached.
#[tokio::test]
async fn one_client_holds_at_most_three_quarters_of_the_cap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.max_connections = 4;
    let server = start(&dir, config).await;
    let addr = server.addr;
    let busy = format!(
        "POST /v1/tools/think HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{{\"thought\""
    );
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(busy.as_bytes()).await.expect("write");
        held.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut fourth = TcpStream::connect(addr).await.expect("connect");
    fourth.write_all(request.as_bytes()).await.expect("write");
    let mut buf = [0u8; 1024];
    let waiting = tokio::time::timeout(Duration::from_millis(300), fourth.read(&mut buf)).await;
    if std::path::Path::new("/proc/net/tcp").exists() {
        assert!(waiting.is_err(), "one client got past its share of the cap");
    }
    drop(held.pop());
    let n = tokio::time::timeout(TEST_TIMEOUT, fourth.read(&mut buf))
        .await
        .expect("served once one of its own closed")
        .expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200 OK"));
    drop(held);
    server.stop().await;
}

/// 256 silent connections and 64 that send half their headers, at the default cap
/// of 256: a client with the token is still answered within a second, and every
/// one of them is closed by its deadline.
#[tokio::test]
async fn silent_and_slow_connections_cannot_keep_the_owner_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.deadlines.first_request = Duration::from_millis(1500);
    config.header_read_timeout = Duration::from_millis(1500);
    let server = start(&dir, config).await;
    let addr = server.addr;
    let mut idle = Vec::new();
    for _ in 0..256 {
        idle.push(TcpStream::connect(addr).await.expect("connect"));
    }
    for _ in 0..64 {
        let mut slow = TcpStream::connect(addr).await.expect("connect");
        slow.write_all(b"GET /v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .expect("write");
        idle.push(slow);
    }
    for _ in 0..5 {
        let (status, took) = owner_request(addr).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        assert!(took < Duration::from_secs(1), "answered in {took:?}");
    }
    let closed = futures::future::join_all(
        idle.iter_mut()
            .map(|s| closed_within(s, Duration::from_millis(1500) + Duration::from_secs(2))),
    )
    .await;
    let open = closed.iter().filter(|c| !**c).count();
    assert_eq!(
        open, 0,
        "{open} silent or slow connections still open after their deadline"
    );
    server.stop().await;
}

/// Wrong tokens past a client's burst are answered late (429), while the owner's
/// requests, with the right token, are answered at once.
#[tokio::test]
async fn a_burst_of_wrong_tokens_slows_the_sender_not_the_owner() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(&dir, config()).await;
    let addr = server.addr;
    let wrong = format!(
        "GET /v1/tools HTTP/1.1\r\nHost: {BIND}\r\nAuthorization: Bearer {TOKEN}x\r\nConnection: close\r\n\r\n"
    );
    let answered = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut senders = Vec::new();
    for _ in 0..20 {
        let (wrong, answered) = (wrong.clone(), Arc::clone(&answered));
        senders.push(tokio::spawn(async move {
            let answer = raw(addr, &wrong).await;
            let status = answer.lines().next().unwrap_or_default().to_string();
            answered.lock().expect("lock").push(status);
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..5 {
        let (status, took) = owner_request(addr).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        assert!(took < Duration::from_secs(1), "the owner waited {took:?}");
    }
    let so_far = answered.lock().expect("lock").clone();
    assert_eq!(
        so_far.len(),
        10,
        "only the burst is answered at once: {so_far:?}"
    );
    assert!(
        so_far.iter().all(|s| s.starts_with("HTTP/1.1 401")),
        "{so_far:?}"
    );
    for sender in senders {
        sender.abort();
    }
    server.stop().await;
}

/// A body that stops coming is cut off at its deadline, with a JSON error.
#[tokio::test]
async fn a_body_that_stops_coming_is_cut_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.deadlines.body_read = Duration::from_millis(300);
    let server = start(&dir, config).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(
            format!(
                "POST /v1/tools/think HTTP/1.1\r\nHost: {BIND}\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"tho"
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("answered within the deadline")
        .expect("read");
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("application/json"), "{answer}");
    server.stop().await;
}

/// Every failure under /v1 and /mcp is JSON: paths that do not decode, wrong
/// methods (with Allow), bodies that are not JSON by their content type.
#[tokio::test]
async fn every_api_failure_is_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (method, uri, content_type, status) in [
        (
            "POST",
            "/v1/tools/%FF",
            Some("application/json"),
            StatusCode::BAD_REQUEST,
        ),
        (
            "POST",
            "/v1/tools/%C0%AF",
            Some("application/json"),
            StatusCode::BAD_REQUEST,
        ),
        (
            "POST",
            "/v1/tools/%c0%ae%c0%ae%2fwrite_file",
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            "GET",
            "/v1/tools/think",
            None,
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            "PUT",
            "/v1/tools/think",
            Some("application/json"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        ("DELETE", "/v1/batch", None, StatusCode::METHOD_NOT_ALLOWED),
        (
            "POST",
            "/v1/tools/think",
            Some("text/plain"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "POST",
            "/v1/tools/think",
            Some("application/x-www-form-urlencoded"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "POST",
            "/v1/batch",
            Some("multipart/form-data"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "PUT",
            "/mcp",
            Some("application/json"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        ("GET", "/v1/no/such/route", None, StatusCode::NOT_FOUND),
    ] {
        let mut builder = request(method, uri);
        if let Some(content_type) = content_type {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        let request = builder
            .body(Body::from(r#"{"thought": "x"}"#))
            .expect("request");
        let (got, headers, body) = crate::test_support::respond(app(&dir), request).await;
        assert_eq!(
            got,
            status,
            "{method} {uri}: {}",
            String::from_utf8_lossy(&body)
        );
        assert_eq!(
            headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some("application/json"),
            "{method} {uri}"
        );
        let value: Value = serde_json::from_slice(&body).expect("a JSON body");
        let message = value["error"]["message"].as_str().expect("a message");
        assert!(!message.is_empty(), "{method} {uri}: {value}");
        if status == StatusCode::METHOD_NOT_ALLOWED {
            let allow = headers[header::ALLOW].to_str().expect("text");
            assert!(
                message.contains(method) && message.contains(allow),
                "{message}"
            );
        }
    }
    // A JSON-RPC body that does not parse, sent as JSON: 400, not 415.
    for body in [
        r#"{"jsonrpc": "2.0", "id": 1, "method": "#,
        "initialize, please",
    ] {
        let request = request("POST", "/mcp")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(Body::from(body))
            .expect("request");
        let (got, headers, bytes) = crate::test_support::respond(app(&dir), request).await;
        assert_eq!(
            got,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            String::from_utf8_lossy(&bytes)
        );
        assert_eq!(
            headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
    }
    // No content type at all is taken as JSON.
    let request = request("POST", "/v1/tools/think")
        .body(Body::from(r#"{"thought": "x"}"#))
        .expect("request");
    let (got, _, _) = crate::test_support::respond(app(&dir), request).await;
    assert_eq!(got, StatusCode::OK);
}

// ---------------------------------------------------------------- MCP over HTTP

mod mcp_client {
    use rmcp::ServiceExt as _;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    use pretty_assertions::assert_eq;

    use super::*;

    #[tokio::test]
    async fn rmcp_client_lists_and_calls_tools_with_the_token() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = config();
        // The envelope is what this test reads.
        config.mcp.structured_content = crate::StructuredContent::Always;
        let server = start(&dir, config).await;
        let url = format!("http://{}/mcp", server.addr);
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN),
        );
        let client = tokio::time::timeout(TEST_TIMEOUT, ().serve(transport))
            .await
            .expect("no timeout")
            .expect("initialize");
        let tools = tokio::time::timeout(TEST_TIMEOUT, client.list_all_tools())
            .await
            .expect("no timeout")
            .expect("tools/list");
        assert_eq!(tools.len(), 35);
        let call = CallToolRequestParams::new("think").with_arguments(
            json!({ "thought": "over HTTP" })
                .as_object()
                .expect("object")
                .clone(),
        );
        let result = tokio::time::timeout(TEST_TIMEOUT, client.call_tool(call))
            .await
            .expect("no timeout")
            .expect("tools/call");
        assert_eq!(result.is_error, Some(false));
        let structured = result.structured_content.expect("structured content");
        assert_eq!(structured["data"]["thought"], "over HTTP");
        let bad = CallToolRequestParams::new("think").with_arguments(serde_json::Map::new());
        let result = tokio::time::timeout(TEST_TIMEOUT, client.call_tool(bad))
            .await
            .expect("no timeout")
            .expect("tools/call");
        assert_eq!(result.is_error, Some(true));
        tokio::time::timeout(TEST_TIMEOUT, client.cancel())
            .await
            .expect("no timeout")
            .expect("close");
        server.stop().await;
    }

    #[tokio::test]
    async fn rmcp_client_without_the_token_cannot_connect() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = start(&dir, config()).await;
        let url = format!("http://{}/mcp", server.addr);
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header("wrong"),
        );
        let connected = tokio::time::timeout(TEST_TIMEOUT, ().serve(transport))
            .await
            .expect("no timeout");
        assert!(connected.is_err());
        server.stop().await;
    }

    #[tokio::test]
    async fn sessions_over_the_cap_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = config();
        config.max_sessions = 1;
        let server = start(&dir, config).await;
        let url = format!("http://{}/mcp", server.addr);
        let connect = || {
            ().serve(StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(TOKEN),
            ))
        };
        let first = tokio::time::timeout(TEST_TIMEOUT, connect())
            .await
            .expect("no timeout")
            .expect("first session");
        let second = tokio::time::timeout(TEST_TIMEOUT, connect())
            .await
            .expect("no timeout");
        assert!(second.is_err(), "a second session past the cap");
        tokio::time::timeout(TEST_TIMEOUT, first.cancel())
            .await
            .expect("no timeout")
            .expect("close");
        server.stop().await;
    }
}

#[tokio::test]
async fn without_a_token_loopback_requests_need_none_but_host_and_origin_still_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ServeConfig::without_token(BIND.parse().expect("address"));
    let app = router(registry(&dir), &config);
    let bare = |uri: &str| {
        Request::builder()
            .method("GET")
            .uri(uri)
            .header(header::HOST, BIND)
    };
    let (status, _, body) = send(
        app.clone(),
        bare("/v1/tools").body(Body::empty()).expect("request"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let foreign = bare("/v1/tools")
        .header(header::ORIGIN, "https://evil.example")
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(app.clone(), foreign).await.0, StatusCode::FORBIDDEN);
    let rebound = Request::builder()
        .method("GET")
        .uri("/v1/tools")
        .header(header::HOST, "evil.example")
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(app, rebound).await.0, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn without_a_token_a_reachable_address_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let config = ServeConfig::without_token("0.0.0.0:8750".parse().expect("address"));
    let refused = serve_listener(listener, registry(&dir), config, std::future::pending()).await;
    let message = refused.expect_err("must refuse").to_string();
    assert!(message.contains("without a token"), "{message}");
    assert!(
        format!(
            "{:?}",
            ServeConfig::without_token(BIND.parse().expect("address"))
        )
        .contains("token: None")
    );
}

/// An `initialize` over HTTP asking for `version`: the answer's body.
async fn initialize_over_http(version: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "gemini-cli-mcp-client", "version": "0.61.0"}}});
    let (status, _, bytes) = crate::test_support::respond(
        app(&dir),
        request("POST", "/mcp")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(Body::from(body.to_string()))
            .expect("request"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// Clients of 2025-06-18 and before parse every event's data as JSON: they get no
/// priming event (empty data); 2025-11-25 clients get one, to resume streams.
#[tokio::test]
async fn priming_events_only_for_clients_that_parse_them() {
    for version in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let text = initialize_over_http(version).await;
        for event in text.split("\n\n").filter(|e| !e.trim().is_empty()) {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            assert!(
                !data.is_empty()
                    && data
                        .iter()
                        .all(|d| serde_json::from_str::<Value>(d).is_ok()),
                "{version}: an event whose data is not JSON: {event:?}"
            );
        }
        assert!(text.contains("\"serverInfo\""), "{version}: {text}");
    }
    let modern = initialize_over_http("2025-11-25").await;
    let priming = modern.split("\n\n").next().unwrap_or_default();
    assert!(
        priming.lines().any(|l| l == "id: 0") && priming.lines().any(|l| l.trim() == "data:"),
        "{modern}"
    );
    assert!(modern.contains("\"serverInfo\""), "{modern}");
}

/// A session keeps the server it was opened on, whatever revision the headers of its
/// later requests name (the conformance suite's client names another one than its
/// handshake asked for).
#[tokio::test]
async fn a_session_is_found_whatever_revision_its_requests_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let app = app(&dir);
    for (asked, named) in [("2025-11-25", "2025-06-18"), ("2025-06-18", "2025-11-25")] {
        let mcp_post = |body: Value| {
            request("POST", "/mcp")
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/json, text/event-stream")
                .body(Body::from(body.to_string()))
                .expect("request")
        };
        let init = mcp_post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {},
            "clientInfo": {"name": "suite", "version": "1"}}}),
        );
        let (status, headers, _) = crate::test_support::respond(app.clone(), init).await;
        assert_eq!(status, StatusCode::OK, "{asked}");
        let session = headers.get("mcp-session-id").expect("a session id").clone();
        let mut listed = mcp_post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        listed.headers_mut().insert("mcp-session-id", session);
        listed
            .headers_mut()
            .insert("mcp-protocol-version", HeaderValue::from_static(named));
        let (status, _, body) = crate::test_support::respond(app.clone(), listed).await;
        let body = String::from_utf8_lossy(&body);
        assert_ne!(
            status,
            StatusCode::NOT_FOUND,
            "{asked}: the session was not found: {body}"
        );
    }
}

/// Behind a load balancer without affinity, a client's session may reach a
/// replica that never opened it: every request naming it (a call, a
/// notification, the server stream, its end) is answered 404, which tells the
/// client to start a new session, never a 5xx.
#[tokio::test]
async fn a_session_another_replica_opened_is_404_for_every_method() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (opened_on, asked_on) = (app(&dir), app(&dir));
    let mcp = |method: &str, body: Option<Value>| {
        let builder = request(method, "/mcp")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        match body {
            Some(body) => builder
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => builder.body(Body::empty()),
        }
        .expect("request")
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "lb", "version": "1"}}});
    let (status, headers, _) =
        crate::test_support::respond(opened_on.clone(), mcp("POST", Some(init))).await;
    assert_eq!(status, StatusCode::OK);
    let session = headers.get("mcp-session-id").expect("a session id").clone();
    let requests = [
        (
            "tools/call",
            mcp(
                "POST",
                Some(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "think", "arguments": {"thought": "x"}}})),
            ),
        ),
        (
            "tools/list",
            mcp(
                "POST",
                Some(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})),
            ),
        ),
        (
            "a notification",
            mcp(
                "POST",
                Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            ),
        ),
        ("the server stream", mcp("GET", None)),
        ("the end of the session", mcp("DELETE", None)),
    ];
    for (what, mut request) in requests {
        request
            .headers_mut()
            .insert("mcp-session-id", session.clone());
        let (status, _, body) = crate::test_support::respond(asked_on.clone(), request).await;
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
        assert!(
            body.contains("start a new one with initialize"),
            "{what}: {body}"
        );
    }
    // The replica that opened it still serves it, and ends it (204, which every
    // SDK takes for done).
    let mut listed = mcp(
        "POST",
        Some(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})),
    );
    listed
        .headers_mut()
        .insert("mcp-session-id", session.clone());
    let (status, _, _) = crate::test_support::respond(opened_on.clone(), listed).await;
    assert_eq!(status, StatusCode::OK);
    let mut ended = mcp("DELETE", None);
    ended.headers_mut().insert("mcp-session-id", session);
    let (status, _, _) = crate::test_support::respond(opened_on, ended).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}
