//! Background shells through the registry: `bash` with `run_in_background`,
//! `bash_output`, `write_stdin`, `kill_shell`, `list_shells`.

use serde_json::{Value, json};
use toolbelt_core::{ErrorCode, Registry};

use super::{builtins, call, error_message, success_data};

/// Starts `command` in the background; returns its shell id.
async fn start(registry: &Registry, command: &str) -> String {
    let env = call(
        registry,
        "bash",
        json!({"command": command, "run_in_background": true}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["status"], "running");
    assert!(env.text.contains("bash_output"), "{}", env.text);
    data["shell_id"].as_str().unwrap().to_string()
}

async fn output(registry: &Registry, args: Value) -> (Value, String) {
    let env = call(registry, "bash_output", args).await;
    (success_data(&env).clone(), env.text)
}

/// Processes whose environment holds `TBTEST=<token>`.
fn running_with(token: &str) -> Vec<u32> {
    toolbelt_exec::tree::with_env("TBTEST", token)
        .iter()
        .filter_map(|p| u32::try_from(p.as_raw_nonzero().get()).ok())
        .collect()
}

#[tokio::test]
async fn a_background_command_returns_at_once_and_its_output_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let started = std::time::Instant::now();
    let id = start(&registry, "echo first; sleep 0.3; echo done").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(id, "shell_1");

    let mut stdout = String::new();
    loop {
        let (data, text) = output(&registry, json!({"shell_id": id, "timeout": 5})).await;
        stdout.push_str(data["stdout"].as_str().unwrap());
        if data["status"] == "exited" {
            assert_eq!(data["exit_code"], 0);
            assert!(
                text.ends_with("[shell_1: exited with code 0 after 0.3 s]")
                    || text.contains("exited with code 0"),
                "{text}"
            );
            break;
        }
        assert!(text.contains("[shell_1: running, "), "{text}");
    }
    assert_eq!(stdout, "first\ndone\n");
    // Read to its end: forgotten.
    let env = call(&registry, "bash_output", json!({"shell_id": id})).await;
    error_message(&env, ErrorCode::NotFound);
}

#[tokio::test]
async fn block_false_answers_at_once_with_no_new_output() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let id = start(&registry, "sleep 1000").await;
    let (data, text) = output(&registry, json!({"shell_id": id, "block": false})).await;
    assert_eq!(data["stdout"], "");
    assert_eq!(data["status"], "running");
    assert!(text.contains("no new output"), "{text}");
    let env = call(&registry, "kill_shell", json!({"shell_id": id})).await;
    assert_eq!(success_data(&env)["status"], "killed");
}

#[tokio::test]
async fn the_filter_keeps_matching_lines() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let id = start(
        &registry,
        "printf 'ok 1\\nerror: a\\nok 2\\nerror: b\\n'; exit 1",
    )
    .await;
    let mut kept = String::new();
    let mut left_out = 0;
    loop {
        let (data, _) = output(&registry, json!({"shell_id": id, "filter": "^error"})).await;
        kept.push_str(data["stdout"].as_str().unwrap());
        left_out += data["filtered_lines"].as_u64().unwrap();
        if data["status"] != "running" {
            assert_eq!(data["exit_code"], 1);
            break;
        }
    }
    assert_eq!(kept, "error: a\nerror: b\n");
    assert_eq!(left_out, 2);

    let env = call(
        &registry,
        "bash_output",
        json!({"shell_id": "x", "filter": "(unclosed"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(message.contains("\"(unclosed\""), "{message}");
}

#[tokio::test]
async fn write_stdin_reaches_cat_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let cat = start(&registry, "cat").await;
    let env = call(
        &registry,
        "write_stdin",
        json!({"shell_id": cat, "chars": "hello\n"}),
    )
    .await;
    assert_eq!(success_data(&env)["stdout"], "hello\n");
    assert!(
        env.text.starts_with("hello\n[shell_1: running"),
        "{}",
        env.text
    );
    let env = call(
        &registry,
        "write_stdin",
        json!({"shell_id": cat, "chars": ""}),
    )
    .await;
    assert_eq!(success_data(&env)["stdout"], "");

    let reader = start(&registry, "read x; echo got $x").await;
    let env = call(
        &registry,
        "write_stdin",
        json!({"shell_id": reader, "chars": "42\n"}),
    )
    .await;
    let mut seen = success_data(&env)["stdout"].as_str().unwrap().to_string();
    if !seen.contains("got 42") {
        let (data, _) = output(&registry, json!({"shell_id": reader})).await;
        seen.push_str(data["stdout"].as_str().unwrap());
    }
    assert_eq!(seen, "got 42\n");
    call(&registry, "kill_shell", json!({"shell_id": cat})).await;
}

#[tokio::test]
async fn kill_shell_stops_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let t = format!("tbtest{}", std::process::id());
    let id = start(
        &registry,
        &format!("export TBTEST={t}; setsid sleep 1000 & sleep 1000 & echo started; wait"),
    )
    .await;
    let (data, _) = output(&registry, json!({"shell_id": id, "timeout": 5})).await;
    assert_eq!(data["stdout"], "started\n");
    assert!(running_with(&t).len() >= 2);
    let env = call(&registry, "kill_shell", json!({"shell_id": id})).await;
    assert_eq!(success_data(&env)["status"], "killed");
    assert!(env.text.contains("killed after"), "{}", env.text);
    assert_eq!(running_with(&t), Vec::<u32>::new());
}

#[tokio::test]
async fn unknown_ids_name_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let env = call(&registry, "kill_shell", json!({"shell_id": "shell_7"})).await;
    error_message(&env, ErrorCode::NotFound);
    let id = start(&registry, "sleep 1000").await;
    let env = call(&registry, "bash_output", json!({"shell_id": "shell_7"})).await;
    let message = error_message(&env, ErrorCode::NotFound);
    assert_eq!(
        message,
        "no background shell \"shell_7\"; there are shell_1"
    );
    let hint = env.error.as_ref().unwrap().hint.clone().unwrap_or_default();
    assert!(hint.contains("shell_1"), "{hint}");
    call(&registry, "kill_shell", json!({"shell_id": id})).await;
}

#[tokio::test]
async fn list_shells_shows_running_and_finished_ones_and_the_cap_refuses_more() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let env = call(&registry, "list_shells", json!({})).await;
    assert_eq!(success_data(&env)["shells"], json!([]));
    assert_eq!(env.text, "[no background shells]");

    let done = start(&registry, "exit 5").await;
    // Wait for its end without reading its output.
    for _ in 0..100 {
        let env = call(&registry, "list_shells", json!({})).await;
        if env.data["shells"][0]["status"] == "exited" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for _ in 0..8 {
        start(&registry, "sleep 1000").await;
    }
    let env = call(&registry, "list_shells", json!({})).await;
    let data = success_data(&env);
    assert_eq!(data["shells"].as_array().unwrap().len(), 9);
    assert_eq!(data["shells"][0]["shell_id"], done);
    assert_eq!(data["shells"][0]["exit_code"], 5);
    assert_eq!(data["max_running"], 8);
    assert!(
        env.text.contains("shell_1  [exited with code 5 after"),
        "{}",
        env.text
    );

    let env = call(
        &registry,
        "bash",
        json!({"command": "sleep 1", "run_in_background": true}),
    )
    .await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(
        message.starts_with("8 background shells are running already (shell_2: sleep 1000;"),
        "{message}"
    );

    for n in 2..=9 {
        call(
            &registry,
            "kill_shell",
            json!({"shell_id": format!("shell_{n}")}),
        )
        .await;
    }
    // Foreground commands still run while background shells exist.
    let env = call(&registry, "bash", json!({"command": "echo fg"})).await;
    assert_eq!(success_data(&env)["stdout"], "fg\n");
}

#[tokio::test]
async fn dropping_the_registry_stops_background_shells() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let t = format!("tbtestdrop{}", std::process::id());
    let id = start(
        &registry,
        &format!("export TBTEST={t}; echo up; sleep 1000"),
    )
    .await;
    let (data, _) = output(&registry, json!({"shell_id": id, "timeout": 5})).await;
    assert_eq!(data["stdout"], "up\n");
    assert!(!running_with(&t).is_empty());
    drop(registry);
    assert_eq!(running_with(&t), Vec::<u32>::new());
}

#[tokio::test]
async fn a_background_timeout_stops_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "bash",
        json!({"command": "sleep 1000", "run_in_background": true, "timeout": 1}),
    )
    .await;
    let id = success_data(&env)["shell_id"].as_str().unwrap().to_string();
    assert!(env.text.contains("stopped after 1 s"), "{}", env.text);
    let (data, text) = output(&registry, json!({"shell_id": id, "timeout": 5})).await;
    assert_eq!(data["status"], "timed_out");
    assert!(text.contains("timed out after"), "{text}");
}
