//! The web tools through the binary, against servers on 127.0.0.1.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::cli::{envelope, toolbelt};
use super::mcp::Server;

const SEARXNG: &str = include_str!("../../../toolbelt-net/tests/fixtures/search/searxng.json");

/// A server answering every request with `status` and `body` (JSON), recording
/// the request lines. Returns its address.
fn json_server(status: u16, body: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            log.lock().unwrap().push(first.trim().to_string());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://{addr}/"), seen)
}

#[test]
fn web_search_answers_in_seed_000_shape_from_the_configured_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = json_server(200, SEARXNG);
    std::fs::write(
        dir.path().join("toolbelt.toml"),
        format!("[web]\nsearch = \"searxng\"\nsearch_url = \"{url}\"\n"),
    )
    .unwrap();
    let args = json!({"query": "rust async runtime", "limit": 2}).to_string();
    let run = toolbelt(dir.path(), &["call", "web_search", &args, "--json"]);
    let env = envelope(&run);
    assert_eq!(env["status"], "success", "{env:#}");
    assert_eq!(env["data"]["engine"], "searxng");
    assert_eq!(
        env["data"]["results"],
        json!([
            {"title": "Tokio - An asynchronous Rust runtime", "url": "https://tokio.rs/",
             "snippet": "Tokio is an event-driven, non-blocking I/O platform for writing asynchronous applications with the Rust programming language."},
            {"title": "Asynchronous Programming in Rust", "url": "https://rust-lang.github.io/async-book/",
             "snippet": "This book aims to be a thorough guide to asynchronous programming in Rust, from beginner to advanced.",
             "date": "2025-03-03T00:00:00"}
        ])
    );
    let text = env["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "# Search Results for: rust async runtime\n\n## 1. Tokio - An asynchronous Rust runtime\n\n**URL**: https://tokio.rs/\n"
        ),
        "{text}"
    );
    let request = seen.lock().unwrap()[0].clone();
    assert!(
        request.starts_with("GET /search?q=rust+async+runtime&format=json "),
        "{request}"
    );

    // The kimi profile calls it WebSearch.
    let run = toolbelt(
        dir.path(),
        &["--profile", "kimi", "call", "WebSearch", &args, "--json"],
    );
    assert_eq!(envelope(&run)["status"], "success");
}

#[test]
fn web_search_errors_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _) = json_server(429, "{\"error\": \"too many\"}");
    std::fs::write(
        dir.path().join("toolbelt.toml"),
        format!("[web]\nsearch = \"searxng\"\nsearch_url = \"{url}\"\n"),
    )
    .unwrap();
    let args = json!({"query": "x"}).to_string();
    let env = envelope(&toolbelt(
        dir.path(),
        &["call", "web_search", &args, "--json"],
    ));
    assert_eq!(env["error"]["code"], "HTTP_STATUS", "{env:#}");
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limiting requests"),
        "{env:#}"
    );

    std::fs::write(
        dir.path().join("toolbelt.toml"),
        "[web]\nsearch = \"searxng\"\n",
    )
    .unwrap();
    let run = toolbelt(dir.path(), &["tools"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("needs search_url"), "{}", run.stderr);
}

/// One page of the test site: path, status, content type, body.
type Page = (&'static str, u16, &'static str, Vec<u8>);

/// A site on 127.0.0.1 serving `pages` (404 for other paths); counts connections.
fn site(pages: Vec<Page>) -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(Mutex::new(0));
    let hits = Arc::clone(&count);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            *hits.lock().unwrap() += 1;
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = first.split(' ').nth(1).unwrap_or("/").to_string();
            let (status, ty, body) = pages.iter().find(|(p, ..)| *p == path).map_or(
                (404, "text/html", b"<h1>Not here</h1>".to_vec()),
                |(_, s, t, b)| (*s, *t, b.clone()),
            );
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: {ty}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    (format!("http://{addr}"), count)
}

const ARTICLE: &str = r#"<!doctype html><html lang="en"><head>
<title>Ferris learns to fly | The Crab Times</title>
<meta property="og:title" content="Ferris learns to fly">
<meta name="author" content="Jane Doe">
<meta property="article:published_time" content="2026-05-01T09:00:00Z">
<meta property="og:site_name" content="The Crab Times">
</head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li></ul></nav>
<div class="cookie-banner">We use cookies. Accept all cookies?</div>
<article>
<h1>Ferris learns to fly</h1>
<p>Ferris the crab surprised everyone on Tuesday by taking to the air above the harbour, flapping two small claws with great determination and no small amount of noise.</p>
<p>Witnesses on the pier said the flight lasted nearly a minute, which marine biologists described as remarkable for a creature with no wings and a strong preference for sand.</p>
<h2>Results</h2>
<table><tr><th>Attempt</th><th>Seconds</th></tr><tr><td>First</td><td>12</td></tr><tr><td>Second</td><td>57</td></tr></table>
<p>Read the <a href="/science/crabs">full study</a> for the details of the wind conditions that made the flight possible.</p>
</article>
<aside class="related"><h3>Related</h3><ul><li><a href="/a">Crab wins lottery</a></li><li><a href="/b">Lobster opens bakery</a></li></ul></aside>
<footer>Copyright The Crab Times. All rights reserved. Privacy policy. Terms.</footer>
</body></html>"#;

fn call_json(
    root: &std::path::Path,
    extra: &[&str],
    tool: &str,
    args: &serde_json::Value,
) -> serde_json::Value {
    let args = args.to_string();
    let mut all: Vec<&str> = extra.to_vec();
    all.extend(["call", tool, &args, "--json"]);
    envelope(&toolbelt(root, &all))
}

#[test]
fn web_fetch_returns_the_main_content_in_each_format() {
    let dir = tempfile::tempdir().unwrap();
    let (base, _) = site(vec![
        (
            "/article",
            200,
            "text/html; charset=utf-8",
            ARTICLE.as_bytes().to_vec(),
        ),
        (
            "/notes.txt",
            200,
            "text/plain",
            b"plain notes\nline two\n".to_vec(),
        ),
        (
            "/data.json",
            200,
            "application/json",
            br#"{"a":1,"b":[true,null]}"#.to_vec(),
        ),
        (
            "/file.pdf",
            200,
            "application/pdf",
            b"%PDF-1.7\x00\x01binary".to_vec(),
        ),
        (
            "/broken",
            500,
            "text/html",
            b"<p>Internal error</p>".to_vec(),
        ),
    ]);
    let allow = ["--allow-private-network"];
    let url = format!("{base}/article");
    let env = call_json(dir.path(), &allow, "web_fetch", &json!({"url": url}));
    assert_eq!(env["status"], "success", "{env:#}");
    let data = &env["data"];
    assert_eq!(data["title"], "Ferris learns to fly");
    assert_eq!(data["author"], "Jane Doe");
    assert_eq!(data["date"], "2026-05-01T09:00:00Z");
    assert_eq!(data["site"], "The Crab Times");
    assert_eq!(data["format"], "markdown");
    let content = data["content"].as_str().unwrap();
    assert!(
        content.contains("Ferris the crab surprised everyone"),
        "{content}"
    );
    assert!(content.contains("| First | 12 |"), "{content}");
    assert!(
        content.contains(&format!("[full study]({base}/science/crabs)")),
        "{content}"
    );
    for boilerplate in [
        "cookies",
        "Lobster opens bakery",
        "All rights reserved",
        "Sport",
    ] {
        assert!(!content.contains(boilerplate), "{boilerplate} in {content}");
    }
    let text = env["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("[Untrusted content from {url}")),
        "{text}"
    );
    assert!(
        text.contains("Title: Ferris learns to fly\nAuthor: Jane Doe\n"),
        "{text}"
    );

    let env = call_json(
        dir.path(),
        &allow,
        "web_fetch",
        &json!({"url": url, "format": "text"}),
    );
    let content = env["data"]["content"].as_str().unwrap();
    assert!(
        content.contains("Ferris the crab surprised everyone"),
        "{content}"
    );
    assert!(
        !content.contains('|') && !content.contains("]("),
        "{content}"
    );

    let env = call_json(
        dir.path(),
        &allow,
        "web_fetch",
        &json!({"url": url, "format": "html"}),
    );
    assert_eq!(env["data"]["content"], ARTICLE);

    let env = call_json(
        dir.path(),
        &allow,
        "web_fetch",
        &json!({"url": format!("{base}/notes.txt")}),
    );
    assert_eq!(env["data"]["content"], "plain notes\nline two\n");

    let env = call_json(
        dir.path(),
        &allow,
        "web_fetch",
        &json!({"url": format!("{base}/data.json")}),
    );
    assert_eq!(
        env["data"]["content"],
        "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}"
    );

    let env = call_json(
        dir.path(),
        &allow,
        "web_fetch",
        &json!({"url": format!("{base}/file.pdf")}),
    );
    assert_eq!(env["error"]["code"], "BINARY_FILE", "{env:#}");
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("application/pdf"),
        "{env:#}"
    );

    let env = call_json(
        dir.path(),
        &allow,
        "web_fetch",
        &json!({"url": format!("{base}/broken")}),
    );
    assert_eq!(env["error"]["code"], "HTTP_STATUS", "{env:#}");
    let env = call_json(
        dir.path(),
        &allow,
        "web_fetch",
        &json!({"url": format!("{base}/nope")}),
    );
    assert_eq!(env["error"]["code"], "HTTP_STATUS", "{env:#}");
    assert!(
        env["error"]["message"].as_str().unwrap().contains("404"),
        "{env:#}"
    );
}

#[test]
fn web_fetch_refuses_private_addresses_without_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let (base, connections) = site(vec![("/", 200, "text/plain", b"secret".to_vec())]);
    let port = base.rsplit(':').next().unwrap();
    for url in [
        base.clone(),
        format!("http://2130706433:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
    ] {
        let env = call_json(dir.path(), &[], "web_fetch", &json!({"url": url}));
        assert_eq!(env["error"]["code"], "ACCESS_DENIED", "{url}: {env:#}");
    }
    for url in [
        "file:///etc/passwd",
        "gopher://127.0.0.1/",
        "data:text/plain,hi",
    ] {
        let env = call_json(dir.path(), &[], "web_fetch", &json!({"url": url}));
        assert_eq!(env["error"]["code"], "INVALID_PARAMS", "{url}: {env:#}");
    }
    assert_eq!(*connections.lock().unwrap(), 0);
}

#[test]
fn web_fetch_pages_long_content_from_its_cache() {
    let long: String = (0..400)
        .map(|i| format!("Line {i} of a long plain text file.\n"))
        .collect();
    let body: &'static str = Box::leak(long.clone().into_boxed_str());
    let (base, connections) = site(vec![(
        "/long.txt",
        200,
        "text/plain",
        body.as_bytes().to_vec(),
    )]);
    let mut server = Server::start_with(&["--allow-private-network"]);
    server.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "suite", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(server.answer()["id"], 0);
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let url = format!("{base}/long.txt");
    let mut start = 0;
    let mut pieces = String::new();
    for id in 1..=10 {
        server.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "web_fetch", "arguments": {"url": url, "max_length": 5000, "start_index": start}}})
            .to_string(),
        );
        let answer = server.answer();
        let data = answer["result"]["structuredContent"]["data"].clone();
        pieces.push_str(data["content"].as_str().unwrap());
        assert_eq!(data["cached"], id > 1, "{data:#}");
        assert_eq!(data["total_length"], long.chars().count());
        match data["next_index"].as_u64() {
            Some(next) => {
                let text = answer["result"]["content"][0]["text"].as_str().unwrap();
                assert!(text.contains(&format!("start_index={next}")), "{text}");
                start = next;
            }
            None => break,
        }
    }
    assert_eq!(pieces, long);
    assert_eq!(*connections.lock().unwrap(), 1);
}
