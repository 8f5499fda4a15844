//! Small models on local servers: the first-byte wait, prefix-stable requests,
//! calls written as text, the text protocol's stop and one action per reply, and
//! a model that repeats itself. A real registry with the built-in tools, a
//! scripted provider on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
use toolbelt_agent::{
    Agent, AgentEvent, AgentOptions, ModelRequest, ModelSize, Outcome, Protocol, ProviderConfig,
    ProviderError, ProviderKind, RetryPolicy, RunOutcome, build_provider,
};
use toolbelt_core::{Registry, Session};

/// Bound on one run.
pub(super) const RUN_TIMEOUT: Duration = Duration::from_secs(40);

fn config(server: &ScriptedServer) -> ProviderConfig {
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, "small-local-model");
    config.base_url = server.base_url();
    config.retry = RetryPolicy {
        max_attempts: 3,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_millis(50),
    };
    config
}

pub(super) fn agent_for(
    root: &TempDir,
    server: &ScriptedServer,
    options: AgentOptions,
) -> (Agent, tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut registry = Registry::new(Session::new(root.path()));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    let provider = build_provider(config(server)).unwrap();
    (Agent::new(Arc::new(registry), provider, options, tx), rx)
}

pub(super) async fn run(agent: &mut Agent, prompt: &str) -> RunOutcome {
    tokio::time::timeout(RUN_TIMEOUT, agent.run(prompt, &CancellationToken::new()))
        .await
        .unwrap()
}

pub(super) fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(event) = rx.try_recv() {
        out.push(event);
    }
    out
}

pub(super) fn notices(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// A server that sends its headers at once and its answer only after the idle
/// timeout has passed (it is reading the prompt), and one that sends nothing at
/// all for as long: the run completes, from one request each, with `waiting`
/// events meanwhile and no retry.
#[tokio::test]
async fn a_slow_first_byte_is_waited_for_without_a_retry() {
    let root = TempDir::new().unwrap();
    for reply in [
        Reply::text("read it all").body_delayed(5_600),
        Reply::text("read it all").delayed(5_600),
    ] {
        let server = ScriptedServer::start(Script::new(ProviderKind::OpenAi, vec![reply])).unwrap();
        let mut config = config(&server);
        config.idle_timeout = Duration::from_secs(1);
        config.first_byte_timeout = Duration::from_secs(60);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut registry = Registry::new(Session::new(root.path()));
        toolbelt_tools::register_builtins(&mut registry).unwrap();
        let provider = build_provider(config).unwrap();
        let mut agent = Agent::new(Arc::new(registry), provider, AgentOptions::default(), tx);
        let ended = run(&mut agent, "a long prompt").await;
        assert_eq!(
            (ended.outcome, ended.message.as_str()),
            (Outcome::FinalAnswer, "read it all")
        );
        assert_eq!(server.requests().len(), 1, "one request, no retry");
        let events = drain(&mut rx);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, AgentEvent::Retrying { .. })),
            "{events:?}"
        );
        assert!(
            events.iter().any(|e| matches!(
                e,
                AgentEvent::Waiting { elapsed_ms, prompt_tokens } if *elapsed_ms >= 5_000 && *prompt_tokens > 0
            )),
            "{events:?}"
        );
    }
}

/// A local server that does not start its answer within the first-byte timeout is
/// not sent the prompt again: it is most likely still reading it.
#[tokio::test]
async fn no_retry_when_a_local_server_is_still_reading() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text("late").body_delayed(3_000),
            Reply::text("again"),
        ],
    ))
    .unwrap();
    let mut config = config(&server);
    config.first_byte_timeout = Duration::from_millis(500);
    let provider = build_provider(config).unwrap();
    let request = ModelRequest {
        messages: vec![toolbelt_agent::Message::user("a long prompt")],
        ..ModelRequest::default()
    };
    let err = provider
        .complete(&request, &|_| {}, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Connection { message, attempts: 1, .. } if message.contains("first-byte timeout")),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

/// Every request of a run starts with the previous one byte for byte: the same
/// system prompt and tools, the same earlier messages, the new ones after them. A
/// local server's prompt cache is hit on every step.
#[tokio::test]
async fn consecutive_requests_share_their_prefix() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    for size in [ModelSize::Large, ModelSize::Small] {
        // A small model ends its run with the finish tool.
        let answer = match size {
            ModelSize::Large => Reply::text("alpha is in a.txt"),
            ModelSize::Small => Reply::call("finish", r#"{"answer": "alpha is in a.txt"}"#),
        };
        let server = ScriptedServer::start(Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call("read_file", r#"{"path": "a.txt"}"#),
                Reply::call("grep", r#"{"pattern": "alpha"}"#),
                answer,
            ],
        ))
        .unwrap();
        let options = AgentOptions {
            model_size: size,
            ..AgentOptions::default()
        };
        let (mut agent, _rx) = agent_for(&root, &server, options);
        let ended = run(&mut agent, "where is alpha?").await;
        assert_eq!(ended.outcome, Outcome::FinalAnswer);
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        for pair in requests.windows(2) {
            let (before, after) = (&pair[0].body, &pair[1].body);
            let bytes = |v: &Value| serde_json::to_string(v).unwrap();
            assert_eq!(bytes(&before["tools"]), bytes(&after["tools"]));
            let (old, new) = (
                before["messages"].as_array().unwrap(),
                after["messages"].as_array().unwrap(),
            );
            assert!(new.len() > old.len());
            for (i, message) in old.iter().enumerate() {
                assert_eq!(bytes(message), bytes(&new[i]), "message {i} changed");
            }
        }
    }
}

/// A native reply whose text holds a call (Qwen's `<tool_call>` tags, a JSON
/// block) is run as the call, not taken as the final answer.
#[tokio::test]
async fn a_call_written_as_text_is_run() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("notes.txt"), "the key is 42\n").unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text(
                "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>",
            ),
            Reply::text(
                "```json\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"key\"}}\n```",
            ),
            Reply::text("<tool_response>\nthe key is 42\n</tool_response>"),
            Reply::text("The key is 42."),
        ],
    ))
    .unwrap();
    let (mut agent, mut rx) = agent_for(&root, &server, AgentOptions::default());
    let ended = run(&mut agent, "what is the key?").await;
    assert_eq!(
        (ended.outcome, ended.message.as_str(), ended.tool_calls),
        (Outcome::FinalAnswer, "The key is 42.", 2)
    );
    let requests = server.requests();
    // The second request carries the call as a native one, and its result.
    let messages = requests[1].body["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read_file");
    let result = &messages[messages.len() - 1];
    assert_eq!(result["role"], "tool");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("the key is 42")
    );
    let said = notices(&drain(&mut rx));
    assert!(
        said.iter()
            .any(|n| n.contains("read_file") && n.contains("<tool_call>")),
        "{said:?}"
    );
    // Template debris (a tool's result written by the model) is not the answer.
    assert!(
        said.iter().any(|n| n.contains("repeated a tool result")),
        "{said:?}"
    );
    assert_eq!(requests.len(), 4);
}

/// The text protocol: a stop sequence at `Observation:`, one action per reply,
/// a reminder that holds nothing parseable as an action, and an observation the
/// model writes itself never taken as its answer.
#[tokio::test]
async fn the_text_protocol_keeps_a_small_model_on_track() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(root.path().join("b.txt"), "beta\n").unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text(
                "Action: read_file[{\"path\": \"a.txt\"}]\nAction: read_file[{\"path\": \"b.txt\"}]",
            ),
            Reply::text("I think I should look around."),
            Reply::text("Final Answer: a.txt holds alpha"),
        ],
    ))
    .unwrap();
    let options = AgentOptions {
        protocol: Protocol::Text,
        ..AgentOptions::default()
    };
    let (mut agent, _rx) = agent_for(&root, &server, options.clone());
    let ended = run(&mut agent, "what is in a.txt?").await;
    assert_eq!(
        (ended.outcome, ended.message.as_str(), ended.tool_calls),
        (Outcome::FinalAnswer, "a.txt holds alpha", 1)
    );
    let requests = server.requests();
    assert_eq!(
        requests[0].body["stop"],
        serde_json::json!(["\nObservation:"])
    );
    let last = |i: usize| {
        let messages = requests[i].body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let observation = last(1);
    assert!(observation.contains("alpha"), "{observation}");
    assert!(!observation.contains("beta"), "{observation}");
    assert!(observation.contains("Only your first action was run"));
    let reminder = last(2);
    assert!(reminder.contains("neither an action nor a final answer"));
    let parsed = toolbelt_wire::calls::parse_text_reply(&reminder);
    assert!(parsed.actions.is_empty(), "{parsed:?}");
    assert_eq!(parsed.final_answer, None);

    // A model that writes observations itself ends without an answer.
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text("Observation (error UNKNOWN_TOOL): no tool named foo"),
            Reply::text("Observation (error UNKNOWN_TOOL): no tool named foo"),
            Reply::text("Final Answer: Observation (error UNKNOWN_TOOL): no tool named foo"),
        ],
    ))
    .unwrap();
    let (mut agent, _rx) = agent_for(&root, &server, options);
    let ended = run(&mut agent, "do it").await;
    assert_eq!(ended.outcome, Outcome::NoAnswer, "{}", ended.message);
}

/// A small model that answers in prose is reminded that only its finish call
/// ends the run; a model that repeats itself has its reply cut where the loop
/// began.
#[tokio::test]
async fn prose_gets_a_reminder_and_a_loop_is_cut() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text("Here is a step-by-step approach: first open the file."),
            Reply::call("finish", r#"{"answer": "It needs no tool."}"#),
        ],
    ))
    .unwrap();
    let small = AgentOptions {
        model_size: ModelSize::Small,
        ..AgentOptions::default()
    };
    let (mut agent, mut rx) = agent_for(&root, &server, small);
    assert!(
        agent
            .system_prompt()
            .contains("You act only by calling tools")
    );
    assert!(!agent.system_prompt().contains("README.md"));
    let ended = run(&mut agent, "fix the bug").await;
    assert_eq!(
        (ended.outcome, ended.message.as_str(), ended.steps),
        (Outcome::FinalAnswer, "It needs no tool.", 2)
    );
    assert!(
        notices(&drain(&mut rx))
            .iter()
            .any(|n| n.contains("called no tool"))
    );

    let looping = format!(
        "The plan:{}",
        "\n- check the file again and again".repeat(60)
    );
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::text(looping).chunked(97)],
    ))
    .unwrap();
    let (mut agent, mut rx) = agent_for(&root, &server, AgentOptions::default());
    let ended = run(&mut agent, "plan it").await;
    assert_eq!(ended.outcome, Outcome::FinalAnswer);
    assert!(
        ended.message.len() < 600,
        "the loop was not cut: {} bytes",
        ended.message.len()
    );
    assert!(
        ended
            .message
            .starts_with("The plan:\n- check the file again")
    );
    assert!(
        notices(&drain(&mut rx))
            .iter()
            .any(|n| n.contains("repeating itself"))
    );
}

/// Two calls sent again and again, step after step, are a repeat as much as one
/// call is: reminded, then stopped.
#[tokio::test]
async fn the_same_calls_step_after_step_are_stopped() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    let pair = || {
        Reply::calls(vec![
            ("grep", r#"{"pattern": "6.0 != 4"}"#),
            ("grep", r#"{"pattern": "6.0 != 4", "path": "a.txt"}"#),
        ])
    };
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![pair(), pair(), pair(), pair(), Reply::text("done")],
    ))
    .unwrap();
    let options = AgentOptions {
        repeat_warn: 2,
        repeat_stop: 3,
        ..AgentOptions::default()
    };
    let (mut agent, _rx) = agent_for(&root, &server, options);
    let ended = run(&mut agent, "find it").await;
    assert_eq!(ended.outcome, Outcome::RepeatedCall, "{}", ended.message);
    assert_eq!(ended.steps, 3);
    let requests = server.requests();
    let messages = requests[2].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        last.contains("[Reminder: you have made this exact call 2 times"),
        "{last}"
    );
}
