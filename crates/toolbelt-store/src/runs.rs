//! Agent runs kept in the store, so that every replica of a server lists and
//! shows the runs any of them started: [`RunEventWriter`] copies the lines of
//! transcripts as they are written (off the run's path, in order); [`list_agent_runs`],
//! [`find_agent_run`] and [`agent_run_events`] read them back; [`import_agent_run`]
//! copies the lines of a transcript file.
//!
//! A run is one `agent_runs` row (its workspace, when its first line was kept,
//! when its last one was, and the process that kept it) and one
//! `agent_run_events` row per line of its transcript, numbered from 0 in the
//! file's order. Writing a line twice (a batch retried, a file imported again)
//! keeps the first.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::Row;
use tokio::sync::{mpsc, oneshot};
use toolbelt_core::Session;

use crate::error::StoreResult;
use crate::handle::StoreHandle;
use crate::planner::rows::placeholders;
use crate::store::Store;

/// Lines waiting to be written; past this, new lines are dropped with a warning.
pub const RUN_EVENT_QUEUE_CAPACITY: usize = 8192;
/// Most lines written in one transaction.
pub const RUN_EVENT_BATCH_MAX: usize = 64;
/// How long the first line of a batch waits for more before the batch is written:
/// short, so that another replica sees a run as it goes.
pub const RUN_EVENT_LINGER: Duration = Duration::from_millis(100);
/// How long a batch that could not be written waits before its one retry.
pub const RUN_EVENT_RETRY_DELAY: Duration = Duration::from_millis(500);
/// Most runs whose lines one query reads.
const RUNS_PER_QUERY: usize = 200;

/// The workspace a run (or a call, a todo list) belongs to: the session's first
/// root, or its working directory without roots.
pub fn workspace_key(session: &Session) -> String {
    session.roots().first().map_or_else(
        || session.cwd().display().to_string(),
        |r| r.display().to_string(),
    )
}

/// A run as the `agent_runs` table has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRun {
    /// Its id (its transcript's file name without `.jsonl`).
    pub run_id: String,
    /// The workspace it ran in ([`workspace_key`]).
    pub workspace: String,
    /// When its first line was kept (for an imported run: when it started), in
    /// milliseconds since the epoch.
    pub started_ms: i64,
    /// When its last line was kept (for an imported run: its last line's time).
    pub updated_ms: i64,
    /// The process that kept it (a server's replica id), or `import` for a run
    /// copied from a transcript file.
    pub replica: String,
}

/// One line of a transcript, for [`RunEventWriter::record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLine {
    /// The run.
    pub run_id: String,
    /// The line's number in the transcript, from 0.
    pub seq: u64,
    /// The line as written (one JSON object, without the newline).
    pub event: String,
}

enum Message {
    Line(RunLine),
    Flush(oneshot::Sender<()>),
}

/// Copies transcript lines into the store: [`RunEventWriter::record`] only puts
/// the line on a queue; a background task writes what has queued up, in order,
/// one transaction per batch (what arrives within [`RUN_EVENT_LINGER`] of its
/// first line, at most [`RUN_EVENT_BATCH_MAX`]). A batch that cannot be written is
/// tried once more after [`RUN_EVENT_RETRY_DELAY`], then dropped with a warning:
/// the transcript file keeps the run whatever happens. Cheap to clone (clones
/// share the queue).
///
/// Call [`RunEventWriter::flush`] before the process exits.
#[derive(Debug, Clone)]
pub struct RunEventWriter {
    queue: Option<mpsc::Sender<Message>>,
}

impl RunEventWriter {
    /// Starts the writer on the current Tokio runtime: the runs it sees belong to
    /// `workspace` and are kept by `replica`. A [`StoreHandle`] not yet open is
    /// opened by the first batch. Outside a Tokio runtime the writer drops every
    /// line, with a warning now.
    pub fn start(
        store: impl Into<StoreHandle>,
        workspace: impl Into<String>,
        replica: impl Into<String>,
    ) -> RunEventWriter {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("the runs' copy in the store needs a Tokio runtime; it is not kept");
            return RunEventWriter { queue: None };
        };
        let (tx, rx) = mpsc::channel(RUN_EVENT_QUEUE_CAPACITY);
        let owner = Owner {
            workspace: workspace.into(),
            replica: replica.into(),
        };
        runtime.spawn(write_loop(store.into(), owner, rx));
        RunEventWriter { queue: Some(tx) }
    }

    /// Queues `line` to be written.
    pub fn record(&self, line: RunLine) {
        let Some(queue) = &self.queue else {
            return;
        };
        if let Err(e) = queue.try_send(Message::Line(line)) {
            let why = match e {
                mpsc::error::TrySendError::Full(_) => "is behind",
                mpsc::error::TrySendError::Closed(_) => "has stopped",
            };
            tracing::warn!("the runs' copy in the store {why}; a transcript line was dropped");
        }
    }

    /// Waits until every line handed over so far is written (or dropped after a
    /// failed write).
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

/// Whose runs a writer keeps.
struct Owner {
    workspace: String,
    replica: String,
}

async fn write_loop(store: StoreHandle, owner: Owner, mut rx: mpsc::Receiver<Message>) {
    while let Some(first) = rx.recv().await {
        let mut batch = Vec::new();
        let mut waiters = Vec::new();
        let deadline = tokio::time::Instant::now() + RUN_EVENT_LINGER;
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Line(line) => batch.push(line),
                Message::Flush(w) => waiters.push(w),
            }
            if batch.len() >= RUN_EVENT_BATCH_MAX || !waiters.is_empty() {
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
        if !batch.is_empty() {
            write_with_retry(&store, &owner, &batch).await;
        }
        for w in waiters {
            let _ = w.send(());
        }
    }
}

async fn write_with_retry(store: &StoreHandle, owner: &Owner, batch: &[RunLine]) {
    let mut last = None;
    for attempt in 0..2 {
        if attempt > 0 {
            tokio::time::sleep(RUN_EVENT_RETRY_DELAY).await;
        }
        let written = match store.store().await {
            Ok(store) => write_batch(store, owner, batch).await,
            Err(e) => Err(e),
        };
        match written {
            Ok(()) => return,
            Err(e) => last = Some(e),
        }
    }
    if let Some(e) = last {
        tracing::warn!(
            lines = batch.len(),
            "could not copy transcript lines to the store, lines dropped: {}",
            toolbelt_core::error_chain(&e)
        );
    }
}

/// Writes `batch` (the lines of one or more runs, in order) in one transaction.
async fn write_batch(store: &Store, owner: &Owner, batch: &[RunLine]) -> StoreResult<()> {
    let now = crate::now_ms();
    let mut tx = store.begin_write().await?;
    let mut seen: Vec<&str> = Vec::new();
    for line in batch {
        if !seen.contains(&line.run_id.as_str()) {
            seen.push(&line.run_id);
            upsert_run(
                &mut tx,
                &StoredRun {
                    run_id: line.run_id.clone(),
                    workspace: owner.workspace.clone(),
                    started_ms: now,
                    updated_ms: now,
                    replica: owner.replica.clone(),
                },
            )
            .await?;
        }
        insert_line(&mut tx, &line.run_id, line.seq, &line.event).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Adds `run`, or moves the `updated_ms` of the run already there forward.
async fn upsert_run(conn: &mut sqlx::AnyConnection, run: &StoredRun) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO agent_runs (run_id, workspace, started_ms, updated_ms, replica) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (run_id) DO UPDATE SET updated_ms = CASE \
         WHEN agent_runs.updated_ms > excluded.updated_ms THEN agent_runs.updated_ms \
         ELSE excluded.updated_ms END",
    )
    .bind(&run.run_id)
    .bind(&run.workspace)
    .bind(run.started_ms)
    .bind(run.updated_ms)
    .bind(&run.replica)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Inserts line `seq` of `run_id`; true when it was not there yet.
async fn insert_line(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    seq: u64,
    event: &str,
) -> StoreResult<bool> {
    let done = sqlx::query(
        "INSERT INTO agent_run_events (run_id, seq, event) VALUES ($1, $2, $3) \
         ON CONFLICT (run_id, seq) DO NOTHING",
    )
    .bind(run_id)
    .bind(i64::try_from(seq).unwrap_or(i64::MAX))
    .bind(event)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// What [`import_agent_run`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Imported {
    /// The run was not in the store before.
    pub new_run: bool,
    /// Lines added (a run imported again adds only the lines written since).
    pub lines: u64,
}

/// Copies the lines of a transcript (`lines`, numbered from 0 in the file's
/// order) into the store as `run`; the lines and the run already there are kept.
///
/// # Errors
/// A failed query.
pub async fn import_agent_run(
    store: &Store,
    run: &StoredRun,
    lines: &[(u64, String)],
) -> StoreResult<Imported> {
    let mut tx = store.begin_write().await?;
    let inserted = sqlx::query(
        "INSERT INTO agent_runs (run_id, workspace, started_ms, updated_ms, replica) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id) DO NOTHING",
    )
    .bind(&run.run_id)
    .bind(&run.workspace)
    .bind(run.started_ms)
    .bind(run.updated_ms)
    .bind(&run.replica)
    .execute(&mut *tx)
    .await?;
    let mut imported = Imported {
        new_run: inserted.rows_affected() > 0,
        lines: 0,
    };
    for (seq, event) in lines {
        if insert_line(&mut tx, &run.run_id, *seq, event).await? {
            imported.lines += 1;
        }
    }
    if !imported.new_run && imported.lines > 0 {
        upsert_run(&mut tx, run).await?;
    }
    tx.commit().await?;
    Ok(imported)
}

const RUN_COLUMNS: &str = "run_id, workspace, started_ms, updated_ms, replica";

fn run_row(row: &sqlx::any::AnyRow) -> StoreResult<StoredRun> {
    Ok(StoredRun {
        run_id: row.try_get(0)?,
        workspace: row.try_get(1)?,
        started_ms: row.try_get(2)?,
        updated_ms: row.try_get(3)?,
        replica: row.try_get(4)?,
    })
}

/// Every run of `workspace`, the newest first (by start, then id).
///
/// # Errors
/// A failed query.
pub async fn list_agent_runs(store: &Store, workspace: &str) -> StoreResult<Vec<StoredRun>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {RUN_COLUMNS} FROM agent_runs WHERE workspace = $1 \
         ORDER BY started_ms DESC, run_id DESC"
    )))
    .bind(workspace)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(run_row).collect()
}

/// Run `run_id` of `workspace`, if the store has it.
///
/// # Errors
/// A failed query.
pub async fn find_agent_run(
    store: &Store,
    workspace: &str,
    run_id: &str,
) -> StoreResult<Option<StoredRun>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {RUN_COLUMNS} FROM agent_runs WHERE run_id = $1 AND workspace = $2"
    )))
    .bind(run_id)
    .bind(workspace)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(run_row).transpose()
}

/// The lines of the runs `run_ids`, each run's in order; a run without lines is
/// left out.
///
/// # Errors
/// A failed query.
pub async fn agent_run_events(
    store: &Store,
    run_ids: &[String],
) -> StoreResult<HashMap<String, Vec<String>>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for chunk in run_ids.chunks(RUNS_PER_QUERY) {
        let sql = format!(
            "SELECT run_id, event FROM agent_run_events WHERE run_id IN ({}) \
             ORDER BY run_id, seq",
            placeholders(1, chunk.len())
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for id in chunk {
            query = query.bind(id);
        }
        for row in query.fetch_all(store.pool()).await? {
            let run_id: String = row.try_get(0)?;
            out.entry(run_id).or_default().push(row.try_get(1)?);
        }
    }
    Ok(out)
}
