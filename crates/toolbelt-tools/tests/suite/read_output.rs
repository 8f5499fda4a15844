//! `read_output`: paging an output the registry really spilled.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::output::OutputBudget;
use toolbelt_core::{ErrorCode, Registry, Reply, Session, Status, ToolSpec};

use super::{call, error_message, registry_with, success_data, violation_paths};

/// Budget of the test session: far below the log's size.
const BUDGET_BYTES: usize = 8_000;
/// Lines of the log the test tool prints.
const LOG_LINES: u64 = 1_000;

fn log_text() -> String {
    (1..=LOG_LINES)
        .map(|n| format!("step {n} of {LOG_LINES}: ok\n"))
        .collect()
}

/// The built-ins plus `long_log`, which prints [`log_text`], in a session whose
/// budget is [`BUDGET_BYTES`].
fn registry(root: &Path) -> Registry {
    let session = Session::new(root).with_budget(OutputBudget::with_max_bytes(BUDGET_BYTES));
    let mut registry = registry_with(session);
    let spec = ToolSpec::new(
        "long_log",
        "Prints a long log.",
        json!({"type": "object", "properties": {}, "additionalProperties": false}),
    );
    registry
        .register_fn(spec, |_ctx, _args| async {
            Ok(Reply::new(json!({"lines": LOG_LINES}), log_text()))
        })
        .unwrap();
    registry
}

/// Runs `long_log` and returns the id of its spilled output.
async fn spilled_id(registry: &Registry) -> String {
    let env = call(registry, "long_log", json!({})).await;
    assert_eq!(env.status, Status::Partial, "{env:#?}");
    assert!(env.text.len() <= BUDGET_BYTES);
    assert_eq!(env.data["truncated"], json!(true));
    let id = env.data["output_id"].as_str().unwrap().to_string();
    assert!(env.text.contains(&id), "{}", env.text);
    id
}

fn lines(range: std::ops::RangeInclusive<u64>) -> String {
    range
        .map(|n| format!("{n:>6}\tstep {n} of {LOG_LINES}: ok\n"))
        .collect()
}

#[tokio::test]
async fn the_spill_file_holds_the_whole_output() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    let id = spilled_id(&registry).await;
    let path = dir
        .path()
        .join(".toolbelt/tool-output")
        .join(format!("{id}.txt"));
    assert_eq!(std::fs::read_to_string(path).unwrap(), log_text());
}

#[tokio::test]
async fn default_page_is_the_first_200_lines() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    let id = spilled_id(&registry).await;
    let env = call(&registry, "read_output", json!({"output_id": id})).await;
    assert_eq!(
        success_data(&env),
        &json!({
            "output_id": id,
            "first_line": 1,
            "last_line": 200,
            "total_lines": LOG_LINES,
            "total_bytes": log_text().len(),
            "next_offset": 201,
            "cut_lines": 0
        })
    );
    assert_eq!(
        env.text,
        format!(
            "{}[lines 1-200 of 1,000; continue with offset=201]",
            lines(1..=200)
        )
    );
    assert_eq!(env.stats.counters.get("lines"), Some(&json!(200)));
    assert_eq!(
        env.stats.counters.get("total_lines"),
        Some(&json!(LOG_LINES))
    );
}

#[tokio::test]
async fn offset_and_limit_select_a_page() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    let id = spilled_id(&registry).await;
    let env = call(
        &registry,
        "read_output",
        json!({"output_id": id, "offset": 500, "limit": 3}),
    )
    .await;
    assert_eq!(
        env.text,
        format!(
            "{}[lines 500-502 of 1,000; continue with offset=503]",
            lines(500..=502)
        )
    );
    assert_eq!(success_data(&env)["next_offset"], json!(503));

    // The last page says so and offers no next offset.
    let env = call(
        &registry,
        "read_output",
        json!({"output_id": id, "offset": 995, "limit": 50}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(
        (
            &data["first_line"],
            &data["last_line"],
            &data["next_offset"]
        ),
        (&json!(995), &json!(1000), &Value::Null)
    );
    assert_eq!(
        env.text,
        format!(
            "{}[lines 995-1,000 of 1,000; end of output]",
            lines(995..=1000)
        )
    );
}

#[tokio::test]
async fn negative_offset_counts_from_the_end() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    let id = spilled_id(&registry).await;
    let env = call(
        &registry,
        "read_output",
        json!({"output_id": id, "offset": -3}),
    )
    .await;
    assert_eq!(
        env.text,
        format!(
            "{}[lines 998-1,000 of 1,000; end of output]",
            lines(998..=1000)
        )
    );
    // Further back than the start: from line 1.
    let env = call(
        &registry,
        "read_output",
        json!({"output_id": id, "offset": -5000, "limit": 2}),
    )
    .await;
    assert_eq!(success_data(&env)["first_line"], json!(1));
    assert_eq!(success_data(&env)["last_line"], json!(2));
}

#[tokio::test]
async fn offset_past_the_end_says_which_offsets_exist() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    let id = spilled_id(&registry).await;
    let env = call(
        &registry,
        "read_output",
        json!({"output_id": id, "offset": 1001}),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "output_id": id,
            "first_line": 0,
            "last_line": 0,
            "total_lines": LOG_LINES,
            "total_bytes": log_text().len(),
            "next_offset": null,
            "cut_lines": 0
        })
    );
    assert_eq!(
        env.text,
        "[offset 1001 is past the end: the output has 1,000 lines; use an offset from 1 to 1000, \
         or a negative one such as -200 for the last lines]"
    );
}

#[tokio::test]
async fn limit_outside_1_to_2000_is_invalid_params() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    let id = spilled_id(&registry).await;
    for limit in [0, 2001] {
        let env = call(
            &registry,
            "read_output",
            json!({"output_id": id, "limit": limit}),
        )
        .await;
        error_message(&env, ErrorCode::InvalidParams);
        assert_eq!(violation_paths(&env), ["limit"]);
    }
}

#[tokio::test]
async fn path_as_output_id_is_invalid_params() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    for id in [
        "../etc/passwd",
        "/etc/passwd",
        "out_../../x",
        "OUT_0123456789ABCDEF0123456789ABCDEF",
    ] {
        let env = call(&registry, "read_output", json!({"output_id": id})).await;
        let message = error_message(&env, ErrorCode::InvalidParams);
        assert!(message.contains("invalid output_id"), "{message}");
        assert!(message.contains(id), "{message}");
    }
}

#[tokio::test]
async fn unknown_well_formed_id_is_not_found_with_a_hint() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    let id = "out_0123456789abcdef0123456789abcdef";
    let env = call(&registry, "read_output", json!({"output_id": id})).await;
    let message = error_message(&env, ErrorCode::NotFound);
    assert!(message.contains(id), "{message}");
    let hint = env.error.as_ref().unwrap().hint.as_deref().unwrap();
    assert!(hint.contains("run the original call again"), "{hint}");
}

#[tokio::test]
async fn output_of_another_session_is_not_found() {
    let (one, two) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let id = spilled_id(&registry(one.path())).await;
    let env = call(
        &registry(two.path()),
        "read_output",
        json!({"output_id": id}),
    )
    .await;
    error_message(&env, ErrorCode::NotFound);
}

#[tokio::test]
async fn strict_mode_nulls_mean_the_defaults() {
    let dir = TempDir::new().unwrap();
    let registry = registry(dir.path());
    let id = spilled_id(&registry).await;
    let env = call(
        &registry,
        "read_output",
        json!({"output_id": id, "offset": null, "limit": null}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(
        (&data["first_line"], &data["last_line"]),
        (&json!(1), &json!(200))
    );
}
