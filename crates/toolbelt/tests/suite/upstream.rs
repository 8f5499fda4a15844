//! Other MCP servers: `toolbelt mcp-servers` and their tools in every command, with
//! toolbelt itself (`toolbelt mcp`) as the other server. The MCP servers of the
//! registries are driven by tests/python/test_upstream.py and tests/clients.

use pretty_assertions::assert_eq;
use serde_json::Value;
use tempfile::TempDir;

use super::cli::toolbelt;

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn mcp_servers_are_added_listed_tested_used_and_removed() {
    let dir = TempDir::new().unwrap();
    let config = dir.path().join("toolbelt.toml");
    std::fs::write(&config, "# kept as written\nprofile = \"default\"\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_toolbelt");

    // toolbelt serving two tools is the other server; the workspace's config names
    // it, and the toolbelt it starts does not start it again.
    let add = [
        "mcp-servers",
        "add",
        "inner",
        "--",
        bin,
        "mcp",
        "--root",
        root,
        "--tools",
        "think,read_file",
    ];
    let run = toolbelt(dir.path(), &add);
    assert_eq!(run.code, 0, "{run:#?}");
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(
        written.starts_with("# kept as written\nprofile = \"default\"\n"),
        "{written}"
    );
    assert!(written.contains("[mcp_servers.inner]"), "{written}");
    let again = toolbelt(dir.path(), &add);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("already in"), "{}", again.stderr);
    let bad = toolbelt(
        dir.path(),
        &["mcp-servers", "add", "web", "--url", "ftp://example.com"],
    );
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("http:// or https://"), "{}", bad.stderr);
    assert!(!std::fs::read_to_string(&config).unwrap().contains("web"));

    let list = toolbelt(dir.path(), &["mcp-servers", "list"]);
    assert!(list.stdout.starts_with("inner  stdio: "), "{list:#?}");

    let test = toolbelt(dir.path(), &["mcp-servers", "test", "inner", "--json"]);
    assert_eq!(test.code, 0, "{test:#?}");
    let report = json(&test.stdout);
    assert_eq!(report["ok"], true);
    assert_eq!(
        report["tools"],
        serde_json::json!(["inner__read_file", "inner__think"])
    );

    let call = toolbelt(
        dir.path(),
        &[
            "call",
            "inner__read_file",
            r#"{"path": "toolbelt.toml"}"#,
            "--json",
        ],
    );
    let env = json(&call.stdout);
    assert_eq!(env["status"], "success", "{call:#?}");
    assert!(env["text"].as_str().unwrap().contains("# kept as written"));

    let doctor = toolbelt(dir.path(), &["doctor", "--json"]);
    let report = json(&doctor.stdout);
    let inner = &report["mcp_servers"][0];
    assert_eq!(
        (&inner["name"], &inner["state"], &inner["tools"]),
        (&"inner".into(), &"running".into(), &2.into())
    );

    // A server that dies at start: its stderr says why.
    let run = toolbelt(
        dir.path(),
        &[
            "mcp-servers",
            "add",
            "broken",
            "--",
            "/bin/sh",
            "-c",
            "echo missing token >&2; exit 3",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let test = toolbelt(dir.path(), &["mcp-servers", "test", "broken"]);
    assert_eq!(test.code, 1, "{test:#?}");
    assert!(
        test.stdout
            .contains("exited before completing the MCP handshake"),
        "{}",
        test.stdout
    );
    assert!(test.stdout.contains("missing token"), "{}", test.stdout);
    let unavailable = toolbelt(dir.path(), &["mcp-servers", "test", "nope"]);
    assert_eq!(unavailable.code, 2);
    assert!(
        unavailable.stderr.contains("configured: broken, inner"),
        "{}",
        unavailable.stderr
    );

    let removed = toolbelt(dir.path(), &["mcp-servers", "remove", "broken"]);
    assert_eq!(removed.code, 0, "{removed:#?}");
    let twice = toolbelt(dir.path(), &["mcp-servers", "remove", "broken"]);
    assert_eq!(twice.code, 2);
    assert!(!std::fs::read_to_string(&config).unwrap().contains("broken"));
}

#[test]
fn a_lazy_server_starts_on_its_first_call_and_is_listed_from_its_last_run() {
    let dir = TempDir::new().unwrap();
    let starts = dir.path().join("starts.log");
    let script = format!(
        "echo started >> '{}'; exec '{}' mcp --root '{}' --tools think",
        starts.display(),
        env!("CARGO_BIN_EXE_toolbelt"),
        dir.path().display()
    );
    std::fs::write(
        dir.path().join("toolbelt.toml"),
        format!(
            "[mcp_servers.inner]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {}]\nstartup = \"lazy\"\n",
            serde_json::to_string(&script).unwrap()
        ),
    )
    .unwrap();
    // The workspace's own server runs once trusted.
    let trusted = toolbelt(dir.path(), &["hooks", "trust", "--yes"]);
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let count = || {
        std::fs::read_to_string(&starts)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let names = |run: &super::cli::Run| -> Vec<String> {
        json(&run.stdout)
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    // Never listed before: started once to list its tools.
    let first = toolbelt(dir.path(), &["tools", "--json", "--category", "remote"]);
    assert!(
        names(&first).contains(&"inner__think".to_string()),
        "{first:#?}"
    );
    assert_eq!(count(), 1);
    // Then listed from that run, not started.
    let second = toolbelt(dir.path(), &["tools", "--json", "--category", "remote"]);
    assert!(
        names(&second).contains(&"inner__think".to_string()),
        "{second:#?}"
    );
    assert_eq!(count(), 1);
    // Its first call starts it.
    let call = toolbelt(
        dir.path(),
        &["call", "inner__think", r#"{"thought": "x"}"#, "--json"],
    );
    assert_eq!(json(&call.stdout)["status"], "success", "{call:#?}");
    assert_eq!(count(), 2);
}
