//! The built-in tools, exercised through a [`Registry`] as a model would call them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod apply_patch;
mod background;
mod bash;
mod changes;
mod checkpoints;
mod edit_file;
mod escapes;
mod glob;
mod golden;
mod grep;
mod list_dir;
mod messaging;
mod multi_edit;
mod planner;
mod read_file;
mod read_output;
mod reviews;
mod set_todo_list;
mod skill;
mod store_writers;
mod think;
mod tokens;
mod update_todos;
mod write_file;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use toolbelt_core::{Envelope, ErrorCode, Registry, Session, Status};

/// Bound on every call a test makes.
const CALL_TIMEOUT_MS: u64 = 10_000;

/// A registry holding the built-in tools, in a session rooted at `root`.
fn builtins(root: &Path) -> Registry {
    registry_with(Session::new(root))
}

/// A registry holding the built-in tools in `session`; `skill` serves the skills
/// of the session's roots only, never the user's own.
fn registry_with(session: Session) -> Registry {
    let mut registry = Registry::new(session);
    let skills = toolbelt_tools::Skills::discover(registry.session().roots(), None);
    toolbelt_tools::register_builtins_with(
        &mut registry,
        toolbelt_tools::BuiltinOptions {
            skills: Some(skills),
            ..toolbelt_tools::BuiltinOptions::default()
        },
    )
    .unwrap();
    registry
}

/// Executes one call, failing the test if it takes longer than [`CALL_TIMEOUT_MS`].
async fn call(registry: &Registry, tool: &str, arguments: Value) -> Envelope {
    tokio::time::timeout(
        Duration::from_millis(CALL_TIMEOUT_MS),
        registry.execute(tool, arguments),
    )
    .await
    .unwrap_or_else(|_| panic!("{tool} did not answer within {CALL_TIMEOUT_MS} ms"))
}

/// Asserts a successful envelope and returns its data.
#[track_caller]
fn success_data(env: &Envelope) -> &Value {
    assert_eq!(
        env.status,
        Status::Success,
        "expected success, got {env:#?}"
    );
    assert_eq!(env.error, None);
    &env.data
}

/// Asserts an error envelope with `code` and returns its message.
#[track_caller]
fn error_message(env: &Envelope, code: ErrorCode) -> &str {
    assert_eq!(env.status, Status::Error, "expected an error, got {env:#?}");
    let error = env.error.as_ref().unwrap();
    assert_eq!(error.code, code, "wrong code in {env:#?}");
    &error.message
}

/// The `(path, message)` pairs of an INVALID_PARAMS envelope's `data.violations`.
#[track_caller]
fn violation_paths(env: &Envelope) -> Vec<String> {
    let violations = env.data["violations"].as_array().unwrap();
    assert_eq!(
        env.stats.counters.get("violations"),
        Some(&json!(violations.len()))
    );
    violations
        .iter()
        .map(|v| v["path"].as_str().unwrap().to_string())
        .collect()
}

/// 50 directories of 60 `.txt` files each holding `content`: a tree large enough
/// that a 1 ms time budget runs out while walking it.
fn wide_tree(dir: &Path, content: &str) {
    for d in 0..50 {
        let sub = dir.join(format!("d{d:02}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..60 {
            std::fs::write(sub.join(format!("f{f:02}.txt")), content).unwrap();
        }
    }
}
