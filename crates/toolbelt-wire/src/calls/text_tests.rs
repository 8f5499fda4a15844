#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// Fixtures of model replies, each `NN_name.txt` beside `NN_name.expected.json`.
const FIXTURES_DIR: &str = "src/calls/fixtures/text";
/// The fixtures cover at least this many replies.
const MIN_FIXTURES: usize = 30;
/// Cases per property (the generators are slow in debug builds).
const PROPTEST_CASES: u32 = 600;

/// The reply as the fixtures write it.
fn reply_json(reply: &TextReply) -> Value {
    let actions: Vec<Value> = reply
        .actions
        .iter()
        .map(|a| match a {
            Ok(call) => json!({"call": call}),
            Err(e) => json!({"error": e}),
        })
        .collect();
    json!({
        "thought": reply.thought,
        "actions": actions,
        "final_answer": reply.final_answer,
        "ignored_after_observation": reply.ignored_after_observation,
    })
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURES_DIR);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    paths.sort();
    paths
}

/// Every fixture parses to its expected result. With `TOOLBELT_BLESS=1` set, the
/// expected files are written instead (review them before committing).
#[test]
fn text_fixtures() {
    let paths = fixtures();
    assert!(
        paths.len() >= MIN_FIXTURES,
        "only {} text fixtures",
        paths.len()
    );
    let bless = std::env::var_os("TOOLBELT_BLESS").is_some();
    let mut failures = Vec::new();
    for path in &paths {
        let input = std::fs::read_to_string(path).unwrap();
        let actual = reply_json(&parse_text_reply(&input));
        let expected_path = path.with_extension("expected.json");
        if bless {
            let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
            std::fs::write(&expected_path, text).unwrap();
            continue;
        }
        let expected: Value = match std::fs::read_to_string(&expected_path) {
            Ok(text) => serde_json::from_str(&text).unwrap(),
            Err(e) => panic!("{}: {e}", expected_path.display()),
        };
        if actual != expected {
            failures.push(format!(
                "{}:\nexpected {}\nactual   {}",
                path.display(),
                serde_json::to_string_pretty(&expected).unwrap(),
                serde_json::to_string_pretty(&actual).unwrap()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_fixture_has_an_expected_file() {
    for path in fixtures() {
        assert!(
            path.with_extension("expected.json").exists(),
            "{} has no expected file",
            path.display()
        );
    }
}

#[test]
fn basic_reply() {
    let reply = parse_text_reply(
        "Thought: I need the manifest.\nAction: read_file[{\"path\": \"Cargo.toml\"}]\n",
    );
    assert_eq!(
        reply,
        TextReply {
            thought: Some("I need the manifest.".into()),
            actions: vec![Ok(ParsedCall::new(
                "read_file",
                json!({"path": "Cargo.toml"})
            ))],
            final_answer: None,
            ignored_after_observation: None,
        }
    );
}

#[test]
fn parse_error_becomes_a_call_or_an_observation() {
    let reply = parse_text_reply("Action: write_file[{\"path\": \"a\" \"content\": 1}]");
    let err = reply.actions[0].clone().unwrap_err();
    assert_eq!(
        err,
        TextParseError {
            tool: Some("write_file".into()),
            line: 1,
            message: "the arguments are not valid JSON: expected `,` or `}` at line 1 column 14 of the arguments".into(),
            raw_arguments: Some("{\"path\": \"a\" \"content\": 1}".into()),
        }
    );
    assert_eq!(
        err.to_call(),
        Some(toolbelt_core::ToolCall::new(
            "write_file",
            json!("{\"path\": \"a\" \"content\": 1}")
        ))
    );
    assert_eq!(
        err.to_observation(),
        "Observation (error INVALID_PARAMS): line 1: action write_file: the arguments are not valid JSON: expected `,` or `}` at line 1 column 14 of the arguments\nHint: write one action per line as Action: tool_name[{\"arg\": \"value\"}] with the arguments as a JSON object"
    );

    // Without arguments text there is no call to make.
    let reply = parse_text_reply("Action: read_file(path=\"a\")");
    let err = reply.actions[0].clone().unwrap_err();
    assert_eq!(err.to_call(), None);
    assert_eq!(
        err.to_string(),
        "line 1: action read_file: expected `[` and the JSON arguments after the tool name, found \"(path=\\\"a\\\")\""
    );
}

#[test]
fn empty_and_plain_replies() {
    assert_eq!(parse_text_reply(""), TextReply::default());
    assert_eq!(
        parse_text_reply("I think the answer is 42."),
        TextReply::default()
    );
}

/// Pieces of the protocol and of the JSON inside it.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Thought: ".to_string()),
        Just("Action: ".to_string()),
        Just("action：".to_string()),
        Just("**Action:** ".to_string()),
        Just("Action Input: ".to_string()),
        Just("Final Answer: ".to_string()),
        Just("Observation: ".to_string()),
        Just("Finish[".to_string()),
        Just("read_file".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("'".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("```json\n".to_string()),
        Just("```".to_string()),
        Just("`".to_string()),
        Just("{\"path\": \"a]b\"}".to_string()),
        Just("思考".to_string()),
        "[a-z ]{0,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(PROPTEST_CASES))]

    #[test]
    fn never_panics_on_arbitrary_text(s in "\\PC{0,120}") {
        let _ = parse_text_reply(&s);
    }

    #[test]
    fn never_panics_on_protocol_fragments(parts in prop::collection::vec(fragment(), 0..30)) {
        let _ = parse_text_reply(&parts.concat());
    }

    /// Any object written as an action comes back whole.
    #[test]
    fn well_formed_actions_round_trip(
        name in "[a-z][a-z_]{0,12}",
        args in prop::collection::btree_map("[a-z]{1,4}", "[a-z \\]\\[{}\"\\\\'`:,\n]{0,10}", 0..4),
        thought in "[A-Za-z ,.]{0,30}",
    ) {
        prop_assume!(!name.eq_ignore_ascii_case("finish"));
        let args = Value::Object(args.into_iter().map(|(k, v)| (k, Value::String(v))).collect());
        let text = format!("Thought: {thought}\nAction: {name}[{args}]\n");
        let reply = parse_text_reply(&text);
        prop_assert_eq!(reply.actions, vec![Ok(ParsedCall::new(name, args))]);
    }
}

/// A JSON value in `Finish[...]` is read as JSON: a bracket inside one of its
/// strings does not end it.
#[test]
fn a_finish_holding_json_keeps_its_brackets() {
    let reply = parse_text_reply(r#"Action: finish[{"answer": "items[0] is ] now"}]"#);
    let answer: serde_json::Value = serde_json::from_str(&reply.final_answer.unwrap()).unwrap();
    assert_eq!(answer["answer"], "items[0] is ] now");
    let reply = parse_text_reply(r#"Finish["a ] b"]"#);
    assert_eq!(reply.final_answer.as_deref(), Some("a ] b"));
}
