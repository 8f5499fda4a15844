//! Replicas of `toolbelt serve` on one PostgreSQL store, each with its own state
//! directory, serving one workspace: what one answered, the others know.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::cron::Served;

/// A fresh database on the tests' PostgreSQL server: its URL.
pub(super) fn shared_database() -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let test = rt
        .block_on(toolbelt_store::testing::postgres())
        .expect("a PostgreSQL database for the replicas");
    match test.location {
        toolbelt_store::Location::Postgres(url) => url,
        toolbelt_store::Location::Sqlite(_) => unreachable!("postgres() is PostgreSQL"),
    }
}

/// `toolbelt serve` on `root` with the store at `database` and its state in `state`.
pub(super) fn replica(root: &Path, database: &str, state: &Path) -> Served {
    let mut cmd = super::cli::bare_command();
    cmd.arg("--root")
        .arg(root)
        .arg("--database-url")
        .arg(database)
        .env("TOOLBELT_STATE_DIR", state)
        .stdin(std::process::Stdio::null());
    Served::from_command(cmd)
}

/// `POST <url><path>` with a JSON body: the status and the JSON answer.
pub(super) fn post_json(url: &str, path: &str, body: &Value) -> (u16, Value) {
    request(url, "POST", path, Some(body))
}

/// `GET <url><path>`: the status and the JSON answer.
pub(super) fn get_json(url: &str, path: &str) -> (u16, Value) {
    request(url, "GET", path, None)
}

/// One HTTP/1.1 request on its own connection: the status and the JSON answer.
fn request(url: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let addr = url.trim_start_matches("http://");
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    match body.map(Value::to_string) {
        Some(body) => write!(
            sock,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
        None => write!(
            sock,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        ),
    }
    .unwrap();
    let mut answer = String::new();
    sock.read_to_string(&mut answer).unwrap();
    let (head, json) = answer.split_once("\r\n\r\n").unwrap();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {answer}"));
    (status, value)
}

/// A call of `tool` through the JSON API of `url`: its envelope.
fn call(url: &str, tool: &str, args: &Value) -> Value {
    let (status, env) = post_json(url, &format!("/v1/tools/{tool}"), args);
    assert!(
        status == 200 || status == 422 || status == 409,
        "{status}: {env}"
    );
    env
}

#[test]
fn a_read_on_one_replica_lets_a_write_on_another_through_and_a_change_since_is_still_caught() {
    let database = shared_database();
    let root = tempfile::tempdir().unwrap();
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(root.path().join("notes.txt"), "one\ntwo\n").unwrap();
    std::fs::write(root.path().join("other.txt"), "alpha\n").unwrap();
    let a = replica(root.path(), &database, state_a.path());
    let b = replica(root.path(), &database, state_b.path());

    // Read on A, edit on B: B knows of A's read.
    let read = call(&a.url, "read_file", &json!({ "path": "notes.txt" }));
    assert_eq!(read["status"], "success", "{read}");
    let edit = call(
        &b.url,
        "edit_file",
        &json!({ "path": "notes.txt", "old_string": "two", "new_string": "three" }),
    );
    assert_eq!(edit["status"], "success", "{edit}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        "one\nthree\n"
    );
    // B's write is A's view too: A edits again without reading.
    let again = call(
        &a.url,
        "edit_file",
        &json!({ "path": "notes.txt", "old_string": "one", "new_string": "zero" }),
    );
    assert_eq!(again["status"], "success", "{again}");

    // A file never read anywhere is still refused.
    let unread = call(
        &b.url,
        "write_file",
        &json!({ "path": "other.txt", "content": "beta\n" }),
    );
    assert_eq!(unread["error"]["code"], "CONFLICT", "{unread}");
    assert!(
        unread["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has not been read yet"),
        "{unread}"
    );

    // Read on B, changed by someone else, written through A: refused as changed.
    let read = call(&b.url, "read_file", &json!({ "path": "other.txt" }));
    assert_eq!(read["status"], "success", "{read}");
    std::fs::write(root.path().join("other.txt"), "gamma\n").unwrap();
    let stale = call(
        &a.url,
        "edit_file",
        &json!({ "path": "other.txt", "old_string": "gamma", "new_string": "delta" }),
    );
    assert_eq!(stale["error"]["code"], "CONFLICT", "{stale}");
    assert!(
        stale["error"]["message"]
            .as_str()
            .unwrap()
            .contains("changed since you last read it"),
        "{stale}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("other.txt")).unwrap(),
        "gamma\n"
    );
    a.stop();
    b.stop();
}

#[test]
fn a_sigterm_right_after_the_listening_line_stops_serve_cleanly() {
    let root = tempfile::tempdir().unwrap();
    for _ in 0..5 {
        let mut cmd = super::cli::bare_command();
        cmd.arg("--root")
            .arg(root.path())
            .args(["serve", "--bind", "127.0.0.1:0", "--no-token"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
        loop {
            let line = lines.next().expect("serve printed its address").unwrap();
            if line.starts_with("toolbelt listening on ") {
                break;
            }
        }
        let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        std::thread::spawn(move || for _ in lines {});
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{status:?}");
    }
}
