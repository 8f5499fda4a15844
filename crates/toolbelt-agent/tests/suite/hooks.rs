//! The person's hooks at the edges of a run, through a scripted `CallHooks` that
//! keeps what it was asked and answers what the test says: a stop hook keeps the
//! model going (and, blocking too often, ends the run), a user_prompt hook
//! refuses a prompt, session_start and user_prompt context reach the model, a
//! subagent_start hook refuses a subagent, pre_compact context reaches the
//! summary, session_end runs once. Runs without hooks are the other suites.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::testing::{Consume, Recorded, Reply, Script, ScriptedServer};
use toolbelt_agent::{
    Agent, AgentEvent, AgentOptions, AgentTypes, Message, Outcome, ProviderConfig, ProviderKind,
    SubagentModel, SubagentSettings, Subagents, build_provider,
};
use toolbelt_core::hooks::{
    CallHooks, HookContext, HookDecision, HookEvent, HookInput, HookRun, HookVerdict,
};
use toolbelt_core::{BoxFuture, Origin, Registry, Session};

use super::local::{RUN_TIMEOUT, drain, notices, run};
use super::origins::options;

/// What the scripted hooks were asked: the event, its `extra`, the origin.
#[derive(Debug, Clone)]
struct Asked {
    event: HookEvent,
    extra: Map<String, Value>,
    origin: Origin,
}

/// Hooks for the events they have answers for: each event's scripted verdicts in
/// order, then its last one again.
#[derive(Debug, Default)]
struct ScriptedHooks {
    answers: Mutex<BTreeMap<HookEvent, VecDeque<HookVerdict>>>,
    asked: Mutex<Vec<Asked>>,
}

impl ScriptedHooks {
    fn on(self, event: HookEvent, verdicts: Vec<HookVerdict>) -> ScriptedHooks {
        self.answers.lock().unwrap().insert(event, verdicts.into());
        self
    }

    fn asked(&self, event: HookEvent) -> Vec<Asked> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.event == event)
            .cloned()
            .collect()
    }

    fn events(&self) -> Vec<HookEvent> {
        self.asked.lock().unwrap().iter().map(|a| a.event).collect()
    }
}

impl CallHooks for ScriptedHooks {
    fn wants(&self, event: HookEvent) -> bool {
        self.answers.lock().unwrap().contains_key(&event)
    }

    fn run<'a>(&'a self, input: HookInput<'a>) -> BoxFuture<'a, HookVerdict> {
        self.asked.lock().unwrap().push(Asked {
            event: input.event,
            extra: input.extra.cloned().unwrap_or_default(),
            origin: input.origin.clone(),
        });
        let mut answers = self.answers.lock().unwrap();
        let queue = answers.get_mut(&input.event).unwrap();
        let verdict = if queue.len() > 1 {
            queue.pop_front().unwrap()
        } else {
            queue.front().cloned().unwrap_or_default()
        };
        Box::pin(std::future::ready(verdict))
    }
}

fn ran(hook: &str, event: HookEvent, outcome: &str, message: Option<&str>) -> HookRun {
    HookRun {
        name: hook.into(),
        event: event.as_str().into(),
        outcome: outcome.into(),
        ms: 1,
        message: message.map(str::to_string),
    }
}

fn allow(hook: &str, event: HookEvent) -> HookVerdict {
    HookVerdict {
        runs: vec![ran(hook, event, "allowed", None)],
        ..HookVerdict::default()
    }
}

fn block(hook: &str, reason: &str) -> HookVerdict {
    HookVerdict {
        runs: vec![ran(hook, HookEvent::Stop, "blocked", Some(reason))],
        decision: HookDecision::Block {
            hook: hook.into(),
            reason: reason.into(),
        },
        ..HookVerdict::default()
    }
}

fn deny(hook: &str, event: HookEvent, reason: &str) -> HookVerdict {
    HookVerdict {
        runs: vec![ran(hook, event, "denied", Some(reason))],
        decision: HookDecision::Deny {
            hook: hook.into(),
            reason: reason.into(),
        },
        ..HookVerdict::default()
    }
}

fn context(hook: &str, event: HookEvent, text: &str) -> HookVerdict {
    HookVerdict {
        runs: vec![ran(hook, event, "context", None)],
        context: vec![HookContext {
            hook: hook.into(),
            text: text.into(),
        }],
        ..HookVerdict::default()
    }
}

/// A registry with the built-in tools, the subagent tools and `hooks`, and a
/// provider on `server`.
struct Setup {
    registry: Arc<Registry>,
    provider: Arc<dyn toolbelt_agent::Provider>,
    subagents: Subagents,
    hooks: Arc<ScriptedHooks>,
}

fn setup(root: &Path, server: &ScriptedServer, hooks: ScriptedHooks) -> Setup {
    let mut registry = Registry::new(Session::new(root).with_state_dir(root.join(".state")));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    let hooks = Arc::new(hooks);
    registry.set_hooks(Some(Arc::clone(&hooks) as Arc<dyn CallHooks>));
    let mut config = ProviderConfig::new(server.kind(), "scripted-model");
    config.base_url = server.base_url();
    let provider = build_provider(config.clone()).unwrap();
    let subagents = Subagents::new(SubagentSettings::new(AgentTypes::builtin()));
    let mut model = SubagentModel::new(Arc::clone(&provider));
    model.provider_config = Some(config);
    assert!(subagents.configure(model));
    subagents.register(&mut registry).unwrap();
    subagents.attach(&registry);
    Setup {
        registry: Arc::new(registry),
        provider,
        subagents,
        hooks,
    }
}

fn agent(
    s: &Setup,
    options: AgentOptions,
) -> (Agent, tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::new(
        Arc::clone(&s.registry),
        Arc::clone(&s.provider),
        options,
        tx,
    );
    agent.set_subagents(s.subagents.clone());
    (agent, rx)
}

/// The transcript's `hook` lines.
fn hook_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "hook")
        .collect()
}

/// The user messages of an OpenAI request, in order.
fn user_texts(r: &Recorded) -> Vec<String> {
    r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn text_of(a: &Asked, key: &str) -> String {
    a.extra[key].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_stop_hook_that_blocks_twice_gets_exactly_two_more_model_turns() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::text("done, untested"),
            Reply::text("ran them: 2 fail"),
            Reply::text("fixed; all pass"),
        ],
    ))
    .unwrap();
    let hooks = ScriptedHooks::default().on(
        HookEvent::Stop,
        vec![
            block("tests", "run the tests first"),
            block("tests", "two tests fail"),
            allow("tests", HookEvent::Stop),
        ],
    );
    let s = setup(root.path(), &server, hooks);
    let (mut agent, mut rx) = agent(&s, options(root.path()));
    let out = run(&mut agent, "fix the bug").await;
    assert_eq!(out.outcome, Outcome::FinalAnswer, "{out:?}");
    assert_eq!(out.message, "fixed; all pass");
    assert_eq!(out.steps, 3);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // Each block is the model's next message, naming the hook.
    let second = user_texts(&requests[1]);
    assert!(
        second
            .last()
            .unwrap()
            .starts_with("A stop hook ('tests') says: run the tests first"),
        "{second:?}"
    );
    let third = user_texts(&requests[2]);
    assert!(
        third
            .last()
            .unwrap()
            .starts_with("A stop hook ('tests') says: two tests fail"),
        "{third:?}"
    );
    // The hook was asked at each stop, active after a block.
    let stops = s.hooks.asked(HookEvent::Stop);
    let seen: Vec<(bool, String)> = stops
        .iter()
        .map(|a| {
            (
                a.extra["stop_hook_active"].as_bool().unwrap(),
                text_of(a, "last_message"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (false, "done, untested".to_string()),
            (true, "ran them: 2 fail".to_string()),
            (true, "fixed; all pass".to_string()),
        ]
    );
    assert_eq!(stops[0].origin.front_end, "agent");
    assert_eq!(stops[0].origin.turn, Some(1));
    assert_eq!(stops[0].origin.run_id.as_deref(), Some(agent.run_id()));
    // The transcript keeps each stop: its input, its runs, the decision.
    let lines = hook_lines(agent.transcript_path().unwrap());
    let stop_lines: Vec<&Value> = lines.iter().filter(|l| l["event"] == "stop").collect();
    assert_eq!(stop_lines.len(), 3);
    assert_eq!(stop_lines[1]["input"]["stop_hook_active"], json!(true));
    assert_eq!(stop_lines[1]["decision"], "block");
    assert_eq!(stop_lines[1]["hook"], "tests");
    assert_eq!(stop_lines[1]["reason"], "two tests fail");
    assert_eq!(stop_lines[1]["runs"][0]["outcome"], "blocked");
    assert_eq!(stop_lines[2]["decision"], "continue");
    // The person saw each block as a notice.
    let notices = notices(&drain(&mut rx));
    assert_eq!(
        notices,
        vec![
            "stop hook 'tests' kept the turn going (1 of 8): run the tests first".to_string(),
            "stop hook 'tests' kept the turn going (2 of 8): two tests fail".to_string(),
        ]
    );
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_ends_the_run_after_eight_blocks() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(
        Script::new(ProviderKind::OpenAi, Vec::new()).when_done(Reply::text("I am done")),
    )
    .unwrap();
    let hooks = ScriptedHooks::default().on(HookEvent::Stop, vec![block("never", "not yet")]);
    let s = setup(root.path(), &server, hooks);
    let (mut agent, _rx) = agent(&s, options(root.path()));
    let out = run(&mut agent, "finish").await;
    assert_eq!(out.outcome, Outcome::StopHookLimit, "{out:?}");
    assert_eq!(out.outcome.as_str(), "stop_hook_limit");
    assert_eq!(
        out.message,
        "the stop hook 'never' kept the turn from ending 9 times in a row, so the run was stopped; its last reason: not yet"
    );
    // The first answer and one more per honoured block.
    assert_eq!(server.requests().len(), 9);
    assert_eq!(s.hooks.asked(HookEvent::Stop).len(), 9);
    let lines = std::fs::read_to_string(agent.transcript_path().unwrap()).unwrap();
    let end: Value = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .rfind(|v| v["type"] == "end")
        .unwrap();
    assert_eq!(end["outcome"], "stop_hook_limit");
}

#[tokio::test]
async fn a_denied_prompt_never_reaches_the_model() {
    let root = TempDir::new().unwrap();
    let server =
        ScriptedServer::start(Script::new(ProviderKind::OpenAi, vec![Reply::text("hi")])).unwrap();
    let hooks = ScriptedHooks::default().on(
        HookEvent::UserPrompt,
        vec![deny(
            "secrets",
            HookEvent::UserPrompt,
            "the prompt holds a key",
        )],
    );
    let s = setup(root.path(), &server, hooks);
    let (mut agent, mut rx) = agent(&s, options(root.path()));
    let out = run(&mut agent, "deploy with sk-live-123").await;
    assert_eq!(out.outcome, Outcome::PromptDenied, "{out:?}");
    assert_eq!(
        out.message,
        "hook 'secrets' refused the prompt: the prompt holds a key"
    );
    assert_eq!((out.steps, out.tool_calls), (0, 0));
    assert!(server.requests().is_empty());
    assert!(agent.messages().is_empty(), "{:?}", agent.messages());
    let asked = s.hooks.asked(HookEvent::UserPrompt);
    assert_eq!(asked.len(), 1);
    assert_eq!(text_of(&asked[0], "prompt"), "deploy with sk-live-123");
    // The person is told why, as the run's end.
    let ended = drain(&mut rx).into_iter().find_map(|e| match e {
        AgentEvent::RunEnded {
            outcome, message, ..
        } => Some((outcome, message)),
        _ => None,
    });
    assert_eq!(
        ended,
        Some((
            "prompt_denied".to_string(),
            "hook 'secrets' refused the prompt: the prompt holds a key".to_string()
        ))
    );
    // The prompt never went into the transcript as a message.
    let transcript = std::fs::read_to_string(agent.transcript_path().unwrap()).unwrap();
    assert!(!transcript.contains(r#""type":"message""#), "{transcript}");
}

#[tokio::test]
async fn session_and_prompt_context_reach_the_model_and_the_requests_stay_prefix_stable() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::text("one"), Reply::text("two")],
    ))
    .unwrap();
    let hooks = ScriptedHooks::default()
        .on(
            HookEvent::SessionStart,
            vec![context("env", HookEvent::SessionStart, "Branch: main")],
        )
        .on(
            HookEvent::UserPrompt,
            vec![context("ticket", HookEvent::UserPrompt, "Ticket: TB-7")],
        );
    let s = setup(root.path(), &server, hooks);
    let (mut agent, _rx) = agent(&s, options(root.path()));
    let system_before = agent.system_prompt().to_string();
    assert_eq!(run(&mut agent, "first").await.message, "one");
    assert_eq!(run(&mut agent, "second").await.message, "two");
    let requests = server.requests();
    assert_eq!(
        user_texts(&requests[0]),
        vec!["[hook 'env'] Branch: main\n\nfirst\n\n[hook 'ticket'] Ticket: TB-7".to_string()]
    );
    // Session context once, at the first prompt; the prompt's at each.
    assert_eq!(
        user_texts(&requests[1])[1],
        "second\n\n[hook 'ticket'] Ticket: TB-7"
    );
    // The system prompt is untouched, and the second request begins as the first.
    assert_eq!(agent.system_prompt(), system_before);
    let first = requests[0].body["messages"].as_array().unwrap();
    let second = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(&second[..first.len()], &first[..]);
    // Asked once per session, with where it comes from.
    let starts = s.hooks.asked(HookEvent::SessionStart);
    assert_eq!(starts.len(), 1);
    assert_eq!(text_of(&starts[0], "source"), "startup");
    assert_eq!(text_of(&starts[0], "model"), "scripted-model");
    assert_eq!(s.hooks.asked(HookEvent::UserPrompt).len(), 2);
}

#[tokio::test]
async fn a_resumed_run_starts_its_session_as_a_resume_and_ends_it_once() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::text("one"), Reply::text("two")],
    ))
    .unwrap();
    let hooks = ScriptedHooks::default()
        .on(
            HookEvent::SessionStart,
            vec![allow("log", HookEvent::SessionStart)],
        )
        .on(
            HookEvent::SessionEnd,
            vec![allow("log", HookEvent::SessionEnd)],
        );
    let s = setup(root.path(), &server, hooks);
    let (mut first, _rx) = agent(&s, options(root.path()));
    let out = run(&mut first, "first").await;
    first.end(out.outcome.as_str()).await;
    first.end("exit").await;
    let path = first.transcript_path().unwrap().to_path_buf();
    let (tx, _rx2) = tokio::sync::mpsc::unbounded_channel();
    let mut resumed = Agent::resume(
        Arc::clone(&s.registry),
        Arc::clone(&s.provider),
        options(root.path()),
        tx,
        &path,
    )
    .unwrap();
    run(&mut resumed, "second").await;
    let sources: Vec<String> = s
        .hooks
        .asked(HookEvent::SessionStart)
        .iter()
        .map(|a| text_of(a, "source"))
        .collect();
    assert_eq!(sources, vec!["startup".to_string(), "resume".to_string()]);
    let ends = s.hooks.asked(HookEvent::SessionEnd);
    assert_eq!(ends.len(), 1);
    assert_eq!(text_of(&ends[0], "reason"), "final_answer");
    let events: Vec<String> = hook_lines(&path)
        .iter()
        .map(|l| l["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        events,
        vec![
            "session_start".to_string(),
            "session_end".to_string(),
            "session_start".to_string()
        ]
    );
}

#[tokio::test]
async fn a_subagent_start_hook_refuses_the_subagent_and_the_task_call_says_which() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call(
                    "task",
                    json!({"description": "look around", "prompt": "CHILD: list the files"})
                        .to_string(),
                ),
                Reply::text("I will look myself."),
            ],
        )
        .route("CHILD", vec![Reply::text("never asked")]),
    )
    .unwrap();
    let hooks = ScriptedHooks::default().on(
        HookEvent::SubagentStart,
        vec![deny(
            "no-agents",
            HookEvent::SubagentStart,
            "subagents are off today",
        )],
    );
    let s = setup(root.path(), &server, hooks);
    let (mut agent, _rx) = agent(&s, options(root.path()));
    let out = run(&mut agent, "look").await;
    assert_eq!(out.outcome, Outcome::FinalAnswer, "{out:?}");
    // No child conversation: the parent's two requests only.
    assert_eq!(server.requests().len(), 2);
    let result = agent
        .messages()
        .iter()
        .find_map(|m| match m {
            Message::Tool { results } => Some(results[0].clone()),
            _ => None,
        })
        .unwrap();
    assert!(result.is_error);
    assert!(
        result
            .content
            .contains("hook 'no-agents' refused to start the subagent: subagents are off today"),
        "{}",
        result.content
    );
    let asked = s.hooks.asked(HookEvent::SubagentStart);
    assert_eq!(asked.len(), 1);
    assert_eq!(text_of(&asked[0], "agent_type"), "general-purpose");
    assert_eq!(text_of(&asked[0], "prompt"), "CHILD: list the files");
    assert_eq!(asked[0].extra["background"], json!(false));
    assert_eq!(asked[0].origin.run_id.as_deref(), Some(agent.run_id()));
}

#[tokio::test]
async fn a_subagent_meets_its_own_hook_events_not_the_sessions() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call(
                    "task",
                    json!({"description": "count", "prompt": "CHILD: count the files"}).to_string(),
                ),
                Reply::text("There are none."),
            ],
        )
        .route("CHILD", vec![Reply::text("No files.")]),
    )
    .unwrap();
    let every_agent_event = [
        HookEvent::SessionStart,
        HookEvent::UserPrompt,
        HookEvent::Stop,
        HookEvent::SessionEnd,
    ];
    let mut hooks = ScriptedHooks::default()
        .on(
            HookEvent::SubagentStart,
            vec![context("brief", HookEvent::SubagentStart, "Be brief.")],
        )
        .on(
            HookEvent::SubagentStop,
            vec![context(
                "check",
                HookEvent::SubagentStop,
                "Check its count.",
            )],
        );
    for event in every_agent_event {
        hooks = hooks.on(event, vec![allow("any", event)]);
    }
    let s = setup(root.path(), &server, hooks);
    let (mut agent, _rx) = agent(&s, options(root.path()));
    let out = run(&mut agent, "count").await;
    assert_eq!(out.outcome, Outcome::FinalAnswer, "{out:?}");
    agent.end("final_answer").await;
    // The child's prompt carries the start context; its result the stop's.
    let child = server
        .requests()
        .into_iter()
        .find(|r| user_texts(r)[0].contains("CHILD"))
        .unwrap();
    assert_eq!(
        user_texts(&child),
        vec!["CHILD: count the files\n\n[hook 'brief'] Be brief.".to_string()]
    );
    let result = agent
        .messages()
        .iter()
        .find_map(|m| match m {
            Message::Tool { results } => Some(results[0].content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        result.contains("No files.\n\n[hook 'check'] Check its count."),
        "{result}"
    );
    let stops = s.hooks.asked(HookEvent::SubagentStop);
    assert_eq!(stops.len(), 1);
    assert_eq!(text_of(&stops[0], "result"), "No files.");
    assert_eq!(text_of(&stops[0], "outcome"), "final_answer");
    assert_eq!(stops[0].origin.front_end, "subagent");
    assert_eq!(
        stops[0].origin.parent_run_id.as_deref(),
        Some(agent.run_id())
    );
    // The session's events are the parent's only: one of each.
    let events = s.hooks.events();
    for event in every_agent_event {
        assert_eq!(
            events.iter().filter(|e| **e == event).count(),
            1,
            "{event}: {events:?}"
        );
    }
}

#[tokio::test]
async fn pre_compact_context_is_kept_in_the_summary_instructions() {
    let root = TempDir::new().unwrap();
    std::fs::write(
        root.path().join("big.txt"),
        "some line of text\n".repeat(2_000),
    )
    .unwrap();
    let mut script = Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("read_file", r#"{"path": "big.txt"}"#),
            Reply::call("read_file", r#"{"path": "big.txt", "offset": 500}"#),
            Reply::call("read_file", r#"{"path": "big.txt", "offset": 1000}"#),
            Reply::text("read it"),
        ],
    );
    script.consume = Consume::WithTools;
    script.side_reply = Some(Reply::text("SUMMARY: big.txt was read."));
    let server = ScriptedServer::start(script).unwrap();
    let hooks = ScriptedHooks::default().on(
        HookEvent::PreCompact,
        vec![context(
            "keep",
            HookEvent::PreCompact,
            "Keep the ticket id TB-7.",
        )],
    );
    let s = setup(root.path(), &server, hooks);
    let (mut agent, _rx) = agent(&s, options(root.path()));
    run(&mut agent, "read big.txt").await;
    tokio::time::timeout(RUN_TIMEOUT, agent.compact_now(&CancellationToken::new()))
        .await
        .unwrap();
    let asked = s.hooks.asked(HookEvent::PreCompact);
    assert_eq!(asked.len(), 1);
    assert_eq!(text_of(&asked[0], "trigger"), "manual");
    let summary = server
        .requests()
        .into_iter()
        .find(|r| r.body.get("tools").is_none())
        .unwrap();
    let system = summary.body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.ends_with("[hook 'keep'] Keep the ticket id TB-7."),
        "{system}"
    );
}

#[tokio::test]
async fn hooks_that_go_wrong_are_told_and_quiet_ones_leave_no_trace() {
    let root = TempDir::new().unwrap();
    let server =
        ScriptedServer::start(Script::new(ProviderKind::OpenAi, vec![Reply::text("one")])).unwrap();
    let hooks = ScriptedHooks::default()
        .on(
            HookEvent::UserPrompt,
            vec![HookVerdict {
                runs: vec![ran(
                    "lint",
                    HookEvent::UserPrompt,
                    "failed",
                    Some("exit 127"),
                )],
                ..HookVerdict::default()
            }],
        )
        // Wanted, but no hook matched: nothing to say.
        .on(HookEvent::Stop, vec![HookVerdict::default()]);
    let s = setup(root.path(), &server, hooks);
    let (mut agent, mut rx) = agent(&s, options(root.path()));
    assert_eq!(run(&mut agent, "go").await.outcome, Outcome::FinalAnswer);
    assert_eq!(
        notices(&drain(&mut rx)),
        vec!["hook 'lint' (user_prompt) failed: exit 127".to_string()]
    );
    let events: BTreeSet<String> = hook_lines(agent.transcript_path().unwrap())
        .iter()
        .map(|l| l["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, BTreeSet::from(["user_prompt".to_string()]));
    assert_eq!(s.hooks.asked(HookEvent::Stop).len(), 1);
}
