//! The loop as a library embeds it: a real registry with the built-in tools, a
//! scripted provider on 127.0.0.1, and the events a front end renders.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::testing::{Consume, Reply, Script, ScriptedServer};
use toolbelt_agent::{
    Agent, AgentEvent, AgentOptions, Message, Outcome, ProviderConfig, ProviderKind, RetryPolicy,
    RunOutcome, ToolEventForwarder, build_provider,
};
use toolbelt_core::{Registry, Session};

/// Bound on one run.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

fn agent_for(
    root: &TempDir,
    server: &ScriptedServer,
    kind: ProviderKind,
) -> (Agent, tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut registry = Registry::new(Session::new(root.path()));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    registry.set_events(Some(Arc::new(ToolEventForwarder::new(
        tx.clone(),
        registry.profile().clone(),
    ))));
    let mut config = ProviderConfig::new(kind, "scripted-model");
    config.base_url = server.base_url();
    config.retry = RetryPolicy {
        max_attempts: 2,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_millis(50),
    };
    let provider = build_provider(config).unwrap();
    (
        Agent::new(Arc::new(registry), provider, AgentOptions::default(), tx),
        rx,
    )
}

/// Runs `prompt` on `agent`, bounded by [`RUN_TIMEOUT`].
async fn run(agent: &mut Agent, prompt: &str, cancel: &CancellationToken) -> RunOutcome {
    tokio::time::timeout(RUN_TIMEOUT, agent.run(prompt, cancel))
        .await
        .unwrap()
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(event) = rx.try_recv() {
        out.push(event);
    }
    out
}

#[tokio::test]
async fn an_embedded_agent_reports_its_run_as_events() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::Anthropic,
        vec![
            Reply::calls(vec![
                ("think", r#"{"thought": "list first, then read"}"#),
                (
                    "set_todo_list",
                    r#"{"todos": [{"title": "look", "status": "In Progress"}]}"#,
                ),
            ])
            .with_usage(1200, 40),
            Reply::text("all done").with_usage(1500, 10),
        ],
    ))
    .unwrap();
    let (mut agent, mut rx) = agent_for(&root, &server, ProviderKind::Anthropic);
    let cancel = CancellationToken::new();
    let outcome = run(&mut agent, "plan it", &cancel).await;
    assert_eq!(outcome.outcome, Outcome::FinalAnswer, "{outcome:?}");
    assert_eq!(outcome.message, "all done");
    assert_eq!((outcome.steps, outcome.tool_calls), (2, 2));
    let events = drain(&mut rx);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            AgentEvent::RunStarted { .. } => "run_started",
            AgentEvent::StepStarted { .. } => "step",
            AgentEvent::TextDelta { .. } => "text",
            AgentEvent::AssistantMessage { .. } => "assistant",
            AgentEvent::ToolCall { .. } => "call",
            AgentEvent::ToolResult { .. } => "result",
            AgentEvent::ToolEvent { .. } => "tool_event",
            AgentEvent::Usage { .. } => "usage",
            AgentEvent::RunEnded { .. } => "run_ended",
            _ => "other",
        })
        .filter(|k| *k != "text")
        .collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_ended"));
    assert_eq!(kinds.iter().filter(|k| **k == "step").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "result").count(), 2);
    let think = events.iter().find_map(|e| match e {
        AgentEvent::ToolCall { tool, summary, .. } if tool == "think" => Some(summary.clone()),
        _ => None,
    });
    assert_eq!(think.as_deref(), Some("Think: \"list first, then read\""));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolEvent { message, .. } if message.starts_with("💭 Thinking: list first")
    )));
    let Some(AgentEvent::RunEnded { usage, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!((usage.input_tokens, usage.output_tokens), (2700, 50));
    // The streamed text adds up to the answer.
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "all done");
}

#[tokio::test]
async fn compaction_keeps_the_task_and_the_todo_list() {
    let root = TempDir::new().unwrap();
    std::fs::write(
        root.path().join("big.txt"),
        "some line of text\n".repeat(2_000),
    )
    .unwrap();
    let mut script = Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call(
                "set_todo_list",
                r#"{"todos": [{"title": "read big.txt", "status": "In Progress"}, {"title": "report", "status": "Pending"}]}"#,
            ),
            Reply::call("read_file", r#"{"path": "big.txt"}"#),
            Reply::call("read_file", r#"{"path": "big.txt", "offset": 500}"#),
            Reply::text("read it"),
            Reply::call("glob", r#"{"pattern": "*.txt"}"#),
            Reply::text("still here"),
        ],
    );
    script.consume = Consume::WithTools;
    script.side_reply = Some(Reply::text("SUMMARY: big.txt was read twice."));
    let server = ScriptedServer::start(script).unwrap();
    let (mut agent, _rx) = agent_for(&root, &server, ProviderKind::OpenAi);
    let cancel = CancellationToken::new();
    let first = run(&mut agent, "read big.txt and report", &cancel).await;
    assert_eq!(first.outcome, Outcome::FinalAnswer);
    let before = agent.messages().len();
    tokio::time::timeout(RUN_TIMEOUT, agent.compact_now(&cancel))
        .await
        .unwrap();
    let messages = agent.messages();
    assert!(messages.len() < before, "{before} -> {}", messages.len());
    let Message::User { content } = &messages[0] else {
        panic!("{messages:?}")
    };
    assert!(
        content.contains("SUMMARY: big.txt was read twice."),
        "{content}"
    );
    assert!(
        content.contains("read big.txt and report"),
        "the task: {content}"
    );
    let todo = content
        .split("The todo list as it last stood:")
        .nth(1)
        .unwrap_or_else(|| panic!("no todo list in {content}"));
    assert!(
        todo.contains("read big.txt") && todo.contains("report"),
        "{todo}"
    );
    // The summary was asked without tools, and the conversation goes on.
    let summary_request = server
        .requests()
        .into_iter()
        .find(|r| r.body.get("tools").is_none())
        .unwrap();
    assert!(
        summary_request.body["messages"]
            .to_string()
            .contains("big.txt")
    );
    let next = run(&mut agent, "anything else?", &cancel).await;
    assert_eq!(next.message, "still here");
}

#[tokio::test]
async fn a_provider_failure_ends_the_run_keeping_the_conversation() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::error(503, None, "the model is overloaded"),
            Reply::error(503, None, "the model is overloaded"),
            Reply::text("back again"),
        ],
    ))
    .unwrap();
    let (mut agent, _rx) = agent_for(&root, &server, ProviderKind::OpenAi);
    let cancel = CancellationToken::new();
    let failed = run(&mut agent, "hello", &cancel).await;
    assert_eq!(failed.outcome, Outcome::Error);
    assert!(
        failed.message.contains("503") && failed.message.contains("the model is overloaded"),
        "{}",
        failed.message
    );
    let again = run(&mut agent, "hello again", &cancel).await;
    assert_eq!(again.message, "back again");
    let last = server.requests().pop().unwrap();
    let text = last.body["messages"].to_string();
    assert!(
        text.contains("hello") && text.contains("hello again"),
        "{text}"
    );
}
