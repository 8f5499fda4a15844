//! Skills through the binary: `toolbelt doctor` warns of the broken ones,
//! `toolbelt call skill` loads a good one, and `toolbelt mcp` tells its client
//! when one is added while it runs.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::cli::{Run, command, envelope, finish, stdout_json};
use super::mcp::Server;

/// Writes `<dir>/<folder>/SKILL.md`.
fn write_skill(dir: &Path, folder: &str, text: &str) {
    let folder = dir.join(folder);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("SKILL.md"), text).unwrap();
}

/// `toolbelt --root <root> <args>` with `config` as `$XDG_CONFIG_HOME`.
fn toolbelt_with_config(root: &Path, config: &Path, args: &[&str]) -> Run {
    let child = command(root, args)
        .env("XDG_CONFIG_HOME", config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let run = finish(child, args);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

/// A temporary directory and its canonical path (the binary's roots are canonical).
fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

#[test]
fn doctor_warns_of_broken_skills_and_the_good_one_still_loads() {
    let (_root_dir, root) = canonical_tempdir();
    let (_config_dir, config) = canonical_tempdir();
    let ours = root.join(".toolbelt/skills");
    let claudes = root.join(".claude/skills");
    let users = config.join("toolbelt/skills");
    write_skill(&ours, "plain", "# Notes\n\nNo front matter here.\n");
    write_skill(
        &claudes,
        "yaml",
        "---\nname: yaml\ndescription: [unclosed\n---\nBody.\n",
    );
    write_skill(
        &users,
        "good",
        "---\nname: good\ndescription: Does the thing.\nlicense: MIT\n---\nDo the thing.\n",
    );

    let run = toolbelt_with_config(&root, &config, &["doctor", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = stdout_json(&run);
    assert_eq!(report["ok"], true, "{report:#}");
    let skills = &report["skills"];
    assert_eq!(skills["count"], 1);
    assert_eq!(
        skills["dirs"],
        json!([
            {"path": ours, "count": 0},
            {"path": claudes, "count": 0},
            {"path": users, "count": 1},
        ])
    );
    let problems = skills["problems"].as_array().unwrap();
    let paths: Vec<&Value> = problems.iter().map(|p| &p["path"]).collect();
    assert_eq!(
        paths,
        vec![
            &json!(ours.join("plain/SKILL.md")),
            &json!(claudes.join("yaml/SKILL.md"))
        ]
    );
    let messages: Vec<&str> = problems
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert!(
        messages[0].starts_with("the file does not start with front matter"),
        "{messages:?}"
    );
    assert!(
        messages[1].starts_with("invalid front matter (line "),
        "{messages:?}"
    );
    assert_eq!(report["problems"], json!([]), "skills are warnings only");

    let run = toolbelt_with_config(&root, &config, &["doctor"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = run.stdout;
    assert!(
        text.contains(&format!("skills: 1 (1 in {})\n", users.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "warning: skill skipped: {}: the file does not start with front matter",
            ours.join("plain/SKILL.md").display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "warning: skill skipped: {}: invalid front matter (line ",
            claudes.join("yaml/SKILL.md").display()
        )),
        "{text}"
    );
    assert!(!text.contains("problem:"), "{text}");

    let run = toolbelt_with_config(
        &root,
        &config,
        &["call", "skill", r#"{"name": "good"}"#, "--json"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let env = envelope(&run);
    assert_eq!(env["status"], "success", "{env:#}");
    assert_eq!(env["data"]["path"], json!(users.join("good")));
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .ends_with("\n\nDo the thing.\n"),
        "{env:#}"
    );
}

#[test]
fn doctor_with_no_skills_says_where_it_looked() {
    let (_root_dir, root) = canonical_tempdir();
    let (_config_dir, config) = canonical_tempdir();
    let run = toolbelt_with_config(&root, &config, &["doctor"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "skills: none (looked in {}, {}, {})\n",
            root.join(".toolbelt/skills").display(),
            root.join(".claude/skills").display(),
            config.join("toolbelt/skills").display()
        )),
        "{}",
        run.stdout
    );
}

#[test]
fn mcp_announces_a_skill_added_while_it_runs() {
    let mut server = Server::start_with(&[]);
    let before = server.tools_list();
    let description = |list: &Value| {
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "skill")
            .unwrap()["description"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        description(&before).ends_with("No skills are installed at the moment."),
        "{before:#}"
    );

    write_skill(
        &server.dir.path().join(".toolbelt/skills"),
        "pdf",
        "---\nname: pdf\ndescription: Fill PDF forms.\n---\nUse the script.\n",
    );
    // The server checks every second; the answers reader waits up to 30 s.
    let mut methods = Vec::new();
    while !methods.contains(&"notifications/tools/list_changed".to_string()) {
        let message = server.answer();
        methods.push(message["method"].as_str().unwrap_or_default().to_string());
    }
    server.send(r#"{"jsonrpc":"2.0","id":10,"method":"tools/list"}"#);
    let after = loop {
        let message = server.answer();
        if message["id"] == 10 {
            break message;
        }
    };
    assert!(
        description(&after).ends_with("\n\nSkills:\n- pdf: Fill PDF forms."),
        "{after:#}"
    );

    server.send(r#"{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"pdf"}}"#);
    let prompt = loop {
        let message = server.answer();
        if message["id"] == 11 {
            break message;
        }
    };
    let text = prompt["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.ends_with("\n\nUse the script.\n"), "{prompt:#}");
}
