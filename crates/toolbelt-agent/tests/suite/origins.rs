//! Where the agent's calls say they come from (the run, its turn; a subagent's
//! parent; a scheduled job), and the turns of a transcript: counted on resume,
//! and a run forked before one of them.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
use toolbelt_agent::{
    Agent, AgentError, AgentOptions, AgentTypes, Message, Outcome, ProviderConfig, ProviderKind,
    SubagentModel, SubagentSettings, Subagents, build_provider, transcript,
};
use toolbelt_core::{
    BoxFuture, CheckpointCall, CheckpointRefused, Checkpointer, Origin, PendingCheckpoint,
    Registry, Session,
};

const RUN_TIMEOUT: Duration = Duration::from_secs(40);

/// Keeps the tool and origin of every call that may change files.
#[derive(Debug, Default)]
struct Origins(Mutex<Vec<(String, Origin)>>);

impl Checkpointer for Origins {
    fn before<'a>(
        &'a self,
        call: CheckpointCall<'a>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn PendingCheckpoint>>, CheckpointRefused>> {
        self.0
            .lock()
            .unwrap()
            .push((call.tool.to_string(), call.origin.clone()));
        Box::pin(std::future::ready(Ok(None)))
    }
}

impl Origins {
    fn taken(&self) -> Vec<(String, Origin)> {
        self.0.lock().unwrap().clone()
    }
}

fn write(path: &str, content: &str) -> Reply {
    Reply::call(
        "write_file",
        json!({"path": path, "content": content}).to_string(),
    )
}

struct Setup {
    registry: Arc<Registry>,
    provider: Arc<dyn toolbelt_agent::Provider>,
    origins: Arc<Origins>,
    subagents: Subagents,
}

fn setup(root: &Path, server: &ScriptedServer) -> Setup {
    let mut registry = Registry::new(Session::new(root).with_state_dir(root.join(".state")));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    let origins = Arc::new(Origins::default());
    registry.set_checkpointer(Some(Arc::clone(&origins) as Arc<dyn Checkpointer>));
    let mut config = ProviderConfig::new(server.kind(), "scripted-model");
    config.base_url = server.base_url();
    let provider = build_provider(config.clone()).unwrap();
    let subagents = Subagents::new(SubagentSettings::new(AgentTypes::builtin()));
    let mut model = SubagentModel::new(Arc::clone(&provider));
    model.provider_config = Some(config);
    model.options.transcript_dir = Some(root.join(".state").join("runs"));
    assert!(subagents.configure(model));
    subagents.register(&mut registry).unwrap();
    subagents.attach(&registry);
    Setup {
        registry: Arc::new(registry),
        provider,
        origins,
        subagents,
    }
}

pub(super) fn options(root: &Path) -> AgentOptions {
    AgentOptions {
        transcript_dir: Some(root.join(".state").join("runs")),
        ..AgentOptions::default()
    }
}

async fn turn(agent: &mut Agent, prompt: &str) {
    let out = tokio::time::timeout(RUN_TIMEOUT, agent.run(prompt, &CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(out.outcome, Outcome::FinalAnswer, "{out:?}");
}

#[tokio::test]
async fn each_call_carries_the_run_and_its_turn_and_a_resumed_run_counts_on() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            write("a.txt", "one"),
            Reply::text("wrote a"),
            write("b.txt", "two"),
            Reply::text("wrote b"),
            write("c.txt", "three"),
            Reply::text("wrote c"),
        ],
    ))
    .unwrap();
    let s = setup(root.path(), &server);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::new(
        Arc::clone(&s.registry),
        Arc::clone(&s.provider),
        options(root.path()),
        tx,
    );
    turn(&mut agent, "write a").await;
    turn(&mut agent, "write b").await;
    let run_id = agent.run_id().to_string();
    let path = agent.transcript_path().unwrap().to_path_buf();
    drop(agent);
    // A new process goes on with the run: its turn is the third.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::resume(
        Arc::clone(&s.registry),
        Arc::clone(&s.provider),
        options(root.path()),
        tx,
        &path,
    )
    .unwrap();
    assert_eq!(agent.turns(), 2);
    turn(&mut agent, "write c").await;
    let expected: Vec<(String, Origin)> = (1..=3)
        .map(|t| {
            (
                "write_file".to_string(),
                Origin::new("agent").in_turn(&run_id, t),
            )
        })
        .collect();
    assert_eq!(s.origins.taken(), expected);
    let turns = transcript::turns(&path).unwrap();
    assert_eq!(turns.count, 3);
    assert_eq!(
        turns.starts.iter().map(|t| t.turn).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(turns.starts.iter().all(|t| t.at_ms.is_some()));
    assert_eq!(turns.forked_from, None);
}

#[tokio::test]
async fn a_subagent_says_its_own_run_and_its_parent_and_a_job_is_named() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call(
                    "task",
                    json!({"description": "write", "prompt": "CHILD-W: write d.txt"}).to_string(),
                ),
                Reply::text("the child wrote it"),
            ],
        )
        .route(
            "CHILD-W",
            vec![write("d.txt", "four"), Reply::text("wrote d.txt")],
        ),
    )
    .unwrap();
    let s = setup(root.path(), &server);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::new(
        Arc::clone(&s.registry),
        Arc::clone(&s.provider),
        options(root.path()),
        tx,
    );
    // As a scheduled job's run: the job is named, in the subagent's calls too.
    agent.set_origin(Origin {
        job: Some("nightly".into()),
        ..Origin::new("cron")
    });
    agent.set_subagents(s.subagents.clone());
    turn(&mut agent, "have a subagent write d.txt").await;
    assert_eq!(
        std::fs::read_to_string(root.path().join("d.txt")).unwrap(),
        "four"
    );
    let taken = s.origins.taken();
    assert_eq!(taken.len(), 1, "{taken:?}");
    let (tool, origin) = &taken[0];
    assert_eq!(tool, "write_file");
    assert_eq!(origin.front_end, "subagent");
    assert_eq!(origin.parent_run_id.as_deref(), Some(agent.run_id()));
    assert_eq!(origin.job.as_deref(), Some("nightly"));
    assert_eq!(origin.turn, Some(1));
    let child = origin.run_id.clone().unwrap();
    assert_ne!(child, agent.run_id());
    // The child's transcript is its run.
    assert!(
        root.path()
            .join(".state/runs/subagents")
            .join(format!("{child}.jsonl"))
            .exists()
    );
    assert_eq!(
        agent.origin(),
        Origin {
            job: Some("nightly".into()),
            ..Origin::new("cron").in_turn(agent.run_id(), 1)
        }
    );
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn user_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_fork_before_a_turn_keeps_the_turns_before_it_and_leaves_the_run_alone() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::Anthropic,
        vec![
            Reply::text("one"),
            write("x.txt", "x"),
            Reply::text("two"),
            Reply::text("three"),
            Reply::text("two again"),
        ],
    ))
    .unwrap();
    let s = setup(root.path(), &server);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::new(
        Arc::clone(&s.registry),
        Arc::clone(&s.provider),
        options(root.path()),
        tx,
    );
    for prompt in ["first", "second", "third"] {
        turn(&mut agent, prompt).await;
    }
    let path = agent.transcript_path().unwrap().to_path_buf();
    let original = std::fs::read(&path).unwrap();

    let forked = transcript::fork(&path, 2).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), original);
    assert_ne!(forked.run_id, agent.run_id());
    assert_eq!(forked.path.parent(), path.parent());
    assert_eq!(forked.from.run_id, agent.run_id());
    assert_eq!(forked.from.turn, 2);
    let fork_lines = lines(&forked.path);
    assert_eq!(fork_lines[0]["type"], "run");
    assert_eq!(fork_lines[0]["run_id"], forked.run_id.as_str());
    assert_eq!(
        fork_lines[0]["forked_from"],
        json!({"run_id": agent.run_id(), "turn": 2})
    );
    // Up to turn 2: the lines of the run's first turn, as they were.
    let old_lines = lines(&path);
    let cut = old_lines
        .iter()
        .position(|l| l["type"] == "turn" && l["turn"] == 2)
        .unwrap();
    assert_eq!(&fork_lines[1..cut], &old_lines[1..cut]);
    assert_eq!(fork_lines.len(), cut + 1);
    assert_eq!(fork_lines[cut]["type"], "notice");

    let loaded = transcript::load(&forked.path).unwrap();
    assert_eq!(loaded.turns, 1);
    assert_eq!(user_texts(&loaded.messages), vec!["first".to_string()]);
    let turns = transcript::turns(&forked.path).unwrap();
    assert_eq!(turns.forked_from, Some(forked.from.clone()));
    assert_eq!(turns.count, 1);

    // The fork goes on from there: its next turn is the second.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut again = Agent::resume(
        Arc::clone(&s.registry),
        Arc::clone(&s.provider),
        options(root.path()),
        tx,
        &forked.path,
    )
    .unwrap();
    turn(&mut again, "second, differently").await;
    assert_eq!(again.run_id(), forked.run_id);
    assert_eq!(again.turns(), 2);
    let last = server.requests().last().unwrap().body["messages"].clone();
    assert_eq!(last.as_array().unwrap().len(), 3, "{last}");
    assert_eq!(std::fs::read(&path).unwrap(), original);

    // No such turn.
    for bad in [0, 4] {
        match transcript::fork(&path, bad) {
            Err(AgentError::NoSuchTurn { turn, turns, .. }) => {
                assert_eq!((turn, turns), (bad, 3));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn turns_of_a_transcript_without_turn_lines_start_at_their_prompts() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("20250101-000000-abcd.jsonl");
    let t = "2025-01-01T00:00:00+00:00";
    let events = [
        json!({"time": t, "type": "run", "run_id": "20250101-000000-abcd", "model": "m"}),
        json!({"time": t, "type": "message", "message": {"role": "user", "content": "one"}}),
        json!({"time": t, "type": "message", "message": {"role": "assistant", "content": "1"}}),
        json!({"time": t, "type": "end", "outcome": "final_answer", "message": "1"}),
        json!({"time": "2025-01-01T00:00:05+00:00", "type": "message", "message": {"role": "user", "content": "two"}}),
        json!({"time": t, "type": "message", "message": {"role": "user", "content": "a nudge"}}),
        json!({"time": t, "type": "message", "message": {"role": "assistant", "content": "2"}}),
        json!({"time": t, "type": "end", "outcome": "final_answer", "message": "2"}),
    ];
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&path, &text).unwrap();
    let turns = transcript::turns(&path).unwrap();
    assert_eq!(turns.count, 2);
    assert_eq!(turns.start(2).unwrap().at_ms, Some(1_735_689_605_000));
    assert_eq!(transcript::load(&path).unwrap().turns, 2);
    let forked = transcript::fork(&path, 2).unwrap();
    let loaded = transcript::load(&forked.path).unwrap();
    assert_eq!(user_texts(&loaded.messages), vec!["one".to_string()]);
    assert_eq!(loaded.turns, 1);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}
