//! `--tools`, `TOOLBELT_TOOLS` and `[tools]`: the tools every interface serves are
//! exactly the ones chosen; unknown names stop the command at start.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::agent::CODING_TOOLS;
use super::cli::{command, finish, stdout_json, toolbelt};
use super::mcp::Server;

/// The names in `toolbelt schema`'s MCP listing.
fn schema_names(root: &std::path::Path, args: &[&str]) -> Vec<String> {
    let mut all = args.to_vec();
    all.extend(["schema", "--format", "mcp"]);
    let run = toolbelt(root, &all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut names: Vec<String> = stdout_json(&run)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn with_tools_coding_mcp_tools_list_is_exactly_the_coding_set() {
    let mut server = Server::start_with(&["--tools", "coding"]);
    let list = server.tools_list();
    let mut names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, CODING_TOOLS);
    // A tool left out is unknown to a call.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "web_fetch", "arguments": {"url": "https://example.com/"}}});
    server.send(&call.to_string());
    let answer = server.answer();
    let text = answer.to_string();
    assert!(
        text.contains(r#"there is no tool named \"web_fetch\""#),
        "{answer}"
    );
}

#[test]
fn with_tools_coding_schema_and_tools_list_exactly_the_coding_set() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        schema_names(dir.path(), &["--tools", "coding"]),
        CODING_TOOLS
    );
    let run = toolbelt(dir.path(), &["--tools", "coding", "tools", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        stdout_json(&run).as_array().unwrap().len(),
        CODING_TOOLS.len()
    );
    // The default stays every tool.
    let all = schema_names(dir.path(), &[]);
    assert!(all.len() > CODING_TOOLS.len() + 10, "{all:?}");
}

#[test]
fn sets_and_names_combine_from_the_flag_the_environment_and_the_config() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        schema_names(dir.path(), &["--tools", "search,web,think,-web_search"]),
        ["glob", "grep", "think", "web_fetch"]
    );
    // Names as the profile exposes them.
    assert_eq!(
        schema_names(dir.path(), &["--profile", "claude", "--tools", "Read,Bash"]),
        ["Bash", "Read"]
    );
    let mut cmd = command(dir.path(), &["schema", "--format", "mcp"]);
    cmd.env("TOOLBELT_TOOLS", "todos");
    let run = finish(
        cmd.stdout(std::process::Stdio::piped()).spawn().unwrap(),
        &[],
    );
    let names: Vec<Value> = stdout_json(&run)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, [json!("set_todo_list"), json!("update_todos")]);
    std::fs::write(
        dir.path().join("toolbelt.toml"),
        "[tools]\nenable = [\"files\", \"planner\"]\ndisable = [\"planner\", \"write_file\"]\n",
    )
    .unwrap();
    assert_eq!(
        schema_names(dir.path(), &[]),
        [
            "apply_patch",
            "diagnostics",
            "edit_file",
            "list_dir",
            "multi_edit",
            "read_file"
        ]
    );
    // The flag replaces `enable`; `disable` still holds.
    assert_eq!(
        schema_names(dir.path(), &["--tools", "files,agent"]),
        [
            "apply_patch",
            "diagnostics",
            "edit_file",
            "list_dir",
            "multi_edit",
            "read_file",
            "skill"
        ]
    );
}

#[test]
fn an_unknown_set_or_tool_stops_every_command_at_start_naming_the_valid_ones() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--tools", "coding,nope", "mcp"][..],
        &["--tools", "nope", "schema"],
        &["--tools", "nope", "tools"],
        &["--tools", "-nope", "call", "think", r#"{"thought": "x"}"#],
        &["--tools", "nope", "batch", "-"],
        &[
            "--tools",
            "nope",
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--no-token",
        ],
        &["--tools", "nope", "agent", "--model", "m", "-p", "hi"],
    ] {
        let run = toolbelt(dir.path(), args);
        assert_eq!(run.code, 2, "{args:?}: {run:#?}");
        assert_eq!(run.stdout, "", "{args:?}");
        for needle in [
            "unknown toolset or tool \"nope\"",
            "toolsets: files, search, shell, web, todos, planner, agent, schedule, message, checkpoints, minimal, coding",
            "tools: analyze_patterns, apply_patch, ask_user, bash,",
        ] {
            assert!(
                run.stderr.contains(needle),
                "{args:?}: {needle} not in {}",
                run.stderr
            );
        }
    }
    assert!(!dir.path().join(".toolbelt").exists());
}
