//! The guards of `toolbelt agent --model-size small`: a small model's command that
//! destroys work (`rm -rf`) is not run under `--yes` unless a rule names it, and
//! the model is told what it would have destroyed and the safer way.

use std::fs;
use std::path::Path;

use tempfile::TempDir;
use toolbelt_agent::ProviderKind;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};

use super::agent::last_tool_results;
use super::agent_rewind::agent;
use super::cli::Run;

const KIND: ProviderKind = ProviderKind::OpenAi;

/// A model that runs `rm -rf somedir`, then answers (with the finish tool where
/// it has one, else in prose).
fn removing_model() -> ScriptedServer {
    let replies = vec![
        Reply::call("bash", r#"{"command": "rm -rf somedir"}"#),
        Reply::call("finish", r#"{"answer": "done"}"#),
        Reply::text("done"),
        Reply::text("done"),
    ];
    ScriptedServer::start(Script::new(KIND, replies)).unwrap()
}

/// `toolbelt agent -p "clean up" --yes <args>` in `root` against `server`.
fn run_agent(root: &Path, server: &ScriptedServer, args: &[&str]) -> Run {
    let mut all = vec!["--yes", "-p", "clean up"];
    all.extend_from_slice(args);
    agent(root, server, &all)
}

/// A workspace with `somedir/keep.txt`, and `toml` as its config when given.
fn workspace(toml: Option<&str>) -> TempDir {
    let dir = TempDir::new().unwrap();
    fs::create_dir(dir.path().join("somedir")).unwrap();
    fs::write(dir.path().join("somedir/keep.txt"), "keep me\n").unwrap();
    if let Some(toml) = toml {
        fs::write(dir.path().join("toolbelt.toml"), toml).unwrap();
    }
    dir
}

/// What the model was told of its `bash` call.
fn bash_result(server: &ScriptedServer) -> String {
    let requests = server.requests();
    assert!(requests.len() >= 2, "{} requests", requests.len());
    let results = last_tool_results(KIND, &requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    results[0].1.clone()
}

#[test]
fn a_small_models_rm_rf_waits_for_a_person_even_under_yes() {
    let dir = workspace(None);
    let server = removing_model();
    let run = run_agent(
        dir.path(),
        &server,
        &["--model-size", "small", "--constrain", "none"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(dir.path().join("somedir/keep.txt").exists());
    let told = bash_result(&server);
    assert!(
        told.contains("was not run: it deletes somedir and everything in it"),
        "{told}"
    );
    assert!(told.contains("not even with --yes"), "{told}");
    assert!(
        told.contains("delete single files by name (rm FILE, without -r)"),
        "{told}"
    );
}

#[test]
fn a_large_models_rm_rf_runs_under_yes() {
    let dir = workspace(None);
    let server = removing_model();
    let run = run_agent(dir.path(), &server, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!dir.path().join("somedir").exists());
    let told = bash_result(&server);
    assert!(!told.contains("was not run"), "{told}");
}

#[test]
fn an_allow_rule_naming_the_command_lets_a_small_model_run_it() {
    let dir = workspace(Some("[permissions]\nallow = [\"bash(rm -rf somedir)\"]\n"));
    let server = removing_model();
    let run = run_agent(
        dir.path(),
        &server,
        &["--model-size", "small", "--constrain", "none"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!dir.path().join("somedir").exists());
    let told = bash_result(&server);
    assert!(!told.contains("was not run"), "{told}");
}
