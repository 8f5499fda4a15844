//! Subagents against the scripted provider: `task` runs a second conversation whose
//! answer comes back as the tool result, limits stop a child without stopping the
//! parent, cancellation reaches the child's commands, `spawn` works in the
//! background within the concurrency cap, and reports outlive the process.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::testing::{Recorded, Reply, Script, ScriptedServer};
use toolbelt_agent::{
    Agent, AgentEvent, AgentOptions, AgentTypes, Message, Outcome, ProviderConfig, ProviderKind,
    SubagentLimits, SubagentModel, SubagentSettings, Subagents, build_provider,
};
use toolbelt_core::{Registry, Session, Status};
use toolbelt_store::{Location, StoreHandle};

const RUN_TIMEOUT: Duration = Duration::from_secs(40);

struct Setup {
    registry: Arc<Registry>,
    subagents: Subagents,
    provider: Arc<dyn toolbelt_agent::Provider>,
}

fn setup(
    root: &Path,
    server: &ScriptedServer,
    types: AgentTypes,
    limits: SubagentLimits,
    store: Option<StoreHandle>,
) -> Setup {
    let mut registry = Registry::new(Session::new(root).with_state_dir(root.join(".state")));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    let mut config = ProviderConfig::new(server.kind(), "scripted-model");
    config.base_url = server.base_url();
    let provider = build_provider(config.clone()).unwrap();
    let mut settings = SubagentSettings::new(types);
    settings.limits = limits;
    settings.store = store;
    let subagents = Subagents::new(settings);
    let mut model = SubagentModel::new(Arc::clone(&provider));
    model.provider_config = Some(config);
    model.options.transcript_dir = Some(root.join(".state").join("runs"));
    assert!(subagents.configure(model));
    subagents.register(&mut registry).unwrap();
    subagents.attach(&registry);
    Setup {
        registry: Arc::new(registry),
        subagents,
        provider,
    }
}

fn parent(
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

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// The first user message of an OpenAI request.
fn first_user(r: &Recorded) -> String {
    r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn system(r: &Recorded) -> String {
    r.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn tool_names(r: &Recorded) -> BTreeSet<String> {
    r.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn args(v: Value) -> String {
    v.to_string()
}

#[tokio::test]
async fn task_runs_a_separate_conversation_whose_answer_is_the_tool_result() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    let prompt = "CHILD-A: list the workspace and say how many files it has.";
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call(
                    "task",
                    args(json!({"description": "count the files", "prompt": prompt})),
                ),
                Reply::text("The workspace has one file."),
            ],
        )
        .route(
            "CHILD-A",
            vec![
                Reply::call("list_dir", args(json!({"path": "."}))).with_usage(300, 10),
                Reply::text("There is 1 file: a.txt").with_usage(400, 8),
            ],
        ),
    )
    .unwrap();
    let s = setup(
        root.path(),
        &server,
        AgentTypes::builtin(),
        SubagentLimits::default(),
        None,
    );
    let (mut agent, mut rx) = parent(&s, AgentOptions::default());
    let out = tokio::time::timeout(
        RUN_TIMEOUT,
        agent.run("How many files?", &CancellationToken::new()),
    )
    .await
    .unwrap();
    assert_eq!(out.outcome, Outcome::FinalAnswer, "{out:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let (child, parent_side): (Vec<&Recorded>, Vec<&Recorded>) = requests
        .iter()
        .partition(|r| first_user(r).contains("CHILD-A"));
    assert_eq!(child.len(), 2);
    assert_eq!(parent_side.len(), 2);
    // The child's conversation: its own system prompt, the prompt as its first user message.
    assert_eq!(first_user(child[0]), prompt);
    assert!(
        system(child[0]).contains("subagent"),
        "{}",
        system(child[0])
    );
    assert_ne!(system(child[0]), system(parent_side[0]));
    assert_eq!(child[0].body["messages"].as_array().unwrap().len(), 2);
    // Depth 1: the child is offered neither task nor spawn; the parent is.
    let child_tools = tool_names(child[0]);
    assert!(child_tools.contains("list_dir"));
    for name in ["task", "spawn", "task_output", "task_stop", "task_list"] {
        assert!(!child_tools.contains(name), "{name} offered to the child");
        assert!(
            tool_names(parent_side[0]).contains(name),
            "{name} not offered to the parent"
        );
    }
    // The child's answer is the parent's tool result.
    let results: Vec<&Value> = parent_side[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 1);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("There is 1 file: a.txt"),
        "{}",
        results[0]
    );
    // The parent saw the child's progress as subagent events, ending in `done`.
    let events = drain(&mut rx);
    let progress: Vec<(String, usize)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Subagent {
                state,
                tool_calls,
                background,
                label,
                ..
            } => {
                assert!(!background);
                assert_eq!(label, "count the files");
                Some((state.clone(), *tool_calls))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        progress.last(),
        Some(&("done".to_string(), 1)),
        "{progress:?}"
    );
    let envelope = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult { tool, data, .. } if tool == "task" => Some(data.clone()),
        _ => None,
    });
    let data = envelope.unwrap();
    assert_eq!(data["steps"], 2);
    assert_eq!(data["tool_calls"], 1);
    assert_eq!(data["usage"]["input_tokens"], 700);
}

#[tokio::test]
async fn a_child_that_never_ends_is_stopped_by_its_limits_and_the_parent_goes_on() {
    let root = TempDir::new().unwrap();
    let looping: Vec<Reply> = (0..10)
        .map(|i| Reply::call("list_dir", args(json!({"path": ".", "depth": 1 + i % 2}))))
        .collect();
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call(
                    "task",
                    args(json!({"description": "loop", "prompt": "LOOPER go"})),
                ),
                Reply::text("I will do it myself."),
            ],
        )
        .route("LOOPER", looping),
    )
    .unwrap();
    let limits = SubagentLimits {
        max_steps: 3,
        ..SubagentLimits::default()
    };
    let s = setup(root.path(), &server, AgentTypes::builtin(), limits, None);
    let (mut agent, mut rx) = parent(&s, AgentOptions::default());
    let out = tokio::time::timeout(RUN_TIMEOUT, agent.run("go", &CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(out.outcome, Outcome::FinalAnswer);
    assert_eq!(out.message, "I will do it myself.");
    let child_requests = server
        .requests()
        .iter()
        .filter(|r| first_user(r).contains("LOOPER"))
        .count();
    assert_eq!(child_requests, 3);
    let result = drain(&mut rx).into_iter().find_map(|e| match e {
        AgentEvent::ToolResult {
            tool,
            status,
            error_code,
            text,
            ..
        } if tool == "task" => Some((status, error_code, text)),
        _ => None,
    });
    let (status, code, text) = result.unwrap();
    assert_eq!(status, "error");
    assert_eq!(code.as_deref(), Some("TOO_LARGE"));
    assert!(text.contains("3 steps"), "{text}");
}

fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

async fn wait_for_pid(file: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the child's command never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_gone(pid: i32) {
    let start = Instant::now();
    while pid_alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "process {pid} is still running"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn long_command(pid_file: &Path) -> String {
    format!("sh -c 'echo $$ > {}; exec sleep 60'", pid_file.display())
}

#[tokio::test]
async fn cancelling_the_parent_stops_the_child_and_its_commands() {
    let root = TempDir::new().unwrap();
    let pid_file = root.path().join("child.pid");
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![Reply::call(
                "task",
                args(json!({"description": "wait", "prompt": "SLEEPER"})),
            )],
        )
        .route(
            "SLEEPER",
            vec![Reply::call(
                "bash",
                args(json!({"command": long_command(&pid_file), "timeout": 120})),
            )],
        ),
    )
    .unwrap();
    let s = setup(
        root.path(),
        &server,
        AgentTypes::builtin(),
        SubagentLimits::default(),
        None,
    );
    let (mut agent, _rx) = parent(&s, AgentOptions::default());
    let cancel = CancellationToken::new();
    let run = {
        let cancel = cancel.clone();
        tokio::spawn(async move { agent.run("go", &cancel).await })
    };
    let pid = wait_for_pid(&pid_file).await;
    assert!(pid_alive(pid));
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.outcome, Outcome::Cancelled);
    wait_gone(pid).await;
}

#[tokio::test]
async fn spawn_reports_into_the_conversation_while_the_parent_goes_on() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call(
                    "spawn",
                    args(json!({"task": "BG-1 summarise", "label": "summary"})),
                ),
                Reply::call("think", args(json!({"thought": "meanwhile"}))),
                Reply::text("Started; waiting."),
                Reply::text("The summary came back."),
            ],
        )
        .route(
            "BG-1",
            vec![Reply::text("the background report").delayed(700)],
        ),
    )
    .unwrap();
    let s = setup(
        root.path(),
        &server,
        AgentTypes::builtin(),
        SubagentLimits::default(),
        None,
    );
    let options = AgentOptions {
        wait_for_background: true,
        ..AgentOptions::default()
    };
    let (mut agent, mut rx) = parent(&s, options);
    let out = tokio::time::timeout(RUN_TIMEOUT, agent.run("go", &CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(out.outcome, Outcome::FinalAnswer, "{out:?}");
    assert_eq!(out.message, "The summary came back.");
    // The report is in the parent's conversation, after its first answer.
    let reports: Vec<&Message> = agent
        .messages()
        .iter()
        .filter(
            |m| matches!(m, Message::User { content } if content.contains("the background report")),
        )
        .collect();
    assert_eq!(reports.len(), 1);
    // The parent went on while the child ran: its step 3 started before the child ended.
    let events = drain(&mut rx);
    let step3 = events
        .iter()
        .position(|e| matches!(e, AgentEvent::StepStarted { step: 3 }))
        .unwrap();
    let done = events
        .iter()
        .position(|e| matches!(e, AgentEvent::Subagent { state, background: true, .. } if state == "done"))
        .unwrap();
    assert!(step3 < done, "the parent waited for the child");
}

/// Calls `tool` through the registry, as a model would.
async fn call(registry: &Registry, tool: &str, arguments: Value) -> toolbelt_core::Envelope {
    registry.execute(tool, arguments).await
}

#[tokio::test]
async fn task_stop_ends_a_background_child_and_its_commands() {
    let root = TempDir::new().unwrap();
    let pid_file = root.path().join("bg.pid");
    let server = ScriptedServer::start(Script::new(ProviderKind::OpenAi, Vec::new()).route(
        "LONG-BG",
        vec![Reply::call(
            "bash",
            args(json!({"command": long_command(&pid_file), "timeout": 120})),
        )],
    ))
    .unwrap();
    let s = setup(
        root.path(),
        &server,
        AgentTypes::builtin(),
        SubagentLimits::default(),
        None,
    );
    let env = call(
        &s.registry,
        "spawn",
        json!({"task": "LONG-BG", "label": "sleeper"}),
    )
    .await;
    assert_eq!(env.status, Status::Success, "{}", env.text);
    let id = env.data["task_id"].as_str().unwrap().to_string();
    let pid = wait_for_pid(&pid_file).await;
    let listed = call(&s.registry, "task_list", json!({})).await;
    assert!(
        listed.text.contains(&id) && listed.text.contains("running"),
        "{}",
        listed.text
    );
    let env = call(&s.registry, "task_stop", json!({"task_id": id})).await;
    assert_eq!(env.status, Status::Success, "{}", env.text);
    assert_eq!(env.data["status"], "stopped", "{}", env.data);
    wait_gone(pid).await;
    let env = call(
        &s.registry,
        "task_output",
        json!({"task_id": id, "block": false}),
    )
    .await;
    assert_eq!(env.data["status"], "stopped");
    let env = call(&s.registry, "task_stop", json!({"task_id": "sa_nope"})).await;
    assert_eq!(env.error_code().map(|c| c.as_str()), Some("NOT_FOUND"));
}

#[tokio::test]
async fn five_spawns_with_a_cap_of_four_run_at_most_four_at_once() {
    let root = TempDir::new().unwrap();
    let log = root.path().join("overlap.log");
    let command = format!(
        "echo start $(date +%s%N) >> {log}; sleep 0.8; echo end $(date +%s%N) >> {log}",
        log = log.display()
    );
    let mut script = Script::new(ProviderKind::OpenAi, Vec::new());
    for i in 0..5 {
        script = script.route(
            format!("WORKER-{i}"),
            vec![
                Reply::call("bash", args(json!({"command": command}))),
                Reply::text(format!("worker {i} done")),
            ],
        );
    }
    let server = ScriptedServer::start(script).unwrap();
    let limits = SubagentLimits {
        max_running: 4,
        ..SubagentLimits::default()
    };
    let s = setup(root.path(), &server, AgentTypes::builtin(), limits, None);
    let mut ids = Vec::new();
    for i in 0..5 {
        let env = call(&s.registry, "spawn", json!({"task": format!("WORKER-{i}")})).await;
        assert_eq!(env.status, Status::Success, "{}", env.text);
        ids.push(env.data["task_id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        let env = call(
            &s.registry,
            "task_output",
            json!({"task_id": id, "timeout_ms": 30000}),
        )
        .await;
        assert_eq!(env.data["status"], "done", "{}", env.text);
    }
    // Measured from the commands themselves: the most that ran at once.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut marks: Vec<(u128, i32)> = text
        .lines()
        .map(|l| {
            let (kind, t) = l.split_once(' ').unwrap();
            (
                t.trim().parse().unwrap(),
                if kind == "start" { 1 } else { -1 },
            )
        })
        .collect();
    assert_eq!(marks.len(), 10);
    marks.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut most) = (0, 0);
    for (_, d) in marks {
        now += d;
        most = most.max(now);
    }
    assert_eq!(most, 4, "{text}");
}

#[tokio::test]
async fn a_spawned_report_is_readable_after_a_restart() {
    let root = TempDir::new().unwrap();
    let db = root.path().join("store.db");
    let server = ScriptedServer::start(
        Script::new(ProviderKind::OpenAi, Vec::new())
            .route("KEEP-ME", vec![Reply::text("kept report")]),
    )
    .unwrap();
    let id = {
        let store = StoreHandle::lazy(Location::Sqlite(db.clone()));
        let s = setup(
            root.path(),
            &server,
            AgentTypes::builtin(),
            SubagentLimits::default(),
            Some(store),
        );
        let env = call(
            &s.registry,
            "spawn",
            json!({"task": "KEEP-ME", "label": "keeper"}),
        )
        .await;
        assert_eq!(env.data["kept"], true, "{}", env.text);
        let id = env.data["task_id"].as_str().unwrap().to_string();
        s.subagents.shutdown(Duration::from_secs(10)).await;
        // Ended normally before the shutdown, or stopped by it: either way recorded.
        id
    };
    // A new process: nothing in memory, the same store.
    let store = StoreHandle::lazy(Location::Sqlite(db));
    let s = setup(
        root.path(),
        &server,
        AgentTypes::builtin(),
        SubagentLimits::default(),
        Some(store),
    );
    let env = call(&s.registry, "task_output", json!({"task_id": id})).await;
    assert_eq!(env.status, Status::Success, "{}", env.text);
    assert!(
        env.text.contains("kept report") || env.data["status"] == "stopped",
        "{}",
        env.text
    );
    let listed = call(&s.registry, "task_list", json!({})).await;
    assert!(listed.text.contains(&id), "{}", listed.text);
}

#[tokio::test]
async fn an_agent_type_from_a_file_gets_exactly_its_tools() {
    let root = TempDir::new().unwrap();
    let agents = root.path().join(".toolbelt").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code for bugs.\ntools: [read_file, grep]\n---\nYou review code. Be terse.\n",
    )
    .unwrap();
    std::fs::write(agents.join("broken.md"), "no front matter here\n").unwrap();
    std::fs::write(agents.join("bad.md"), "---\nname: [oops\n---\nbody\n").unwrap();
    let types = AgentTypes::load(&AgentTypes::dirs(
        &[root.path().to_path_buf()],
        None::<&Path>,
    ));
    assert_eq!(
        types.names(),
        vec!["general-purpose", "explore", "reviewer"]
    );
    let problems: Vec<PathBuf> = types.problems().iter().map(|p| p.path.clone()).collect();
    assert_eq!(
        problems,
        vec![agents.join("bad.md"), agents.join("broken.md")]
    );

    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call(
                    "task",
                    args(json!({"description": "review", "prompt": "REVIEW-ME", "subagent_type": "reviewer"})),
                ),
                Reply::text("reviewed"),
            ],
        )
        .route("REVIEW-ME", vec![Reply::text("looks fine")]),
    )
    .unwrap();
    let s = setup(root.path(), &server, types, SubagentLimits::default(), None);
    // The task description lists the types with their descriptions.
    let task = s
        .registry
        .definitions()
        .into_iter()
        .find(|d| d.name == "task")
        .unwrap();
    assert!(
        task.description
            .contains("- reviewer: Reviews code for bugs."),
        "{}",
        task.description
    );
    let (mut agent, _rx) = parent(&s, AgentOptions::default());
    let out = agent.run("review", &CancellationToken::new()).await;
    assert_eq!(out.outcome, Outcome::FinalAnswer);
    let child = server
        .requests()
        .into_iter()
        .find(|r| first_user(r) == "REVIEW-ME")
        .unwrap();
    assert_eq!(
        tool_names(&child),
        BTreeSet::from(["grep".to_string(), "read_file".to_string()])
    );
    assert!(system(&child).starts_with("You review code. Be terse."));
    // An unknown type is an error naming the closest.
    let env = call(
        &s.registry,
        "task",
        json!({"description": "x", "prompt": "y", "subagent_type": "reviewr"}),
    )
    .await;
    assert_eq!(env.error_code().map(|c| c.as_str()), Some("INVALID_PARAMS"));
    assert!(
        env.text.contains("did you mean \"reviewer\""),
        "{}",
        env.text
    );
}

/// What the subagent tools' definitions cost a model (o200k_base tokens of the
/// OpenAI export), with the built-in types listed: printed, and bounded.
#[test]
fn the_subagent_tools_stay_within_their_token_budgets() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(ProviderKind::OpenAi, Vec::new())).unwrap();
    let s = setup(
        root.path(),
        &server,
        AgentTypes::builtin(),
        SubagentLimits::default(),
        None,
    );
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let budgets = [
        ("task", 500),
        ("spawn", 400),
        ("task_output", 220),
        ("task_stop", 120),
        ("task_list", 100),
    ];
    let mut total = 0;
    for (name, budget) in budgets {
        let spec = s
            .registry
            .definitions()
            .into_iter()
            .find(|d| d.name == name)
            .unwrap();
        let json = toolbelt_wire::export::export(&[spec], toolbelt_wire::export::Format::OpenAi)
            .to_string();
        let tokens = bpe.encode_with_special_tokens(&json).len();
        println!("{name:<12} {tokens:>5} tokens (budget {budget})");
        assert!(tokens <= budget, "{name}: {tokens} tokens, over {budget}");
        total += tokens;
    }
    println!("{:<12} {total:>5} tokens", "all");
}
