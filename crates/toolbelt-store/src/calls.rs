//! The call log in the store: [`CallLogWriter`] takes the registry's records
//! without slowing calls down and writes them in batches; [`recent_calls`] reads
//! them back.

use serde::Serialize;
use sqlx::Row;
use tokio::sync::{mpsc, oneshot};
use toolbelt_core::{CallLog, CallRecord};

use crate::error::StoreResult;
use crate::handle::StoreHandle;
use crate::store::{Backend, Store};

/// Records waiting to be written; past this, new records are dropped with a warning.
pub const CALL_LOG_QUEUE_CAPACITY: usize = 4096;
/// Most records written in one transaction. Small enough that a batch's work (on
/// SQLite's thread) ends before it delays the calls of a busy server much: 256-row
/// batches raised a saturated server's p99 by half.
pub const CALL_LOG_BATCH_MAX: usize = 32;
/// How long the first record of a batch waits for more before the batch is written.
pub const CALL_LOG_LINGER: std::time::Duration = std::time::Duration::from_millis(200);
/// How long calls stay in the log: each batch written removes those older than
/// this, counted back from the newest record of the batch.
pub const CALL_LOG_RETENTION_MS: i64 = 90 * 24 * 60 * 60 * 1000;

enum Message {
    /// Boxed: a record (with its origin) is much larger than a flush.
    Record(Box<CallRecord>),
    Flush(oneshot::Sender<()>),
}

/// A [`CallLog`] that writes to the `calls` table. [`CallLog::record`] only puts
/// the record on a queue; a background task writes what has queued up in one
/// transaction per batch, a batch being what arrives within [`CALL_LOG_LINGER`]
/// of its first record (at most [`CALL_LOG_BATCH_MAX`]). When a batch cannot be
/// written it is dropped with a warning: the log never fails a call. Cheap to clone (clones share the queue).
///
/// Call [`CallLogWriter::flush`] before the process exits, so that nothing
/// recorded is lost.
#[derive(Debug, Clone)]
pub struct CallLogWriter {
    queue: Option<mpsc::Sender<Message>>,
}

impl CallLogWriter {
    /// Starts the writer on the current Tokio runtime; every row gets `workspace`.
    /// A [`StoreHandle`] not yet open is opened by the first batch. Outside a Tokio
    /// runtime the writer drops every record, with a warning now.
    pub fn start(store: impl Into<StoreHandle>, workspace: impl Into<String>) -> CallLogWriter {
        let store = store.into();
        let workspace = workspace.into();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("the call log needs a Tokio runtime; calls will not be logged");
            return CallLogWriter { queue: None };
        };
        let (tx, rx) = mpsc::channel(CALL_LOG_QUEUE_CAPACITY);
        runtime.spawn(write_loop(store, workspace, rx));
        CallLogWriter { queue: Some(tx) }
    }

    /// Waits until every record handed over so far is written (or dropped after
    /// a failed write).
    pub async fn flush(&self) {
        let Some(queue) = &self.queue else {
            return;
        };
        let (done, wait) = oneshot::channel();
        if queue.send(Message::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }
}

impl CallLog for CallLogWriter {
    fn record(&self, record: CallRecord) {
        let Some(queue) = &self.queue else {
            return;
        };
        if let Err(e) = queue.try_send(Message::Record(Box::new(record))) {
            match e {
                mpsc::error::TrySendError::Full(_) => {
                    tracing::warn!("the call log is behind; a call record was dropped");
                }
                mpsc::error::TrySendError::Closed(_) => {
                    tracing::warn!("the call log writer has stopped; a call record was dropped");
                }
            }
        }
    }
}

async fn write_loop(store: StoreHandle, workspace: String, mut rx: mpsc::Receiver<Message>) {
    let mut workers = BackgroundWorkers::default();
    while let Some(first) = rx.recv().await {
        let mut batch = Vec::new();
        let mut waiters = Vec::new();
        // A batch waits for the records of the next moments, so that a busy server
        // writes once per batch, not once per call; a flush writes at once.
        let deadline = tokio::time::Instant::now() + CALL_LOG_LINGER;
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Record(r) => batch.push(*r),
                Message::Flush(w) => waiters.push(w),
            }
            if batch.len() >= CALL_LOG_BATCH_MAX || !waiters.is_empty() {
                break;
            }
            next = match rx.try_recv() {
                Ok(message) => Some(message),
                Err(mpsc::error::TryRecvError::Disconnected) => None,
                Err(mpsc::error::TryRecvError::Empty) => {
                    tokio::time::timeout_at(deadline, rx.recv())
                        .await
                        .ok()
                        .flatten()
                }
            };
        }
        if batch.is_empty() {
            // Only flushes: nothing to write.
        } else if let Err(e) = match store.store().await {
            Ok(store) => {
                workers.lower();
                write_batch(store, &workspace, &batch).await
            }
            Err(e) => Err(e),
        } {
            tracing::warn!(
                records = batch.len(),
                "could not write the call log, records dropped: {}",
                toolbelt_core::error_chain(&e)
            );
        }
        for w in waiters {
            let _ = w.send(());
        }
    }
}

/// The store's SQLite worker threads, whose scheduling priority the call log
/// lowers: writing the log is background work, and on a busy machine the calls
/// themselves should not wait behind it (a saturating client's p99 rose by a third
/// while batches ran at the calls' priority). Other store work on those threads
/// yields the same way, only while the CPUs are contended.
#[derive(Default)]
struct BackgroundWorkers {
    /// Threads already looked at.
    #[cfg(target_os = "linux")]
    seen: std::collections::HashSet<i32>,
    /// When the threads were last looked for.
    #[cfg(target_os = "linux")]
    looked: Option<std::time::Instant>,
}

impl BackgroundWorkers {
    /// Nice value given to the workers.
    #[cfg(target_os = "linux")]
    const NICE: i32 = 10;

    /// Lowers the priority of the worker threads started since the last look (at
    /// most one look a second; connections, each with its thread, open lazily).
    fn lower(&mut self) {
        #[cfg(target_os = "linux")]
        {
            if self
                .looked
                .is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1))
            {
                return;
            }
            self.looked = Some(std::time::Instant::now());
            let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
                return;
            };
            for task in tasks.flatten() {
                let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                    continue;
                };
                if !self.seen.insert(tid) {
                    continue;
                }
                // sqlx names them `sqlx-sqlite-worker-N`; the kernel keeps 15 bytes.
                let is_worker = std::fs::read(task.path().join("comm"))
                    .is_ok_and(|name| name.starts_with(b"sqlx-sqlite-wor"));
                if let Some(pid) = rustix::process::Pid::from_raw(tid).filter(|_| is_worker) {
                    // On Linux a thread id names the thread alone.
                    let _ = rustix::process::setpriority_process(Some(pid), Self::NICE);
                }
            }
        }
    }
}

/// `INSERT INTO calls (...) VALUES (...), (...)` for `rows` rows: numbered
/// placeholders (`$1`, ..., `$9`, `$10`, ...) for PostgreSQL, plain `?` for SQLite,
/// whose binding looks every numbered name up in a list (a batch's binding would
/// cost the square of its parameters).
fn insert_rows_sql(rows: usize, backend: Backend) -> String {
    const COLUMNS: usize = 12;
    let mut sql = String::from(
        "INSERT INTO calls (at_ms, tool, call_id, args, status, error_code, duration_ms, bytes_out, workspace, origin, checkpoint, hooks) VALUES ",
    );
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..COLUMNS {
            if column > 0 {
                sql.push_str(", ");
            }
            match backend {
                Backend::Sqlite => sql.push('?'),
                Backend::Postgres => {
                    sql.push('$');
                    sql.push_str(&(row * COLUMNS + column + 1).to_string());
                }
            }
        }
        sql.push(')');
    }
    sql
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A column holding JSON, serialised as that JSON (as text if it is not).
fn raw_json<S: serde::Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    match text
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
    {
        Some(Ok(value)) => value.serialize(s),
        _ => text.serialize(s),
    }
}

/// The `hooks` column of a record: the JSON of the hooks that ran, `NULL` when
/// none did.
fn hooks_json(record: &CallRecord) -> Option<String> {
    if record.hooks.is_empty() {
        return None;
    }
    serde_json::to_string(&record.hooks).ok()
}

/// The `origin` column of a record: its origin's JSON, `NULL` when the origin is
/// unknown (no front end).
fn origin_json(record: &CallRecord) -> Option<String> {
    if record.origin.front_end.is_empty() {
        return None;
    }
    match serde_json::to_string(&record.origin) {
        Ok(json) => Some(json),
        Err(e) => {
            tracing::warn!("a call's origin could not be serialised: {e}");
            None
        }
    }
}

async fn write_batch(store: &Store, workspace: &str, batch: &[CallRecord]) -> StoreResult<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut tx = store.begin_write().await?;
    if let Some(newest) = batch.iter().map(|r| r.at_ms).max() {
        sqlx::query("DELETE FROM calls WHERE at_ms < $1")
            .bind(newest.saturating_sub(CALL_LOG_RETENTION_MS))
            .execute(&mut *tx)
            .await?;
    }
    // The whole batch in one statement: one round trip to the database, not one a
    // call. Only placeholders are built into the text; every value is bound (11 a
    // row, far within SQLite's and PostgreSQL's limits at CALL_LOG_BATCH_MAX rows).
    let mut query = sqlx::query(sqlx::AssertSqlSafe(insert_rows_sql(
        batch.len(),
        store.backend(),
    )));
    for r in batch {
        query = query
            .bind(r.at_ms)
            .bind(&r.tool)
            .bind(&r.call_id)
            .bind(&r.args)
            .bind(&r.status)
            .bind(r.error_code.as_deref())
            .bind(as_i64(r.duration_ms))
            .bind(as_i64(r.bytes_out))
            .bind(workspace)
            .bind(origin_json(r))
            .bind(r.checkpoint.as_deref())
            .bind(hooks_json(r));
    }
    query.execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Which calls [`recent_calls`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFilter {
    /// How many of the most recent calls.
    pub tail: usize,
    /// Only calls of this tool (its canonical name).
    pub tool: Option<String>,
}

/// One logged call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallEntry {
    /// Its row id, increasing in the order calls were logged.
    pub id: i64,
    /// When the call started, in milliseconds since the Unix epoch (UTC).
    pub at_ms: i64,
    /// The canonical tool name (or the name asked for, when unknown).
    pub tool: String,
    /// The call's id.
    pub call_id: String,
    /// The arguments' digest, secrets redacted.
    pub args: String,
    /// `success`, `partial` or `error`.
    pub status: String,
    /// The error code of an error.
    pub error_code: Option<String>,
    /// Wall time of the call.
    pub duration_ms: i64,
    /// Bytes handed back (text plus serialised data).
    pub bytes_out: i64,
    /// The workspace the call ran in.
    pub workspace: String,
    /// Where the call came from: the JSON of its `toolbelt_core::Origin`, when
    /// known (calls logged before origins were kept have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The checkpoint taken before the call (`cp-12`), when one was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// The person's hooks that ran for the call: the JSON of their runs (name,
    /// event, outcome, ms), when any did. Serialised as the list itself.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "raw_json")]
    pub hooks: Option<String>,
}

/// The last `filter.tail` logged calls (of `filter.tool`, when given), oldest first.
///
/// # Errors
/// The query fails.
pub async fn recent_calls(store: &Store, filter: &CallFilter) -> StoreResult<Vec<CallEntry>> {
    if filter.tail == 0 {
        return Ok(Vec::new());
    }
    let limit = i64::try_from(filter.tail).unwrap_or(i64::MAX);
    let rows = match &filter.tool {
        Some(tool) => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {CALL_COLUMNS} FROM calls WHERE tool = $1 ORDER BY id DESC LIMIT $2"
            )))
            .bind(tool)
            .bind(limit)
            .fetch_all(store.pool())
            .await?
        }
        None => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {CALL_COLUMNS} FROM calls ORDER BY id DESC LIMIT $1"
            )))
            .bind(limit)
            .fetch_all(store.pool())
            .await?
        }
    };
    rows.iter().rev().map(call_entry).collect()
}

/// The columns [`call_entry`] reads, in its order.
pub(crate) const CALL_COLUMNS: &str = "id, at_ms, tool, call_id, args, status, error_code, duration_ms, bytes_out, workspace, origin, checkpoint, hooks";

/// A row of [`CALL_COLUMNS`].
pub(crate) fn call_entry(row: &sqlx::any::AnyRow) -> StoreResult<CallEntry> {
    Ok(CallEntry {
        id: row.try_get(0)?,
        at_ms: row.try_get(1)?,
        tool: row.try_get(2)?,
        call_id: row.try_get(3)?,
        args: row.try_get(4)?,
        status: row.try_get(5)?,
        error_code: row.try_get(6)?,
        duration_ms: row.try_get(7)?,
        bytes_out: row.try_get(8)?,
        workspace: row.try_get(9)?,
        origin: row.try_get(10)?,
        checkpoint: row.try_get(11)?,
        hooks: row.try_get(12)?,
    })
}
