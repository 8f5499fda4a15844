//! Subagents started in the background (`spawn`): what each was asked, where it is,
//! and its report once it ends, kept so the report can be read after the process
//! that ran it is gone.

use sqlx::Row;

use crate::error::{StoreError, StoreResult};
use crate::store::Store;

/// A background subagent, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentTask {
    /// Its id (`sa_...`).
    pub id: String,
    /// The short label it was given.
    pub label: String,
    /// Its agent type.
    pub agent_type: String,
    /// What it was asked.
    pub prompt: String,
    /// The run that started it.
    pub parent_run_id: Option<String>,
    /// The process that runs it (an id of that process, not a pid).
    pub owner: String,
    /// `queued`, `running`, `done`, `failed` or `stopped`.
    pub status: String,
    /// Its report (the final answer), or what ended it.
    pub result: Option<String>,
    /// Model calls made.
    pub steps: i64,
    /// Tool calls made.
    pub tool_calls: i64,
    /// Input tokens used.
    pub input_tokens: i64,
    /// Output tokens used.
    pub output_tokens: i64,
    /// Its transcript's run id.
    pub run_id: Option<String>,
    /// When it was started (ms).
    pub created_at: i64,
    /// When it began to run, after waiting for a free slot (ms).
    pub started_at: Option<i64>,
    /// When it ended (ms).
    pub finished_at: Option<i64>,
    /// When its report went into the parent's conversation (ms).
    pub delivered_at: Option<i64>,
}

/// What changes as a subagent runs and ends.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubagentProgress {
    /// The new status.
    pub status: String,
    /// The report, or what ended it.
    pub result: Option<String>,
    /// Model calls so far.
    pub steps: i64,
    /// Tool calls so far.
    pub tool_calls: i64,
    /// Input tokens so far.
    pub input_tokens: i64,
    /// Output tokens so far.
    pub output_tokens: i64,
    /// Its transcript's run id.
    pub run_id: Option<String>,
}

const COLUMNS: &str = "id, label, agent_type, prompt, parent_run_id, owner, status, result, steps, tool_calls, input_tokens, output_tokens, run_id, created_at, started_at, finished_at, delivered_at";

fn task_row(row: &sqlx::any::AnyRow) -> StoreResult<SubagentTask> {
    Ok(SubagentTask {
        id: row.try_get(0)?,
        label: row.try_get(1)?,
        agent_type: row.try_get(2)?,
        prompt: row.try_get(3)?,
        parent_run_id: row.try_get(4)?,
        owner: row.try_get(5)?,
        status: row.try_get(6)?,
        result: row.try_get(7)?,
        steps: row.try_get(8)?,
        tool_calls: row.try_get(9)?,
        input_tokens: row.try_get(10)?,
        output_tokens: row.try_get(11)?,
        run_id: row.try_get(12)?,
        created_at: row.try_get(13)?,
        started_at: row.try_get(14)?,
        finished_at: row.try_get(15)?,
        delivered_at: row.try_get(16)?,
    })
}

/// Records a new background subagent (its status as given, usually `queued`).
///
/// # Errors
/// [`StoreError::Conflict`] when the id is taken; a failed query.
pub async fn insert_subagent_task(store: &Store, t: &SubagentTask) -> StoreResult<()> {
    let mut tx = store.begin_write().await?;
    let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO subagent_tasks ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
    )))
    .bind(&t.id)
    .bind(&t.label)
    .bind(&t.agent_type)
    .bind(&t.prompt)
    .bind(&t.parent_run_id)
    .bind(&t.owner)
    .bind(&t.status)
    .bind(&t.result)
    .bind(t.steps)
    .bind(t.tool_calls)
    .bind(t.input_tokens)
    .bind(t.output_tokens)
    .bind(&t.run_id)
    .bind(t.created_at)
    .bind(t.started_at)
    .bind(t.finished_at)
    .bind(t.delivered_at)
    .execute(&mut *tx)
    .await;
    match inserted {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            return Err(StoreError::conflict(format!(
                "a subagent with id {:?} exists",
                t.id
            )));
        }
        other => {
            other?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// Records where subagent `id` is: `started_at` is set the first time it is
/// `running`, `finished_at` when it reaches a final status (`done`, `failed`,
/// `stopped`).
///
/// # Errors
/// [`StoreError::NotFound`] for an unknown id; a failed query.
pub async fn update_subagent_task(
    store: &Store,
    id: &str,
    p: &SubagentProgress,
    now: i64,
) -> StoreResult<()> {
    let finished = matches!(p.status.as_str(), "done" | "failed" | "stopped");
    let mut tx = store.begin_write().await?;
    let done = sqlx::query(
        "UPDATE subagent_tasks SET status = $2, result = $3, steps = $4, tool_calls = $5, \
         input_tokens = $6, output_tokens = $7, run_id = COALESCE($8, run_id), \
         started_at = CASE WHEN started_at IS NULL AND $2 <> 'queued' THEN $9 ELSE started_at END, \
         finished_at = CASE WHEN $10 = 1 THEN $9 ELSE finished_at END \
         WHERE id = $1",
    )
    .bind(id)
    .bind(&p.status)
    .bind(&p.result)
    .bind(p.steps)
    .bind(p.tool_calls)
    .bind(p.input_tokens)
    .bind(p.output_tokens)
    .bind(&p.run_id)
    .bind(now)
    .bind(i64::from(finished))
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound(format!("no subagent with id {id:?}")));
    }
    tx.commit().await?;
    Ok(())
}

/// Marks the report of subagent `id` as delivered into its parent's conversation.
///
/// # Errors
/// A failed query.
pub async fn mark_subagent_delivered(store: &Store, id: &str, now: i64) -> StoreResult<()> {
    let mut tx = store.begin_write().await?;
    sqlx::query(
        "UPDATE subagent_tasks SET delivered_at = $2 WHERE id = $1 AND delivered_at IS NULL",
    )
    .bind(id)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Subagent `id`.
///
/// # Errors
/// A failed query.
pub async fn get_subagent_task(store: &Store, id: &str) -> StoreResult<Option<SubagentTask>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM subagent_tasks WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(task_row).transpose()
}

/// Background subagents, newest first, at most `limit`.
///
/// # Errors
/// A failed query.
pub async fn list_subagent_tasks(store: &Store, limit: i64) -> StoreResult<Vec<SubagentTask>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM subagent_tasks ORDER BY created_at DESC, id DESC LIMIT $1"
    )))
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(task_row).collect()
}

/// Finished subagents of run `parent_run_id` whose reports were not delivered yet,
/// oldest first.
///
/// # Errors
/// A failed query.
pub async fn undelivered_subagent_tasks(
    store: &Store,
    parent_run_id: &str,
) -> StoreResult<Vec<SubagentTask>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM subagent_tasks WHERE parent_run_id = $1 AND delivered_at IS NULL \
         AND finished_at IS NOT NULL ORDER BY finished_at, id"
    )))
    .bind(parent_run_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(task_row).collect()
}
