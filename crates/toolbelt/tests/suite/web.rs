//! The web tools through the binary, against servers on 127.0.0.1.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::cli::{envelope, toolbelt};

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

    // The seed 000 profile calls it WebSearch.
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
