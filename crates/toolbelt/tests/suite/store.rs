//! The store as the binary uses it: a bad database stops a server at start and is
//! left untouched; what the tools store survives a restart.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `toolbelt <args> --root <root>` with standard input closed.
fn toolbelt(root: &Path, args: &[&str]) -> Output {
    super::cli::bare_command()
        .args(args)
        .arg("--root")
        .arg(root)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The bytes of every file under `dir` (the call journal's directory included),
/// by path.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().unwrap().is_dir() {
            all.extend(
                files(&e.path())
                    .into_iter()
                    .map(|(inner, bytes)| (format!("{name}/{inner}"), bytes)),
            );
        } else {
            all.push((name, std::fs::read(e.path()).unwrap()));
        }
    }
    all.sort();
    all
}

/// Runs the servers against the store in `root` and checks each refuses to start,
/// says `expected`, and leaves the state directory `state` as it was.
fn servers_refuse(root: &Path, state: &Path, expected: &[&str]) {
    let before = files(state);
    for args in [
        &["mcp"][..],
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--token",
            "a-token-for-the-test",
        ][..],
    ] {
        let out = toolbelt(root, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for e in expected {
            assert!(stderr.contains(e), "{args:?}: {e:?} not in {stderr}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(files(state) == before, "{args:?} touched the store");
    }
}

#[test]
fn a_corrupt_store_stops_the_servers_at_start_and_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".toolbelt")).unwrap();
    std::fs::write(
        dir.path().join(".toolbelt/toolbelt.db"),
        b"not a database, a text file in its place\n".repeat(200),
    )
    .unwrap();
    // The workspace's own .toolbelt/ holds a store: it is the one used.
    servers_refuse(
        dir.path(),
        &dir.path().join(".toolbelt"),
        &["the store cannot be opened", "is corrupt", "left untouched"],
    );
}

#[test]
fn a_newer_store_stops_the_servers_at_start_and_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // A store made by this build (a server creates it at start, then stops at the
    // end of its input), then marked as written by a future schema.
    toolbelt(dir.path(), &["mcp"]);
    let state = super::cli::state_dir(dir.path());
    let db = state.join("toolbelt.db");
    assert!(db.is_file());
    let out = Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=DELETE'); c.execute('PRAGMA user_version=42'); c.commit(); c.close()",
        )
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    servers_refuse(
        dir.path(),
        &state,
        &["schema version 42", "upgrade toolbelt", "left untouched"],
    );
    // doctor says so too, and fails.
    let out = toolbelt(dir.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("schema version 42"));
}

/// One `toolbelt mcp` session: initialize, then each `(tool, arguments)` call; the
/// structured results, in order. The server ends with its input.
fn mcp_session(root: &Path, calls: &[(&str, serde_json::Value)]) -> Vec<serde_json::Value> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = super::cli::bare_command()
        .args(["mcp", "--structured-content", "always", "--root"])
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let send = |stdin: &mut std::process::ChildStdin, v: serde_json::Value| {
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "suite", "version": "1"}}}),
    );
    let _ = lines.next().unwrap().unwrap();
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let mut results = Vec::new();
    for (i, (tool, args)) in calls.iter().enumerate() {
        send(
            &mut stdin,
            serde_json::json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}),
        );
        let answer: serde_json::Value =
            serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
        results.push(answer["result"]["structuredContent"]["data"].clone());
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    results
}

fn todo_pairs(data: &serde_json::Value) -> Vec<(u64, String, String)> {
    data["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_u64().unwrap(),
                t["title"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn todos_survive_a_restart_of_the_mcp_server_and_keep_their_ids() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let first = mcp_session(
        dir.path(),
        &[
            (
                "set_todo_list",
                json!({"todos": [
                    {"title": "Read the failing test", "status": "Done"},
                    {"title": "Fix the parser", "status": "In Progress"},
                    {"title": "Run the whole suite", "status": "Pending"}
                ]}),
            ),
            (
                "update_todos",
                json!({"remove": [1], "add": [{"title": "Write the changelog"}]}),
            ),
        ],
    );
    let after_update = todo_pairs(&first[1]);
    assert_eq!(
        after_update,
        [
            (2, "Fix the parser".into(), "In Progress".into()),
            (3, "Run the whole suite".into(), "Pending".into()),
            (4, "Write the changelog".into(), "Pending".into()),
        ]
    );
    // A new server process reads the same list, ids included, and goes on from it.
    let second = mcp_session(
        dir.path(),
        &[
            ("set_todo_list", json!({})),
            (
                "update_todos",
                json!({"update": [{"id": 3, "status": "Done"}], "add": [{"title": "Tag the release"}]}),
            ),
        ],
    );
    assert_eq!(todo_pairs(&second[0]), after_update);
    assert_eq!(
        todo_pairs(&second[1]),
        [
            (2, "Fix the parser".into(), "In Progress".into()),
            (3, "Run the whole suite".into(), "Done".into()),
            (4, "Write the changelog".into(), "Pending".into()),
            (5, "Tag the release".into(), "Pending".into()),
        ]
    );
}

#[test]
fn the_call_log_records_every_interface_and_redacts_secrets() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let secret = "sk-live-0123456789abcdefghijklmnop";
    mcp_session(
        dir.path(),
        &[("think", json!({"thought": format!("the key is {secret}")}))],
    );
    let out = toolbelt(
        dir.path(),
        &[
            "call",
            "create_task",
            &json!({"title": "rotate the key", "description": format!("api_key={secret}")})
                .to_string(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = toolbelt(
        dir.path(),
        &["call", "complete_task", r#"{"task_id": "task-9"}"#],
    );
    assert_eq!(out.status.code(), Some(1));

    let out = toolbelt(dir.path(), &["log", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains(secret), "a secret reached the log: {text}");
    let entries: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows: Vec<(String, String, Option<String>)> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["tool"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap().to_string(),
                e["error_code"].as_str().map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("think".into(), "success".into(), None),
            ("create_task".into(), "success".into(), None),
            (
                "complete_task".into(),
                "error".into(),
                Some("NOT_FOUND".into())
            ),
        ]
    );
    assert!(
        entries[1]["args"]
            .as_str()
            .unwrap()
            .contains("rotate the key")
    );
    assert!(entries[0]["duration_ms"].is_u64() && entries[1]["bytes_out"].as_u64().unwrap() > 0);

    // --tool and --tail.
    let out = toolbelt(dir.path(), &["log", "--tool", "think", "--tail", "5"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("think") && text.contains("success"), "{text}");
    let out = toolbelt(dir.path(), &["log", "--tail", "1", "--json"]);
    let last: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(last.as_array().unwrap().len(), 1);
    assert_eq!(last[0]["tool"], "complete_task");

    // Switched off, a call leaves nothing in the log.
    let out = toolbelt(
        dir.path(),
        &[
            "--call-log",
            "off",
            "call",
            "think",
            r#"{"thought": "unlogged"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let out = toolbelt(dir.path(), &["log", "--json"]);
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 3);
}

/// Seed 003's usage example, as its agent calls it: camelCase tool and parameter
/// names, Chinese text.
#[test]
fn the_seed003_profile_runs_the_planner_under_its_camel_case_names() {
    let dir = tempfile::tempdir().unwrap();
    let call = |tool: &str, args: &str| {
        let out = toolbelt(
            dir.path(),
            &["--profile", "seed003", "call", tool, args, "--json"],
        );
        let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), env)
    };
    let (code, env) = call(
        "createGoal",
        r#"{"title": "成为AI工程师", "stage": "yearly"}"#,
    );
    assert_eq!(code, Some(0), "{env}");
    assert_eq!(env["data"]["id"], "goal-1");
    let (code, env) = call(
        "createProject",
        r#"{"name": "AI学习计划", "description": "系统学习人工智能相关技术", "goalIds": ["goal-1"]}"#,
    );
    assert_eq!(code, Some(0), "{env}");
    assert_eq!(env["context"]["tool"], "create_project");
    assert_eq!(env["context"]["exposed_name"], "createProject");
    assert_eq!(env["data"]["id"], "project-1");
    // The batch of the seed's example.
    for (tool, args) in [
        ("createProject", r#"{"name": "项目A"}"#),
        (
            "createTask",
            r#"{"title": "任务1", "projectId": "project-1"}"#,
        ),
        (
            "writeReview",
            r#"{"content": "今天进展顺利", "type": "daily"}"#,
        ),
    ] {
        let (code, env) = call(tool, args);
        assert_eq!(code, Some(0), "{tool}: {env}");
    }
    let (code, env) = call(
        "updateProject",
        r#"{"projectId": "project-2", "updates": {"goalIds": ["goal-1"], "status": "paused"}}"#,
    );
    assert_eq!(code, Some(0), "{env}");
    let (code, env) = call(
        "getProject",
        r#"{"projectId": "project-1", "includeStats": true}"#,
    );
    assert_eq!(code, Some(0), "{env}");
    assert_eq!(env["data"]["stats"]["total"], 1, "{env}");
    let (code, env) = call("listTasks", r#"{"projectId": "project-1"}"#);
    assert_eq!(code, Some(0), "{env}");
    assert_eq!(env["data"]["tasks"][0]["title"], "任务1");
    // The canonical names are still understood.
    let (code, env) = call("listTasks", r#"{"project_id": "project-1"}"#);
    assert_eq!(code, Some(0), "{env}");
    // Errors name the parameters as the model wrote them.
    let (code, env) = call("getProject", r#"{"includeStats": true}"#);
    assert_eq!(code, Some(1));
    let message = env["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"projectId\" is a required property"),
        "{message}"
    );
    let (code, env) = call("createTask", r#"{"title": "t", "dueDate": "2026-02-30"}"#);
    assert_eq!(code, Some(1));
    let message = env["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("- dueDate: 2026-02-30 is not a calendar date"),
        "{message}"
    );
    let (code, env) = call("deleteProject", r#"{"projectId": "project-1"}"#);
    assert_eq!(code, Some(1));
    assert_eq!(env["error"]["code"], "CONFLICT");

    // The schemas the model sees are camelCase for the planner, and only for it.
    let out = toolbelt(
        dir.path(),
        &[
            "--profile",
            "seed003",
            "schema",
            "--format",
            "mcp",
            "createTask",
            "updateProject",
            "analyzePatterns",
            "read_file",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed"))
            .clone()
    };
    let task = schema("createTask");
    let props = &task["inputSchema"]["properties"];
    assert!(
        props["projectId"].is_object() && props["dueDate"].is_object(),
        "{task}"
    );
    assert!(props.get("project_id").is_none(), "{task}");
    let update = schema("updateProject");
    assert_eq!(
        update["inputSchema"]["required"],
        serde_json::json!(["projectId", "updates"]),
        "{update}"
    );
    // Descriptions name the parameters as the schema does.
    let analyze = schema("analyzePatterns");
    let description = analyze["description"].as_str().unwrap();
    assert!(
        description.contains("`endDate`") && !description.contains("`end_date`"),
        "{description}"
    );
    let read = schema("read_file");
    assert!(
        read["inputSchema"]["properties"]["path"].is_object(),
        "{read}"
    );
}

/// Seed 003's batch operations through `toolbelt batch`: in order, each call seeing
/// what the ones before it did; a failing call does not stop the others.
#[test]
fn batch_runs_the_seed003_operations_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let batch = dir.path().join("ops.json");
    std::fs::write(
        &batch,
        r#"[
            {"tool": "createProject", "params": {"name": "项目A"}},
            {"tool": "createTask", "params": {"title": "任务1", "projectId": "project-1"}},
            {"tool": "completeTask", "params": {"taskId": "task-9"}},
            {"tool": "writeReview", "params": {"content": "今天进展顺利", "type": "daily"}},
            {"tool": "listTasks", "params": {"projectId": "project-1"}, "id": "last"}
        ]"#,
    )
    .unwrap();
    let out = toolbelt(
        dir.path(),
        &[
            "--profile",
            "seed003",
            "batch",
            batch.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "one call failed");
    let envs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let envs = envs.as_array().unwrap();
    let statuses: Vec<&str> = envs.iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        ["success", "success", "error", "success", "success"]
    );
    assert_eq!(envs[2]["error"]["code"], "NOT_FOUND");
    assert_eq!(envs[4]["context"]["call_id"], "last");
    assert_eq!(envs[4]["data"]["tasks"][0]["title"], "任务1");
    // Every call is in the call log.
    let out = toolbelt(dir.path(), &["log", "--json"]);
    let logged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(logged.as_array().unwrap().len(), 5);

    // Human output, from standard input.
    let run = super::cli::toolbelt_with_input(
        dir.path(),
        &["batch", "-"],
        r#"[{"tool": "list_projects"}, {"tool": "get_project", "params": {"project_id": "project-1"}}]"#,
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let text = run.stdout;
    assert!(text.starts_with("[1/2] ✓ list_projects"), "{text}");
    assert!(text.contains("[2/2] ✓ get_project"), "{text}");
    assert!(text.ends_with("2 calls, 0 failed\n"), "{text}");
}

/// A batch that cannot be read runs nothing.
#[test]
fn a_malformed_batch_runs_no_call() {
    let dir = tempfile::tempdir().unwrap();
    let batch = dir.path().join("ops.json");
    std::fs::write(
        &batch,
        r#"[{"tool": "create_project", "params": {"name": "A"}}, {"params": {}}]"#,
    )
    .unwrap();
    let out = toolbelt(dir.path(), &["batch", batch.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("call 2 (index 1) has no \"tool\""), "{err}");
    let out = toolbelt(dir.path(), &["call", "list_projects", "--json"]);
    let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["data"]["total"], 0, "{env}");
    let out = toolbelt(dir.path(), &["batch", "missing.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("cannot read the calls from missing.json")
    );
}
