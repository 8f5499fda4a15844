//! The scripted provider (feature `testing`) read by a raw HTTP/1.1 client over TCP:
//! every byte it sends is seen as sent, reads counted and cuts noticed.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_agent::ProviderKind;
use toolbelt_agent::testing::{Reply, Script, ScriptedCall, ScriptedServer, ScriptedUsage};

const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A response as read off the socket.
#[derive(Debug)]
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    /// The body, de-chunked.
    body: Vec<u8>,
    /// `read` calls that returned bytes.
    reads: usize,
    /// Whether the body ended as HTTP says (the last chunk, or Content-Length bytes).
    complete: bool,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The `(event, data)` pairs of a server-sent-events body.
    fn events(&self) -> Vec<(Option<String>, String)> {
        let text = std::str::from_utf8(&self.body).unwrap();
        text.split("\n\n")
            .filter(|block| !block.is_empty())
            .map(|block| {
                let mut event = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event = Some(name.to_string());
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push_str(d);
                    }
                }
                (event, data)
            })
            .collect()
    }

    /// The JSON data of the events (not `[DONE]`).
    fn data(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|(_, d)| d != "[DONE]")
            .map(|(_, d)| serde_json::from_str(&d).unwrap())
            .collect()
    }
}

fn post(addr: SocketAddr, path: &str, body: &str, headers: &[(&str, &str)]) -> Raw {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();

    let mut raw = Vec::new();
    let mut reads = 0;
    let mut buf = [0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                reads += 1;
                raw.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("read: {e}"),
        }
    }
    parse_response(&raw, reads)
}

fn parse_response(raw: &[u8], reads: usize) -> Raw {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = std::str::from_utf8(&raw[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked");
    let (body, complete) = if chunked {
        dechunk(rest)
    } else {
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map(|(_, v)| v.parse().unwrap())
            .unwrap();
        (rest.to_vec(), rest.len() == length)
    };
    Raw {
        status,
        headers,
        body,
        reads,
        complete,
    }
}

/// The data of a chunked body, and whether its last chunk came.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap(), 16).unwrap();
        if size == 0 {
            return (body, true);
        }
        let data = &rest[eol + 2..];
        if data.len() < size {
            body.extend_from_slice(data);
            return (body, false);
        }
        body.extend_from_slice(&data[..size]);
        rest = data.get(size + 2..).unwrap_or_default();
    }
}

fn openai_request(stream: bool) -> String {
    json!({"model": "gpt-test", "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
        .to_string()
}

const TEXT: &str = "Hello wörld — ✓ the scripted model, in small pieces.";

fn two_calls() -> Reply {
    Reply::calls([
        ("read_file", r#"{"path": "src/lib.rs"}"#),
        ("grep", r#"{"pattern": "fn main", "glob": "*.rs"}"#),
    ])
}

#[test]
fn replies_come_in_order_and_requests_are_recorded() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::text("one").with_usage(10, 2), Reply::text("two")],
    ))
    .unwrap();
    assert_eq!(server.remaining(), 2);
    let auth = [("Authorization", "Bearer sk-test")];
    let first = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(false),
        &auth,
    );
    let second = post(
        server.addr(),
        "/chat/completions",
        &openai_request(false),
        &auth,
    );
    let third = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(false),
        &auth,
    );

    assert_eq!(first.status, 200);
    assert_eq!(first.header("content-type"), Some("application/json"));
    let created = first.json()["created"].clone();
    assert_eq!(
        first.json(),
        json!({
            "id": "chatcmpl-scripted-1",
            "object": "chat.completion",
            "created": created,
            "model": "gpt-test",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "one", "refusal": null, "annotations": []},
                "logprobs": null,
                "finish_reason": "stop",
            }],
            "usage": {
                "prompt_tokens": 10,
                "completion_tokens": 2,
                "total_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "service_tier": "default",
            "system_fingerprint": first.json()["system_fingerprint"].clone(),
        })
    );
    // The keys in the API's order.
    assert!(
        std::str::from_utf8(&first.body)
            .unwrap()
            .starts_with(r#"{"id":"chatcmpl-scripted-1","object":"chat.completion","#)
    );
    assert_eq!(second.json()["choices"][0]["message"]["content"], "two");
    assert_eq!(third.status, 500);
    assert_eq!(
        third.json(),
        json!({"error": {"message": "the script has no more replies", "type": "server_error", "param": null, "code": null}})
    );
    assert_eq!(server.remaining(), 0);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].method, "POST");
    assert_eq!(requests[1].path, "/chat/completions");
    assert_eq!(requests[0].header("AUTHORIZATION"), Some("Bearer sk-test"));
    assert_eq!(requests[0].body["messages"][0]["content"], "hi");
    assert!(
        requests[0]
            .headers
            .iter()
            .all(|(n, _)| *n == n.to_ascii_lowercase())
    );
}

#[test]
fn openai_stream_concatenates_back_to_the_script() {
    let mut reply = two_calls().with_text(TEXT).with_reasoning("Think first.");
    reply.tool_calls[1].id = Some("call_fixed".into());
    reply.usage = Some(ScriptedUsage {
        input_tokens: 100,
        output_tokens: 20,
        cached_tokens: 40,
        cache_write_tokens: 0,
    });
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![reply.clone(), reply.clone()],
    ))
    .unwrap();
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": []});
    let r = post(
        server.addr(),
        "/v1/chat/completions",
        &body.to_string(),
        &[],
    );
    assert_eq!(r.status, 200);
    assert!(r.complete);
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert!(r.header("x-request-id").unwrap().starts_with("req_"));
    let events = r.events();
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks = r.data();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == "chatcmpl-scripted-1")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");

    let (mut text, mut reasoning) = (String::new(), String::new());
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut fragments = 0;
    let mut finish = Vec::new();
    for chunk in &chunks[..chunks.len() - 1] {
        let choice = &chunk["choices"][0];
        assert_eq!(chunk["usage"], Value::Null);
        let delta = &choice["delta"];
        text.push_str(delta["content"].as_str().unwrap_or(""));
        reasoning.push_str(delta["reasoning_content"].as_str().unwrap_or(""));
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap() as usize;
            if let Some(id) = call["id"].as_str() {
                assert_eq!(index, calls.len());
                calls.push((
                    id.into(),
                    call["function"]["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            } else {
                fragments += 1;
            }
            calls[index]
                .2
                .push_str(call["function"]["arguments"].as_str().unwrap());
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish.push(reason.to_string());
        }
    }
    assert_eq!(text, TEXT);
    assert_eq!(reasoning, "Think first.");
    assert_eq!(
        calls,
        vec![
            (
                "call_1_0".into(),
                "read_file".into(),
                reply.tool_calls[0].arguments.clone()
            ),
            (
                "call_fixed".into(),
                "grep".into(),
                reply.tool_calls[1].arguments.clone()
            ),
        ]
    );
    assert!(
        fragments >= 6,
        "arguments split in several fragments: {fragments}"
    );
    assert_eq!(finish, ["tool_calls"]);
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["prompt_tokens"], 100);
    assert_eq!(last["usage"]["completion_tokens"], 20);
    assert_eq!(last["usage"]["prompt_tokens_details"]["cached_tokens"], 40);

    // Without stream_options.include_usage: no usage at all.
    let r = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(true),
        &[],
    );
    assert!(r.data().iter().all(|c| c.get("usage").is_none()));
}

#[test]
fn anthropic_stream_and_message_are_the_api_s() {
    let reply = two_calls()
        .with_text("Looking.")
        .with_reasoning("Hmm.")
        .with_usage(50, 9);
    let server = ScriptedServer::start(Script::new(
        ProviderKind::Anthropic,
        vec![reply.clone(), reply.clone()],
    ))
    .unwrap();
    assert_eq!(server.base_url(), format!("http://{}", server.addr()));
    let body = json!({"model": "claude-test", "max_tokens": 100, "stream": true, "messages": []});
    let r = post(server.addr(), "/v1/messages", &body.to_string(), &[]);
    assert!(r.complete);
    assert!(r.header("request-id").unwrap().starts_with("req_"));
    let events = r.events();
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    let block = ["content_block_start", "content_block_delta"];
    assert_eq!(&names[..4], ["message_start", block[0], "ping", block[1]]);
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
    let data = r.data();
    for ((name, _), value) in events.iter().zip(&data) {
        assert_eq!(value["type"], name.as_deref().unwrap());
    }
    let starts: Vec<&Value> = data
        .iter()
        .filter(|d| d["type"] == "content_block_start")
        .map(|d| &d["content_block"])
        .collect();
    assert_eq!(
        starts,
        [
            &json!({"type": "thinking", "thinking": "", "signature": ""}),
            &json!({"type": "text", "text": ""}),
            &json!({"type": "tool_use", "id": "toolu_1_0", "name": "read_file", "input": {}}),
            &json!({"type": "tool_use", "id": "toolu_1_1", "name": "grep", "input": {}}),
        ]
    );
    let joined = |index: u64, field: &str| -> String {
        data.iter()
            .filter(|d| d["type"] == "content_block_delta" && d["index"] == index)
            .filter_map(|d| d["delta"][field].as_str())
            .collect()
    };
    assert_eq!(joined(0, "thinking"), "Hmm.");
    assert!(!joined(0, "signature").is_empty());
    assert_eq!(joined(1, "text"), "Looking.");
    assert_eq!(joined(2, "partial_json"), reply.tool_calls[0].arguments);
    assert_eq!(joined(3, "partial_json"), reply.tool_calls[1].arguments);
    let message_delta = &data[data.len() - 2];
    assert_eq!(
        message_delta,
        &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 9}})
    );
    assert_eq!(data[0]["message"]["usage"]["input_tokens"], 50);

    let body = json!({"model": "claude-test", "max_tokens": 100, "messages": []});
    let r = post(server.addr(), "/v1/messages", &body.to_string(), &[]);
    assert_eq!(
        r.json(),
        json!({
            "id": "msg_scripted_2",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [
                {"type": "thinking", "thinking": "Hmm.", "signature": r.json()["content"][0]["signature"].clone()},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_2_0", "name": "read_file", "input": {"path": "src/lib.rs"}},
                {"type": "tool_use", "id": "toolu_2_1", "name": "grep", "input": {"pattern": "fn main", "glob": "*.rs"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {
                "input_tokens": 50,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 9,
                "service_tier": "standard",
            },
        })
    );
}

#[test]
fn chunk_bytes_splits_the_stream_into_many_reads() {
    let reply = Reply::text(TEXT.repeat(4));
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![reply.clone(), reply.chunked(48)],
    ))
    .unwrap();
    let whole = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(true),
        &[],
    );
    let split = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(true),
        &[],
    );
    assert!(split.complete);
    let content = |r: &Raw| -> String {
        r.data()
            .iter()
            .filter_map(|c| {
                c["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    };
    assert_eq!(content(&split), TEXT.repeat(4));
    assert_eq!(split.body.len(), whole.body.len());
    let expected = split.body.len() / 48;
    assert!(
        split.reads > expected / 2,
        "{} reads for {} pieces of 48 bytes",
        split.reads,
        expected
    );
    assert!(split.reads > whole.reads * 10);
}

#[test]
fn cut_after_bytes_breaks_the_answer_off() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::Anthropic,
        vec![
            Reply::text(TEXT.repeat(5)).cut_after(300),
            Reply::text(TEXT.repeat(5)).cut_after(100).chunked(32),
        ],
    ))
    .unwrap();
    let body = json!({"model": "m", "max_tokens": 10, "stream": true, "messages": []}).to_string();
    let streamed = post(server.addr(), "/v1/messages", &body, &[]);
    assert_eq!(streamed.status, 200);
    assert!(!streamed.complete);
    assert_eq!(streamed.body.len(), 300);
    assert!(!String::from_utf8_lossy(&streamed.body).contains("message_stop"));

    let body = json!({"model": "m", "max_tokens": 10, "messages": []}).to_string();
    let plain = post(server.addr(), "/v1/messages", &body, &[]);
    assert!(!plain.complete);
    assert_eq!(plain.body.len(), 100);
    assert!(
        plain
            .header("content-length")
            .unwrap()
            .parse::<usize>()
            .unwrap()
            > 100
    );
}

#[test]
fn errors_carry_status_retry_after_and_the_provider_s_json() {
    let openai = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::error(429, Some("2"), "Rate limit reached")],
    ))
    .unwrap();
    let r = post(
        openai.addr(),
        "/v1/chat/completions",
        &openai_request(true),
        &[],
    );
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("2"));
    assert!(r.header("x-request-id").is_some());
    assert_eq!(
        r.json(),
        json!({"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}})
    );

    let anthropic = ScriptedServer::start(Script::new(
        ProviderKind::Anthropic,
        vec![Reply::error(529, None, "Overloaded")],
    ))
    .unwrap();
    let r = post(anthropic.addr(), "/v1/messages", r#"{"stream": true}"#, &[]);
    assert_eq!(r.status, 529);
    assert_eq!(r.header("retry-after"), None);
    let request_id = r.header("request-id").unwrap().to_string();
    assert_eq!(
        r.json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": request_id})
    );

    // A body that is not JSON: 400, recorded as a string; no reply used.
    let server =
        ScriptedServer::start(Script::new(ProviderKind::Anthropic, vec![Reply::text("x")]))
            .unwrap();
    let r = post(server.addr(), "/v1/messages", "not json", &[]);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    assert_eq!(server.requests()[0].body, json!("not json"));
    assert_eq!(server.remaining(), 1);
    // The other wire format's path is not served.
    assert_eq!(
        post(server.addr(), "/v1/chat/completions", "{}", &[]).status,
        404
    );
}

#[tokio::test]
async fn with_tools_only_tool_requests_use_up_replies() {
    let script = Script::new(
        ProviderKind::OpenAi,
        vec![Reply::call("read_file", "{}"), Reply::text("done")],
    )
    .consume_with_tools(Reply::text("A title"));
    let server = ScriptedServer::start(script).unwrap();
    let addr = server.addr();
    let with_tools = json!({"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "read_file"}}]}).to_string();
    let without = json!({"model": "m", "messages": [], "tools": []}).to_string();
    let run = tokio::task::spawn_blocking(move || {
        let content = |r: Raw| r.json()["choices"][0]["message"].clone();
        vec![
            content(post(addr, "/v1/chat/completions", &without, &[])),
            content(post(addr, "/v1/chat/completions", &with_tools, &[])),
            content(post(addr, "/v1/chat/completions", &without, &[])),
            content(post(addr, "/v1/chat/completions", &with_tools, &[])),
        ]
    });
    let answers = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answers[0]["content"], "A title");
    assert_eq!(answers[1]["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(answers[2]["content"], "A title");
    assert_eq!(answers[3]["content"], "done");
    assert_eq!(server.remaining(), 0);
    assert_eq!(server.requests().len(), 4);
    // Dropped inside a runtime: the server's own runtime stops on its thread.
    drop(server);
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::text("a"), Reply::text("b").delayed(20)],
    ))
    .unwrap();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    for expected in ["a", "b"] {
        let body = openai_request(false);
        write!(
            stream,
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        let response = loop {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the connection closed");
            raw.extend_from_slice(&buf[..n]);
            if raw.windows(4).any(|w| w == b"\r\n\r\n") {
                let r = parse_response(&raw, 1);
                if r.complete {
                    break r;
                }
            }
        };
        assert_eq!(
            response.json()["choices"][0]["message"]["content"],
            expected
        );
    }
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn scripts_read_from_json() {
    let script: Script = serde_json::from_value(json!({
        "kind": "anthropic",
        "replies": [
            {"tool_calls": [{"name": "grep", "arguments": "{\"pattern\": "}]},
            {"text": "ok", "usage": {"input_tokens": 3, "output_tokens": 1}, "stop": "max_tokens"},
        ],
        "consume": "with_tools",
        "side_reply": {"text": "title"},
    }))
    .unwrap();
    assert_eq!(
        script.replies[0].tool_calls,
        vec![ScriptedCall {
            id: None,
            name: "grep".into(),
            arguments: "{\"pattern\": ".into()
        }]
    );
    assert_eq!(script.replies[1].stop.as_deref(), Some("max_tokens"));
    // A typo is an error, not a silently ignored field.
    assert!(
        serde_json::from_value::<Script>(json!({"kind": "openai", "replies": [{"txt": "x"}]}))
            .is_err()
    );
}
