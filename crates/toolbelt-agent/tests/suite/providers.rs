//! The two providers against tiny loopback servers that write the exact bytes the
//! real APIs send: HTTP/1.1 with chunked or connection-close bodies, the events cut
//! at awkward places (mid-line, mid-JSON-string, mid-UTF-8 character) and written
//! one piece at a time, so the client reads them apart.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use toolbelt_agent::provider::anthropic::AnthropicProvider;
use toolbelt_agent::provider::openai::OpenAiProvider;
use toolbelt_agent::{
    Message, ModelCall, ModelRequest, ModelResponse, Provider, ProviderConfig, ProviderError,
    ProviderKind, RetryPolicy, Secret, StopReason, StreamEvent, ToolOutput, Usage,
};

/// The API key; no error may show it.
const KEY: &str = "sk-test-9f8e7d6c5b4a";
/// The longest any test may take.
const TEST_TIMEOUT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------
// The loopback server
// ---------------------------------------------------------------------------

/// A request as the server read it.
#[derive(Debug, Clone)]
struct Recorded {
    /// `POST /v1/chat/completions`.
    line: String,
    /// Header names in lower case.
    headers: BTreeMap<String, String>,
    body: Value,
}

/// What happens after a reply's bytes are written.
#[derive(Debug, Clone, Copy)]
enum End {
    /// The connection stays open for the next request.
    KeepAlive,
    /// The server closes the connection.
    Close,
    /// The server goes silent, the connection open.
    Hang,
}

/// One response: its bytes, written one piece at a time.
#[derive(Debug, Clone)]
struct Reply {
    pieces: Vec<Vec<u8>>,
    end: End,
}

struct Server {
    base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// Serves `replies` in order, one per request, on 127.0.0.1.
    async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                socket.set_nodelay(true).unwrap();
                tokio::spawn(connection(
                    socket,
                    Arc::clone(&replies),
                    Arc::clone(&recorded),
                ));
            }
        });
        Server { base, requests }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn connection(
    mut socket: TcpStream,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
) {
    let mut buf = Vec::new();
    while let Some(request) = read_request(&mut socket, &mut buf).await {
        requests.lock().unwrap().push(request);
        let reply = replies.lock().unwrap().pop_front().unwrap_or_else(|| {
            json_reply(
                500,
                "",
                r#"{"error":{"message":"the test server has no more replies"}}"#,
            )
        });
        for (i, piece) in reply.pieces.iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            if socket.write_all(piece).await.is_err() || socket.flush().await.is_err() {
                return;
            }
        }
        match reply.end {
            End::KeepAlive => {}
            End::Close => {
                let _ = socket.shutdown().await;
                return;
            }
            End::Hang => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
        }
    }
}

/// Reads one request (head and `Content-Length` body); `None` at the end.
async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let line = lines
        .next()
        .unwrap()
        .trim_end_matches(" HTTP/1.1")
        .to_string();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .map_or(0, |v| v.parse().unwrap());
    while buf.len() < head_end + 4 + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Vec<u8> = buf
        .drain(..head_end + 4 + length)
        .skip(head_end + 4)
        .collect();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded {
        line,
        headers,
        body,
    })
}

/// `body` cut every 23 bytes and inside its first multi-byte character.
fn cut(body: &[u8]) -> Vec<&[u8]> {
    let mut cuts: Vec<usize> = (23..body.len()).step_by(23).collect();
    if let Some(at) = body.iter().position(|b| *b >= 0x80) {
        cuts.push(at + 1);
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for at in cuts {
        pieces.push(&body[start..at]);
        start = at;
    }
    pieces.push(&body[start..]);
    pieces
}

const SSE_CHUNKED_HEAD: &str = "HTTP/1.1 200 OK\r\ndate: Tue, 24 Nov 2026 10:00:00 GMT\r\n\
     content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\
     cache-control: no-cache\r\n\r\n";
const SSE_CLOSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
     cache-control: no-cache\r\nconnection: close\r\n\r\n";

/// An event stream as chunked transfer encoding, one chunk per piece; `complete`
/// false leaves off the last chunk and closes the connection (a cut stream).
fn chunked_sse(body: &str, complete: bool) -> Reply {
    let mut pieces = vec![SSE_CHUNKED_HEAD.as_bytes().to_vec()];
    for piece in cut(body.as_bytes()) {
        let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
        chunk.extend_from_slice(piece);
        chunk.extend_from_slice(b"\r\n");
        pieces.push(chunk);
    }
    if complete {
        pieces.push(b"0\r\n\r\n".to_vec());
    }
    Reply {
        pieces,
        end: if complete { End::KeepAlive } else { End::Close },
    }
}

/// An event stream whose end is the connection's close.
fn close_sse(body: &str) -> Reply {
    let mut pieces = vec![SSE_CLOSE_HEAD.as_bytes().to_vec()];
    pieces.extend(cut(body.as_bytes()).into_iter().map(<[u8]>::to_vec));
    Reply {
        pieces,
        end: End::Close,
    }
}

/// The head and `first` events, then silence.
fn hanging_sse(first: &str) -> Reply {
    Reply {
        pieces: vec![
            SSE_CLOSE_HEAD.as_bytes().to_vec(),
            first.as_bytes().to_vec(),
        ],
        end: End::Hang,
    }
}

/// A JSON response with `Content-Length`; `headers` are extra header lines.
fn json_reply(status: u16, headers: &str, body: &str) -> Reply {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Site Overloaded",
        _ => "Whatever",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n{headers}\
         content-length: {}\r\n\r\n",
        body.len()
    );
    Reply {
        pieces: vec![head.into_bytes(), body.as_bytes().to_vec()],
        end: End::KeepAlive,
    }
}

// ---------------------------------------------------------------------------
// The answers, as the APIs write them
// ---------------------------------------------------------------------------

/// OpenAI `data:` lines for `chunks` (`choices[0]` objects, or whole chunks when
/// they have `choices`), then `[DONE]` when `done`.
fn openai_sse(chunks: &[Value], done: bool) -> String {
    let mut out = String::new();
    for c in chunks {
        let chunk = if c.get("choices").is_some() {
            c.clone()
        } else {
            json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1_764_000_000,
                   "model": "gpt-test", "choices": [c], "usage": null})
        };
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out
}

fn delta(d: Value) -> Value {
    json!({"index": 0, "delta": d, "logprobs": null, "finish_reason": null})
}

fn finish(reason: &str) -> Value {
    json!({"index": 0, "delta": {}, "logprobs": null, "finish_reason": reason})
}

fn openai_usage(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1_764_000_000,
           "model": "gpt-test", "choices": [],
           "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                     "total_tokens": prompt + completion,
                     "prompt_tokens_details": {"cached_tokens": cached}}})
}

/// The text answer `Héllo, wörld — 日本語!` in three deltas.
fn openai_text_answer(done: bool) -> String {
    openai_sse(
        &[
            delta(json!({"role": "assistant", "content": ""})),
            delta(json!({"content": "Héllo, "})),
            delta(json!({"content": "wörld — "})),
            delta(json!({"content": "日本語!"})),
            finish("stop"),
            openai_usage(12, 6, 4),
        ],
        done,
    )
}

/// Anthropic `event:` / `data:` pairs.
fn anthropic_sse(events: &[Value]) -> String {
    let mut out = String::new();
    for e in events {
        let name = e["type"].as_str().unwrap();
        out.push_str(&format!("event: {name}\ndata: {e}\n\n"));
    }
    out
}

fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_01", "type": "message",
        "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": 10, "cache_creation_input_tokens": 3,
        "cache_read_input_tokens": 7, "output_tokens": 1}}})
}

fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn block_delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
           "usage": {"output_tokens": output}})
}

/// Thinking, then `Héllo, wörld — 日本語!`; without `message_stop` unless `complete`.
fn anthropic_text_answer(complete: bool) -> String {
    let mut events = vec![
        message_start(),
        block_start(0, json!({"type": "thinking", "thinking": ""})),
        block_delta(
            0,
            json!({"type": "thinking_delta", "thinking": "Greet them."}),
        ),
        block_delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        ),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        json!({"type": "ping"}),
        block_delta(1, json!({"type": "text_delta", "text": "Héllo, "})),
        block_delta(1, json!({"type": "text_delta", "text": "wörld — "})),
        block_delta(1, json!({"type": "text_delta", "text": "日本語!"})),
        block_stop(1),
        message_delta("end_turn", 6),
    ];
    if complete {
        events.push(json!({"type": "message_stop"}));
    }
    anthropic_sse(&events)
}

// ---------------------------------------------------------------------------
// Calling
// ---------------------------------------------------------------------------

fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_millis(50),
    }
}

fn config(kind: ProviderKind, base: &str, retry: RetryPolicy) -> ProviderConfig {
    let model = match kind {
        ProviderKind::OpenAi => "gpt-test",
        ProviderKind::Anthropic => "claude-test",
    };
    let mut c = ProviderConfig::new(kind, model);
    c.base_url = match kind {
        ProviderKind::OpenAi => format!("{base}/v1/"),
        ProviderKind::Anthropic => base.to_string(),
    };
    c.api_key = Some(Secret::new(KEY));
    c.max_tokens = 256;
    c.retry = retry;
    c.idle_timeout = Duration::from_secs(5);
    c.connect_timeout = Duration::from_secs(2);
    c
}

fn provider(config: ProviderConfig) -> Box<dyn Provider> {
    match config.kind {
        ProviderKind::OpenAi => Box::new(OpenAiProvider::new(config).unwrap()),
        ProviderKind::Anthropic => Box::new(AnthropicProvider::new(config).unwrap()),
    }
}

fn hello() -> ModelRequest {
    ModelRequest {
        system: String::new(),
        messages: vec![Message::user("Say hello.")],
        tools: None,
        max_tokens: None,
        stop: Vec::new(),
        constraint: None,
    }
}

/// Runs one call; returns its result and the events it reported.
async fn call_with(
    provider: &dyn Provider,
    request: &ModelRequest,
    cancel: &CancellationToken,
) -> (Result<ModelResponse, ProviderError>, Vec<StreamEvent>) {
    let events = Mutex::new(Vec::new());
    let sink = |e: StreamEvent| events.lock().unwrap().push(e);
    let result = tokio::time::timeout(TEST_TIMEOUT, provider.complete(request, &sink, cancel))
        .await
        .expect("the call timed out");
    (result, events.into_inner().unwrap())
}

async fn call(
    provider: &dyn Provider,
    request: &ModelRequest,
) -> (Result<ModelResponse, ProviderError>, Vec<StreamEvent>) {
    call_with(provider, request, &CancellationToken::new()).await
}

fn text(t: &str) -> StreamEvent {
    StreamEvent::TextDelta { text: t.into() }
}

fn retries(events: &[StreamEvent]) -> Vec<StreamEvent> {
    events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Retrying { .. }))
        .cloned()
        .collect()
}

/// Runs a test body under [`TEST_TIMEOUT`].
async fn timed(body: impl Future<Output = ()>) {
    tokio::time::timeout(TEST_TIMEOUT, body)
        .await
        .expect("the test timed out");
}

/// The hello answer both providers give, with each one's usage.
fn hello_response(usage: Usage, reasoning: &str) -> ModelResponse {
    ModelResponse {
        content: "Héllo, wörld — 日本語!".into(),
        reasoning: reasoning.into(),
        tool_calls: vec![],
        stop_reason: StopReason::EndTurn,
        usage,
    }
}

fn openai_hello_usage() -> Usage {
    Usage {
        input_tokens: 12,
        output_tokens: 6,
        cached_tokens: 4,
        cache_write_tokens: 0,
    }
}

fn anthropic_hello_usage() -> Usage {
    Usage {
        input_tokens: 20,
        output_tokens: 6,
        cached_tokens: 7,
        cache_write_tokens: 3,
    }
}

/// The answer `kind` streams for [`hello`], as a complete reply.
fn hello_reply(kind: ProviderKind) -> Reply {
    match kind {
        ProviderKind::OpenAi => chunked_sse(&openai_text_answer(true), true),
        ProviderKind::Anthropic => chunked_sse(&anthropic_text_answer(true), true),
    }
}

fn hello_expected(kind: ProviderKind) -> ModelResponse {
    match kind {
        ProviderKind::OpenAi => hello_response(openai_hello_usage(), ""),
        ProviderKind::Anthropic => hello_response(anthropic_hello_usage(), "Greet them."),
    }
}

/// The error body `kind` sends with `message`.
fn error_body(kind: ProviderKind, kind_name: &str, message: &str) -> String {
    match kind {
        ProviderKind::OpenAi => json!({"error": {"message": message, "type": kind_name,
                                                  "param": null, "code": null}})
        .to_string(),
        ProviderKind::Anthropic => json!({"type": "error",
            "error": {"type": kind_name, "message": message}})
        .to_string(),
    }
}

// ---------------------------------------------------------------------------
// Streamed answers
// ---------------------------------------------------------------------------

#[tokio::test]
async fn openai_streams_text_with_usage_in_the_last_chunk() {
    timed(async {
        let server = Server::start(vec![hello_reply(ProviderKind::OpenAi)]).await;
        let p = provider(config(ProviderKind::OpenAi, &server.base, fast_retry(1)));
        let (result, events) = call(p.as_ref(), &hello()).await;
        assert_eq!(result.unwrap(), hello_expected(ProviderKind::OpenAi));
        assert_eq!(
            events,
            vec![text("Héllo, "), text("wörld — "), text("日本語!")]
        );
    })
    .await;
}

#[tokio::test]
async fn anthropic_streams_thinking_and_text_with_usage() {
    timed(async {
        // A connection-close body this time.
        let server = Server::start(vec![close_sse(&anthropic_text_answer(true))]).await;
        let p = provider(config(ProviderKind::Anthropic, &server.base, fast_retry(1)));
        let (result, events) = call(p.as_ref(), &hello()).await;
        assert_eq!(result.unwrap(), hello_expected(ProviderKind::Anthropic));
        assert_eq!(
            events,
            vec![
                StreamEvent::ReasoningDelta {
                    text: "Greet them.".into()
                },
                text("Héllo, "),
                text("wörld — "),
                text("日本語!"),
            ]
        );
        assert_eq!(server.requests()[0].line, "POST /v1/messages");
    })
    .await;
}

fn two_calls() -> Vec<ModelCall> {
    vec![
        ModelCall {
            id: "call_a".into(),
            name: "read_file".into(),
            arguments: r#"{"path": "src/maïn.rs"}"#.into(),
        },
        ModelCall {
            id: "call_b".into(),
            name: "grep".into(),
            arguments: r#"{"pattern": "fn main", "glob": "*.rs"}"#.into(),
        },
    ]
}

fn started(index: usize, name: &str) -> StreamEvent {
    StreamEvent::ToolCallStarted {
        index,
        name: name.into(),
    }
}

#[tokio::test]
async fn openai_puts_together_parallel_tool_calls_split_mid_string() {
    timed(async {
        let more = |index: u64, f: Value| json!({"tool_calls": [{"index": index, "function": f}]});
        let body = openai_sse(
            &[
                delta(
                    json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                    "id": "call_a", "type": "function",
                    "function": {"name": "read_file", "arguments": ""}}]}),
                ),
                delta(more(0, json!({"arguments": "{\"path\": \"sr"}))),
                delta(
                    json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                    "function": {"name": "grep", "arguments": "{\"pattern\": \"fn"}}]}),
                ),
                delta(more(0, json!({"arguments": "c/ma\u{ef}"}))),
                delta(more(
                    1,
                    json!({"arguments": " main\", \"glob\": \"*.rs\"}"}),
                )),
                delta(more(0, json!({"arguments": "n.rs\"}"}))),
                finish("tool_calls"),
                openai_usage(40, 30, 0),
            ],
            true,
        );
        let server = Server::start(vec![chunked_sse(&body, true)]).await;
        let p = provider(config(ProviderKind::OpenAi, &server.base, fast_retry(1)));
        let (result, events) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            result.unwrap(),
            ModelResponse {
                content: String::new(),
                reasoning: String::new(),
                tool_calls: two_calls(),
                stop_reason: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 40,
                    output_tokens: 30,
                    ..Usage::default()
                },
            }
        );
        assert_eq!(events, vec![started(0, "read_file"), started(1, "grep")]);
    })
    .await;
}

#[tokio::test]
async fn anthropic_puts_together_tool_calls_split_mid_string() {
    timed(async {
        let json_delta = |i: u64, s: &str| {
            block_delta(i, json!({"type": "input_json_delta", "partial_json": s}))
        };
        let tool = |id: &str, name: &str| {
            json!({"type": "tool_use", "id": id, "name": name,
                                                 "input": {}})
        };
        let body = anthropic_sse(&[
            message_start(),
            block_start(0, json!({"type": "text", "text": ""})),
            block_delta(0, json!({"type": "text_delta", "text": "Looking."})),
            block_stop(0),
            block_start(1, tool("call_a", "read_file")),
            json_delta(1, ""),
            json_delta(1, "{\"path\": \"sr"),
            json_delta(1, "c/ma\u{ef}n.rs\"}"),
            block_stop(1),
            block_start(2, tool("call_b", "grep")),
            json_delta(2, "{\"pattern\": \"fn"),
            json_delta(2, " main\", \"glob\": \"*.rs\"}"),
            block_stop(2),
            block_start(3, tool("call_c", "list_todos")),
            block_stop(3),
            message_delta("tool_use", 50),
            json!({"type": "message_stop"}),
        ]);
        let server = Server::start(vec![chunked_sse(&body, true)]).await;
        let p = provider(config(ProviderKind::Anthropic, &server.base, fast_retry(1)));
        let (result, events) = call(p.as_ref(), &hello()).await;
        let mut calls = two_calls();
        calls.push(ModelCall {
            id: "call_c".into(),
            name: "list_todos".into(),
            arguments: "{}".into(),
        });
        assert_eq!(
            result.unwrap(),
            ModelResponse {
                content: "Looking.".into(),
                reasoning: String::new(),
                tool_calls: calls,
                stop_reason: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 20,
                    output_tokens: 50,
                    cached_tokens: 7,
                    cache_write_tokens: 3,
                },
            }
        );
        assert_eq!(
            events,
            vec![
                text("Looking."),
                started(0, "read_file"),
                started(1, "grep"),
                started(2, "list_todos"),
            ]
        );
    })
    .await;
}

// ---------------------------------------------------------------------------
// Requests as sent
// ---------------------------------------------------------------------------

/// A conversation with tool results (one an error), then more words.
fn conversation() -> ModelRequest {
    ModelRequest {
        system: "You are terse.".into(),
        messages: vec![
            Message::user("Where is main?"),
            Message::Assistant {
                content: String::new(),
                tool_calls: two_calls(),
            },
            Message::Tool {
                results: vec![
                    ToolOutput {
                        call_id: "call_a".into(),
                        name: "read_file".into(),
                        content: "fn main() {}".into(),
                        is_error: false,
                    },
                    ToolOutput {
                        call_id: "call_b".into(),
                        name: "grep".into(),
                        content: "NOT_FOUND: no such glob".into(),
                        is_error: true,
                    },
                ],
            },
            Message::user("Also: be brief."),
            Message::assistant("In src/maïn.rs."),
            Message::user("Thanks."),
            Message::user("Bye."),
        ],
        tools: Some(Arc::new(
            json!([{"name": "read_file", "description": "Reads a file.",
            "input_schema": {"type": "object"}}]),
        )),
        max_tokens: Some(100),
        stop: Vec::new(),
        constraint: None,
    }
}

#[tokio::test]
async fn openai_sends_roles_tools_and_stream_options() {
    timed(async {
        let server = Server::start(vec![hello_reply(ProviderKind::OpenAi)]).await;
        let p = provider(config(ProviderKind::OpenAi, &server.base, fast_retry(1)));
        let request = conversation();
        call(p.as_ref(), &request).await.0.unwrap();
        let sent = &server.requests()[0];
        assert_eq!(sent.line, "POST /v1/chat/completions");
        assert_eq!(sent.headers["authorization"], format!("Bearer {KEY}"));
        assert_eq!(sent.headers["content-type"], "application/json");
        assert_eq!(
            sent.body,
            json!({
                "model": "gpt-test",
                "messages": [
                    {"role": "system", "content": "You are terse."},
                    {"role": "user", "content": "Where is main?"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_a", "type": "function", "function":
                            {"name": "read_file", "arguments": "{\"path\": \"src/maïn.rs\"}"}},
                        {"id": "call_b", "type": "function", "function":
                            {"name": "grep",
                             "arguments": "{\"pattern\": \"fn main\", \"glob\": \"*.rs\"}"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_a", "content": "fn main() {}"},
                    {"role": "tool", "tool_call_id": "call_b",
                     "content": "NOT_FOUND: no such glob"},
                    {"role": "user", "content": "Also: be brief."},
                    {"role": "assistant", "content": "In src/maïn.rs."},
                    {"role": "user", "content": "Thanks."},
                    {"role": "user", "content": "Bye."},
                ],
                "tools": request.tools.as_deref().unwrap(),
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 100,
            })
        );
    })
    .await;
}

#[tokio::test]
async fn anthropic_sends_blocks_merges_roles_and_does_not_double_v1() {
    timed(async {
        let server = Server::start(vec![hello_reply(ProviderKind::Anthropic)]).await;
        let mut c = config(ProviderKind::Anthropic, &server.base, fast_retry(1));
        c.base_url = format!("{}/v1/", server.base);
        let p = provider(c);
        let mut request = conversation();
        request.max_tokens = None;
        call(p.as_ref(), &request).await.0.unwrap();
        let sent = &server.requests()[0];
        assert_eq!(sent.line, "POST /v1/messages");
        assert_eq!(sent.headers["x-api-key"], KEY);
        assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
        assert_eq!(sent.headers["content-type"], "application/json");
        assert!(!sent.headers.contains_key("authorization"));
        assert_eq!(
            sent.body,
            json!({
                "model": "claude-test",
                "max_tokens": 256,
                "system": "You are terse.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Where is main?"}]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "call_a", "name": "read_file",
                         "input": {"path": "src/maïn.rs"}},
                        {"type": "tool_use", "id": "call_b", "name": "grep",
                         "input": {"pattern": "fn main", "glob": "*.rs"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call_a",
                         "content": "fn main() {}"},
                        {"type": "tool_result", "tool_use_id": "call_b",
                         "content": "NOT_FOUND: no such glob", "is_error": true},
                        {"type": "text", "text": "Also: be brief."},
                    ]},
                    {"role": "assistant", "content": [{"type": "text", "text": "In src/maïn.rs."}]},
                    {"role": "user", "content": [
                        {"type": "text", "text": "Thanks."},
                        {"type": "text", "text": "Bye."},
                    ]},
                ],
                "tools": request.tools.as_deref().unwrap(),
                "stream": true,
            })
        );
    })
    .await;
}

#[tokio::test]
async fn no_key_sends_no_auth_header_and_no_system() {
    timed(async {
        for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
            let server = Server::start(vec![hello_reply(kind)]).await;
            let mut c = config(kind, &server.base, fast_retry(1));
            c.api_key = None;
            call(provider(c).as_ref(), &hello()).await.0.unwrap();
            let sent = &server.requests()[0];
            assert!(!sent.headers.contains_key("authorization"), "{kind}");
            assert!(!sent.headers.contains_key("x-api-key"), "{kind}");
            assert!(sent.body.get("tools").is_none(), "{kind}");
            match kind {
                ProviderKind::OpenAi => assert_eq!(
                    sent.body["messages"],
                    json!([{"role": "user", "content": "Say hello."}])
                ),
                ProviderKind::Anthropic => assert!(sent.body.get("system").is_none()),
            }
        }
    })
    .await;
}

// ---------------------------------------------------------------------------
// Retries and errors
// ---------------------------------------------------------------------------

async fn retry_after_is_honoured(kind: ProviderKind) {
    let body = error_body(kind, "rate_limit_error", "Rate limited, slow down");
    let server = Server::start(vec![
        json_reply(429, "retry-after: 1\r\n", &body),
        hello_reply(kind),
    ])
    .await;
    let mut c = config(kind, &server.base, fast_retry(3));
    c.retry.max_delay = Duration::from_secs(5);
    c.retry.max_retry_after = Duration::from_secs(5);
    let p = provider(c);
    let started = Instant::now();
    let (result, events) = call(p.as_ref(), &hello()).await;
    let elapsed = started.elapsed();
    assert_eq!(result.unwrap(), hello_expected(kind));
    assert_eq!(
        retries(&events),
        vec![StreamEvent::Retrying {
            attempt: 2,
            wait_ms: 1000,
            reason: "HTTP 429: Rate limited, slow down".into(),
        }]
    );
    assert!(
        elapsed >= Duration::from_millis(950) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn openai_429_retry_after_is_honoured() {
    timed(retry_after_is_honoured(ProviderKind::OpenAi)).await;
}

#[tokio::test]
async fn anthropic_429_retry_after_is_honoured() {
    timed(retry_after_is_honoured(ProviderKind::Anthropic)).await;
}

async fn server_errors_give_up_after_max_attempts(kind: ProviderKind) {
    let body = error_body(kind, "api_error", "The server had an error");
    let replies = vec![json_reply(500, "", &body); 3];
    let server = Server::start(replies).await;
    let p = provider(config(kind, &server.base, fast_retry(2)));
    let (result, events) = call(p.as_ref(), &hello()).await;
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{kind} answered HTTP 500 (after 2 attempts): The server had an error")
    );
    assert!(matches!(
        err,
        ProviderError::Status { status: 500, attempts: 2, ref message, .. }
            if message == "The server had an error"
    ));
    assert_eq!(server.requests().len(), 2);
    let retrying = retries(&events);
    let [
        StreamEvent::Retrying {
            attempt,
            wait_ms,
            reason,
        },
    ] = &retrying[..]
    else {
        panic!("{events:?}")
    };
    assert_eq!(
        (*attempt, reason.as_str()),
        (2, "HTTP 500: The server had an error")
    );
    assert!((7..=10).contains(wait_ms), "{wait_ms}");
}

#[tokio::test]
async fn openai_500_gives_up_after_max_attempts() {
    timed(server_errors_give_up_after_max_attempts(
        ProviderKind::OpenAi,
    ))
    .await;
}

#[tokio::test]
async fn anthropic_500_gives_up_after_max_attempts() {
    timed(server_errors_give_up_after_max_attempts(
        ProviderKind::Anthropic,
    ))
    .await;
}

async fn bad_request_fails_at_once(kind: ProviderKind) {
    let message = "prompt is too long: 210000 tokens > 200000 maximum";
    let body = error_body(kind, "invalid_request_error", message);
    let server = Server::start(vec![json_reply(400, "", &body), hello_reply(kind)]).await;
    let p = provider(config(kind, &server.base, fast_retry(3)));
    let (result, events) = call(p.as_ref(), &hello()).await;
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{kind} answered HTTP 400: {message}")
    );
    assert!(err.is_context_overflow());
    assert_eq!(events, vec![]);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn openai_400_fails_at_once() {
    timed(bad_request_fails_at_once(ProviderKind::OpenAi)).await;
}

#[tokio::test]
async fn anthropic_400_fails_at_once() {
    timed(bad_request_fails_at_once(ProviderKind::Anthropic)).await;
}

#[tokio::test]
async fn retry_after_past_max_delay_gives_up_at_once() {
    timed(async {
        let body = error_body(ProviderKind::OpenAi, "rate_limit_exceeded", "Slow down");
        let server = Server::start(vec![json_reply(429, "retry-after: 120\r\n", &body)]).await;
        let p = provider(config(ProviderKind::OpenAi, &server.base, fast_retry(3)));
        let (result, events) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            result.unwrap_err().to_string(),
            "openai answered HTTP 429: Slow down (the provider asked to wait 120 s before \
             trying again, longer than the 50 ms this client waits)"
        );
        assert_eq!(events, vec![]);
        assert_eq!(server.requests().len(), 1);
    })
    .await;
}

/// The answer that breaks off, for `kind`: mid-text, before its end event.
fn cut_reply(kind: ProviderKind) -> Reply {
    match kind {
        ProviderKind::OpenAi => {
            let body = openai_sse(
                &[
                    delta(json!({"role": "assistant", "content": ""})),
                    delta(json!({"content": "Héllo, "})),
                ],
                false,
            );
            // Chunked, and the last chunk never comes.
            chunked_sse(&body, false)
        }
        ProviderKind::Anthropic => {
            let body = anthropic_sse(&[
                message_start(),
                block_start(0, json!({"type": "text", "text": ""})),
                block_delta(0, json!({"type": "text_delta", "text": "Héllo, "})),
            ]);
            // A connection-close body that closes too soon.
            close_sse(&body)
        }
    }
}

async fn cut_stream_is_retried_then_reported(kind: ProviderKind) {
    // Cut, then whole: the answer is the second one's alone.
    let server = Server::start(vec![cut_reply(kind), hello_reply(kind)]).await;
    let p = provider(config(kind, &server.base, fast_retry(2)));
    let (result, events) = call(p.as_ref(), &hello()).await;
    assert_eq!(result.unwrap(), hello_expected(kind));
    let retrying = retries(&events);
    assert_eq!(retrying.len(), 1, "{events:?}");
    let StreamEvent::Retrying {
        attempt, reason, ..
    } = &retrying[0]
    else {
        unreachable!()
    };
    assert_eq!(*attempt, 2);
    assert!(reason.starts_with("the stream ended early"), "{reason}");
    assert!(reason.ends_with("what streamed so far is void"), "{reason}");

    // Cut every time: an error, never an answer.
    let server = Server::start(vec![cut_reply(kind), cut_reply(kind), hello_reply(kind)]).await;
    let p = provider(config(kind, &server.base, fast_retry(2)));
    let (result, _) = call(p.as_ref(), &hello()).await;
    let err = result.unwrap_err();
    assert!(
        matches!(err, ProviderError::Stream { attempts: 2, provider, .. } if provider == kind),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with(&format!(
            "{kind}'s answer could not be read (after 2 attempts)"
        )),
        "{err}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn openai_cut_stream_is_retried_then_reported() {
    timed(cut_stream_is_retried_then_reported(ProviderKind::OpenAi)).await;
}

#[tokio::test]
async fn anthropic_cut_stream_is_retried_then_reported() {
    timed(cut_stream_is_retried_then_reported(ProviderKind::Anthropic)).await;
}

#[tokio::test]
async fn openai_error_inside_the_stream_is_an_error() {
    timed(async {
        let body = format!(
            "{}data: {}\n\n",
            openai_sse(&[delta(json!({"content": "Hé"}))], false),
            json!({"error": {"message": "Invalid prompt: flagged", "type": "invalid_request_error",
                             "code": null}})
        );
        let server = Server::start(vec![chunked_sse(&body, true)]).await;
        let p = provider(config(ProviderKind::OpenAi, &server.base, fast_retry(3)));
        let (result, _) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            result.unwrap_err().to_string(),
            "openai answered HTTP 400: Invalid prompt: flagged"
        );
        assert_eq!(server.requests().len(), 1);
    })
    .await;
}

#[tokio::test]
async fn anthropic_overloaded_error_event_is_retried_like_529() {
    timed(async {
        let overloaded = format!(
            "{}event: error\ndata: {}\n\n",
            anthropic_sse(&[message_start()]),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        );
        let invalid = format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "error": {"type": "invalid_request_error",
                                              "message": "messages: roles must alternate"}})
        );
        let server = Server::start(vec![
            chunked_sse(&overloaded, true),
            hello_reply(ProviderKind::Anthropic),
            chunked_sse(&invalid, true),
        ])
        .await;
        let p = provider(config(ProviderKind::Anthropic, &server.base, fast_retry(3)));
        let (result, events) = call(p.as_ref(), &hello()).await;
        assert_eq!(result.unwrap(), hello_expected(ProviderKind::Anthropic));
        assert!(
            matches!(&retries(&events)[..], [StreamEvent::Retrying { attempt: 2, reason, .. }]
                if reason == "HTTP 529: Overloaded"),
            "{events:?}"
        );
        let (result, _) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            result.unwrap_err().to_string(),
            "anthropic answered HTTP 400: messages: roles must alternate"
        );
        assert_eq!(server.requests().len(), 3);
    })
    .await;
}

// ---------------------------------------------------------------------------
// Plain JSON answers, cancellation, configuration, secrecy
// ---------------------------------------------------------------------------

#[tokio::test]
async fn openai_reads_a_plain_json_answer() {
    timed(async {
        let body = json!({
            "id": "chatcmpl-9", "object": "chat.completion", "created": 1_764_000_000,
            "model": "gpt-test",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Reading.", "reasoning_content": "Hm.",
                "tool_calls": [{"type": "function",
                                "function": {"name": "read_file",
                                             "arguments": "{\"path\":\"a\"}"}}]}}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
        });
        let server = Server::start(vec![json_reply(200, "", &body.to_string())]).await;
        let p = provider(config(ProviderKind::OpenAi, &server.base, fast_retry(1)));
        let (result, events) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            result.unwrap(),
            ModelResponse {
                content: "Reading.".into(),
                reasoning: "Hm.".into(),
                tool_calls: vec![ModelCall {
                    id: "call_0".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                }],
                stop_reason: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 9,
                    output_tokens: 4,
                    ..Usage::default()
                },
            }
        );
        assert_eq!(
            events,
            vec![
                text("Reading."),
                StreamEvent::ReasoningDelta { text: "Hm.".into() },
                started(0, "read_file"),
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn anthropic_reads_a_plain_json_answer() {
    timed(async {
        let body = json!({
            "id": "msg_02", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                 "input": {"path": "a"}},
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 9, "output_tokens": 4}
        });
        let server = Server::start(vec![json_reply(200, "", &body.to_string())]).await;
        let p = provider(config(ProviderKind::Anthropic, &server.base, fast_retry(1)));
        let (result, _) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            result.unwrap(),
            ModelResponse {
                content: "Reading.".into(),
                reasoning: String::new(),
                tool_calls: vec![ModelCall {
                    id: "toolu_1".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                }],
                stop_reason: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 9,
                    output_tokens: 4,
                    ..Usage::default()
                },
            }
        );
    })
    .await;
}

async fn cancel_during_a_slow_stream(kind: ProviderKind) {
    let first = match kind {
        ProviderKind::OpenAi => openai_sse(&[delta(json!({"content": "Hél"}))], false),
        ProviderKind::Anthropic => anthropic_sse(&[
            message_start(),
            block_start(0, json!({"type": "text", "text": ""})),
            block_delta(0, json!({"type": "text_delta", "text": "Hél"})),
        ]),
    };
    let server = Server::start(vec![hanging_sse(&first)]).await;
    let p = provider(config(kind, &server.base, fast_retry(3)));
    let cancel = CancellationToken::new();
    let events = Mutex::new(Vec::new());
    let sink = |e: StreamEvent| {
        if matches!(e, StreamEvent::TextDelta { .. }) {
            cancel.cancel();
        }
        events.lock().unwrap().push(e);
    };
    let request = hello();
    let started = Instant::now();
    let result = p.complete(&request, &sink, &cancel).await;
    assert!(
        matches!(result, Err(ProviderError::Cancelled)),
        "{result:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(events.into_inner().unwrap(), vec![text("Hél")]);
}

#[tokio::test]
async fn openai_cancel_during_a_slow_stream() {
    timed(cancel_during_a_slow_stream(ProviderKind::OpenAi)).await;
}

#[tokio::test]
async fn anthropic_cancel_during_a_slow_stream() {
    timed(cancel_during_a_slow_stream(ProviderKind::Anthropic)).await;
}

#[tokio::test]
async fn cancel_during_a_backoff_wait() {
    timed(async {
        let body = error_body(ProviderKind::OpenAi, "rate_limit_exceeded", "Slow down");
        let server = Server::start(vec![json_reply(429, "retry-after: 30\r\n", &body)]).await;
        let mut c = config(ProviderKind::OpenAi, &server.base, fast_retry(3));
        c.retry.max_delay = Duration::from_secs(60);
        c.retry.max_retry_after = Duration::from_secs(60);
        let p = provider(c);
        let cancel = CancellationToken::new();
        let sink = |e: StreamEvent| {
            if matches!(e, StreamEvent::Retrying { .. }) {
                cancel.cancel();
            }
        };
        let request = hello();
        let started = Instant::now();
        let result = p.complete(&request, &sink, &cancel).await;
        assert!(
            matches!(result, Err(ProviderError::Cancelled)),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    })
    .await;
}

#[tokio::test]
async fn base_urls_must_be_http() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        for bad in ["ftp://example.com/v1", "localhost:8080", "", "http://"] {
            let mut c = ProviderConfig::new(kind, "m");
            c.base_url = bad.into();
            let err = match kind {
                ProviderKind::OpenAi => OpenAiProvider::new(c).map(|_| ()),
                ProviderKind::Anthropic => AnthropicProvider::new(c).map(|_| ()),
            }
            .unwrap_err();
            assert!(
                matches!(
                    err,
                    ProviderError::Config(_) | ProviderError::BaseUrl { .. }
                ),
                "{kind} {bad}: {err:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_key_no_header_can_carry_is_refused_by_name() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let mut c = ProviderConfig::new(kind, "m");
        c.api_key = Some(Secret::new("line\nbreak"));
        let err = match kind {
            ProviderKind::OpenAi => OpenAiProvider::new(c).map(|_| ()),
            ProviderKind::Anthropic => AnthropicProvider::new(c).map(|_| ()),
        }
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("the {kind} API key contains characters an HTTP header cannot carry")
        );
    }
}

#[tokio::test]
async fn the_key_never_shows_in_errors() {
    timed(async {
        for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
            let mut shown = Vec::new();
            // A server that echoes the key.
            let body = error_body(
                kind,
                "authentication_error",
                &format!("Incorrect API key provided: {KEY}"),
            );
            let server = Server::start(vec![json_reply(401, "", &body)]).await;
            let p = provider(config(kind, &server.base, fast_retry(2)));
            shown.push(format!("{p:?}"));
            let err = call(p.as_ref(), &hello()).await.0.unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{kind} answered HTTP 401: Incorrect API key provided: ***")
            );
            shown.push(format!("{err} {err:?}"));

            // Nobody listening, the key in the URL's user info and query too.
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            drop(listener);
            let base = format!("http://user:{KEY}@{addr}?key={KEY}");
            let p = provider(config(kind, &base, fast_retry(2)));
            let (result, events) = call(p.as_ref(), &hello()).await;
            let err = result.unwrap_err();
            assert!(
                matches!(err, ProviderError::Connection { attempts: 2, .. }),
                "{err:?}"
            );
            shown.push(format!("{err} {err:?} {events:?}"));

            // A base URL that is not http.
            let mut c = config(kind, &format!("ftp://u:{KEY}@x/?key={KEY}"), fast_retry(1));
            c.base_url = format!("ftp://u:{KEY}@x/?key={KEY}");
            let err = match kind {
                ProviderKind::OpenAi => OpenAiProvider::new(c).map(|_| ()),
                ProviderKind::Anthropic => AnthropicProvider::new(c).map(|_| ()),
            }
            .unwrap_err();
            shown.push(format!("{err} {err:?}"));

            for text in shown {
                assert!(!text.contains(KEY), "{kind}: {text}");
            }
        }
    })
    .await;
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_quoted_and_the_parser_says_why_last() {
    timed(async {
        let server = Server::start(vec![
            json_reply(200, "", "<html>Bad gateway</html>"),
            chunked_sse("data: {\"choices\": [\n\n", true),
        ])
        .await;
        let p = provider(config(ProviderKind::OpenAi, &server.base, fast_retry(2)));
        let (result, events) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            toolbelt_core::error_chain(&result.unwrap_err()),
            "openai's answer could not be read: the answer is not JSON \
             (\"<html>Bad gateway</html>\"): expected value at line 1 column 1"
        );
        let (result, _) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            toolbelt_core::error_chain(&result.unwrap_err()),
            "openai's answer could not be read: an event of the answer is not JSON \
             (\"{\\\"choices\\\": [\"): EOF while parsing a list at line 1 column 13"
        );
        // Not retried: another attempt reads the same.
        assert_eq!(retries(&events), Vec::new());
        assert_eq!(server.requests().len(), 2);
    })
    .await;
}

#[tokio::test]
async fn a_silent_stream_times_out_and_is_retried() {
    timed(async {
        let first = openai_sse(&[delta(json!({"content": "Hé"}))], false);
        let server = Server::start(vec![hanging_sse(&first), hanging_sse(&first)]).await;
        let mut c = config(ProviderKind::OpenAi, &server.base, fast_retry(2));
        c.idle_timeout = Duration::from_millis(200);
        let p = provider(c);
        let (result, events) = call(p.as_ref(), &hello()).await;
        assert_eq!(
            result.unwrap_err().to_string(),
            "openai's answer could not be read (after 2 attempts): the stream ended before \
             the answer did: nothing arrived for 200 ms"
        );
        assert!(
            matches!(&retries(&events)[..], [StreamEvent::Retrying { attempt: 2, reason, .. }]
                if reason == "the stream ended early (nothing arrived for 200 ms); what \
                              streamed so far is void"),
            "{events:?}"
        );
        assert_eq!(server.requests().len(), 2);
    })
    .await;
}
