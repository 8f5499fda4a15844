//! The checkpoint routes on a real server on 127.0.0.1, over a registry that keeps
//! checkpoints: calls through `POST /v1/tools/...` are listed with their origin,
//! diffs are shown, a restore is a dry run unless asked otherwise, conflicts are
//! 409; and the origin of calls over MCP and from the page.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolbelt_checkpoint::{Checkpoints, Settings, hash_bytes};
use toolbelt_core::{Registry, Session};
use toolbelt_store::{Location, StoreHandle};

use crate::http::api::caller_origin;
use crate::http::{HttpServeError, ServeConfig, bind, router, serve_listener};
use crate::test_support::TEST_TIMEOUT;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// A workspace and its state (the store, the checkpoints' content) apart.
struct Workspace {
    root: tempfile::TempDir,
    _state: tempfile::TempDir,
    registry: Arc<Registry>,
    checkpoints: Checkpoints,
}

fn workspace() -> Workspace {
    let root = tempfile::tempdir().expect("tempdir");
    let state = tempfile::tempdir().expect("tempdir");
    let mut registry = Registry::new(Session::new(root.path()).with_state_dir(state.path()));
    let store = StoreHandle::lazy(Location::in_state_dir(state.path()));
    toolbelt_tools::register_builtins_with(
        &mut registry,
        toolbelt_tools::BuiltinOptions {
            store: Some(store.clone()),
            ..toolbelt_tools::BuiltinOptions::default()
        },
    )
    .expect("builtins register");
    let checkpoints = Checkpoints::new(
        Settings::default(),
        store,
        state.path(),
        vec![root.path().to_path_buf()],
    );
    registry.set_checkpointer(Some(Arc::new(checkpoints.clone())));
    toolbelt_tools::register_checkpoints(&mut registry, &checkpoints).expect("register");
    Workspace {
        root,
        _state: state,
        registry: Arc::new(registry),
        checkpoints,
    }
}

struct Running {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), HttpServeError>>,
}

async fn start(ws: &Workspace, checkpoints: bool) -> Running {
    let listener = bind("127.0.0.1:0".parse().expect("address"))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let mut config = ServeConfig::new(addr, TOKEN);
    config.checkpoints = checkpoints.then(|| ws.checkpoints.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve_listener(
        listener,
        Arc::clone(&ws.registry),
        config,
        async move {
            let _ = stopped.await;
        },
    ));
    Running { addr, stop, task }
}

impl Running {
    async fn stop(self) {
        let _ = self.stop.send(());
        let result = tokio::time::timeout(TEST_TIMEOUT, self.task)
            .await
            .expect("the server stops")
            .expect("no panic");
        assert!(result.is_ok(), "{result:?}");
    }

    /// One request over a new connection, with the token: the status and the JSON
    /// body.
    async fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let auth = format!("Authorization: Bearer {TOKEN}\r\n");
        self.raw(method, path, &auth, body).await
    }

    /// One request with `headers` (each ending in `\r\n`) as they are.
    async fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &str,
        body: Option<&str>,
    ) -> (u16, Value) {
        let addr = self.addr;
        let body = body.unwrap_or_default();
        let typed = if body.is_empty() {
            String::new()
        } else {
            "Content-Type: application/json\r\n".to_string()
        };
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}{typed}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        let answer = tokio::time::timeout(TEST_TIMEOUT, async {
            let mut stream = TcpStream::connect(addr).await.expect("connect");
            stream.write_all(request.as_bytes()).await.expect("write");
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).await.expect("read");
            answer
        })
        .await
        .expect("no timeout");
        let text = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").expect("a whole answer");
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status");
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            unchunk(body)
        } else {
            body.to_string()
        };
        let json = serde_json::from_str(&body).unwrap_or(Value::String(body));
        (status, json)
    }
}

/// A chunked body's content.
fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

fn hash(path: &Path) -> String {
    hash_bytes(&std::fs::read(path).expect("read"))
}

async fn write(server: &Running, path: &str, content: &str) {
    let body = json!({"path": path, "content": content}).to_string();
    let (status, env) = server
        .call("POST", "/v1/tools/write_file", Some(&body))
        .await;
    assert_eq!(status, 200, "{env}");
    assert!(env["error"].is_null(), "{env}");
}

#[tokio::test]
async fn api_calls_are_listed_with_their_origin_and_a_restore_is_a_dry_run_first() {
    let ws = workspace();
    let server = start(&ws, true).await;
    let file = ws.root.path().join("notes.txt");
    write(&server, "notes.txt", "first\n").await;
    write(&server, "notes.txt", "second\n").await;

    let (status, page) = server.call("GET", "/v1/checkpoints", None).await;
    assert_eq!(status, 200, "{page}");
    let listed = page["checkpoints"].as_array().expect("a list");
    assert_eq!(listed.len(), 2, "{page}");
    assert_eq!(listed[0]["id"], "cp-2");
    assert_eq!(listed[0]["tool"], "write_file");
    assert_eq!(listed[0]["origin"], json!({"front_end": "api"}));
    assert_eq!(listed[0]["origin_text"], "api");
    assert_eq!(listed[0]["file_count"], 1);
    assert_eq!(page["next_before"], Value::Null);
    let (_, older) = server
        .call("GET", "/v1/checkpoints?limit=1&before=2", None)
        .await;
    assert_eq!(older["checkpoints"][0]["id"], "cp-1");
    assert_eq!(older["next_before"], 1);

    let (status, one) = server.call("GET", "/v1/checkpoints/cp-2", None).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["files"][0]["path"], "notes.txt");
    assert_eq!(one["files"][0]["change"], "modified");
    assert_eq!(one["files"][0]["after"]["hash"], json!(hash(&file)));
    let (status, diff) = server.call("GET", "/v1/checkpoints/2/diff", None).await;
    assert_eq!(status, 200, "{diff}");
    let text = diff["files"][0]["diff"].as_str().expect("a diff");
    assert!(text.contains("-first\n+second\n"), "{text}");

    // A dry run, whether the body says so or is empty: nothing changes.
    let before = hash(&file);
    for body in [None, Some("{}"), Some(r#"{"dry_run": true}"#)] {
        let (status, outcome) = server
            .call("POST", "/v1/checkpoints/cp-2/restore", body)
            .await;
        assert_eq!(status, 200, "{outcome}");
        assert_eq!(outcome["dry_run"], true);
        assert_eq!(outcome["restored"], 1);
        assert_eq!(outcome["checkpoint"], Value::Null);
        assert_eq!(outcome["plan"]["items"][0]["action"], "restore");
        assert_eq!(hash(&file), before);
    }

    let (status, outcome) = server
        .call(
            "POST",
            "/v1/checkpoints/cp-2/restore",
            Some(r#"{"dry_run": false}"#),
        )
        .await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["dry_run"], false);
    assert_eq!(outcome["checkpoint"], "cp-3");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "first\n");
    let (_, page) = server.call("GET", "/v1/checkpoints?limit=1", None).await;
    let own = &page["checkpoints"][0];
    assert_eq!(own["id"], "cp-3");
    assert_eq!(own["tool"], "rewind");
    assert_eq!(own["rewind_of"], "cp-2");
    assert_eq!(own["origin"], json!({"front_end": "api"}));
    assert_eq!(page["next_before"], 3);

    // Restoring the restore's own checkpoint undoes it.
    let (status, _) = server
        .call(
            "POST",
            "/v1/checkpoints/cp-3/restore",
            Some(r#"{"dry_run": false}"#),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "second\n");
    server.stop().await;
}

#[tokio::test]
async fn a_conflict_is_409_naming_the_files_and_changes_nothing() {
    let ws = workspace();
    let server = start(&ws, true).await;
    write(&server, "a.txt", "a\n").await;
    write(&server, "b.txt", "b\n").await;
    let b = ws.root.path().join("b.txt");
    std::fs::write(&b, "edited by hand\n").expect("write");
    for body in [r#"{"dry_run": false}"#, "{}"] {
        let (status, refused) = server
            .call("POST", "/v1/checkpoints/cp-1/restore", Some(body))
            .await;
        assert_eq!(status, 409, "{refused}");
        assert_eq!(refused["error"]["code"], "CONFLICT");
        assert_eq!(refused["conflicts"], json!(["b.txt"]));
        let message = refused["error"]["message"].as_str().expect("a message");
        assert!(message.contains("b.txt"), "{message}");
        assert_eq!(refused["plan"]["items"][1]["conflict"], true, "{refused}");
        assert!(ws.root.path().join("a.txt").exists());
        assert_eq!(
            std::fs::read_to_string(&b).expect("read"),
            "edited by hand\n"
        );
    }
    let (status, outcome) = server
        .call(
            "POST",
            "/v1/checkpoints/cp-1/restore",
            Some(r#"{"dry_run": false, "skip_conflicts": true}"#),
        )
        .await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["restored"], 1);
    assert_eq!(outcome["skipped"][0][0], "b.txt");
    assert!(!ws.root.path().join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(&b).expect("read"),
        "edited by hand\n"
    );
    server.stop().await;
}

#[tokio::test]
async fn unknown_ids_bad_bodies_and_a_server_without_checkpoints_are_refused_in_json() {
    let ws = workspace();
    let server = start(&ws, true).await;
    write(&server, "a.txt", "a\n").await;
    for (method, path, body, want, code) in [
        ("GET", "/v1/checkpoints/cp-99", None, 404, "NOT_FOUND"),
        ("GET", "/v1/checkpoints/cp-99/diff", None, 404, "NOT_FOUND"),
        (
            "POST",
            "/v1/checkpoints/cp-99/restore",
            Some("{}"),
            404,
            "NOT_FOUND",
        ),
        ("GET", "/v1/checkpoints/HEAD", None, 400, "INVALID_PARAMS"),
        (
            "GET",
            "/v1/checkpoints?limit=x",
            None,
            400,
            "INVALID_PARAMS",
        ),
        (
            "POST",
            "/v1/checkpoints/cp-1/restore",
            Some(r#"{"dryrun": false}"#),
            400,
            "INVALID_PARAMS",
        ),
        (
            "POST",
            "/v1/checkpoints/cp-1/restore",
            Some(r#"{"files": ["a["]}"#),
            400,
            "INVALID_PARAMS",
        ),
    ] {
        let (status, refused) = server.call(method, path, body).await;
        assert_eq!(
            (status, refused["error"]["code"].as_str()),
            (want, Some(code)),
            "{path}: {refused}"
        );
    }
    assert!(ws.root.path().join("a.txt").exists());
    let (status, refused) = server.raw("GET", "/v1/checkpoints", "", None).await;
    assert_eq!(status, 401, "{refused}");
    server.stop().await;

    let server = start(&ws, false).await;
    for (method, path) in [
        ("GET", "/v1/checkpoints"),
        ("GET", "/v1/checkpoints/cp-1/diff"),
        ("POST", "/v1/checkpoints/cp-1/restore"),
    ] {
        let (status, refused) = server.call(method, path, None).await;
        assert_eq!(status, 501, "{path}: {refused}");
        assert_eq!(refused["error"]["code"], "CHECKPOINTS_OFF");
        let message = refused["error"]["message"].as_str().expect("a message");
        assert!(message.contains("enabled = false"), "{message}");
    }
    server.stop().await;
}

#[tokio::test]
async fn the_pages_calls_are_web_ones() {
    let ws = workspace();
    let server = start(&ws, true).await;
    let origin = format!(
        "Origin: http://{}\r\nSec-Fetch-Site: same-origin\r\n",
        server.addr
    );
    // Log in as the page does, and call a tool with its cookie.
    let request = format!(
        "POST /login HTTP/1.1\r\nHost: {addr}\r\n{origin}Content-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\ntoken={TOKEN}",
        TOKEN.len() + 6,
        addr = server.addr,
    );
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let answer = String::from_utf8_lossy(&answer);
    let cookie = answer
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or_else(|| l.strip_prefix("Set-Cookie: "))
        })
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_string();
    let headers = format!("{origin}Cookie: {cookie}\r\n");
    let body = json!({"path": "page.txt", "content": "from the page\n"}).to_string();
    let (status, env) = server
        .raw("POST", "/v1/tools/write_file", &headers, Some(&body))
        .await;
    assert_eq!(status, 200, "{env}");
    let (status, page) = server.raw("GET", "/v1/checkpoints", &headers, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        page["checkpoints"][0]["origin"],
        json!({"front_end": "web"})
    );
    // Restored from the page: the restore's checkpoint says so too.
    let (status, outcome) = server
        .raw(
            "POST",
            "/v1/checkpoints/cp-1/restore",
            &headers,
            Some(r#"{"dry_run": false}"#),
        )
        .await;
    assert_eq!(status, 200, "{outcome}");
    assert!(!ws.root.path().join("page.txt").exists());
    let (_, page) = server.raw("GET", "/v1/checkpoints", &headers, None).await;
    assert_eq!(
        page["checkpoints"][0]["origin"],
        json!({"front_end": "web"})
    );
    server.stop().await;
}

#[test]
fn the_origin_is_the_page_only_without_a_bearer_token() {
    let headers = |pairs: &[(&'static str, &str)]| {
        let mut map = axum::http::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().expect("a value"));
        }
        map
    };
    let bearer = ("authorization", "Bearer x");
    let page = ("sec-fetch-site", "same-origin");
    assert_eq!(caller_origin(&headers(&[bearer]), true).front_end, "api");
    assert_eq!(
        caller_origin(&headers(&[bearer, page]), true).front_end,
        "api"
    );
    // Past the guard without a token: the page's session.
    assert_eq!(caller_origin(&headers(&[]), true).front_end, "web");
    // A server that asks for no token: the page tells itself by its fetches.
    assert_eq!(caller_origin(&headers(&[page]), false).front_end, "web");
    assert_eq!(caller_origin(&headers(&[]), false).front_end, "api");
    assert_eq!(caller_origin(&headers(&[]), true).token, None);
}

/// `body` as a request to `/mcp`, in `session` when given.
fn mcp_post(addr: &str, body: &Value, session: Option<&str>) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header(header::HOST, addr)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    request.body(Body::from(body.to_string())).expect("request")
}

#[tokio::test]
async fn mcp_calls_over_http_carry_their_session_and_client() {
    let ws = workspace();
    let addr = "127.0.0.1:8750";
    let mut config = ServeConfig::new(addr.parse().expect("address"), TOKEN);
    config.checkpoints = Some(ws.checkpoints.clone());
    let app = router(Arc::clone(&ws.registry), &config);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "suite-client", "version": "1"}}});
    let (status, headers, _) =
        crate::test_support::respond(app.clone(), mcp_post(addr, &init, None)).await;
    assert_eq!(status, StatusCode::OK);
    let session = headers["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) =
        crate::test_support::respond(app.clone(), mcp_post(addr, &initialized, Some(&session)))
            .await;
    assert!(status.is_success(), "{status}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "write_file", "arguments": {"path": "mcp.txt", "content": "over mcp\n"}}});
    let (status, _, body) =
        crate::test_support::respond(app.clone(), mcp_post(addr, &call, Some(&session))).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(
        ws.root.path().join("mcp.txt").exists(),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let store = ws.checkpoints.store().await.expect("store");
    let listed = toolbelt_store::list_checkpoints(store, ws.checkpoints.workspace(), None, 1)
        .await
        .expect("listed");
    let origin: Value = serde_json::from_str(&listed[0].origin).expect("JSON");
    assert_eq!(
        origin,
        json!({"front_end": "mcp-http", "session": session, "client": "suite-client"})
    );
}

#[tokio::test]
async fn mcp_calls_over_a_stream_are_mcp_ones() {
    use rmcp::ServiceExt;
    let ws = workspace();
    let server = crate::McpServer::new(Arc::clone(&ws.registry));
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = tokio::time::timeout(TEST_TIMEOUT, ().serve(client_io))
        .await
        .expect("no timeout")
        .expect("a client");
    let mut params = rmcp::model::CallToolRequestParams::new("write_file".to_owned());
    params.arguments = json!({"path": "stdio.txt", "content": "over a pipe\n"})
        .as_object()
        .cloned();
    let result = tokio::time::timeout(TEST_TIMEOUT, client.call_tool(params))
        .await
        .expect("no timeout")
        .expect("an answer");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let store = ws.checkpoints.store().await.expect("store");
    let listed = toolbelt_store::list_checkpoints(store, ws.checkpoints.workspace(), None, 1)
        .await
        .expect("listed");
    let origin: toolbelt_core::Origin = serde_json::from_str(&listed[0].origin).expect("JSON");
    assert_eq!(origin.front_end, "mcp");
    assert_eq!(origin.session, None);
    assert!(origin.client.is_some(), "{origin:?}");
    let _ = client.cancel().await;
}
