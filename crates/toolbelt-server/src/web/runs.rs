//! The agent's runs, for the page and the API:
//!
//! - `GET /v1/agent/runs?limit=N`: the newest runs first, `{"runs": [{"id",
//!   "started", "model", "prompt", "turns", "steps", "outcome", "usage"}],
//!   "total"}`.
//! - `GET /v1/agent/runs/{id}`: one run step by step, `{"run", "entries"}`.
//!
//! The runs come from two places: the store, where a server keeps the lines of
//! the runs it starts (so every replica sharing the store lists the runs any of
//! them started), and the transcripts in `<state>/agent/runs`, which hold this
//! process's runs and those the store does not have (older ones, runs of
//! `toolbelt agent` on this machine). A run in both is read from its file, which
//! is never behind the store's copy. Without a store, the files alone.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::routing::get;
use serde_json::{Value, json};
use toolbelt_agent::transcript::{self, RunInfo};
use toolbelt_core::Registry;
use toolbelt_store::{Store, StoreHandle, workspace_key};

use super::params::{Answer, Params, json_answer, number};
use crate::error::ApiError;

/// Runs listed at most, newest first.
pub const MAX_RUNS_LISTED: usize = 500;
/// Runs listed when no `limit` is given.
const DEFAULT_RUNS_LISTED: usize = 100;

/// What the runs' routes read.
pub(crate) struct RunsState {
    /// The served workspace: its state directory and its key in the store.
    pub(crate) registry: Arc<Registry>,
    /// The store the server keeps its runs in, if any.
    pub(crate) store: Option<StoreHandle>,
}

/// The routes, to merge into the API router.
pub(crate) fn routes(state: RunsState) -> Router {
    Router::new()
        .route("/v1/agent/runs", get(agent_runs))
        .route("/v1/agent/runs/{id}", get(agent_run))
        .with_state(Arc::new(state))
}

/// Where the agent keeps its transcripts.
fn runs_dir(state: &RunsState) -> PathBuf {
    state
        .registry
        .session()
        .state_dir()
        .join("agent")
        .join("runs")
}

/// The store, when the server has one.
async fn store(state: &RunsState) -> Result<Option<&Store>, ApiError> {
    match &state.store {
        Some(handle) => Ok(Some(handle.store().await?)),
        None => Ok(None),
    }
}

/// A run as the page lists it (its file's path left out).
fn run_json(run: &RunInfo) -> Value {
    json!({
        "id": run.id,
        "started": run.started,
        "model": run.model,
        "prompt": run.prompt,
        "turns": run.turns,
        "steps": run.steps,
        "outcome": run.outcome,
        "usage": run.usage,
    })
}

/// Why the runs' transcripts cannot be read.
type RunsError = Box<dyn std::error::Error + Send + Sync>;

/// Reads (or parses) the runs' transcripts off the async threads.
async fn read_runs<T: Send + 'static>(
    read: impl FnOnce() -> Result<T, RunsError> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ApiError::RunsUnreadable(e)),
        Err(e) => Err(ApiError::RunsUnreadable(Box::new(e))),
    }
}

/// The events of a run kept in the store, from its lines (a line that is not
/// JSON is skipped, as in a file).
fn events_of(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// When a run listed from its file started, in ms (0 when unknown: the oldest).
fn started_ms(run: &RunInfo) -> i64 {
    chrono::DateTime::parse_from_rfc3339(&run.started).map_or(0, |t| t.timestamp_millis())
}

/// `GET /v1/agent/runs?limit=N`: the newest runs first.
async fn agent_runs(State(state): State<Arc<RunsState>>, Query(params): Params) -> Answer {
    let limit = number::<usize>(&params, "limit")?
        .unwrap_or(DEFAULT_RUNS_LISTED)
        .clamp(1, MAX_RUNS_LISTED);
    let dir = runs_dir(&state);
    let local = read_runs(move || Ok(transcript::list(&dir)?)).await?;
    let Some(store) = store(&state).await? else {
        let newest: Vec<Value> = local.iter().rev().take(limit).map(run_json).collect();
        return json_answer(json!({ "runs": newest, "total": local.len() }));
    };
    let workspace = workspace_key(state.registry.session());
    let stored = toolbelt_store::list_agent_runs(store, &workspace).await?;
    // Every run once, newest first: from its file when this process has it.
    let in_files: HashSet<&str> = local.iter().map(|r| r.id.as_str()).collect();
    let mut listed: Vec<(i64, &str, Option<&RunInfo>)> = local
        .iter()
        .map(|r| (started_ms(r), r.id.as_str(), Some(r)))
        .collect();
    listed.extend(
        stored
            .iter()
            .filter(|r| !in_files.contains(r.run_id.as_str()))
            .map(|r| (r.started_ms, r.run_id.as_str(), None)),
    );
    listed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(a.1)));
    let total = listed.len();
    listed.truncate(limit);
    let from_store: Vec<String> = listed
        .iter()
        .filter(|(_, _, file)| file.is_none())
        .map(|(_, id, _)| (*id).to_string())
        .collect();
    let mut lines = toolbelt_store::agent_run_events(store, &from_store).await?;
    let summaries: HashMap<String, RunInfo> = read_runs(move || {
        Ok(lines
            .drain()
            .filter_map(|(id, lines)| {
                transcript::info_from_events(&id, events_of(&lines)).map(|info| (id, info))
            })
            .collect())
    })
    .await?;
    let runs: Vec<Value> = listed
        .iter()
        .filter_map(|(_, id, file)| file.or_else(|| summaries.get(*id)).map(run_json))
        .collect();
    json_answer(json!({ "runs": runs, "total": total }))
}

/// `GET /v1/agent/runs/{id}`: one run, step by step.
async fn agent_run(State(state): State<Arc<RunsState>>, UrlPath(id): UrlPath<String>) -> Answer {
    let dir = runs_dir(&state);
    let wanted = id.clone();
    let found = read_runs(move || {
        // Only a listed run: the id never becomes a path of its own.
        let runs = transcript::list(&dir)?;
        let Some(run) = runs.into_iter().find(|r| r.id == wanted) else {
            return Ok(None);
        };
        let entries = transcript::read(&run.path)?;
        Ok(Some((run, entries)))
    })
    .await?;
    let found = match found {
        Some(found) => Some(found),
        None => stored_run(&state, &id).await?,
    };
    match found {
        Some((run, entries)) => json_answer(json!({ "run": run_json(&run), "entries": entries })),
        None => Err(ApiError::NotFound(format!(
            "no agent run {id:?}; see GET /v1/agent/runs"
        ))),
    }
}

/// Run `id` of the served workspace from the store, if it has it.
async fn stored_run(
    state: &RunsState,
    id: &str,
) -> Result<Option<(RunInfo, Vec<transcript::Entry>)>, ApiError> {
    let Some(store) = store(state).await? else {
        return Ok(None);
    };
    let workspace = workspace_key(state.registry.session());
    if toolbelt_store::find_agent_run(store, &workspace, id)
        .await?
        .is_none()
    {
        return Ok(None);
    }
    let mut lines = toolbelt_store::agent_run_events(store, &[id.to_string()]).await?;
    let lines = lines.remove(id).unwrap_or_default();
    let id = id.to_string();
    read_runs(move || {
        let events = events_of(&lines);
        let info = transcript::info_from_events(&id, events.clone());
        let entries = transcript::entries_from_events(events);
        Ok(info.zip(entries))
    })
    .await
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;
