//! `bash` through the registry.

use serde_json::json;
use toolbelt_core::{ErrorCode, Session, Status};

use super::{builtins, call, registry_with, success_data};

#[tokio::test]
async fn a_command_runs_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "bash",
        json!({"command": "pwd; echo warn >&2", "working_dir": "sub"}),
    )
    .await;
    let data = success_data(&env);
    let sub = dir.path().join("sub").canonicalize().unwrap();
    assert_eq!(data["stdout"], format!("{}\n", sub.display()));
    assert_eq!(data["stderr"], "warn\n");
    assert_eq!(data["exit_code"], 0);
    assert!(env.text.contains("[stderr]\nwarn\n"), "{}", env.text);
    assert!(env.text.ends_with("s]"), "{}", env.text);
}

#[tokio::test]
async fn a_nonzero_exit_is_an_error_that_shows_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "bash",
        json!({"command": "echo building; echo 'error: missing ;' >&2; exit 2"}),
    )
    .await;
    assert_eq!(env.status, Status::Error);
    assert_eq!(env.error_code(), Some(ErrorCode::NonzeroExit));
    assert!(
        env.text
            .starts_with("building\n[stderr]\nerror: missing ;\n[exit code 2"),
        "{}",
        env.text
    );
    assert!(
        env.text
            .contains("ERROR [NONZERO_EXIT]: the command exited with code 2"),
        "{}",
        env.text
    );
    assert_eq!(env.data["exit_code"], 2);
    assert_eq!(env.data["stderr"], "error: missing ;\n");

    // No output to read: the error says what such an exit usually means.
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let env = call(&registry, "bash", json!({"command": "grep beta a.txt"})).await;
    assert_eq!(env.error_code(), Some(ErrorCode::NonzeroExit));
    assert!(
        env.text
            .contains("the command exited with code 1 and printed nothing"),
        "{}",
        env.text
    );
    assert!(
        env.text.contains("grep exits 1 when no line matches"),
        "{}",
        env.text
    );
}

#[tokio::test]
async fn a_timeout_is_reported_with_exit_code_124() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let started = std::time::Instant::now();
    let env = call(
        &registry,
        "bash",
        json!({"command": "echo before; sleep 1000", "timeout": 1}),
    )
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(env.error_code(), Some(ErrorCode::Timeout));
    assert_eq!(env.data["timed_out"], true);
    assert_eq!(env.data["exit_code"], 124);
    assert!(env.text.starts_with("before\n"), "{}", env.text);
}

#[tokio::test]
async fn bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "bash",
        json!({"command": "true", "timeout": 100000}),
    )
    .await;
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    assert!(env.text.contains("timeout"), "{}", env.text);
    let env = call(
        &registry,
        "bash",
        json!({"command": "true", "working_dir": "/"}),
    )
    .await;
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied), "{env:#?}");
    let env = call(
        &registry,
        "bash",
        json!({"command": "true", "working_dir": "missing"}),
    )
    .await;
    assert_eq!(env.error_code(), Some(ErrorCode::NotFound), "{env:#?}");
    let env = call(&registry, "bash", json!({"command": ""})).await;
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
}

#[tokio::test]
async fn long_output_is_cut_and_paged_with_read_output() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let session = Session::new(dir.path()).with_state_dir(state.path());
    let registry = registry_with(session);
    let env = call(
        &registry,
        "bash",
        json!({"command": "seq 1 100000; echo 'error: line' >&2"}),
    )
    .await;
    assert_eq!(env.status, Status::Partial, "{env:#?}");
    assert!(env.text.len() <= 30_000, "{}", env.text.len());
    let id = env.data["output_id"].as_str().unwrap().to_string();
    assert!(env.text.contains(&format!("read_output(\"{id}\")")));
    let page = call(
        &registry,
        "read_output",
        json!({"output_id": id, "offset": 50000, "limit": 2}),
    )
    .await;
    assert!(
        page.text.contains("50000") && page.text.contains("50001"),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn the_call_environment_adds_and_secrets_stay_out() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let env = call(&registry, "bash", json!({"command": "echo \"$GREETING\"; env | grep -c -i -E 'token|secret|password|_key' || true", "env": ["GREETING=hi"]})).await;
    let data = success_data(&env);
    assert_eq!(data["stdout"], "hi\n0\n");
    let env = call(
        &registry,
        "bash",
        json!({"command": "true", "env": ["1BAD=x"]}),
    )
    .await;
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    assert!(env.text.contains("env[0]"), "{}", env.text);
}

#[tokio::test]
async fn every_part_of_a_compound_command_must_be_allowed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x"), "keep me").unwrap();
    let mut registry = builtins(dir.path());
    let policy = toolbelt_policy::Policy::from_rules(
        &["bash(echo:*)", "bash(git status:*)"],
        &[] as &[&str],
        &["bash(rm:*)"],
    )
    .unwrap();
    toolbelt_tools::apply_policy(&mut registry, policy).unwrap();
    let env = call(&registry, "bash", json!({"command": "echo allowed"})).await;
    assert_eq!(success_data(&env)["stdout"], "allowed\n");
    for command in [
        "git status && rm -rf x",
        "echo $(rm x)",
        "echo `rm x`",
        "echo hi | (cd / ; rm x)",
    ] {
        let env = call(&registry, "bash", json!({"command": command})).await;
        assert_eq!(
            env.error_code(),
            Some(ErrorCode::AccessDenied),
            "{command}: {env:#?}"
        );
    }
    // Not covered by an allow rule: refused here, where no one can approve it.
    let env = call(&registry, "bash", json!({"command": "echo ok; touch y"})).await;
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied), "{env:#?}");
    assert!(!dir.path().join("y").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("x")).unwrap(),
        "keep me"
    );
}
