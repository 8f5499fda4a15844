//! [`StoreOutputs`]: the saved outputs of a workspace kept in the store, so that
//! `read_output` answered by any replica of a server pages an output another one
//! saved.
//!
//! An output is kept as a row of `saved_outputs` (its totals) and its bytes in
//! `saved_output_chunks`, chunks of whole lines cut by
//! [`LineChunks`](toolbelt_core::output::LineChunks), written in one transaction
//! from the spill file read a chunk at a time. A page reads the chunk its first
//! line starts in, then the next ones only while the page wants more, and is made
//! by the same [`PageFill`] as a page of the file: the same text, byte for byte.
//! [`expire_saved_outputs`] keeps them by the rule the spill files follow
//! ([`SavedOutputLimits`]), one workspace at a time.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::Row;
use toolbelt_core::BoxFuture;
use toolbelt_core::output::{
    LineChunks, PageFill, PageRequest, SaveError, SavedChunk, SavedOutputLimits, SavedOutputs,
    SpillError, SpilledPage, is_valid_output_id,
};

use crate::error::{StoreError, StoreResult};
use crate::handle::StoreHandle;
use crate::store::Store;

/// How often, at most, a process removes the saved outputs past their limits
/// (after a save).
pub const SAVED_OUTPUT_EXPIRY_INTERVAL: Duration = Duration::from_secs(10 * 60);
/// Outputs removed per statement by [`expire_saved_outputs`].
const EXPIRE_BATCH: usize = 100;

/// The saved outputs of one workspace in the store, for
/// [`Session::with_saved_outputs`](toolbelt_core::Session::with_saved_outputs).
/// Cheap to clone.
///
/// A save also removes, at most every [`SAVED_OUTPUT_EXPIRY_INTERVAL`], the
/// outputs of the workspace past the limits ([`expire_saved_outputs`]).
#[derive(Debug, Clone)]
pub struct StoreOutputs {
    store: StoreHandle,
    workspace: String,
    limits: SavedOutputLimits,
    last_expiry: std::sync::Arc<Mutex<Option<Instant>>>,
}

impl StoreOutputs {
    /// The saved outputs of `workspace` (the key of the workspace, as the call log
    /// has it), kept within the default [`SavedOutputLimits`].
    pub fn new(store: impl Into<StoreHandle>, workspace: impl Into<String>) -> StoreOutputs {
        StoreOutputs {
            store: store.into(),
            workspace: workspace.into(),
            limits: SavedOutputLimits::default(),
            last_expiry: std::sync::Arc::default(),
        }
    }

    /// Keeps the outputs within `limits` instead.
    #[must_use]
    pub fn with_limits(mut self, limits: SavedOutputLimits) -> StoreOutputs {
        self.limits = limits;
        self
    }

    /// Removes the outputs of this workspace past the limits, now.
    ///
    /// # Errors
    /// The store cannot be opened, or a query fails.
    pub async fn expire(&self) -> StoreResult<ExpiredOutputs> {
        let store = self.store.store().await?;
        expire_saved_outputs(store, &self.workspace, &self.limits, crate::now_ms()).await
    }

    /// Whether the expiry is due, marking it done when it is.
    fn expiry_due(&self) -> bool {
        let mut last = toolbelt_core::sync::lock(&self.last_expiry);
        let due = last.is_none_or(|at| at.elapsed() >= SAVED_OUTPUT_EXPIRY_INTERVAL);
        if due {
            *last = Some(Instant::now());
        }
        due
    }

    async fn save_file(&self, output_id: &str, path: &Path) -> Result<(), SaveError> {
        let read_err = |source: std::io::Error| SaveError::Read {
            path: path.to_path_buf(),
            source,
        };
        let store_err = |e: StoreError| SaveError::Store {
            output_id: output_id.to_string(),
            source: Box::new(e),
        };
        let opened = blocking(path, {
            let path = path.to_path_buf();
            move || {
                let file = File::open(&path)?;
                let bytes = file.metadata()?.len();
                Ok((file, bytes))
            }
        })
        .await
        .map_err(read_err)?;
        let (file, bytes) = opened;
        if bytes > self.limits.max_total_bytes {
            return Err(SaveError::TooLarge {
                bytes,
                max_bytes: self.limits.max_total_bytes,
            });
        }
        let store = self.store.store().await.map_err(store_err)?;
        let mut chunks = LineChunks::new(file);
        let mut tx = store.begin_write().await.map_err(store_err)?;
        for table in ["saved_output_chunks", "saved_outputs"] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE output_id = $1"
            )))
            .bind(output_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| store_err(e.into()))?;
        }
        let mut count = 0i64;
        loop {
            let (back, next) = blocking(path, move || {
                let next = chunks.next_chunk();
                Ok((chunks, next))
            })
            .await
            .map_err(read_err)?;
            chunks = back;
            let Some(chunk) = next.map_err(read_err)? else {
                break;
            };
            insert_chunk(&mut tx, output_id, chunk)
                .await
                .map_err(store_err)?;
            count += 1;
        }
        let (total_bytes, total_lines) = chunks.totals();
        sqlx::query(
            "INSERT INTO saved_outputs (output_id, workspace, created_ms, total_bytes, total_lines, chunks) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(output_id)
        .bind(&self.workspace)
        .bind(crate::now_ms())
        .bind(to_i64(total_bytes))
        .bind(to_i64(total_lines))
        .bind(count)
        .execute(&mut *tx)
        .await
        .map_err(|e| store_err(e.into()))?;
        tx.commit().await.map_err(|e| store_err(e.into()))?;
        Ok(())
    }
}

impl SavedOutputs for StoreOutputs {
    fn save<'a>(
        &'a self,
        output_id: &'a str,
        path: &'a Path,
    ) -> BoxFuture<'a, Result<(), SaveError>> {
        Box::pin(async move {
            if !is_valid_output_id(output_id) {
                return Ok(());
            }
            let saved = self.save_file(output_id, path).await;
            if self.expiry_due()
                && let Err(e) = self.expire().await
            {
                tracing::warn!(
                    "saved outputs past their limits could not be removed from the store: {}",
                    toolbelt_core::error_chain(&e)
                );
            }
            saved
        })
    }

    fn page<'a>(
        &'a self,
        output_id: &'a str,
        offset: i64,
        limit: usize,
        max_page_bytes: usize,
    ) -> BoxFuture<'a, Result<SpilledPage, SpillError>> {
        Box::pin(async move {
            if !is_valid_output_id(output_id) {
                return Err(SpillError::InvalidId(output_id.to_string()));
            }
            let store = self.store.store().await.map_err(|e| SpillError::Store {
                output_id: output_id.to_string(),
                source: Box::new(e),
            })?;
            let request = PageRequest {
                offset,
                limit,
                max_page_bytes,
            };
            saved_output_page(store, &self.workspace, output_id, request).await
        })
    }
}

/// Runs `work` (file reading) on a blocking thread.
async fn blocking<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let path: PathBuf = path.to_path_buf();
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(e) => Err(std::io::Error::other(JoinFailed { path, source: e })),
    }
}

/// A blocking read that did not finish (its thread panicked or was cancelled).
#[derive(Debug, thiserror::Error)]
#[error("reading {} stopped before its end", path.display())]
struct JoinFailed {
    path: PathBuf,
    #[source]
    source: tokio::task::JoinError,
}

async fn insert_chunk(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    output_id: &str,
    chunk: SavedChunk,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO saved_output_chunks (output_id, seq, first_line, lines, data) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(output_id)
    .bind(to_i64(chunk.seq))
    .bind(to_i64(chunk.first_line))
    .bind(to_i64(chunk.lines))
    .bind(chunk.data)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A page of the saved output `output_id` of `workspace`, as
/// [`read_spilled_within`](toolbelt_core::output::read_spilled_within) makes it of
/// the file. Reads the output's row, the chunk the page's first line starts in
/// (the one holding the end of the line before it), then the next chunks one at a
/// time while the page wants more: at most the chunks the page's lines are in.
///
/// # Errors
/// [`SpillError::NotFound`] when the workspace has no such output (never kept, or
/// expired), [`SpillError::Store`] when a query fails.
pub async fn saved_output_page(
    store: &Store,
    workspace: &str,
    output_id: &str,
    request: PageRequest,
) -> Result<SpilledPage, SpillError> {
    let failed = |e: sqlx::Error| SpillError::Store {
        output_id: output_id.to_string(),
        source: Box::new(StoreError::from(e)),
    };
    let row = sqlx::query(
        "SELECT total_bytes, total_lines FROM saved_outputs WHERE output_id = $1 AND workspace = $2",
    )
    .bind(output_id)
    .bind(workspace)
    .fetch_optional(store.pool())
    .await
    .map_err(failed)?
    .ok_or_else(|| SpillError::NotFound(output_id.to_string()))?;
    let total_bytes = to_u64(row.try_get("total_bytes").map_err(failed)?);
    let total_lines = to_u64(row.try_get("total_lines").map_err(failed)?);
    let mut fill = PageFill::new(request, total_bytes, total_lines);
    let Some(start) = fill.start_line() else {
        return Ok(fill.finish());
    };
    // The chunk the page's first line starts in: the first chunk, or the one holding
    // the end of the line before (the page starts in it or at the start of the next
    // one). No index has `first_line`: the output's chunks are scanned in `seq`
    // order from its nearer end.
    let columns = "SELECT seq, first_line, data FROM saved_output_chunks WHERE output_id = $1";
    let sql = if start == 1 {
        format!("{columns} AND seq = 0")
    } else if start > total_lines / 2 {
        format!("{columns} AND first_line < $2 ORDER BY seq DESC LIMIT 1")
    } else {
        format!("{columns} AND first_line + lines >= $2 ORDER BY seq LIMIT 1")
    };
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(output_id);
    if start > 1 {
        query = query.bind(to_i64(start));
    }
    let first = query.fetch_optional(store.pool()).await.map_err(failed)?;
    let Some(first) = first else {
        return Ok(fill.finish());
    };
    let mut seq: i64 = first.try_get("seq").map_err(failed)?;
    fill.begin_at(to_u64(first.try_get("first_line").map_err(failed)?));
    let mut data: Vec<u8> = first.try_get("data").map_err(failed)?;
    while fill.feed(data.as_slice()).unwrap_or(false) {
        seq += 1;
        let next =
            sqlx::query("SELECT data FROM saved_output_chunks WHERE output_id = $1 AND seq = $2")
                .bind(output_id)
                .bind(seq)
                .fetch_optional(store.pool())
                .await
                .map_err(failed)?;
        let Some(next) = next else { break };
        data = next.try_get("data").map_err(failed)?;
    }
    Ok(fill.finish())
}

/// What [`expire_saved_outputs`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpiredOutputs {
    /// The outputs removed.
    pub outputs: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Removes the saved outputs of `workspace` that `limits` no longer keeps at
/// `now_ms`: those saved more than `max_age` before, then the oldest while the
/// others' bytes pass `max_total_bytes` — the rule of
/// [`expire_spilled`](toolbelt_core::output::expire_spilled) for the spill files.
///
/// # Errors
/// A query fails.
pub async fn expire_saved_outputs(
    store: &Store,
    workspace: &str,
    limits: &SavedOutputLimits,
    now_ms: i64,
) -> StoreResult<ExpiredOutputs> {
    let max_age_ms = i64::try_from(limits.max_age.as_millis()).unwrap_or(i64::MAX);
    let before = now_ms.saturating_sub(max_age_ms);
    let rows = sqlx::query(
        "SELECT output_id, total_bytes, created_ms, \
         CAST(SUM(CASE WHEN created_ms >= $2 THEN total_bytes ELSE 0 END) OVER ( \
           ORDER BY created_ms DESC, output_id DESC ROWS UNBOUNDED PRECEDING) AS BIGINT) \
           AS newer_bytes \
         FROM saved_outputs WHERE workspace = $1",
    )
    .bind(workspace)
    .bind(before)
    .fetch_all(store.pool())
    .await?;
    let max_total = to_i64(limits.max_total_bytes);
    let mut gone = Vec::new();
    let mut expired = ExpiredOutputs::default();
    for row in rows {
        let created: i64 = row.try_get("created_ms")?;
        let newer: i64 = row.try_get("newer_bytes")?;
        if created < before || newer > max_total {
            gone.push(row.try_get::<String, _>("output_id")?);
            expired.outputs += 1;
            expired.bytes += to_u64(row.try_get("total_bytes")?);
        }
    }
    for batch in gone.chunks(EXPIRE_BATCH) {
        let marks: Vec<String> = (1..=batch.len()).map(|i| format!("${i}")).collect();
        let mut tx = store.begin_write().await?;
        for table in ["saved_output_chunks", "saved_outputs"] {
            let sql = format!(
                "DELETE FROM {table} WHERE output_id IN ({})",
                marks.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for id in batch {
                query = query.bind(id);
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
    }
    Ok(expired)
}
