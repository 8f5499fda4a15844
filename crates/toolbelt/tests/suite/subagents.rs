//! Subagents through the binary: `toolbelt agent -p` runs `task` and `spawn`
//! against a scripted provider, a background report is read by another process,
//! and the tools are offered only when a model is configured.

use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_agent::ProviderKind;
use toolbelt_agent::testing::{Recorded, Reply, Script, ScriptedServer};

use super::cli::{command, finish};

pub(super) fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(super) fn first_user(r: &Recorded) -> String {
    r.body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn tool_names(r: &Recorded) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `toolbelt <args>` with the scripted provider as the configured model.
pub(super) fn with_model(
    root: &std::path::Path,
    server: &ScriptedServer,
    args: &[&str],
) -> std::process::Command {
    let mut cmd = command(root, args);
    cmd.env("TOOLBELT_AGENT_PROVIDER", "openai")
        .env("TOOLBELT_AGENT_MODEL", "scripted-model")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped());
    cmd
}

#[test]
fn agent_p_runs_a_task_and_a_spawned_report_outlives_the_process() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("notes.txt"), "the answer is 42\n").unwrap();
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::calls(vec![
                    (
                        "task",
                        json!({"description": "read the notes", "prompt": "FG-CHILD read notes.txt", "subagent_type": "explore"}).to_string(),
                    ),
                    (
                        "spawn",
                        json!({"task": "BG-CHILD summarise", "label": "summary"}).to_string(),
                    ),
                ]),
                Reply::text("Waiting for the summary."),
                Reply::text("All reports are in."),
            ],
        )
        .route(
            "FG-CHILD",
            vec![
                Reply::call("read_file", json!({"path": "notes.txt"}).to_string()),
                Reply::text("notes.txt says the answer is 42"),
            ],
        )
        .route("BG-CHILD", vec![Reply::text("background summary ready").delayed(300)]),
    )
    .unwrap();
    let child = with_model(root.path(), &server, &["agent", "-p", "go", "--json"])
        .spawn()
        .unwrap();
    let run = finish(child, &["agent"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events = events(&run.stdout);
    let end = events.iter().find(|e| e["type"] == "run_ended").unwrap();
    assert_eq!(end["message"], "All reports are in.");
    // The task's answer came back as its result; the explore child had read-only tools.
    let task_result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "task")
        .unwrap();
    assert_eq!(task_result["status"], "success");
    assert!(
        task_result["text"]
            .as_str()
            .unwrap()
            .contains("answer is 42")
    );
    let requests = server.requests();
    let fg = requests
        .iter()
        .find(|r| first_user(r).contains("FG-CHILD"))
        .unwrap();
    let tools = tool_names(fg);
    assert!(tools.contains(&"read_file".to_string()));
    for absent in ["bash", "write_file", "task", "spawn"] {
        assert!(
            !tools.contains(&absent.to_string()),
            "{absent} offered to explore"
        );
    }
    // The background report arrived as an event and in the conversation.
    let done = events
        .iter()
        .find(|e| e["type"] == "subagent" && e["background"] == true && e["state"] == "done")
        .unwrap();
    let id = done["task_id"].as_str().unwrap().to_string();
    assert_eq!(done["result"], "background summary ready");
    let last = requests.last().unwrap();
    assert!(last.body.to_string().contains("background summary ready"));

    // Another process reads the report from the store.
    let child = with_model(
        root.path(),
        &server,
        &[
            "call",
            "task_output",
            &json!({"task_id": id}).to_string(),
            "--json",
        ],
    )
    .spawn()
    .unwrap();
    let read = finish(child, &["call"]);
    assert_eq!(read.code, 0, "{}{}", read.stdout, read.stderr);
    let env: Value = serde_json::from_str(&read.stdout).unwrap();
    assert_eq!(env["data"]["status"], "done");
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .contains("background summary ready")
    );
}

#[test]
fn subagent_tools_are_offered_only_with_a_model() {
    let root = TempDir::new().unwrap();
    let names = |cmd: &mut std::process::Command| -> Vec<String> {
        let child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
        let run = finish(child, &["tools"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let listed: Value = serde_json::from_str(&run.stdout).unwrap();
        listed
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let without = names(&mut command(root.path(), &["tools", "--json"]));
    assert!(!without.contains(&"task".to_string()));
    assert!(without.contains(&"skill".to_string()));
    let server = ScriptedServer::start(Script::new(ProviderKind::OpenAi, Vec::new())).unwrap();
    let with = names(&mut with_model(root.path(), &server, &["tools", "--json"]));
    for name in ["task", "spawn", "task_output", "task_stop", "task_list"] {
        assert!(with.contains(&name.to_string()), "{name} missing: {with:?}");
    }
}

#[test]
fn doctor_reports_broken_agent_types_and_keeps_the_good_ones() {
    let root = TempDir::new().unwrap();
    let agents = root.path().join(".toolbelt").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews diffs.\ntools: read_file, grep, no_such_tool\n---\nReview.\n",
    )
    .unwrap();
    std::fs::write(agents.join("plain.md"), "Just text.\n").unwrap();
    std::fs::write(
        agents.join("bad.md"),
        "---\nname: bad\ndescription: [x\n---\nBody\n",
    )
    .unwrap();
    let child = command(root.path(), &["doctor", "--json"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let run = finish(child, &["doctor"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["ok"], true);
    let types = &report["agent_types"];
    assert_eq!(
        types["names"],
        json!(["general-purpose", "explore", "reviewer"])
    );
    let problems: Vec<String> = types["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p["path"].as_str().unwrap(),
                p["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(
        problems[0].contains("bad.md") && problems[0].contains("line"),
        "{problems:?}"
    );
    assert!(problems[1].contains("plain.md") && problems[1].contains("front matter"));
    assert!(problems[2].contains("reviewer.md") && problems[2].contains("no_such_tool"));
}
