//! OpenAI, Anthropic and MCP call parsing, and [`ParsedCall::into_call`].

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

fn call(name: &str, arguments: Value, id: Option<&str>) -> ParsedCall {
    ParsedCall {
        name: name.into(),
        arguments,
        call_id: id.map(str::to_string),
        repairs: Vec::new(),
        raw_arguments: None,
        arguments_error: None,
    }
}

#[test]
fn openai_assistant_message() {
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\": \"src/lib.rs\", \"limit\": 20}"}},
            {"id": "call_b", "type": "function",
             "function": {"name": "list_dir", "arguments": ""}}
        ]
    });
    let expected = vec![
        call(
            "read_file",
            json!({"path": "src/lib.rs", "limit": 20}),
            Some("call_a"),
        ),
        call("list_dir", json!({}), Some("call_b")),
    ];
    assert_eq!(parse_openai_tool_calls(&message), expected);
    // The array alone gives the same.
    assert_eq!(parse_openai_tool_calls(&message["tool_calls"]), expected);
    // So does a whole response.
    let response = json!({"id": "chatcmpl-1", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]});
    assert_eq!(parse_openai_tool_calls(&response), expected);
}

#[test]
fn openai_broken_arguments_are_repaired_or_kept() {
    let tool_calls = json!([
        {"id": "c1", "type": "function",
         "function": {"name": "grep", "arguments": "```json\n{\"pattern\": \"fn main\", \"glob\": \"*.rs\",}\n```"}},
        {"id": "c2", "type": "function",
         "function": {"name": "write_file", "arguments": "{\"path\": \"a.txt\" \"content\": \"x\"}"}},
        {"id": "c3", "type": "function",
         "function": {"name": "glob", "arguments": {"pattern": "**/*.md"}}}
    ]);
    let raw1 = "```json\n{\"pattern\": \"fn main\", \"glob\": \"*.rs\",}\n```";
    let raw2 = "{\"path\": \"a.txt\" \"content\": \"x\"}";
    let expected = vec![
        ParsedCall {
            repairs: vec!["removed code fence".into(), "removed trailing comma".into()],
            raw_arguments: Some(raw1.into()),
            ..call(
                "grep",
                json!({"pattern": "fn main", "glob": "*.rs"}),
                Some("c1"),
            )
        },
        ParsedCall {
            raw_arguments: Some(raw2.into()),
            arguments_error: Some("expected `,` or `}` at line 1 column 18".into()),
            ..call("write_file", json!(raw2), Some("c2"))
        },
        call("glob", json!({"pattern": "**/*.md"}), Some("c3")),
    ];
    let parsed = parse_openai_tool_calls(&tool_calls);
    assert_eq!(parsed, expected);
    // Repaired and broken arguments reach the registry as text, so that it records the
    // repair or answers INVALID_PARAMS.
    let calls: Vec<ToolCall> = parsed.into_iter().map(ParsedCall::into_call).collect();
    assert_eq!(
        calls,
        vec![
            ToolCall::new("grep", json!(raw1)).with_id("c1"),
            ToolCall::new("write_file", json!(raw2)).with_id("c2"),
            ToolCall::new("glob", json!({"pattern": "**/*.md"})).with_id("c3"),
        ]
    );
}

#[test]
fn openai_legacy_function_call() {
    let message = json!({
        "role": "assistant",
        "content": null,
        "function_call": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}
    });
    assert_eq!(
        parse_openai_tool_calls(&message),
        vec![call("get_weather", json!({"city": "Paris"}), None)]
    );
    assert_eq!(
        parse_openai_tool_calls(&message["function_call"]),
        vec![call("get_weather", json!({"city": "Paris"}), None)]
    );
}

#[test]
fn openai_responses_output_items() {
    let response = json!({
        "id": "resp_1",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_xyz", "name": "read_file", "arguments": "{\"path\": \"README.md\"}"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"}
        ]
    });
    let expected = vec![call(
        "read_file",
        json!({"path": "README.md"}),
        Some("call_xyz"),
    )];
    assert_eq!(parse_openai_tool_calls(&response), expected);
    assert_eq!(parse_openai_tool_calls(&response["output"]), expected);
    assert_eq!(parse_openai_tool_calls(&response["output"][2]), expected);
}

#[test]
fn openai_entry_without_name_is_kept() {
    let tool_calls = json!([{"id": "c1", "type": "function", "function": {"arguments": "{}"}}]);
    assert_eq!(
        parse_openai_tool_calls(&tool_calls),
        vec![call("", json!({}), Some("c1"))]
    );
}

#[test]
fn openai_nothing_to_read() {
    assert_eq!(
        parse_openai_tool_calls(&json!({"role": "assistant", "content": "Hi"})),
        vec![]
    );
    assert_eq!(parse_openai_tool_calls(&json!(null)), vec![]);
    assert_eq!(parse_openai_tool_calls(&json!("text")), vec![]);
}

#[test]
fn anthropic_message_and_content() {
    let message = json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The user wants the file.", "signature": "x"},
            {"type": "text", "text": "I'll read it."},
            {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "src/lib.rs"}},
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "x"}},
            {"type": "tool_use", "id": "toolu_02", "name": "list_dir"}
        ],
        "stop_reason": "tool_use"
    });
    let expected = vec![
        call("read_file", json!({"path": "src/lib.rs"}), Some("toolu_01")),
        call("list_dir", json!({}), Some("toolu_02")),
    ];
    assert_eq!(parse_anthropic_tool_uses(&message), expected);
    assert_eq!(parse_anthropic_tool_uses(&message["content"]), expected);
    assert_eq!(
        parse_anthropic_tool_uses(&message["content"][2]),
        expected[..1].to_vec()
    );
    assert_eq!(
        parse_anthropic_tool_uses(&json!({"role": "user", "content": "hi"})),
        vec![]
    );
}

#[test]
fn anthropic_stringified_input() {
    let block = json!({"type": "tool_use", "id": "toolu_9", "name": "grep", "input": "{\"pattern\": \"TODO\", \"ignore_case\": True}"});
    assert_eq!(
        parse_anthropic_tool_uses(&block),
        vec![ParsedCall {
            repairs: vec!["replaced Python True with true".into()],
            raw_arguments: Some("{\"pattern\": \"TODO\", \"ignore_case\": True}".into()),
            ..call(
                "grep",
                json!({"pattern": "TODO", "ignore_case": true}),
                Some("toolu_9")
            )
        }]
    );
}

#[test]
fn mcp_tools_call() {
    let request = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "a.txt"}}
    });
    assert_eq!(
        parse_mcp_tool_call(&request),
        Some(call("read_file", json!({"path": "a.txt"}), Some("7")))
    );
    assert_eq!(
        parse_mcp_tool_call(&request["params"]),
        Some(call("read_file", json!({"path": "a.txt"}), None))
    );
    assert_eq!(
        parse_mcp_tool_call(&json!({"name": "list_dir"})),
        Some(call("list_dir", json!({}), None))
    );
    assert_eq!(parse_mcp_tool_call(&json!({"arguments": {}})), None);
}

#[test]
fn clean_calls_keep_parsed_arguments() {
    let parsed = ParsedCall::from_arguments_text("add", " {\"a\": 1} ").with_id("x");
    assert!(parsed.is_ok());
    assert_eq!(
        ToolCall::from(parsed),
        ToolCall::new("add", json!({"a": 1})).with_id("x")
    );
}
