//! The subagent tools: `task`, `spawn`, `task_output`, `task_stop`, `task_list`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolbelt_core::sync::lock;
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
    error_chain,
};

use super::{ChildSpec, Snapshot, Subagents, finish_state};
use crate::options::Outcome;
use crate::tool_names::{SPAWN, TASK, TASK_LIST, TASK_OUTPUT, TASK_STOP};

/// The longest `task_output` wait.
const MAX_WAIT_MS: u64 = 600_000;
/// `task_output`'s wait when none is given.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// How long `task_stop` waits for a subagent to end.
const STOP_WAIT: Duration = Duration::from_secs(15);
/// Background subagents `task_list` shows from the store.
const LIST_LIMIT: i64 = 20;

/// The agent types as the `task` and `spawn` descriptions list them.
fn types_listing(subagents: &Subagents) -> String {
    subagents
        .types()
        .all()
        .iter()
        .map(|t| {
            let tools = match &t.tools {
                None => "all tools".to_string(),
                Some(list) => list.join(", "),
            };
            format!("- {}: {} (Tools: {tools})", t.name, t.description)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn hints() -> Hints {
    Hints {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
        concurrency_safe: true,
    }
}

fn read_hints() -> Hints {
    Hints {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
        concurrency_safe: true,
    }
}

fn data(id: &str, label: &str, agent_type: &str, s: &Snapshot) -> Value {
    json!({
        "task_id": id,
        "label": label,
        "agent_type": agent_type,
        "status": s.state,
        "steps": s.steps,
        "tool_calls": s.tool_calls,
        "usage": {"input_tokens": s.usage.input_tokens, "output_tokens": s.usage.output_tokens},
        "run_id": s.run_id,
        "result": s.result,
    })
}

/// Arguments of `task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskParams {
    /// The task in 3-7 words, shown to the user ("find the config loader").
    #[schemars(length(min = 1, max = 120))]
    pub description: String,
    /// Everything the subagent needs to know: it sees nothing of your conversation.
    /// Say what to do, what to report back, and whether to change files or only look.
    #[schemars(length(min = 1))]
    pub prompt: String,
    /// The agent type (default `general-purpose`).
    #[serde(default)]
    pub subagent_type: Option<String>,
}

/// `task`: runs a subagent and returns its final answer.
#[derive(Debug)]
pub struct TaskTool {
    subagents: Subagents,
}

impl TaskTool {
    pub(crate) fn new(subagents: Subagents) -> TaskTool {
        TaskTool { subagents }
    }
}

impl TypedTool for TaskTool {
    type Params = TaskParams;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        let limits = self.subagents.limits();
        ToolSpec::describe(
            TASK,
            format!(
                "Runs a subagent on one self-contained task and returns its final answer. The subagent \
                 starts with a fresh conversation (it sees none of yours), works with its own tools \
                 under the same workspace and rules, and stops at {} steps or {} minutes. Use it for \
                 searches and work whose details you do not need in your own context; several `task` \
                 calls in one reply run at the same time (at most {} subagents at once). Write the \
                 prompt as for a colleague who knows nothing yet, and say what the answer must contain.\n\n\
                 Agent types (`subagent_type`):\n{}",
                limits.max_steps,
                limits.timeout.as_secs().div_ceil(60),
                limits.max_running,
                types_listing(&self.subagents)
            ),
        )
        .title("Run Subagent")
        .category(Category::Agent)
        .permission("agent:run")
        .hints(hints())
        .own_timeout()
        .key_argument("description")
    }

    async fn call(&self, ctx: &ToolContext, p: TaskParams) -> ToolResult<Value> {
        let sa = &self.subagents;
        let agent_type = sa.agent_type(p.subagent_type.as_deref())?;
        let mut spec = ChildSpec {
            id: sa.next_id(),
            label: p.description.trim().to_string(),
            agent_type,
            prompt: p.prompt,
            call_id: Some(ctx.call_id().to_string()),
            timeout: sa.limits().timeout,
            notes: Vec::new(),
        };
        let mut hook_runs = sa.start_hooks(&mut spec).await?;
        let snapshot = Mutex::new(Snapshot {
            state: "queued".into(),
            ..Snapshot::default()
        });
        if sa.shared.slots.available_permits() == 0 {
            sa.emit_progress(&spec, false, &lock(&snapshot).clone());
        }
        let cancel = ctx.cancel_token().child_token();
        let _permit = tokio::select! {
            permit = Arc::clone(&sa.shared.slots).acquire_owned() => permit.map_err(|_| {
                ToolError::new(ErrorCode::Internal, "the subagent slots are closed")
            })?,
            () = cancel.cancelled() => {
                return Err(ToolError::new(ErrorCode::Cancelled, "cancelled while waiting for a free subagent slot"));
            }
        };
        lock(&snapshot).state = "running".into();
        sa.emit_progress(&spec, false, &lock(&snapshot).clone());
        let progress = |s: &Snapshot| sa.emit_progress(&spec, false, s);
        let end = sa
            .run_child(&spec, cancel.clone(), &snapshot, &progress)
            .await;
        let (state, result) = finish_state(&end, &cancel, sa.limits());
        let mut s = lock(&snapshot).clone();
        s.state = state.clone();
        s.result = Some(result.clone());
        if let Ok(end) = &end {
            s.steps = end.steps;
            s.tool_calls = end.tool_calls;
            s.usage = end.usage;
            s.run_id = Some(end.run_id.clone());
        }
        sa.emit_progress(&spec, false, &s);
        let mut data = data(&spec.id, &spec.label, &spec.agent_type.name, &s);
        if let Ok(end) = &end {
            hook_runs.extend(end.hooks.iter().cloned());
        }
        if !hook_runs.is_empty() {
            data["hooks"] = json!(hook_runs);
        }
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                return Err(ToolError::new(ErrorCode::Internal, error_chain(&e)).data(data));
            }
        };
        if end.outcome == Outcome::FinalAnswer {
            return Ok(Reply::new(data, end.message)
                .stat("steps", end.steps)
                .stat("tool_calls", end.tool_calls));
        }
        let (code, message, hint) = if end.timed_out {
            (
                ErrorCode::Timeout,
                format!(
                    "the subagent did not finish within {} s and was stopped",
                    sa.limits().timeout.as_secs()
                ),
                "Give it a smaller task, or split the task into several.",
            )
        } else {
            match end.outcome {
                Outcome::Cancelled => (
                    ErrorCode::Cancelled,
                    "the subagent was cancelled".to_string(),
                    "",
                ),
                Outcome::Error => (
                    ErrorCode::Network,
                    format!("the subagent's model calls failed: {}", end.message),
                    "Try again later, or do the work yourself.",
                ),
                _ => (
                    ErrorCode::TooLarge,
                    format!(
                        "the subagent stopped without a final answer: {}",
                        end.message
                    ),
                    "Give it a narrower task or clearer instructions, or do the rest yourself; its last message is above.",
                ),
            }
        };
        let mut err = ToolError::new(code, message).data(data);
        if !hint.is_empty() {
            err = err.hint(hint);
        }
        if !end.last_text.trim().is_empty() {
            err = err.text(format!(
                "The subagent's last message:\n{}",
                end.last_text.trim()
            ));
        }
        Err(err)
    }
}

/// Arguments of `spawn`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnParams {
    /// Everything the subagent needs to know: it sees nothing of your conversation.
    #[schemars(length(min = 1))]
    pub task: String,
    /// A short label, shown to the user and in its report.
    #[serde(default)]
    #[schemars(length(max = 120))]
    pub label: Option<String>,
    /// The agent type (default `general-purpose`).
    #[serde(default)]
    pub subagent_type: Option<String>,
}

/// `spawn`: starts a subagent in the background.
#[derive(Debug)]
pub struct SpawnTool {
    subagents: Subagents,
}

impl SpawnTool {
    pub(crate) fn new(subagents: Subagents) -> SpawnTool {
        SpawnTool { subagents }
    }
}

impl TypedTool for SpawnTool {
    type Params = SpawnParams;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe(
            SPAWN,
            format!(
                "Starts a subagent in the background on one self-contained task and returns its id at \
                 once; you go on with your work. When it ends, its report comes into this conversation \
                 by itself. Use task_output to check on it or wait for it, task_stop to end it, \
                 task_list to see them all. For work you need before your next step, use `task` \
                 instead. Agent types are those of `task`:\n{}",
                types_listing(&self.subagents)
            ),
        )
        .title("Start Background Subagent")
        .category(Category::Agent)
        .permission("agent:run")
        .hints(hints())
        .key_argument("label")
    }

    async fn call(&self, _ctx: &ToolContext, p: SpawnParams) -> ToolResult<Value> {
        let sa = &self.subagents;
        let agent_type = sa.agent_type(p.subagent_type.as_deref())?;
        let label = p
            .label
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| {
                p.task
                    .chars()
                    .take(40)
                    .collect::<String>()
                    .trim()
                    .to_string()
            });
        let mut spec = ChildSpec {
            id: sa.next_id(),
            label: label.clone(),
            agent_type,
            prompt: p.task,
            call_id: None,
            timeout: sa.limits().background_timeout,
            notes: Vec::new(),
        };
        let hook_runs = sa.start_hooks(&mut spec).await?;
        let id = spec.id.clone();
        let type_name = spec.agent_type.name.clone();
        let (kept, queued) = sa.start_background(spec).await;
        let mut text = format!(
            "Started background subagent {id} (\"{label}\"){}. Its report will come into this conversation when it ends; {TASK_OUTPUT} {{\"task_id\": \"{id}\"}} checks on it.",
            if queued {
                format!(
                    ", waiting for a free slot ({} run at once)",
                    sa.limits().max_running
                )
            } else {
                String::new()
            }
        );
        if !kept {
            text.push_str(
                " (Its report is not kept in the store: it is lost if this process ends first.)",
            );
        }
        let mut data = json!({"task_id": id, "label": label, "agent_type": type_name, "status": if queued {"queued"} else {"running"}, "kept": kept});
        if !hook_runs.is_empty() {
            data["hooks"] = json!(hook_runs);
        }
        Ok(Reply::new(data, text))
    }
}

/// Arguments of `task_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskOutputParams {
    /// The id `spawn` returned (`sa_...`).
    #[schemars(length(min = 1))]
    pub task_id: String,
    /// Wait for it to end (default true).
    #[serde(default)]
    pub block: Option<bool>,
    /// The longest wait, in ms (default 30000, at most 600000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `task_output`: a background subagent's report or progress.
#[derive(Debug)]
pub struct TaskOutputTool {
    subagents: Subagents,
}

impl TaskOutputTool {
    pub(crate) fn new(subagents: Subagents) -> TaskOutputTool {
        TaskOutputTool { subagents }
    }
}

fn not_found(sa: &Subagents, id: &str) -> ToolError {
    let known: Vec<String> = lock(&sa.shared.background).keys().cloned().collect();
    let hint = if known.is_empty() {
        format!(
            "No background subagent was started in this process; {TASK_LIST} shows the recorded ones."
        )
    } else {
        format!(
            "Background subagents of this process: {}.",
            known.join(", ")
        )
    };
    ToolError::new(
        ErrorCode::NotFound,
        format!("there is no background subagent {id:?}"),
    )
    .hint(hint)
}

impl TypedTool for TaskOutputTool {
    type Params = TaskOutputParams;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe(
            TASK_OUTPUT,
            "Reads a background subagent's report, or its progress while it runs. By default waits \
             for it to end (up to timeout_ms); with block false it answers at once. Reports of \
             earlier runs are kept and can be read here by id.",
        )
        .title("Read Background Subagent")
        .category(Category::Agent)
        .hints(read_hints())
        .own_timeout()
        .key_argument("task_id")
    }

    async fn call(&self, ctx: &ToolContext, p: TaskOutputParams) -> ToolResult<Value> {
        let sa = &self.subagents;
        let id = p.task_id.trim();
        if let Some(bg) = sa.background(id) {
            let wait =
                Duration::from_millis(p.timeout_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
            if p.block.unwrap_or(true) && !*bg.done.borrow() {
                let mut done = bg.done.clone();
                tokio::select! {
                    _ = tokio::time::timeout(wait, done.wait_for(|d| *d)) => {}
                    () = ctx.cancel_token().cancelled() => {}
                }
            }
            let s = lock(&bg.snapshot).clone();
            let data = data(id, &bg.label, &bg.agent_type, &s);
            if *bg.done.borrow() {
                sa.claim_report(id, &bg.level).await;
                let text = format!(
                    "{id} (\"{}\") {} after {} steps and {} tool calls.\n\n{}",
                    bg.label,
                    s.state,
                    s.steps,
                    s.tool_calls,
                    s.result.as_deref().unwrap_or("")
                );
                return Ok(Reply::new(data, text));
            }
            let text = format!(
                "{id} (\"{}\") is {}: {} steps and {} tool calls so far{}.",
                bg.label,
                s.state,
                s.steps,
                s.tool_calls,
                s.last
                    .as_deref()
                    .map(|l| format!("; latest: {l}"))
                    .unwrap_or_default()
            );
            return Ok(Reply::new(data, text).partial(true));
        }
        let Some(store) = sa.store().await else {
            return Err(not_found(sa, id));
        };
        let row = toolbelt_store::get_subagent_task(store, id)
            .await?
            .ok_or_else(|| not_found(sa, id))?;
        let finished = row.finished_at.is_some();
        let data = json!({
            "task_id": row.id, "label": row.label, "agent_type": row.agent_type,
            "status": row.status, "steps": row.steps, "tool_calls": row.tool_calls,
            "usage": {"input_tokens": row.input_tokens, "output_tokens": row.output_tokens},
            "run_id": row.run_id, "result": row.result,
        });
        if finished {
            let _ =
                toolbelt_store::mark_subagent_delivered(store, id, toolbelt_store::now_ms()).await;
            let text = format!(
                "{id} (\"{}\") {} after {} steps and {} tool calls.\n\n{}",
                row.label,
                row.status,
                row.steps,
                row.tool_calls,
                row.result.as_deref().unwrap_or("")
            );
            return Ok(Reply::new(data, text));
        }
        Ok(Reply::new(
            data,
            format!(
                "{id} (\"{}\") is recorded as {} by another process: it may still be running there, or that process ended before it finished.",
                row.label, row.status
            ),
        )
        .partial(true))
    }
}

/// Arguments of `task_stop`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskStopParams {
    /// The id `spawn` returned (`sa_...`).
    #[schemars(length(min = 1))]
    pub task_id: String,
}

/// `task_stop`: ends a background subagent.
#[derive(Debug)]
pub struct TaskStopTool {
    subagents: Subagents,
}

impl TaskStopTool {
    pub(crate) fn new(subagents: Subagents) -> TaskStopTool {
        TaskStopTool { subagents }
    }
}

impl TypedTool for TaskStopTool {
    type Params = TaskStopParams;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe(
            TASK_STOP,
            "Stops a background subagent, and the commands it runs, and returns what it had done.",
        )
        .title("Stop Background Subagent")
        .category(Category::Agent)
        .permission("agent:run")
        .hints(Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
            concurrency_safe: true,
        })
        .key_argument("task_id")
    }

    async fn call(&self, _ctx: &ToolContext, p: TaskStopParams) -> ToolResult<Value> {
        let sa = &self.subagents;
        let id = p.task_id.trim();
        let Some(bg) = sa.background(id) else {
            if let Some(store) = sa.store().await
                && let Ok(Some(row)) = toolbelt_store::get_subagent_task(store, id).await
            {
                if row.finished_at.is_some() {
                    return Ok(Reply::new(
                        json!({"task_id": id, "status": row.status}),
                        format!("{id} had already ended ({}).", row.status),
                    ));
                }
                return Err(ToolError::new(
                    ErrorCode::Conflict,
                    format!("{id} was started by another process; it can only be stopped there"),
                ));
            }
            return Err(not_found(sa, id));
        };
        if *bg.done.borrow() {
            let s = lock(&bg.snapshot).clone();
            return Ok(Reply::new(
                data(id, &bg.label, &bg.agent_type, &s),
                format!("{id} had already ended ({}).", s.state),
            ));
        }
        bg.cancel.cancel();
        let mut done = bg.done.clone();
        let ended = tokio::time::timeout(STOP_WAIT, done.wait_for(|d| *d))
            .await
            .is_ok();
        let s = lock(&bg.snapshot).clone();
        sa.claim_report(id, &bg.level).await;
        let text = if ended {
            format!(
                "Stopped {id} (\"{}\") after {} steps and {} tool calls; its commands were ended.",
                bg.label, s.steps, s.tool_calls
            )
        } else {
            format!("Asked {id} to stop; it has not ended yet (its current call is finishing).")
        };
        Ok(Reply::new(data(id, &bg.label, &bg.agent_type, &s), text))
    }
}

/// Arguments of `task_list` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskListParams {}

/// `task_list`: the background subagents.
#[derive(Debug)]
pub struct TaskListTool {
    subagents: Subagents,
}

impl TaskListTool {
    pub(crate) fn new(subagents: Subagents) -> TaskListTool {
        TaskListTool { subagents }
    }
}

impl TypedTool for TaskListTool {
    type Params = TaskListParams;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe(
            TASK_LIST,
            "Lists background subagents: those of this process (running or ended) and the latest \
             recorded ones, with their status and progress.",
        )
        .title("List Background Subagents")
        .category(Category::Agent)
        .hints(read_hints())
    }

    async fn call(&self, _ctx: &ToolContext, _p: TaskListParams) -> ToolResult<Value> {
        let sa = &self.subagents;
        let mut items: Vec<Value> = Vec::new();
        let mut lines: Vec<String> = Vec::new();
        let here: Vec<(String, super::Background)> = lock(&sa.shared.background)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (id, bg) in &here {
            let s = lock(&bg.snapshot).clone();
            lines.push(format!(
                "{id}  {:<8} {:<16} \"{}\"  {} steps, {} tool calls",
                s.state, bg.agent_type, bg.label, s.steps, s.tool_calls
            ));
            let mut item = data(id, &bg.label, &bg.agent_type, &s);
            if let Some(obj) = item.as_object_mut() {
                obj.remove("result");
                obj.insert("this_process".into(), Value::Bool(true));
            }
            items.push(item);
        }
        if let Some(store) = sa.store().await {
            match toolbelt_store::list_subagent_tasks(store, LIST_LIMIT).await {
                Ok(rows) => {
                    for row in rows
                        .into_iter()
                        .filter(|r| !here.iter().any(|(id, _)| *id == r.id))
                    {
                        lines.push(format!(
                            "{}  {:<8} {:<16} \"{}\"  {} steps, {} tool calls (earlier process)",
                            row.id,
                            row.status,
                            row.agent_type,
                            row.label,
                            row.steps,
                            row.tool_calls
                        ));
                        items.push(json!({
                            "task_id": row.id, "label": row.label, "agent_type": row.agent_type,
                            "status": row.status, "steps": row.steps, "tool_calls": row.tool_calls,
                            "this_process": false,
                        }));
                    }
                }
                Err(e) => {
                    tracing::warn!("recorded subagents cannot be listed: {}", error_chain(&e));
                }
            }
        }
        let text = if lines.is_empty() {
            "No background subagents.".to_string()
        } else {
            lines.join("\n")
        };
        Ok(Reply::new(json!({"subagents": items}), text))
    }
}
