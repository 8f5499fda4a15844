//! Integration tests: calls from every producer run through one registry.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolbelt_core::{
    CallOptions, Envelope, ErrorCode, Registry, Repair, Reply, Session, Status, ToolContext,
    ToolResult, ToolSpec, TypedTool,
};
use toolbelt_wire::calls::{
    ParsedCall, parse_anthropic_tool_uses, parse_openai_tool_calls, parse_text_reply,
    to_anthropic_tool_result, to_mcp_call_result, to_observation, to_openai_tool_message,
};

/// Bound on every async test.
const TEST_TIMEOUT_MS: u64 = 10_000;

#[derive(Deserialize, JsonSchema)]
struct AddParams {
    a: i64,
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

struct Add;

impl TypedTool for Add {
    type Params = AddParams;
    type Output = Sum;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("add", "Adds two integers.")
    }

    async fn call(&self, _ctx: &ToolContext, p: AddParams) -> ToolResult<Sum> {
        Ok(Reply::new(Sum { sum: p.a + p.b }, format!("{}", p.a + p.b)))
    }
}

fn registry(dir: &std::path::Path) -> Registry {
    let mut registry = Registry::new(Session::new(dir));
    registry.register_typed(Add).unwrap();
    registry
}

async fn run(registry: &Registry, call: ParsedCall) -> Envelope {
    let fut = registry.execute_call(call.into_call(), CallOptions::default());
    tokio::time::timeout(Duration::from_millis(TEST_TIMEOUT_MS), fut)
        .await
        .expect("the call did not finish in time")
}

/// The envelope without what differs from run to run.
fn comparable(mut env: Envelope) -> Envelope {
    env.context.call_id = String::new();
    env.stats.time_ms = 0;
    env
}

#[tokio::test]
async fn same_call_from_every_producer_gives_the_same_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path());

    let openai = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]
    });
    let anthropic = json!({
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}
        ]
    });
    let text = "Thought: add the numbers\nAction: add[{\"a\": 2, \"b\": 3}]\n";

    let mut openai_calls = parse_openai_tool_calls(&openai);
    let mut anthropic_calls = parse_anthropic_tool_uses(&anthropic);
    let mut text_actions = parse_text_reply(text).actions;
    assert_eq!(
        (
            openai_calls.len(),
            anthropic_calls.len(),
            text_actions.len()
        ),
        (1, 1, 1)
    );
    let from_openai = run(&registry, openai_calls.remove(0)).await;
    let from_anthropic = run(&registry, anthropic_calls.remove(0)).await;
    let from_text = run(&registry, text_actions.remove(0).unwrap()).await;

    assert_eq!(from_openai.context.call_id, "call_1");
    assert_eq!(from_anthropic.context.call_id, "toolu_1");
    assert!(!from_text.context.call_id.is_empty());

    let expected = Envelope {
        status: Status::Success,
        data: json!({"sum": 5}),
        text: "5".into(),
        stats: Default::default(),
        context: toolbelt_core::CallContext {
            tool: "add".into(),
            call_id: String::new(),
            cwd: dir.path().display().to_string(),
            params_input: json!({"a": 2, "b": 3}),
            ..Default::default()
        },
        error: None,
    };
    assert_eq!(comparable(from_openai.clone()), expected);
    assert_eq!(comparable(from_anthropic.clone()), expected);
    assert_eq!(comparable(from_text.clone()), expected);

    // And each goes back in its own format.
    assert_eq!(
        to_openai_tool_message("call_1", &from_openai),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "5"})
    );
    assert_eq!(
        to_anthropic_tool_result("toolu_1", &from_anthropic),
        json!({"type": "tool_result", "tool_use_id": "toolu_1",
               "content": [{"type": "text", "text": "5"}], "is_error": false})
    );
    assert_eq!(to_observation(&from_text), "Observation: 5");
    let mcp = to_mcp_call_result(&from_text);
    assert_eq!(mcp["structuredContent"], from_text.to_value());
    assert_eq!(mcp["isError"], json!(false));
}

#[tokio::test]
async fn repaired_arguments_are_recorded_in_the_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path());
    let raw = "```json\n{\"a\": 2, \"b\": 3,}\n```";
    let openai = json!([{"id": "call_9", "type": "function",
                         "function": {"name": "add", "arguments": raw}}]);
    let call = parse_openai_tool_calls(&openai).remove(0);
    assert_eq!(
        call.repairs,
        ["removed code fence", "removed trailing comma"]
    );
    let env = run(&registry, call).await;
    assert_eq!(env.status, Status::Success);
    assert_eq!(env.data, json!({"sum": 5}));
    assert_eq!(env.context.params_input, Value::String(raw.into()));
    assert_eq!(
        env.context.repairs,
        vec![Repair {
            path: String::new(),
            action:
                "stringified JSON arguments parsed (removed code fence, removed trailing comma)"
                    .into(),
        }]
    );
}

#[tokio::test]
async fn broken_arguments_reach_the_model_as_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path());

    // OpenAI: the call is kept with its raw text.
    let openai = json!([{"id": "call_x", "type": "function",
                         "function": {"name": "add", "arguments": "{\"a\": 2 \"b\": 3}"}}]);
    let call = parse_openai_tool_calls(&openai).remove(0);
    assert!(!call.is_ok());
    let env = run(&registry, call).await;
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    assert_eq!(
        env.error.as_ref().map(|e| e.message.as_str()),
        Some("the arguments for add are not valid JSON: expected `,` or `}` at line 1 column 9")
    );
    assert_eq!(
        to_anthropic_tool_result("toolu_x", &env)["is_error"],
        json!(true)
    );

    // Text protocol: a parse error, which still becomes the same registry answer.
    let reply = parse_text_reply("Action: add[{\"a\": 2 \"b\": 3}]");
    let err = reply.actions[0].clone().unwrap_err();
    let fut = registry.execute_call(err.to_call().unwrap(), CallOptions::default());
    let env_text = tokio::time::timeout(Duration::from_millis(TEST_TIMEOUT_MS), fut)
        .await
        .unwrap();
    assert_eq!(comparable(env_text.clone()), comparable(env));
    assert_eq!(
        to_observation(&env_text),
        "Observation (error INVALID_PARAMS): the arguments for add are not valid JSON: expected `,` or `}` at line 1 column 9\nHint: send the arguments as one JSON object matching the tool's input schema"
    );
}

#[tokio::test]
async fn schema_errors_come_back_as_error_results() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path());
    let reply = parse_text_reply("Action: add[{\"a\": 2}]");
    let env = run(&registry, reply.actions[0].clone().unwrap()).await;
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    let mcp = to_mcp_call_result(&env);
    assert_eq!(mcp["isError"], json!(true));
    assert_eq!(mcp["content"], json!([{"type": "text", "text": env.text}]));
    assert!(to_observation(&env).starts_with("Observation (error INVALID_PARAMS): "));
}
