//! The shell sandbox through the binary: `toolbelt doctor`, `--sandbox` and
//! `--network`, the `[shell]` config, the bash description, background shells.
//! Where this machine cannot enforce a mode, the binary must refuse it loudly.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::cli::{Run, envelope, stdout_json, toolbelt};
use super::mcp::Server;

fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

/// What `toolbelt doctor --json` says of `mode` with the network on or off.
fn enforceable(root: &Path, mode: &str, network: &str) -> bool {
    let run = toolbelt(
        root,
        &["--sandbox", mode, "--network", network, "doctor", "--json"],
    );
    let report = stdout_json(&run);
    assert_eq!(run.code == 0, report["ok"] == true, "{report:#}");
    report["ok"] == true
}

/// Asserts the loud refusal of a mode this machine cannot enforce.
#[track_caller]
fn assert_refused(run: &Run) {
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("cannot be enforced") || run.stderr.contains("cannot keep"),
        "{}",
        run.stderr
    );
}

#[test]
fn doctor_reports_what_this_machine_enforces() {
    let (_ws, root) = canonical_tempdir();
    let run = toolbelt(&root, &["doctor", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = stdout_json(&run);
    assert_eq!(report["ok"], true);
    assert_eq!(report["roots"], json!([root]));
    assert_eq!(report["sandbox"]["mode"], "none");
    assert_eq!(report["sandbox"]["network"], true);
    let support = &report["sandbox"]["support"];
    for key in [
        "user_namespace",
        "mount_namespace",
        "network_namespace",
        "pid_namespace",
    ] {
        assert!(support[key].is_boolean(), "{key} in {support:#}");
    }
    assert!(
        support["landlock_abi"].is_u64() || support["landlock_abi"].is_null(),
        "{support:#}"
    );
    // The binary is its own helper.
    assert_eq!(
        report["sandbox"]["helper"],
        json!(std::fs::canonicalize(env!("CARGO_BIN_EXE_toolbelt")).unwrap())
    );

    let text = toolbelt(&root, &["doctor"]);
    assert_eq!(text.code, 0);
    for needle in [
        "What this machine enforces:",
        "mode workspace-write, network off:",
        "Configured: sandbox none, network on: no sandbox",
    ] {
        assert!(text.stdout.contains(needle), "{needle} in {}", text.stdout);
    }

    // Under a sandbox, the state directory is hidden from commands exactly where a
    // mount namespace can be made, and doctor warns where it cannot.
    let sandboxed = toolbelt(&root, &["--sandbox", "read-only", "doctor", "--json"]);
    let report = stdout_json(&sandboxed);
    if report["sandbox"]["verdict"]
        .as_str()
        .is_some_and(|v| v.starts_with("enforced"))
    {
        let hidden = report["sandbox"]["support"]["mount_namespace"] == true;
        assert_eq!(report["sandbox"]["state_hidden"], hidden, "{report:#}");
        let text = toolbelt(&root, &["--sandbox", "read-only", "doctor"]);
        assert_eq!(
            text.stdout.contains("warning: sandboxed commands can read"),
            !hidden,
            "{}",
            text.stdout
        );
    }

    let bad = toolbelt(&root, &["--sandbox", "full-access", "doctor"]);
    assert_eq!(bad.code, 1);
    assert!(
        bad.stdout.contains("unknown sandbox mode \"full-access\""),
        "{}",
        bad.stdout
    );
}

#[test]
fn the_bash_description_states_the_sandbox() {
    let (_ws, root) = canonical_tempdir();
    let description = |args: &[&str]| -> Option<String> {
        let mut all = args.to_vec();
        all.extend(["schema", "--format", "mcp", "bash"]);
        let run = toolbelt(&root, &all);
        if run.code != 0 {
            assert_refused(&run);
            return None;
        }
        let tools = stdout_json(&run);
        Some(tools[0]["description"].as_str().unwrap().to_string())
    };
    let plain = description(&[]).unwrap();
    assert!(
        plain.contains("Sandbox: none. Commands run with the server's own rights. Network: on."),
        "{plain}"
    );
    if let Some(text) = description(&["--sandbox", "workspace-write"]) {
        assert!(text.contains("Sandbox: workspace-write"), "{text}");
        assert!(
            text.contains(".git/hooks and .git/config are read-only"),
            "{text}"
        );
        // A sandbox cuts the network unless it is asked for.
        assert!(text.contains("Network: off"), "{text}");
    }
    if let Some(text) = description(&["--sandbox", "read-only", "--network", "on"]) {
        assert!(text.contains("Sandbox: read-only"), "{text}");
        assert!(text.contains("Network: on."), "{text}");
    }
}

#[test]
fn bash_in_workspace_write_writes_inside_only_and_cannot_reach_loopback() {
    let (_ws, root) = canonical_tempdir();
    let (_out, outside) = canonical_tempdir();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "echo in > inside.txt && echo inside=ok; \
         echo out > {}/outside.txt 2>/dev/null || echo outside=denied; \
         (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo unreachable",
        outside.display()
    );
    let args = json!({ "command": command }).to_string();
    let run = toolbelt(
        &root,
        &[
            "--sandbox",
            "workspace-write",
            "--network",
            "off",
            "call",
            "bash",
            &args,
            "--json",
        ],
    );
    if !enforceable(&root, "workspace-write", "off") {
        assert_refused(&run);
        return;
    }
    let env = envelope(&run);
    assert_eq!(
        env["data"]["stdout"], "inside=ok\noutside=denied\nunreachable\n",
        "{env:#}"
    );
    assert!(root.join("inside.txt").is_file());
    assert!(!outside.join("outside.txt").exists());
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection got through");

    // The network on: the same server is reached.
    let run = toolbelt(
        &root,
        &[
            "--sandbox",
            "workspace-write",
            "--network",
            "on",
            "call",
            "bash",
            &args,
            "--json",
        ],
    );
    let env = envelope(&run);
    assert_eq!(
        env["data"]["stdout"], "inside=ok\noutside=denied\nconnected\n",
        "{env:#}"
    );
    let deadline = Instant::now() + Duration::from_secs(2);
    let accepted = loop {
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.read(&mut [0u8; 1]);
                break true;
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break false,
        }
    };
    assert!(accepted, "the connection did not arrive");
}

#[test]
fn the_config_file_sets_the_sandbox() {
    let (_ws, root) = canonical_tempdir();
    std::fs::write(
        root.join("toolbelt.toml"),
        "[shell]\nsandbox = \"read-only\"\nnetwork = true\n",
    )
    .unwrap();
    let args = json!({"command": "touch made.txt"}).to_string();
    let run = toolbelt(&root, &["call", "bash", &args, "--json"]);
    if !enforceable(&root, "read-only", "on") {
        assert_refused(&run);
        return;
    }
    let env = envelope(&run);
    assert_eq!(env["error"]["code"], "NONZERO_EXIT", "{env:#}");
    assert!(
        env["data"]["stderr"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{env:#}"
    );
    assert!(!root.join("made.txt").exists());

    std::fs::write(root.join("toolbelt.toml"), "[shell]\nsandbox = \"jail\"\n").unwrap();
    let run = toolbelt(&root, &["tools"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("unknown sandbox mode \"jail\""),
        "{}",
        run.stderr
    );
}

fn call(server: &mut Server, id: u64, name: &str, arguments: &Value) -> Value {
    server.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        .to_string(),
    );
    let answer = server.answer();
    assert_eq!(answer["id"], id, "{answer}");
    answer["result"]["structuredContent"].clone()
}

#[test]
fn background_shells_run_in_the_sandbox_too() {
    let (_ws, probe_root) = canonical_tempdir();
    if !enforceable(&probe_root, "read-only", "on") {
        return;
    }
    let mut server = Server::start_with(&["--sandbox", "read-only", "--network", "on"]);
    server.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "suite", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(server.answer()["id"], 0);
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let started = call(
        &mut server,
        1,
        "bash",
        &json!({"command": "touch made.txt 2>&1 || echo refused; cat hello.txt",
                "run_in_background": true}),
    );
    let id = started["data"]["shell_id"].as_str().unwrap().to_string();
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.contains("hello") && Instant::now() < deadline {
        let read = call(
            &mut server,
            2,
            "bash_output",
            &json!({"shell_id": id, "block": true, "timeout": 2}),
        );
        seen.push_str(read["data"]["stdout"].as_str().unwrap_or_default());
    }
    assert!(seen.contains("refused\nhello\n"), "{seen}");
    assert!(!server.dir.path().join("made.txt").exists());
}

/// Processes whose command line holds `token`.
pub(super) fn running_with(token: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_timeout_in_the_sandbox_stops_the_whole_tree() {
    let (_ws, root) = canonical_tempdir();
    let token = format!("tbsbxcli{}", std::process::id());
    let command = format!(
        "setsid bash -c 'exec -a {token}a sleep 1000' & \
         env -i bash -c 'exec -a {token}b sleep 1000' & exec -a {token}c sleep 1000"
    );
    let args = json!({"command": command, "timeout": 2}).to_string();
    let started = Instant::now();
    let run = toolbelt(
        &root,
        &[
            "--sandbox",
            "read-only",
            "--network",
            "on",
            "call",
            "bash",
            &args,
            "--json",
        ],
    );
    if !enforceable(&root, "read-only", "on") {
        assert_refused(&run);
        return;
    }
    let env = envelope(&run);
    assert!(started.elapsed() < Duration::from_secs(5), "{env:#}");
    assert_eq!(env["error"]["code"], "TIMEOUT", "{env:#}");
    assert_eq!(env["data"]["exit_code"], 124);
    assert_eq!(env["data"]["timed_out"], true);
    let deadline = Instant::now() + Duration::from_secs(2);
    while !running_with(&token).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(running_with(&token), Vec::<u32>::new());
}

/// The checkpoints' content and records are in the state directory, which the
/// sandboxed shell can neither see nor write: a command cannot rewrite what a
/// rewind would put back.
#[test]
fn the_sandboxed_shell_cannot_touch_the_checkpoints() {
    let (_ws, root) = canonical_tempdir();
    let (_st, state) = canonical_tempdir();
    let state_arg = state.to_str().unwrap();
    let write = json!({"path": "a.txt", "content": "kept\n"}).to_string();
    let run = toolbelt(
        &root,
        &["--state-dir", state_arg, "call", "write_file", &write],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let objects = state.join("checkpoints/objects");
    assert!(objects.is_dir(), "the write left a checkpoint");
    let command = format!(
        "ls {0} >/dev/null 2>&1 && echo seen || echo hidden; \
         touch {0}/x 2>/dev/null && echo wrote || echo denied; \
         rm -rf {1} 2>/dev/null; echo done",
        objects.display(),
        state.display()
    );
    let args = json!({ "command": command }).to_string();
    let run = toolbelt(
        &root,
        &[
            "--state-dir",
            state_arg,
            "--sandbox",
            "workspace-write",
            "call",
            "bash",
            &args,
            "--json",
        ],
    );
    if !enforceable(&root, "workspace-write", "off") {
        assert_refused(&run);
        return;
    }
    let env = envelope(&run);
    assert_eq!(env["data"]["stdout"], "hidden\ndenied\ndone\n", "{env:#}");
    assert!(!objects.join("x").exists());
    assert!(
        objects.read_dir().unwrap().next().is_some(),
        "the content is still there"
    );
}
