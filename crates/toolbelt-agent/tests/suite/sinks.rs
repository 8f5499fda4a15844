//! A transcript's sink: every line the file gets, numbered in the file's order
//! (on across a resume), and the run read back from those lines as from the file.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
use toolbelt_agent::transcript::{self, TranscriptSink};
use toolbelt_agent::{Agent, AgentOptions, Outcome, ProviderConfig, ProviderKind, build_provider};
use toolbelt_core::{Registry, Session};

const RUN_TIMEOUT: Duration = Duration::from_secs(40);

/// Keeps every line it is given.
#[derive(Debug, Default)]
struct Kept(Mutex<Vec<(String, u64, String)>>);

impl TranscriptSink for Kept {
    fn line(&self, run_id: &str, seq: u64, line: &str) {
        self.0
            .lock()
            .unwrap()
            .push((run_id.to_string(), seq, line.to_string()));
    }
}

fn agent(root: &Path, server: &ScriptedServer, sink: &Arc<Kept>, resume: Option<&Path>) -> Agent {
    let mut registry = Registry::new(Session::new(root).with_state_dir(root.join(".state")));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    let mut config = ProviderConfig::new(server.kind(), "scripted-model");
    config.base_url = server.base_url();
    let provider = build_provider(config).unwrap();
    let options = AgentOptions {
        transcript_dir: Some(root.join(".state").join("runs")),
        transcript_sink: Some(Arc::clone(sink) as Arc<dyn TranscriptSink>),
        ..AgentOptions::default()
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    match resume {
        Some(path) => Agent::resume(Arc::new(registry), provider, options, tx, path).unwrap(),
        None => Agent::new(Arc::new(registry), provider, options, tx),
    }
}

async fn turn(agent: &mut Agent, prompt: &str) {
    let out = tokio::time::timeout(RUN_TIMEOUT, agent.run(prompt, &CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(out.outcome, Outcome::FinalAnswer, "{out:?}");
}

#[tokio::test]
async fn the_sink_gets_every_line_of_the_file_numbered_on_across_a_resume() {
    let root = TempDir::new().unwrap();
    std::fs::write(root.path().join("notes.txt"), "one\n").unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("read_file", r#"{"path": "notes.txt"}"#),
            Reply::text("one line"),
            Reply::text("still one line"),
        ],
    ))
    .unwrap();
    let sink = Arc::new(Kept::default());
    let mut first = agent(root.path(), &server, &sink, None);
    turn(&mut first, "How many lines?").await;
    let run_id = first.run_id().to_string();
    let path = first.transcript_path().unwrap().to_path_buf();
    drop(first);
    let mut again = agent(root.path(), &server, &sink, Some(&path));
    turn(&mut again, "And now?").await;
    drop(again);

    let file = std::fs::read_to_string(&path).unwrap();
    let file_lines: Vec<&str> = file.lines().collect();
    let kept = sink.0.lock().unwrap().clone();
    assert_eq!(
        kept.iter().map(|(_, _, l)| l.as_str()).collect::<Vec<_>>(),
        file_lines
    );
    assert!(kept.iter().all(|(id, _, _)| *id == run_id));
    assert_eq!(
        kept.iter().map(|(_, seq, _)| *seq).collect::<Vec<_>>(),
        (0..file_lines.len() as u64).collect::<Vec<_>>()
    );

    // Read back from the lines, the run is the file's.
    let events: Vec<Value> = kept
        .iter()
        .map(|(_, _, l)| serde_json::from_str(l).unwrap())
        .collect();
    let mut listed = transcript::list(path.parent().unwrap())
        .unwrap()
        .pop()
        .unwrap();
    let from_lines = transcript::info_from_events(&run_id, events.clone()).unwrap();
    assert_eq!(from_lines.path, Path::new(""));
    listed.path = from_lines.path.clone();
    assert_eq!(from_lines, listed);
    assert_eq!(listed.turns, 2);
    assert_eq!(
        transcript::entries_from_events(events),
        Some(transcript::read(&path).unwrap())
    );
    assert_eq!(transcript::entries_from_events(Vec::new()), None);
    assert_eq!(transcript::info_from_events(&run_id, Vec::new()), None);
}
