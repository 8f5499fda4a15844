//! `toolbelt mcp`, run as a child process speaking newline-delimited JSON-RPC.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Bound on waiting for one answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `toolbelt mcp` with its answers read on a thread.
pub(super) struct Server {
    pub(super) child: Child,
    stdin: ChildStdin,
    answers: mpsc::Receiver<Value>,
    pub(super) dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        Server::start_with(&[])
    }

    /// `toolbelt mcp --root <a new directory> <args>`, with the envelope as
    /// structured content unless `args` say otherwise (the tests read it).
    pub(super) fn start_with(args: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hello.txt"), "hello\n").unwrap();
        let structured: &[&str] = if args.contains(&"--structured-content") {
            &[]
        } else {
            &["--structured-content", "always"]
        };
        let mut child = super::cli::bare_command()
            .args(["mcp", "--root"])
            .arg(dir.path())
            .args(structured)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, answers) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                // stdout carries MCP messages only: every line is JSON.
                let value: Value = serde_json::from_str(&line).unwrap();
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Server {
            child,
            stdin,
            answers,
            dir,
        }
    }

    pub(super) fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    pub(super) fn answer(&self) -> Value {
        self.answers.recv_timeout(ANSWER_TIMEOUT).unwrap()
    }

    /// Initializes the session and returns the answer to `tools/list`.
    pub(super) fn tools_list(&mut self) -> Value {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "suite", "version": "1"}}});
        self.send(&init.to_string());
        assert_eq!(self.answer()["id"], 1);
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        self.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        self.answer()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_answers_malformed_input_and_keeps_serving() {
    let mut server = Server::start();
    server.send("garbage, not json");
    let garbage = server.answer();
    assert_eq!(garbage["error"]["code"], -32700);
    assert_eq!(garbage["id"], Value::Null);

    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"initia"#);
    assert_eq!(server.answer()["error"]["code"], -32700);

    // Deep nesting is refused before it reaches a parser.
    server.send(&format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)));
    let deep = server.answer();
    assert_eq!(deep["error"]["code"], -32600, "{deep}");

    // A 100 MB line is discarded as it streams in, never held whole: the peak
    // grows by far less than the line (the binary's own pages, which grow with
    // its code, are in the baseline).
    let baseline_kib = super::cli::peak_rss_kib(server.child.id()).unwrap();
    let piece = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        server.stdin.write_all(&piece).unwrap();
    }
    server.send("");
    let huge = server.answer();
    assert_eq!(huge["error"]["code"], -32600, "{huge}");
    let peak_kib = super::cli::peak_rss_kib(server.child.id()).unwrap();
    assert!(
        peak_kib - baseline_kib < 32 * 1024,
        "peak RSS {peak_kib} KiB after a 100 MB line, {baseline_kib} KiB before it"
    );

    // A notification before initialize is dropped (it would end the session), and a
    // request before initialize is answered with an error.
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let early = server.answer();
    assert_eq!(early["id"], 2);
    assert!(early["error"]["code"].is_i64(), "{early}");

    let init = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "suite", "version": "1"}}});
    server.send(&init.to_string());
    let init = server.answer();
    assert_eq!(init["id"], 3);
    assert_eq!(init["result"]["serverInfo"]["name"], "toolbelt");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");

    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    server.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#);
    let list = server.answer();
    assert_eq!(list["id"], 4);
    let mut names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    // The 35 built-in tools, the 3 checkpoint tools and diagnostics.
    assert_eq!(names.len(), 39);
    assert!(names.contains(&"read_file"));

    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "hello.txt"}}});
    server.send(&call.to_string());
    let read = server.answer();
    assert_eq!(read["id"], 5);
    assert_eq!(read["result"]["isError"], false);
    assert!(
        read["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello")
    );
}

#[test]
fn mcp_help_shows_the_client_configuration() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["mcp", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains(r#""mcpServers""#), "{help}");
    assert!(
        help.contains(r#""args": ["mcp", "--root", "/path/to/project"]"#),
        "{help}"
    );
}

/// Whether the open file description behind `fd` is in non-blocking mode.
fn non_blocking(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    rustix::fs::fcntl_getfl(fd)
        .unwrap()
        .contains(rustix::fs::OFlags::NONBLOCK)
}

#[cfg(unix)]
#[test]
fn mcp_serves_over_a_pipe_and_a_socket_and_leaves_them_blocking() {
    use std::os::fd::AsFd as _;
    use std::os::unix::net::UnixStream;

    let dir = tempfile::tempdir().unwrap();
    // stdin is a pipe, stdout a socket: the two kinds MCP clients hand a server.
    let (stdin_read, mut stdin_write) = std::io::pipe().unwrap();
    let (ours, theirs) = UnixStream::pair().unwrap();
    let stdin_seen = stdin_read.try_clone().unwrap();
    let stdout_seen = theirs.try_clone().unwrap();
    let mut child = super::cli::bare_command()
        .args(["mcp", "--structured-content", "always", "--root"])
        .arg(dir.path())
        .stdin(stdin_read)
        .stdout(std::os::fd::OwnedFd::from(theirs))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ours.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
    let mut answers = BufReader::new(ours).lines();
    let mut ask = |stdin: &mut std::io::PipeWriter, line: Value| {
        writeln!(stdin, "{line}").unwrap();
        serde_json::from_str::<Value>(&answers.next().unwrap().unwrap()).unwrap()
    };
    let init = ask(
        &mut stdin_write,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "toolbelt");
    writeln!(
        stdin_write,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    let think = ask(
        &mut stdin_write,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "think", "arguments": {"thought": "pipes"}}}),
    );
    assert_eq!(think["result"]["isError"], false, "{think}");
    drop(stdin_write);
    assert!(child.wait().unwrap().success());
    // Non-blocking mode belongs to the shared description; the server put it back.
    assert!(!non_blocking(stdin_seen.as_fd()));
    assert!(!non_blocking(stdout_seen.as_fd()));
}

/// Descriptors the process holds, but for the store's: its connection pool opens up
/// to a bounded number of connections as calls are logged, and keeps them.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter(|e| {
            let target = e
                .as_ref()
                .ok()
                .and_then(|e| std::fs::read_link(e.path()).ok());
            !target.is_some_and(|t| t.to_string_lossy().contains("toolbelt.db"))
        })
        .count()
}

#[test]
fn sixty_four_concurrent_commands_are_answered_and_release_their_descriptors() {
    let mut server = Server::start();
    server.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "suite", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(server.answer()["id"], 0);
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let call = |id: u64, command: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": command}}})
        .to_string()
    };
    // Calls first, so that what the process opens once is open: the runtime's,
    // and the watch on the workspace set up by its second command that may write.
    server.send(&call(1, "true"));
    assert_eq!(server.answer()["id"], 1);
    for id in [2, 3] {
        server.send(&call(id, "touch warm"));
        assert_eq!(server.answer()["id"], id);
    }
    let pid = server.child.id();
    let before = open_fds(pid);
    for i in 0..64 {
        server.send(&call(100 + i, &format!("sleep 0.3; echo {i}")));
    }
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..64 {
        let answer = server.answer();
        let id = answer["id"].as_u64().unwrap();
        let stdout = &answer["result"]["structuredContent"]["data"]["stdout"];
        assert_eq!(stdout, &json!(format!("{}\n", id - 100)), "{answer}");
        seen.insert(id);
    }
    assert_eq!(seen.len(), 64);
    assert_eq!(open_fds(pid), before);
}

#[test]
fn sigterm_stops_the_server_and_its_background_shells() {
    let mut server = Server::start();
    server.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "suite", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(server.answer()["id"], 0);
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let marker = format!("tbsig{}", std::process::id());
    server.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "bash", "arguments": {
                "command": format!("export TBTEST={marker}; setsid sleep 1000 & sleep 1000"),
                "run_in_background": true}}})
        .to_string(),
    );
    let started = server.answer();
    assert_eq!(started["result"]["isError"], false, "{started}");
    let running = || {
        let needle = format!("TBTEST={marker}\0");
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read(e.path().join("environ"))
                    .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_bytes()))
            })
            .count()
    };
    let deadline = std::time::Instant::now() + ANSWER_TIMEOUT;
    while running() < 2 && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(running(), 2);
    let pid = rustix::process::Pid::from_raw(i32::try_from(server.child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(running(), 0);
}

/// Under the camel-planner profile (asked for by its older name) an MCP client sees camelCase names and
/// parameters, and its calls written that way run.
#[test]
fn mcp_serves_seed003_names_and_camel_case_parameters() {
    let mut server = Server::start_with(&["--profile", "seed003"]);
    let list = server.tools_list();
    let tools = list["result"]["tools"].as_array().unwrap();
    let task = tools.iter().find(|t| t["name"] == "createTask").unwrap();
    let props = task["inputSchema"]["properties"].as_object().unwrap();
    assert!(
        props.contains_key("projectId") && props.contains_key("dueDate"),
        "{task}"
    );
    assert!(tools.iter().any(|t| t["name"] == "read_file"));

    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        .to_string()
    };
    server.send(&call(
        3,
        "createProject",
        json!({"name": "项目A", "goalIds": []}),
    ));
    let created = server.answer();
    assert_eq!(created["result"]["isError"], false, "{created}");
    server.send(&call(
        4,
        "createTask",
        json!({"title": "任务1", "projectId": "project-1", "dueDate": "2026-12-01"}),
    ));
    let task = server.answer();
    assert_eq!(task["result"]["isError"], false, "{task}");
    server.send(&call(
        5,
        "getProject",
        json!({"projectId": "project-1", "includeStats": true}),
    ));
    let project = server.answer();
    assert_eq!(
        project["result"]["structuredContent"]["data"]["stats"]["total"], 1,
        "{project}"
    );
}

impl Server {
    /// Initializes as the client `name`, then answers `tools/list` and a
    /// `read_file` of `path`: (the tools, the call's result).
    fn as_client(&mut self, name: &str, path: &str) -> (Vec<Value>, Value) {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}}});
        self.send(&init.to_string());
        assert_eq!(self.answer()["id"], 1);
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        self.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        let tools = self.answer()["result"]["tools"].as_array().unwrap().clone();
        self.send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": path}}})
            .to_string(),
        );
        (tools, self.answer()["result"].clone())
    }
}

/// A 30 KB file of 371 numbered lines.
fn long_file(dir: &std::path::Path) {
    let text: String = (1..=371)
        .map(|n| format!("line {n:04}: the quick brown fox jumps over the lazy dog, again\n"))
        .collect();
    std::fs::write(dir.join("long.txt"), text).unwrap();
}

#[test]
fn agent_clients_read_the_text_and_inspectors_get_the_envelope() {
    // Claude Code, Codex and gemini-cli show the model structuredContent when a
    // result has it: by default they get the text (and no output schema, which
    // would oblige the server to send it).
    for agent in [
        "claude-code",
        "codex-mcp-client",
        "gemini-cli-mcp-client",
        "an-agent",
    ] {
        let mut server = Server::start_with(&["--structured-content", "auto"]);
        let (tools, result) = server.as_client(agent, "hello.txt");
        assert!(
            tools.iter().all(|t| t.get("outputSchema").is_none()),
            "{agent}"
        );
        assert_eq!(result.get("structuredContent"), None, "{agent}: {result}");
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("hello")
        );
    }
    // The Inspector and the Python SDK's default client get the envelope.
    for program in ["inspector-cli", "mcp"] {
        let mut server = Server::start_with(&["--structured-content", "auto"]);
        let (tools, result) = server.as_client(program, "hello.txt");
        assert!(
            tools.iter().all(|t| t.get("outputSchema").is_some()),
            "{program}"
        );
        assert_eq!(
            result["structuredContent"]["status"], "success",
            "{program}"
        );
    }
    // `never` and `always` hold for every client.
    let mut server = Server::start_with(&["--structured-content", "never"]);
    let (tools, result) = server.as_client("mcp", "hello.txt");
    assert!(tools.iter().all(|t| t.get("outputSchema").is_none()));
    assert_eq!(result.get("structuredContent"), None);
    let mut server = Server::start_with(&["--structured-content", "always"]);
    let (_, result) = server.as_client("claude-code", "hello.txt");
    assert_eq!(result["structuredContent"]["status"], "success");
}

#[test]
fn pages_fit_the_cut_of_the_client_and_the_configured_budget() {
    // Codex keeps 12,000 bytes of a result for the model: read_file pages under it.
    let mut server = Server::start();
    long_file(server.dir.path());
    let (_, result) = server.as_client("codex-mcp-client", "long.txt");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.len() <= 8_000, "{} bytes", text.len());
    let next: usize = text
        .rsplit("offset=")
        .next()
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no paging footer: {text}"));
    assert!((50..371).contains(&next), "{next}");
    assert!(text.contains(&format!("line {:04}:", next - 1)));
    // Another client gets the whole file in one page.
    let mut server = Server::start();
    long_file(server.dir.path());
    let (_, result) = server.as_client("claude-code", "long.txt");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("line 0371:")
    );
    // --output-budget holds for every client.
    let mut server = Server::start_with(&["--output-budget", "2000"]);
    long_file(server.dir.path());
    let (_, result) = server.as_client("claude-code", "long.txt");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.len() <= 2_000 && text.contains("offset="), "{text}");
}

#[test]
fn bad_mcp_options_stop_at_start_with_what_to_write() {
    let out = super::cli::bare_command()
        .args(["mcp", "--structured-content", "sometimes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("auto, always, never"), "{err}");

    // The same from the config file: the command stops, naming the key.
    let dir = tempfile::tempdir().unwrap();
    let refused = |config: &str| {
        std::fs::write(dir.path().join("toolbelt.toml"), config).unwrap();
        let out = super::cli::bare_command()
            .args(["mcp", "--root"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{config}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = refused("[mcp]\nstructured_content = \"sometimes\"\n");
    assert!(
        err.contains("structured_content") && err.contains("auto, always, never"),
        "{err}"
    );
    let err = refused("[mcp]\noutput_budget = 10\n");
    assert!(
        err.contains("output_budget") && err.contains("1024"),
        "{err}"
    );
}
