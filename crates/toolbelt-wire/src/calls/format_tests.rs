#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use toolbelt_core::{CallContext, ErrorCode};

fn success() -> Envelope {
    let mut env = Envelope::success(json!({"sum": 5}), "5").with_stat("lines", 1);
    env.stats.time_ms = 3;
    env.context = CallContext {
        tool: "add".into(),
        call_id: "call_1".into(),
        cwd: "/work".into(),
        params_input: json!({"a": 2, "b": 3}),
        ..CallContext::default()
    };
    env
}

fn failure() -> Envelope {
    Envelope::error(
        ErrorCode::InvalidParams,
        "add: b: \"x\" is not of type \"integer\"",
        Some("fix the listed fields and call again".into()),
    )
}

#[test]
fn openai_tool_message() {
    assert_eq!(
        to_openai_tool_message("call_1", &success()),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "5"})
    );
    assert_eq!(
        to_openai_tool_message("call_2", &failure()),
        json!({
            "role": "tool",
            "tool_call_id": "call_2",
            "content": "ERROR [INVALID_PARAMS]: add: b: \"x\" is not of type \"integer\"\nHint: fix the listed fields and call again"
        })
    );
}

#[test]
fn openai_responses_output() {
    assert_eq!(
        to_openai_responses_output("call_1", &success()),
        json!({"type": "function_call_output", "call_id": "call_1", "output": "5"})
    );
}

#[test]
fn anthropic_tool_result() {
    assert_eq!(
        to_anthropic_tool_result("toolu_1", &success()),
        json!({
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": "5"}],
            "is_error": false
        })
    );
    assert_eq!(
        to_anthropic_tool_result("toolu_2", &failure()),
        json!({
            "type": "tool_result",
            "tool_use_id": "toolu_2",
            "content": [{"type": "text", "text": "ERROR [INVALID_PARAMS]: add: b: \"x\" is not of type \"integer\"\nHint: fix the listed fields and call again"}],
            "is_error": true
        })
    );
    // Empty text blocks are rejected by the API.
    assert_eq!(
        to_anthropic_tool_result("toolu_3", &Envelope::success(json!({}), "")),
        json!({
            "type": "tool_result",
            "tool_use_id": "toolu_3",
            "content": [{"type": "text", "text": "(no output)"}],
            "is_error": false
        })
    );
}

#[test]
fn mcp_call_result() {
    assert_eq!(
        to_mcp_call_result(&success()),
        json!({
            "content": [{"type": "text", "text": "5"}],
            "structuredContent": {
                "status": "success",
                "data": {"sum": 5},
                "text": "5",
                "stats": {"time_ms": 3, "lines": 1},
                "context": {"tool": "add", "call_id": "call_1", "cwd": "/work", "params_input": {"a": 2, "b": 3}}
            },
            "isError": false
        })
    );
    let err = failure();
    assert_eq!(
        to_mcp_call_result(&err),
        json!({
            "content": [{"type": "text", "text": err.text}],
            "structuredContent": {
                "status": "error",
                "data": {},
                "text": err.text,
                "stats": {"time_ms": 0},
                "context": {"tool": "", "call_id": "", "cwd": "", "params_input": null},
                "error": {
                    "code": "INVALID_PARAMS",
                    "message": "add: b: \"x\" is not of type \"integer\"",
                    "hint": "fix the listed fields and call again"
                }
            },
            "isError": true
        })
    );
}

#[test]
fn observations() {
    assert_eq!(to_observation(&success()), "Observation: 5");
    assert_eq!(
        to_observation(&Envelope::partial(
            json!({"truncated": true}),
            "line 1\nline 2\n[... 98 more lines]"
        )),
        "Observation (partial): line 1\nline 2\n[... 98 more lines]"
    );
    assert_eq!(
        to_observation(&failure()),
        "Observation (error INVALID_PARAMS): add: b: \"x\" is not of type \"integer\"\nHint: fix the listed fields and call again"
    );
    // A tool's own error text is kept whole.
    let mut env = Envelope::error(ErrorCode::NonzeroExit, "exit status 1", None);
    env.text = "cargo test failed (exit status 1)\ntest result: FAILED. 3 passed; 1 failed".into();
    assert_eq!(
        to_observation(&env),
        "Observation (error NONZERO_EXIT): cargo test failed (exit status 1)\ntest result: FAILED. 3 passed; 1 failed"
    );
}

#[test]
fn image_results_become_image_content() {
    let env = Envelope::success(
        json!({"path": "logo.png", "image": {"mime_type": "image/png", "data": "iVBORw0KGgo=", "bytes": 8}}),
        "logo.png: PNG image, 8 bytes",
    );
    assert_eq!(image_of(&env), Some(("image/png", "iVBORw0KGgo=")));
    let mcp = to_mcp_call_result(&env);
    assert_eq!(
        mcp["content"],
        json!([
            {"type": "text", "text": "logo.png: PNG image, 8 bytes"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        ])
    );
    // The structured content is the whole envelope: valid against the output
    // schema, which requires the image's data.
    assert_eq!(
        mcp["structuredContent"]["data"]["image"],
        json!({"mime_type": "image/png", "data": "iVBORw0KGgo=", "bytes": 8})
    );
    let anthropic = to_anthropic_tool_result("toolu_1", &env);
    assert_eq!(
        anthropic["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
    // Not an image: nothing added.
    assert_eq!(image_of(&success()), None);
    assert_eq!(
        to_mcp_call_result(&success())["content"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn an_owned_mcp_result_is_the_same_with_or_without_the_envelope() {
    for env in [success(), failure()] {
        let mut expected = to_mcp_call_result(&env);
        assert_eq!(into_mcp_call_result(env.clone(), true), expected);
        expected
            .as_object_mut()
            .unwrap()
            .remove("structuredContent");
        assert_eq!(into_mcp_call_result(env, false), expected);
    }
}
