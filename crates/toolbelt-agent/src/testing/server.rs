//! The HTTP/1.1 server: its own thread and tokio runtime, one task per connection.

use std::convert::Infallible;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use toolbelt_core::sync::lock;

use super::wire::{self, Context};
use super::{Consume, Recorded, Reply, Script};
use crate::provider::ProviderKind;

/// The model `GET /v1/models` lists, and answers name when a request names none.
const MODEL: &str = "scripted-model";
/// The pause after each piece of a [`Reply::chunk_bytes`] body.
const CHUNK_PAUSE: Duration = Duration::from_millis(1);
/// The pause before a cut, so the bytes before it are flushed first.
const CUT_PAUSE: Duration = Duration::from_millis(5);
/// The wait after a failed `accept` (out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// A scripted model provider serving on 127.0.0.1 (see the [module](super) docs).
///
/// Dropping it stops the server and closes its connections.
#[derive(Debug)]
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    kind: ProviderKind,
    /// Unix seconds at start: the `created` of answers, and part of request ids.
    started: i64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    script: Script,
    /// The next reply of the script.
    next: usize,
    /// The next reply of each route.
    route_next: Vec<usize>,
    recorded: Vec<Recorded>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves nothing half-done: go on.
        lock(&self.state)
    }
}

impl ScriptedServer {
    /// Binds 127.0.0.1:0 and serves `script` on its own thread with its own tokio
    /// runtime, so it works from sync tests, async tests and programs alike.
    ///
    /// # Errors
    /// When the port cannot be bound or the thread or runtime cannot start.
    pub fn start(script: Script) -> io::Result<ScriptedServer> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let shared = Arc::new(Shared {
            kind: script.kind,
            started: chrono::Utc::now().timestamp(),
            state: Mutex::new(State {
                script,
                next: 0,
                route_next: Vec::new(),
                recorded: Vec::new(),
            }),
        });
        let (shutdown, stop) = oneshot::channel();
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("scripted-provider-{}", addr.port()))
            .spawn(move || runtime.block_on(serve(listener, serving, stop)))?;
        Ok(ScriptedServer {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL as the official SDKs take it: OpenAI `http://127.0.0.1:PORT/v1`,
    /// Anthropic `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        match self.shared.kind {
            ProviderKind::OpenAi => format!("http://{}/v1", self.addr),
            ProviderKind::Anthropic => format!("http://{}", self.addr),
        }
    }

    /// The wire format it speaks.
    pub fn kind(&self) -> ProviderKind {
        self.shared.kind
    }

    /// The model requests received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.state().recorded.clone()
    }

    /// The replies of the script not used yet.
    pub fn remaining(&self) -> usize {
        let state = self.shared.state();
        state.script.replies.len().saturating_sub(state.next)
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Small writes must go out as written (chunk_bytes).
                    let _ = stream.set_nodelay(true);
                    let shared = Arc::clone(&shared);
                    tokio::spawn(async move {
                        let service = service_fn(move |request| handle(Arc::clone(&shared), request));
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            },
        }
    }
    // Returning drops the runtime with it, and every connection's task.
}

enum Route {
    Model,
    Models,
    ServerInfo,
    Requests,
    NotFound,
    MethodNotAllowed,
}

fn route(kind: ProviderKind, method: &str, path: &str) -> Route {
    let path = path.trim_end_matches('/');
    let model = match kind {
        ProviderKind::OpenAi => path == "/v1/chat/completions" || path == "/chat/completions",
        ProviderKind::Anthropic => path == "/v1/messages",
    };
    match (method, path) {
        ("POST", _) if model => Route::Model,
        (_, _) if model => Route::MethodNotAllowed,
        ("GET", "/v1/models" | "/models") => Route::Models,
        ("GET", "/_scripted/requests") => Route::Requests,
        ("GET", "/props") | ("POST", "/api/show") => Route::ServerInfo,
        _ => Route::NotFound,
    }
}

async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let kind = shared.kind;
    let method = request.method().as_str().to_string();
    let path = request.uri().path().to_string();
    match route(kind, &method, &path) {
        Route::Model => {}
        Route::Models => return Ok(simple(200, wire::models(kind, MODEL))),
        Route::ServerInfo => {
            let info = shared.state().script.server_info.clone();
            return Ok(match info {
                Some(info) => simple(200, Bytes::from(info.to_string())),
                None => error_response(&shared, 0, 404, &format!("no route for {method} {path}")),
            });
        }
        Route::Requests => {
            let state = shared.state();
            let listing = json!({
                "requests": state.recorded,
                "remaining": state.script.replies.len().saturating_sub(state.next),
            });
            return Ok(simple(200, Bytes::from(listing.to_string())));
        }
        Route::NotFound => {
            let message = format!("no route for {method} {path} (this server speaks {kind})");
            return Ok(error_response(&shared, 0, 404, &message));
        }
        Route::MethodNotAllowed => {
            let message = format!("{method} is not allowed on {path}");
            return Ok(error_response(&shared, 0, 405, &message));
        }
    }

    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let raw = match read_body(request.into_body()).await {
        Ok(raw) => raw,
        Err(e) => {
            let message = format!("the request body could not be read: {e}");
            return Ok(error_response(&shared, 0, 400, &message));
        }
    };
    let parsed = serde_json::from_slice::<Value>(&raw);
    let body = match &parsed {
        Ok(value) => value.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(&raw).into_owned()),
    };

    // Record, and pick the reply, under one lock: concurrent requests get the
    // replies in the order they were recorded.
    let (seq, reply) = {
        let mut state = shared.state();
        let reply = parsed.is_ok().then(|| pick(&mut state, &body));
        state.recorded.push(Recorded {
            method,
            path,
            headers,
            body,
        });
        (state.recorded.len() as u64, reply)
    };
    let (parsed, reply) = match (parsed, reply) {
        (Ok(parsed), Some(reply)) => (parsed, reply),
        (Err(e), _) => {
            let message = format!("the request body is not valid JSON: {e}");
            return Ok(error_response(&shared, seq, 400, &message));
        }
        (Ok(_), None) => return Ok(error_response(&shared, seq, 500, "no reply")),
    };

    if reply.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(reply.delay_ms)).await;
    }
    if let Some(error) = &reply.error {
        let body = wire::error_body(
            kind,
            error.status,
            &error.message,
            &request_id(&shared, seq),
        );
        let mut response = respond(
            &shared,
            seq,
            error.status,
            wire::JSON,
            vec![body],
            false,
            &reply,
        );
        if let Some(retry_after) = &error.retry_after
            && let Ok(value) = retry_after.parse()
        {
            response.headers_mut().insert("retry-after", value);
        }
        return Ok(response);
    }

    let stream = parsed
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let cx = Context {
        seq,
        model: parsed
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(MODEL)
            .to_string(),
        created: shared.started,
        stream,
        include_usage: parsed
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        request_bytes: raw.len(),
    };
    let rendered = wire::render(kind, &reply, &cx);
    Ok(respond(
        &shared,
        seq,
        rendered.status,
        rendered.content_type,
        rendered.frames,
        stream,
        &reply,
    ))
}

/// The reply for a request with JSON `body`; advances the script.
fn pick(state: &mut State, body: &Value) -> Reply {
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty());
    let first_user = first_user_text(body);
    if let Some(i) = state
        .script
        .routes
        .iter()
        .position(|r| !r.when.is_empty() && first_user.contains(&r.when))
    {
        if state.route_next.len() < state.script.routes.len() {
            state.route_next.resize(state.script.routes.len(), 0);
        }
        let next = state.route_next[i];
        return match state.script.routes[i].replies.get(next) {
            Some(reply) => {
                state.route_next[i] += 1;
                reply.clone()
            }
            None => state.script.when_done.clone().unwrap_or_else(|| {
                Reply::error(500, None, "the script's route has no more replies")
            }),
        };
    }
    if state.script.consume == Consume::WithTools && !has_tools {
        return state
            .script
            .side_reply
            .clone()
            .unwrap_or_else(|| Reply::text("ok"));
    }
    match state.script.replies.get(state.next) {
        Some(reply) => {
            state.next += 1;
            reply.clone()
        }
        None => state
            .script
            .when_done
            .clone()
            .unwrap_or_else(|| Reply::error(500, None, "the script has no more replies")),
    }
}

/// The text of the first user message of a request in either wire format
/// (a string, or the text parts of a list of blocks).
fn first_user_text(body: &Value) -> String {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    let Some(first) = messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    else {
        return String::new();
    };
    match first.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

async fn read_body(mut body: Incoming) -> Result<Vec<u8>, hyper::Error> {
    let mut out = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        if let Ok(data) = frame?.into_data() {
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// `req_` and 24 hex digits, as both APIs' request ids look.
fn request_id(shared: &Shared, seq: u64) -> String {
    format!("req_{:08x}{:016x}", shared.started as u32, seq)
}

fn simple(status: u16, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Body::Full(Some(body)));
    *response.status_mut() = status_code(status);
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static(wire::JSON),
    );
    response
}

fn error_response(shared: &Shared, seq: u64, status: u16, message: &str) -> Response<Body> {
    let body = wire::error_body(shared.kind, status, message, &request_id(shared, seq));
    respond(
        shared,
        seq,
        status,
        wire::JSON,
        vec![body],
        false,
        &Reply::default(),
    )
}

fn status_code(status: u16) -> hyper::StatusCode {
    hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR)
}

/// A response of `frames`, written as `reply` says (pieces, cut), with the
/// provider's headers.
fn respond(
    shared: &Shared,
    seq: u64,
    status: u16,
    content_type: &'static str,
    frames: Vec<Bytes>,
    streamed: bool,
    reply: &Reply,
) -> Response<Body> {
    let length: usize = frames.iter().map(Bytes::len).sum();
    let plain =
        reply.chunk_bytes.is_none() && reply.cut_after_bytes.is_none() && reply.body_delay_ms == 0;
    let body = if plain && !streamed {
        Body::Full(Some(frames.concat().into()))
    } else {
        let (tx, rx) = mpsc::channel(16);
        let body_delay = Duration::from_millis(reply.body_delay_ms);
        let (chunk_bytes, cut_after) = (reply.chunk_bytes, reply.cut_after_bytes);
        tokio::spawn(async move {
            tokio::time::sleep(body_delay).await;
            write_body(frames, chunk_bytes, cut_after, tx).await;
        });
        Body::Channel(rx)
    };
    let mut response = Response::new(body);
    *response.status_mut() = status_code(status);
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        hyper::header::HeaderValue::from_static(content_type),
    );
    if streamed {
        headers.insert(
            "cache-control",
            hyper::header::HeaderValue::from_static("no-cache"),
        );
    } else {
        headers.insert("content-length", length.into());
    }
    let id_header = match shared.kind {
        ProviderKind::OpenAi => "x-request-id",
        ProviderKind::Anthropic => "request-id",
    };
    if let Ok(id) = request_id(shared, seq).parse() {
        headers.insert(id_header, id);
    }
    response
}

/// Sends `frames` down the body channel: as they are, or re-cut into pieces of
/// `chunk_bytes` with a pause after each; after `cut_after` bytes, an error that
/// makes the server drop the connection.
async fn write_body(
    frames: Vec<Bytes>,
    chunk_bytes: Option<usize>,
    cut_after: Option<usize>,
    tx: mpsc::Sender<io::Result<Bytes>>,
) {
    let pieces = match chunk_bytes {
        Some(size) if size > 0 => {
            let all = Bytes::from(frames.concat());
            (0..all.len())
                .step_by(size)
                .map(|start| all.slice(start..(start + size).min(all.len())))
                .collect()
        }
        _ => frames,
    };
    let pause = chunk_bytes.is_some();
    let mut left = cut_after;
    for piece in pieces {
        let piece = match left {
            Some(n) if piece.len() >= n => {
                if n > 0 && tx.send(Ok(piece.slice(..n))).await.is_err() {
                    return;
                }
                tokio::time::sleep(CUT_PAUSE).await;
                let cut = io::Error::new(io::ErrorKind::ConnectionAborted, "cut_after_bytes");
                let _ = tx.send(Err(cut)).await;
                return;
            }
            Some(n) => {
                left = Some(n - piece.len());
                piece
            }
            None => piece,
        };
        if tx.send(Ok(piece)).await.is_err() {
            return;
        }
        if pause {
            tokio::time::sleep(CHUNK_PAUSE).await;
        }
    }
}

/// A response body: whole, or pieces from [`write_body`].
#[derive(Debug)]
enum Body {
    Full(Option<Bytes>),
    Channel(mpsc::Receiver<io::Result<Bytes>>),
}

impl HttpBody for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            Body::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Body::Channel(rx) => rx
                .poll_recv(cx)
                .map(|item| item.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Channel(_) => SizeHint::default(),
        }
    }
}
