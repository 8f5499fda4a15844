//! The runs listed and shown from the store and the files together: each run
//! once (from its file when this process has it), newest first, only the served
//! workspace's.

use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::Session;
use toolbelt_store::{Location, StoredRun, import_agent_run};

use super::*;

/// The lines of a transcript of one turn that asked `prompt` at `time`.
fn transcript(id: &str, time: &str, prompt: &str, answer: &str) -> Vec<String> {
    [
        json!({"time": time, "type": "run", "run_id": id, "provider": "openai", "model": "m-1"}),
        json!({"time": time, "type": "message", "message": {"role": "user", "content": prompt}}),
        json!({"time": time, "type": "end", "outcome": "final_answer", "message": answer,
            "steps": 1, "tool_calls": 0, "usage": {"input_tokens": 10, "output_tokens": 2}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect()
}

/// Keeps `lines` as run `id` of `workspace` in `store`.
async fn keep(store: &Store, workspace: &str, id: &str, started_ms: i64, lines: &[String]) {
    let run = StoredRun {
        run_id: id.into(),
        workspace: workspace.into(),
        started_ms,
        updated_ms: started_ms,
        replica: "replica-b".into(),
    };
    let numbered: Vec<(u64, String)> = (0..).zip(lines.iter().cloned()).collect();
    import_agent_run(store, &run, &numbered)
        .await
        .expect("kept");
}

async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    let request = Request::get(uri).body(Body::empty()).expect("request");
    let (status, _, body) = crate::test_support::respond(app.clone(), request).await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_of_the_store_and_the_files_are_listed_once_newest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join(".state");
    let session = Session::new(dir.path()).with_state_dir(&state);
    let workspace = workspace_key(&session);
    let handle = StoreHandle::lazy(Location::in_state_dir(&state));
    let store = handle.store().await.expect("store");
    // A run of this process: its file, and the store's copy, behind it.
    let mine = transcript("run-a", "2026-05-01T09:00:00+02:00", "mine", "done here");
    let runs = state.join("agent").join("runs");
    std::fs::create_dir_all(&runs).expect("runs dir");
    std::fs::write(runs.join("run-a.jsonl"), mine.join("\n") + "\n").expect("file");
    keep(store, &workspace, "run-a", 1_777_618_800_000, &mine[..1]).await;
    // A later run of another replica, and one of another workspace.
    let theirs = transcript("run-b", "2026-05-01T10:00:00+02:00", "theirs", "done there");
    keep(store, &workspace, "run-b", 1_777_622_400_000, &theirs).await;
    let elsewhere = transcript("run-c", "2026-05-01T11:00:00+02:00", "other", "no");
    keep(store, "/elsewhere", "run-c", 1_777_626_000_000, &elsewhere).await;

    let app = routes(RunsState {
        registry: Arc::new(Registry::new(session)),
        store: Some(handle.clone()),
    });
    let (status, listed) = get(&app, "/v1/agent/runs").await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let summary = |id: &str, started: &str, prompt: &str| {
        json!({"id": id, "started": started, "model": "m-1", "prompt": prompt, "turns": 1,
            "steps": 1, "outcome": "final_answer",
            "usage": {"input_tokens": 10, "output_tokens": 2, "cached_tokens": 0, "cache_write_tokens": 0}})
    };
    let b = summary("run-b", "2026-05-01T10:00:00+02:00", "theirs");
    let a = summary("run-a", "2026-05-01T09:00:00+02:00", "mine");
    assert_eq!(listed, json!({"total": 2, "runs": [b, a]}));
    let (_, first) = get(&app, "/v1/agent/runs?limit=1").await;
    assert_eq!(first, json!({"total": 2, "runs": [b]}));

    let (status, shown) = get(&app, "/v1/agent/runs/run-b").await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["run"], b);
    let types: Vec<&str> = shown["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(types, ["run", "user", "end"]);
    assert_eq!(shown["entries"][2]["message"], "done there");
    // From its file, whole.
    let (_, shown) = get(&app, "/v1/agent/runs/run-a").await;
    assert_eq!(shown["entries"][2]["message"], "done here");
    for missing in ["run-c", "nope"] {
        let (status, _) = get(&app, &format!("/v1/agent/runs/{missing}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    }
    assert_eq!(Path::new(&workspace), dir.path());
}
