//! `think`: the thought comes back as a UI message, and nothing else changes.

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::json;
use tempfile::TempDir;
use toolbelt_core::{ErrorCode, EventSink, Repair};

use super::{builtins, call, error_message, success_data, violation_paths};

#[tokio::test]
async fn plain_thought_becomes_the_thinking_message() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "think",
        json!({"thought": "The parser drops the last token."}),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "message": "💭 Thinking: The parser drops the last token.",
            "thought": "The parser drops the last token."
        })
    );
    assert_eq!(env.text, "Thought recorded.");
}

#[tokio::test]
async fn type_and_confidence_are_kept_beside_the_message() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "think",
        json!({"thought": "Fix the lexer first.", "type": "plan", "confidence": 0.25}),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({
            "message": "💭 Thinking: Fix the lexer first.",
            "thought": "Fix the lexer first.",
            "type": "plan",
            "confidence": 0.25
        })
    );

    let env = call(
        &registry,
        "think",
        json!({"thought": "Two callers.", "type": "analysis"}),
    )
    .await;
    assert_eq!(
        success_data(&env)["message"],
        json!("💭 Thinking: Two callers.")
    );

    let env = call(
        &registry,
        "think",
        json!({"thought": "Unsure.", "confidence": 0}),
    )
    .await;
    assert_eq!(success_data(&env)["message"], json!("💭 Thinking: Unsure."));
    assert_eq!(success_data(&env)["confidence"], json!(0.0));
}

#[tokio::test]
async fn confidence_out_of_range_is_invalid_params_naming_confidence() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    for confidence in [json!(1.5), json!(-0.1)] {
        let env = call(
            &registry,
            "think",
            json!({"thought": "x", "confidence": confidence}),
        )
        .await;
        let message = error_message(&env, ErrorCode::InvalidParams);
        assert!(message.contains("confidence"), "{message}");
        assert_eq!(violation_paths(&env), ["confidence"]);
    }
}

#[tokio::test]
async fn every_bad_argument_is_reported_with_its_path() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "think",
        json!({"thought": "", "type": "guess", "mood": "calm"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams).to_string();
    let mut paths = violation_paths(&env);
    paths.sort();
    assert_eq!(paths, ["mood", "thought", "type"], "{message}");
    for needle in ["thought", "type", "\"guess\"", "mood"] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }

    let env = call(&registry, "think", json!({})).await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(message.contains("thought"), "{message}");
}

#[tokio::test]
async fn stringified_confidence_is_repaired_and_recorded() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "think",
        json!({"thought": "x", "confidence": "0.5"}),
    )
    .await;
    assert_eq!(success_data(&env)["confidence"], json!(0.5));
    assert_eq!(
        env.context.repairs,
        [Repair {
            path: "confidence".into(),
            action: "string \"0.5\" -> number 0.5".into()
        }]
    );
}

/// Collects UI events.
#[derive(Default)]
struct Events(Mutex<Vec<(String, String)>>);

impl EventSink for Events {
    fn emit(&self, tool: &str, _call_id: &str, message: &str) {
        self.0.lock().unwrap().push((tool.into(), message.into()));
    }
}

#[tokio::test]
async fn the_message_is_emitted_as_a_ui_event() {
    let dir = TempDir::new().unwrap();
    let mut registry = builtins(dir.path());
    let events = Arc::new(Events::default());
    registry.set_events(Some(Arc::clone(&events) as Arc<dyn EventSink>));
    let env = call(
        &registry,
        "think",
        json!({"thought": "Read the log.", "type": "decision"}),
    )
    .await;
    success_data(&env);
    assert_eq!(
        *events.0.lock().unwrap(),
        [(
            "think".to_string(),
            "💭 Thinking: Read the log.".to_string()
        )]
    );
}

#[tokio::test]
async fn strict_mode_nulls_for_unused_arguments_are_accepted() {
    // openai-strict makes every argument required and nullable.
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let env = call(
        &registry,
        "think",
        json!({"thought": "x", "type": null, "confidence": null}),
    )
    .await;
    assert_eq!(
        success_data(&env),
        &json!({"message": "💭 Thinking: x", "thought": "x"})
    );
}
