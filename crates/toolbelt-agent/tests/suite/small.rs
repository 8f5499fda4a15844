//! A small model's runs: every request held to a call the way the server was
//! found to support (`tool_choice`, a grammar, a JSON schema), the run ended only
//! by the finish tool or a cap, loops of two calls stopped, a call the server
//! could not parse told to the model. A real registry with the built-in tools,
//! a scripted provider on 127.0.0.1.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
use toolbelt_agent::{AgentOptions, Constraint, ModelSize, Outcome, Protocol, ProviderKind};

use super::local::{agent_for, drain, notices, run};

fn small(protocol: Protocol, constraint: Constraint) -> AgentOptions {
    AgentOptions {
        protocol,
        model_size: ModelSize::Small,
        constraint,
        ..AgentOptions::default()
    }
}

/// The text of the last message of request `i`.
fn last_message(requests: &[toolbelt_agent::testing::Recorded], i: usize) -> String {
    let messages = requests[i].body["messages"].as_array().unwrap();
    let content = &messages.last().unwrap()["content"];
    match content {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Native function calling with `tool_choice: "required"`: every request asks
/// for a call and offers `finish`; prose is not an answer; `finish` ends the run
/// with its argument.
#[tokio::test]
async fn every_step_is_a_call_and_only_finish_ends_the_run() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("read_file", r#"{"path": "a.txt"}"#),
            Reply::text("a.txt holds alpha."),
            Reply::call("finish", r#"{"answer": "a.txt holds alpha"}"#),
        ],
    ))
    .unwrap();
    let (mut agent, mut rx) = agent_for(
        &root,
        &server,
        small(Protocol::Native, Constraint::ToolChoice),
    );
    let prompt = agent.system_prompt().to_string();
    assert!(prompt.contains("call finish with your answer"), "{prompt}");
    for imitable in ["<tool_response>", "Observation", "For example"] {
        assert!(!prompt.contains(imitable), "{imitable} in {prompt}");
    }
    let ended = run(&mut agent, "what is in a.txt?").await;
    assert_eq!(
        (ended.outcome, ended.message.as_str(), ended.steps),
        (Outcome::FinalAnswer, "a.txt holds alpha", 3)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r.body["tool_choice"], json!("required"), "{}", r.body);
        let tools: Vec<&str> = r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(tools.contains(&"finish"), "{tools:?}");
    }
    let reminder = last_message(&requests, 2);
    assert!(reminder.contains("Only finish ends the task"), "{reminder}");
    let events = drain(&mut rx);
    assert!(events.iter().any(|e| matches!(
        e,
        toolbelt_agent::AgentEvent::RunStarted { constraint, .. } if constraint == "tool_choice"
    )));
}

/// A model that keeps answering in prose without `finish` ends the run as
/// `no_answer` once its reminders are spent; its prose is not the answer.
#[tokio::test]
async fn prose_never_ends_a_small_models_run() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text("<tool_response>\nnothing\n</tool_response>"),
            Reply::text("Sorry, but I don't understand the task."),
            Reply::text("Sorry, but I don't understand the task."),
        ],
    ))
    .unwrap();
    let (mut agent, _rx) = agent_for(&root, &server, small(Protocol::Native, Constraint::None));
    let ended = run(&mut agent, "fix the bug").await;
    assert_eq!((ended.outcome, ended.steps), (Outcome::NoAnswer, 3));
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.body.get("tool_choice").is_none()));
}

/// The text protocol held by a grammar: the request carries it (accepting a
/// call of every offered tool, `finish` included), and `Action: finish[...]`
/// ends the run with its answer.
#[tokio::test]
async fn the_grammar_goes_with_every_text_request() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text(r#"Action: read_file[{"path": "a.txt"}]"#),
            Reply::text(r#"Action: finish[{"answer": "alpha"}]"#),
        ],
    ))
    .unwrap();
    let (mut agent, _rx) = agent_for(&root, &server, small(Protocol::Text, Constraint::Grammar));
    let ended = run(&mut agent, "what is in a.txt?").await;
    assert_eq!(
        (ended.outcome, ended.message.as_str()),
        (Outcome::FinalAnswer, "alpha")
    );
    let requests = server.requests();
    for r in &requests {
        let grammar = r.body["grammar"]
            .as_str()
            .unwrap_or_else(|| panic!("{}", r.body));
        let checker = toolbelt_agent::testing::gbnf::Grammar::parse(grammar).unwrap();
        assert!(checker.accepts(r#"Action: finish[{"answer": "alpha"}]"#));
        assert!(checker.accepts(r#"Action: read_file[{"path": "a.txt"}]"#));
        assert!(!checker.accepts("<tool_response>\nalpha\n</tool_response>"));
        assert!(!checker.accepts("Final Answer: alpha"));
    }
    let prompt = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("Action: tool_name["), "{prompt}");
    assert!(!prompt.contains("Observation"), "{prompt}");
}

/// The text protocol held by a JSON schema: replies are JSON objects naming the
/// tool; the schema rides in `response_format`.
#[tokio::test]
async fn json_schema_replies_are_calls() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text(r#"{"name": "read_file", "arguments": {"path": "a.txt"}}"#),
            Reply::text(r#"{"name": "finish", "arguments": {"answer": "alpha"}}"#),
        ],
    ))
    .unwrap();
    let (mut agent, _rx) = agent_for(
        &root,
        &server,
        small(Protocol::Text, Constraint::JsonSchema),
    );
    let ended = run(&mut agent, "what is in a.txt?").await;
    assert_eq!(
        (ended.outcome, ended.message.as_str(), ended.tool_calls),
        (Outcome::FinalAnswer, "alpha", 1)
    );
    let requests = server.requests();
    assert_eq!(requests[0].body["response_format"]["type"], "json_schema");
    assert!(
        requests[0]
            .body
            .get("stop")
            .is_none_or(|s| s.as_array().is_none_or(Vec::is_empty))
    );
    assert!(last_message(&requests, 1).contains("alpha"));
}

/// Two calls alternating with the same results: named at the second round,
/// stopped at the third.
#[tokio::test]
async fn an_a_b_a_b_loop_is_stopped() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(root.path().join("b.txt"), "beta\n").unwrap();
    let a = || Reply::call("read_file", r#"{"path": "a.txt"}"#);
    let b = || Reply::call("read_file", r#"{"path": "b.txt"}"#);
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![a(), b(), a(), b(), a(), b(), a(), b()],
    ))
    .unwrap();
    let (mut agent, _rx) = agent_for(&root, &server, small(Protocol::Native, Constraint::None));
    let ended = run(&mut agent, "rename it").await;
    assert_eq!(ended.outcome, Outcome::RepeatedCall, "{}", ended.message);
    assert_eq!(ended.steps, 6);
    assert!(
        ended.message.contains("read_file a.txt → read_file b.txt"),
        "{}",
        ended.message
    );
    let requests = server.requests();
    let named = last_message(&requests, 4);
    assert!(named.contains("going round in a loop"), "{named}");
    assert!(!last_message(&requests, 3).contains("going round"));
}

/// A write that changes nothing, made again later: the model is told so.
#[tokio::test]
async fn a_write_that_changes_nothing_again_is_named() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    let write = || Reply::call("write_file", r#"{"path": "a.txt", "content": "alpha\n"}"#);
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("read_file", r#"{"path": "a.txt"}"#),
            write(),
            Reply::call("grep", r#"{"pattern": "alpha"}"#),
            write(),
            Reply::call("finish", r#"{"answer": "done"}"#),
        ],
    ))
    .unwrap();
    let (mut agent, _rx) = agent_for(&root, &server, small(Protocol::Native, Constraint::None));
    let ended = run(&mut agent, "write it").await;
    assert_eq!(ended.outcome, Outcome::FinalAnswer, "{}", ended.message);
    let requests = server.requests();
    assert!(!last_message(&requests, 2).contains("changed nothing, again"));
    let again = last_message(&requests, 4);
    assert!(again.contains("changed nothing, again"), "{again}");
}

/// llama-server's answer to a call it cannot parse is not retried: the model is
/// told what was wrong, with one valid call, and goes on.
#[tokio::test]
async fn a_call_the_server_cannot_parse_is_a_format_error() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::error(
                500,
                None,
                "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 1",
            ),
            Reply::call("finish", r#"{"answer": "ok"}"#),
        ],
    ))
    .unwrap();
    let (mut agent, mut rx) = agent_for(
        &root,
        &server,
        small(Protocol::Native, Constraint::ToolChoice),
    );
    let ended = run(&mut agent, "go").await;
    assert_eq!(
        (ended.outcome, ended.message.as_str()),
        (Outcome::FinalAnswer, "ok")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the broken call was asked again");
    let told = last_message(&requests, 1);
    assert!(told.contains("not a valid tool call"), "{told}");
    assert!(
        told.contains(r#"read_file with the arguments {"path": "src/main.py"}"#),
        "{told}"
    );
    assert!(
        notices(&drain(&mut rx))
            .iter()
            .any(|n| n.contains("could not read the model's call"))
    );
}
