//! The JSON endpoints behind the page (under `/v1`, with the same authentication as
//! the rest of the API: the bearer token or the page's session cookie). All of them
//! read; none goes through the registry, so looking at the page never adds calls
//! to the call log.
//!
//! - `GET /v1/tools/{name}/schemas`: a tool's schema in every export format.
//! - `GET /v1/calls`: the call log, newest first, filtered by `tool`, `status`,
//!   `since` and `until` (ms), paged with `before` (a row id) and `limit`.
//! - `GET /v1/calls/stream`: server-sent events, one `calls` event (a JSON array,
//!   oldest first) whenever calls were logged after `Last-Event-ID` (or `after`).
//! - `GET /v1/todos`: every todo list of every workspace.
//! - `GET /v1/planner/projects|goals|tasks|reviews|patterns`: the planner.
//! - `GET /v1/agent/runs`, `GET /v1/agent/runs/{id}`: the agent's runs and one
//!   run step by step (in the `runs` module beside this one).
//! - `GET /v1/cron/jobs`: the scheduled jobs of every workspace, with their next
//!   and last runs.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::Registry;
use toolbelt_store::{
    AnalysisRequest, CallQuery, GoalFilter, GoalStage, Kind, Priority, ProjectFilter,
    ProjectStatus, RecordId, ReviewQuery, Store, StoreError, StoreHandle, TaskFilter, TaskStatus,
};
use toolbelt_wire::export::{Format, export_tool};

use super::params::{Answer, Params, json_answer, number, text};
use super::runs::RunsState;
use crate::error::ApiError;

/// How often the live call log looks for new calls, in milliseconds.
pub const CALL_STREAM_POLL_MS: u64 = 500;
/// Most calls one live event carries.
const CALL_STREAM_BATCH: u32 = 200;

/// What the page's endpoints share.
pub(crate) struct ApiState {
    pub(crate) registry: Arc<Registry>,
    pub(crate) store: Option<StoreHandle>,
    /// Ends the live streams when the server shuts down.
    pub(crate) cancel: CancellationToken,
}

/// The endpoints, to merge into the API router.
pub(crate) fn routes(state: Arc<ApiState>) -> Router {
    let runs = super::runs::routes(RunsState {
        registry: Arc::clone(&state.registry),
        store: state.store.clone(),
    });
    Router::new()
        .route("/v1/tools/{name}/schemas", get(schemas))
        .route("/v1/calls", get(calls))
        .route("/v1/calls/stream", get(call_stream))
        .route("/v1/todos", get(todos))
        .route("/v1/planner/projects", get(projects))
        .route("/v1/planner/goals", get(goals))
        .route("/v1/planner/tasks", get(tasks))
        .route("/v1/planner/reviews", get(reviews))
        .route("/v1/planner/patterns", get(patterns))
        .route("/v1/cron/jobs", get(cron_jobs))
        .with_state(state)
        .merge(runs)
}

async fn open(state: &ApiState) -> Result<&Store, ApiError> {
    let Some(handle) = &state.store else {
        return Err(ApiError::NoStore);
    };
    Ok(handle.store().await?)
}

fn choice<T: Copy>(
    params: &HashMap<String, String>,
    name: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    match text(params, name) {
        None => Ok(None),
        Some(v) => parse(&v).map(Some).ok_or_else(|| {
            ApiError::InvalidParams(format!("{name}: {v:?} is not one of the allowed values"))
        }),
    }
}

fn record_id(
    params: &HashMap<String, String>,
    name: &str,
    kind: Kind,
) -> Result<Option<RecordId>, ApiError> {
    match text(params, name) {
        None => Ok(None),
        Some(v) => Ok(Some(RecordId::parse(kind, &v)?)),
    }
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::from_value(Value::String(text.to_string())).ok()
}

async fn schemas(State(state): State<Arc<ApiState>>, UrlPath(name): UrlPath<String>) -> Answer {
    let Some(spec) = state
        .registry
        .definitions()
        .into_iter()
        .find(|s| s.name == name)
    else {
        return Err(ApiError::UnknownTool(name));
    };
    let formats: Vec<Value> = Format::ALL
        .iter()
        .map(|&format| json!({ "format": format.as_str(), "schema": export_tool(&spec, format) }))
        .collect();
    json_answer(json!({ "tool": spec.name, "formats": formats }))
}

async fn calls(State(state): State<Arc<ApiState>>, Query(params): Params) -> Answer {
    let query = call_query(&params)?;
    let calls = toolbelt_store::list_calls(open(&state).await?, &query).await?;
    let limit = query
        .limit
        .unwrap_or(toolbelt_store::DEFAULT_CALLS_PAGE)
        .clamp(1, toolbelt_store::MAX_CALLS_PAGE);
    let next_before = (calls.len() == limit as usize)
        .then(|| calls.last().map(|c| c.id))
        .flatten();
    json_answer(json!({ "calls": calls, "next_before": next_before }))
}

fn call_query(params: &HashMap<String, String>) -> Result<CallQuery, ApiError> {
    let status = text(params, "status");
    if let Some(s) = &status
        && !matches!(s.as_str(), "success" | "partial" | "error")
    {
        return Err(ApiError::InvalidParams(format!(
            "status: {s:?} is not one of success, partial, error"
        )));
    }
    Ok(CallQuery {
        tool: text(params, "tool"),
        status,
        since_ms: number(params, "since")?,
        until_ms: number(params, "until")?,
        before_id: number(params, "before")?,
        limit: number(params, "limit")?,
    })
}

/// `GET /v1/calls/stream`: polls the log every [`CALL_STREAM_POLL_MS`] (calls made
/// by other processes sharing the store show up too) until the client goes away or
/// the server stops.
async fn call_stream(
    State(state): State<Arc<ApiState>>,
    headers: HeaderMap,
    Query(params): Params,
) -> Answer {
    let store = open(&state).await?.clone();
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    let after = match resume {
        Some(id) => id,
        None => match number::<i64>(&params, "after")? {
            Some(id) => id,
            None => toolbelt_store::last_call_id(&store).await?,
        },
    };
    let cancel = state.cancel.clone();
    let stream = futures::stream::unfold(
        (store, after, cancel),
        |(store, mut after, cancel)| async move {
            loop {
                tokio::select! {
                    () = cancel.cancelled() => return None,
                    () = tokio::time::sleep(Duration::from_millis(CALL_STREAM_POLL_MS)) => {}
                }
                match toolbelt_store::calls_after(&store, after, CALL_STREAM_BATCH).await {
                    Ok(calls) if !calls.is_empty() => {
                        after = calls.last().map_or(after, |c| c.id);
                        let event = Event::default()
                            .event("calls")
                            .id(after.to_string())
                            .json_data(&calls)
                            .unwrap_or_else(|_| Event::default().comment("unserialisable"));
                        return Some((Ok::<Event, Infallible>(event), (store, after, cancel)));
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(target: "toolbelt::serve", error = %e, "call stream: store failure");
                    }
                }
            }
        },
    );
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

async fn todos(State(state): State<Arc<ApiState>>) -> Answer {
    let lists = toolbelt_store::all_todo_lists(open(&state).await?).await?;
    json_answer(json!({ "lists": lists }))
}

async fn projects(State(state): State<Arc<ApiState>>, Query(params): Params) -> Answer {
    let filter = ProjectFilter {
        status: choice(&params, "status", ProjectStatus::parse)?,
        limit: number(&params, "limit")?,
        offset: number(&params, "offset")?.unwrap_or(0),
    };
    let store = open(&state).await?;
    let page = store.list_projects(&filter).await?;
    let now = toolbelt_store::now_ms();
    let mut items = Vec::with_capacity(page.items.len());
    for project in page.items {
        match store.project_with_stats(project.id, now).await {
            Ok((project, stats)) => items.push(json!({ "project": project, "stats": stats })),
            // Deleted between the two reads.
            Err(StoreError::NotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    json_answer(json!({ "items": items, "total": page.total }))
}

async fn goals(State(state): State<Arc<ApiState>>, Query(params): Params) -> Answer {
    let filter = GoalFilter {
        stage: choice(&params, "stage", GoalStage::parse)?,
        project_id: record_id(&params, "project", Kind::Project)?,
        limit: number(&params, "limit")?,
        offset: number(&params, "offset")?.unwrap_or(0),
    };
    json_answer(open(&state).await?.list_goals(&filter).await?)
}

async fn tasks(State(state): State<Arc<ApiState>>, Query(params): Params) -> Answer {
    let filter = TaskFilter {
        project_id: record_id(&params, "project", Kind::Project)?,
        status: choice(&params, "status", TaskStatus::parse)?,
        priority: choice(&params, "priority", Priority::parse)?,
        due_before: number(&params, "due_before")?,
        due_after: number(&params, "due_after")?,
        limit: number(&params, "limit")?,
        offset: number(&params, "offset")?.unwrap_or(0),
    };
    json_answer(open(&state).await?.list_tasks(&filter).await?)
}

async fn reviews(State(state): State<Arc<ApiState>>, Query(params): Params) -> Answer {
    let query = ReviewQuery {
        since: text(&params, "since"),
        until: text(&params, "until"),
        kind: choice(&params, "type", from_json)?,
        tag: text(&params, "tag"),
        limit: number(&params, "limit")?,
        offset: number(&params, "offset")?,
        utc_offset: text(&params, "utc_offset"),
    };
    json_answer(toolbelt_store::list_reviews(open(&state).await?, &query).await?)
}

/// `GET /v1/planner/patterns?range=week|month|quarter&utc_offset=+02:00`: what
/// `analyze_patterns` reports, ending today.
async fn patterns(State(state): State<Arc<ApiState>>, Query(params): Params) -> Answer {
    let range = choice(&params, "range", from_json)?.unwrap_or(toolbelt_store::TimeRange::Month);
    let offset = text(&params, "utc_offset")
        .map(|o| toolbelt_store::parse_utc_offset(&o))
        .transpose()?;
    let mut request = AnalysisRequest::new(range, chrono_today(offset));
    if let Some(o) = offset {
        request.utc_offset = o;
    }
    json_answer(toolbelt_store::analyze_patterns(open(&state).await?, &request).await?)
}

/// `GET /v1/cron/jobs`: every workspace's jobs, as `cron` lists them, with their
/// workspace and next run in milliseconds.
async fn cron_jobs(State(state): State<Arc<ApiState>>) -> Answer {
    let jobs = toolbelt_store::list_cron_jobs(open(&state).await?, None).await?;
    let jobs: Vec<Value> = jobs
        .iter()
        .map(|j| {
            let mut v = serde_json::to_value(toolbelt_tools::job_data(&j.job, j.last.as_ref()))
                .unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("workspace".into(), Value::String(j.job.workspace.clone()));
                o.insert("next_at".into(), json!(j.job.next_at));
            }
            v
        })
        .collect();
    json_answer(json!({ "jobs": jobs }))
}

/// Today in the offset (UTC when `None`).
fn chrono_today(offset: Option<chrono::FixedOffset>) -> chrono::NaiveDate {
    let now = chrono::Utc::now();
    match offset {
        Some(o) => now.with_timezone(&o).date_naive(),
        None => now.date_naive(),
    }
}

/// The OpenAPI paths of these endpoints.
pub(crate) fn openapi_paths(paths: &mut Map<String, Value>, unauthorized: &Value) {
    let error_ref = json!({ "$ref": "#/components/schemas/Error" });
    let object = json!({ "type": "object" });
    let param = |name: &str, description: &str, schema: Value| json!({ "name": name, "in": "query", "required": false, "description": description, "schema": schema });
    let integer = json!({ "type": "integer" });
    let string = json!({ "type": "string" });
    let ok = |description: &str, schema: &Value| json!({ "description": description, "content": { "application/json": { "schema": schema } } });
    let unavailable = json!({ "description": "The store cannot answer.",
        "content": { "application/json": { "schema": error_ref } } });
    let bad_request = json!({ "description": "A query parameter is invalid.",
        "content": { "application/json": { "schema": error_ref } } });
    let get_op = |id: &str, summary: &str, params: Vec<Value>, answer: Value| {
        json!({ "get": {
            "operationId": id,
            "summary": summary,
            "parameters": params,
            "responses": {
                "200": answer,
                "400": bad_request,
                "401": unauthorized,
                "503": unavailable
            }
        } })
    };
    paths.insert(
        "/v1/tools/{name}/schemas".into(),
        json!({ "get": {
            "operationId": "toolSchemas",
            "summary": "A tool's schema in every export format (openai, openai-strict, openai-responses, anthropic, gemini, mcp, text).",
            "parameters": [{ "name": "name", "in": "path", "required": true, "schema": string }],
            "responses": {
                "200": ok("The schema in each format, in this order.", &json!({ "type": "object",
                    "properties": { "tool": string, "formats": { "type": "array", "items": {
                        "type": "object", "properties": { "format": string, "schema": {} } } } } })),
                "401": unauthorized,
                "404": { "description": "No such tool.",
                    "content": { "application/json": { "schema": error_ref } } }
            }
        } }),
    );
    paths.insert(
        "/v1/calls".into(),
        get_op(
            "listCalls",
            "The call log, newest first (arguments as stored: secrets redacted, long strings cut).",
            vec![
                param("tool", "Only calls of this tool (canonical name).", string.clone()),
                param(
                    "status",
                    "Only calls of this status.",
                    json!({ "enum": ["success", "partial", "error"] }),
                ),
                param(
                    "since",
                    "Only calls started at or after this time (ms since the epoch).",
                    integer.clone(),
                ),
                param(
                    "until",
                    "Only calls started before this time (ms since the epoch).",
                    integer.clone(),
                ),
                param(
                    "before",
                    "Only calls logged before this id: the next page (`next_before` of the last answer).",
                    integer.clone(),
                ),
                param(
                    "limit",
                    "At most this many (default 50, at most 500).",
                    integer.clone(),
                ),
            ],
            ok(
                "A page of calls.",
                &json!({ "type": "object", "properties": {
                    "calls": { "type": "array", "items": object },
                    "next_before": { "type": ["integer", "null"] } } }),
            ),
        ),
    );
    paths.insert(
        "/v1/calls/stream".into(),
        get_op(
            "streamCalls",
            "Server-sent events: a `calls` event (a JSON array of calls, oldest first; the event id is the last call's id) whenever calls are logged. Resumes after `Last-Event-ID`, else after `after`, else from now.",
            vec![param(
                "after",
                "Send the calls logged after this id.",
                integer.clone(),
            )],
            json!({ "description": "The event stream.", "content": { "text/event-stream": { "schema": string } } }),
        ),
    );
    paths.insert(
        "/v1/todos".into(),
        get_op(
            "listTodoLists",
            "Every todo list of every workspace, most recently changed first.",
            vec![],
            ok(
                "The lists.",
                &json!({ "type": "object", "properties": {
                    "lists": { "type": "array", "items": object } } }),
            ),
        ),
    );
    let page = json!({ "type": "object", "properties": {
        "items": { "type": "array", "items": object }, "total": integer } });
    let paging = || {
        vec![
            param(
                "limit",
                "At most this many (default 50, at most 200).",
                integer.clone(),
            ),
            param("offset", "Skip this many.", integer.clone()),
        ]
    };
    let mut project_params = vec![param(
        "status",
        "Only projects in this status.",
        json!({ "enum": ProjectStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>() }),
    )];
    project_params.extend(paging());
    paths.insert(
        "/v1/planner/projects".into(),
        get_op(
            "plannerProjects",
            "Projects, each with its stats (completion, overdue tasks, goals).",
            project_params,
            ok("Projects with stats.", &page),
        ),
    );
    let mut goal_params = vec![
        param(
            "stage",
            "Only goals of this stage.",
            json!({ "enum": GoalStage::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>() }),
        ),
        param(
            "project",
            "Only goals linked to this project (`project-3`).",
            string.clone(),
        ),
    ];
    goal_params.extend(paging());
    paths.insert(
        "/v1/planner/goals".into(),
        get_op("plannerGoals", "Goals.", goal_params, ok("Goals.", &page)),
    );
    let mut task_params = vec![
        param(
            "project",
            "Only tasks of this project (`project-3`).",
            string.clone(),
        ),
        param(
            "status",
            "Only tasks in this status.",
            json!({ "enum": TaskStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>() }),
        ),
        param(
            "priority",
            "Only tasks of this priority.",
            json!({ "enum": Priority::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>() }),
        ),
        param(
            "due_before",
            "Only tasks due at or before this time (ms).",
            integer.clone(),
        ),
        param(
            "due_after",
            "Only tasks due at or after this time (ms).",
            integer.clone(),
        ),
    ];
    task_params.extend(paging());
    paths.insert(
        "/v1/planner/tasks".into(),
        get_op("plannerTasks", "Tasks.", task_params, ok("Tasks.", &page)),
    );
    paths.insert(
        "/v1/planner/reviews".into(),
        get_op(
            "plannerReviews",
            "Reviews, newest first.",
            vec![
                param(
                    "since",
                    "About this moment or later: YYYY-MM-DD or RFC 3339.",
                    string.clone(),
                ),
                param(
                    "until",
                    "About this moment or earlier: YYYY-MM-DD or RFC 3339.",
                    string.clone(),
                ),
                param(
                    "type",
                    "Only reviews of this type.",
                    json!({ "enum": ["daily", "weekly", "monthly"] }),
                ),
                param("tag", "Only reviews with this tag.", string.clone()),
                param(
                    "utc_offset",
                    "Where a date alone starts and ends (`+08:00`).",
                    string.clone(),
                ),
                param(
                    "limit",
                    "At most this many (default 20, at most 200).",
                    integer.clone(),
                ),
                param("offset", "Skip this many.", integer.clone()),
            ],
            ok("A page of reviews.", &object),
        ),
    );
    paths.insert(
        "/v1/agent/runs".into(),
        get_op(
            "agentRuns",
            "The agent's runs (toolbelt agent, scheduled prompt jobs), newest first, from their transcripts: start, model, first prompt, turns, steps, outcome, tokens.",
            vec![param(
                "limit",
                "At most this many (default 100, at most 500).",
                integer.clone(),
            )],
            ok(
                "The runs, and how many there are.",
                &json!({ "type": "object", "properties": {
                    "runs": { "type": "array", "items": object }, "total": integer } }),
            ),
        ),
    );
    paths.insert(
        "/v1/agent/runs/{id}".into(),
        json!({ "get": {
            "operationId": "agentRun",
            "summary": "One run step by step: messages, each tool call by its summary with its result, notices, compactions, the end of each turn.",
            "parameters": [{ "name": "id", "in": "path", "required": true, "schema": string }],
            "responses": {
                "200": ok("The run and its steps.", &json!({ "type": "object", "properties": {
                    "run": object, "entries": { "type": "array", "items": object } } })),
                "401": unauthorized,
                "404": { "description": "No such run.",
                    "content": { "application/json": { "schema": error_ref } } },
                "503": unavailable
            }
        } }),
    );
    paths.insert(
        "/v1/cron/jobs".into(),
        get_op(
            "cronJobs",
            "The scheduled jobs of every workspace: schedule, time zone, next run in the job's zone, last run (delivery, and a prompt job's outcome and answer), channel.",
            vec![],
            ok(
                "The jobs.",
                &json!({ "type": "object", "properties": {
                    "jobs": { "type": "array", "items": object } } }),
            ),
        ),
    );
    paths.insert(
        "/v1/planner/patterns".into(),
        get_op(
            "plannerPatterns",
            "What analyze_patterns reports over the range ending today: mood, tags, themes, tasks, streaks.",
            vec![
                param(
                    "range",
                    "How far back.",
                    json!({ "enum": ["week", "month", "quarter"] }),
                ),
                param(
                    "utc_offset",
                    "The offset of the calendar days (`+08:00`).",
                    string,
                ),
            ],
            ok("The analysis.", &object),
        ),
    );
}
