//! Checkpoints: what each call that changed files changed, path by path, with the
//! state of each path before and after it (the content itself is kept elsewhere,
//! by hash), so that it can be shown and undone.
//!
//! [`insert_checkpoint`] records one; [`list_checkpoints`] pages through a
//! workspace's, newest first; [`get_checkpoint`], [`checkpoints_from`] and
//! [`last_rewind`] read them with their files. Pruning old content goes through
//! [`checkpoint_ages`] (what may be pruned), [`referenced_hashes`] (the content
//! still needed) and [`mark_pruned`] (the rows stay, to show what the calls did).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{StoreError, StoreResult};
use crate::store::{Backend, Store};

/// What was at a path: nothing, a file, a directory, a symbolic link or something
/// else.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FileState {
    /// `absent`, `file`, `dir`, `symlink` or `other`.
    pub kind: String,
    /// The hash of a file's content, under which the content is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The permission bits (`0o644`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<i64>,
    /// A file's size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// A symbolic link's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

impl FileState {
    /// Nothing at the path.
    pub fn absent() -> FileState {
        FileState {
            kind: "absent".into(),
            ..FileState::default()
        }
    }
}

/// What a call did to one path.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FileChange {
    /// The path (unique in its checkpoint).
    pub path: String,
    /// `created`, `modified`, `deleted`, `renamed` or `mode`.
    pub change: String,
    /// Where a renamed path was before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// The path before the call.
    pub before: FileState,
    /// The path after the call.
    pub after: FileState,
    /// Whether the content before is kept (so that the change can be undone).
    pub captured: bool,
    /// Why the content before is not kept (too large, a hard link...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A checkpoint: the files one call changed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Its id, increasing in the order checkpoints were recorded (shown as `cp-12`).
    pub id: i64,
    /// The workspace the call ran in.
    pub workspace: String,
    /// When it was taken, in milliseconds since the Unix epoch (UTC).
    pub at_ms: i64,
    /// The call's id.
    pub call_id: String,
    /// The call's tool (its canonical name).
    pub tool: String,
    /// Where the call came from: the JSON of its `toolbelt_core::Origin`.
    pub origin: String,
    /// `complete`, `partial` (some content before could not be kept) or `pruned`
    /// (its content was removed).
    pub status: String,
    /// What went wrong, or why it was pruned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// On the checkpoint a rewind takes of itself: the checkpoint it rewound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewind_of: Option<i64>,
    /// Bytes of content stored new for it.
    pub bytes: i64,
    /// How many paths it holds.
    pub file_count: i64,
    /// Its paths, ordered by path (empty in listings: see `file_count`).
    #[serde(default)]
    pub files: Vec<FileChange>,
}

/// The columns [`checkpoint_row`] reads, in its order, the table named `c`.
const CHECKPOINT_COLUMNS: &str = "c.id, c.workspace, c.at_ms, c.call_id, c.tool, c.origin, \
     c.status, c.problem, c.rewind_of, c.bytes, \
     (SELECT CAST(COUNT(*) AS BIGINT) FROM checkpoint_files f WHERE f.checkpoint_id = c.id)";

/// The columns of `checkpoint_files` after `checkpoint_id`, in [`file_row`]'s order.
const FILE_COLUMNS: &str = "path, change, renamed_from, \
     before_kind, before_hash, before_mode, before_size, before_link, \
     after_kind, after_hash, after_mode, after_size, after_link, captured, note";
/// How many values an inserted file row binds.
const FILE_VALUES: usize = 16;
/// File rows inserted by one statement (16 values each: far within SQLite's and
/// PostgreSQL's limits on bound values).
const FILE_ROWS_PER_INSERT: usize = 64;
/// Ids per `UPDATE` of [`mark_pruned`].
const IDS_PER_UPDATE: usize = 500;

fn checkpoint_row(row: &sqlx::any::AnyRow) -> StoreResult<CheckpointRecord> {
    Ok(CheckpointRecord {
        id: row.try_get(0)?,
        workspace: row.try_get(1)?,
        at_ms: row.try_get(2)?,
        call_id: row.try_get(3)?,
        tool: row.try_get(4)?,
        origin: row.try_get(5)?,
        status: row.try_get(6)?,
        problem: row.try_get(7)?,
        rewind_of: row.try_get(8)?,
        bytes: row.try_get(9)?,
        file_count: row.try_get(10)?,
        files: Vec::new(),
    })
}

/// A row of `checkpoint_id` then [`FILE_COLUMNS`].
fn file_row(row: &sqlx::any::AnyRow) -> StoreResult<(i64, FileChange)> {
    let captured: i64 = row.try_get(14)?;
    let change = FileChange {
        path: row.try_get(1)?,
        change: row.try_get(2)?,
        renamed_from: row.try_get(3)?,
        before: FileState {
            kind: row.try_get(4)?,
            hash: row.try_get(5)?,
            mode: row.try_get(6)?,
            size: row.try_get(7)?,
            link: row.try_get(8)?,
        },
        after: FileState {
            kind: row.try_get(9)?,
            hash: row.try_get(10)?,
            mode: row.try_get(11)?,
            size: row.try_get(12)?,
            link: row.try_get(13)?,
        },
        captured: captured != 0,
        note: row.try_get(15)?,
    };
    Ok((row.try_get(0)?, change))
}

/// `$first, $first+1, ...` (`count` of them) on PostgreSQL, `?, ?, ...` on SQLite,
/// whose binding looks every numbered name up in a list.
fn marks(backend: Backend, first: usize, count: usize) -> String {
    (first..first + count)
        .map(|i| match backend {
            Backend::Sqlite => "?".to_string(),
            Backend::Postgres => format!("${i}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records `record` and every one of its files in one write transaction; its `id`
/// and `file_count` are ignored (the id is assigned, the count is that of `files`).
/// Returns the new checkpoint's id.
///
/// # Errors
/// [`StoreError::Conflict`] when two files have the same path; a failed query.
pub async fn insert_checkpoint(store: &Store, record: &CheckpointRecord) -> StoreResult<i64> {
    let mut tx = store.begin_write().await?;
    let id: i64 = sqlx::query(
        "INSERT INTO checkpoints (workspace, at_ms, call_id, tool, origin, status, problem, rewind_of, bytes) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(&record.workspace)
    .bind(record.at_ms)
    .bind(&record.call_id)
    .bind(&record.tool)
    .bind(&record.origin)
    .bind(&record.status)
    .bind(&record.problem)
    .bind(record.rewind_of)
    .bind(record.bytes)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    for chunk in record.files.chunks(FILE_ROWS_PER_INSERT) {
        let rows: Vec<String> = (0..chunk.len())
            .map(|i| {
                format!(
                    "({})",
                    marks(store.backend(), i * FILE_VALUES + 1, FILE_VALUES)
                )
            })
            .collect();
        let sql = format!(
            "INSERT INTO checkpoint_files (checkpoint_id, {FILE_COLUMNS}) VALUES {}",
            rows.join(", ")
        );
        // Only placeholders are built into the text; every value is bound.
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for f in chunk {
            query = query
                .bind(id)
                .bind(&f.path)
                .bind(&f.change)
                .bind(&f.renamed_from)
                .bind(&f.before.kind)
                .bind(&f.before.hash)
                .bind(f.before.mode)
                .bind(f.before.size)
                .bind(&f.before.link)
                .bind(&f.after.kind)
                .bind(&f.after.hash)
                .bind(f.after.mode)
                .bind(f.after.size)
                .bind(&f.after.link)
                .bind(i64::from(f.captured))
                .bind(&f.note);
        }
        match query.execute(&mut *tx).await {
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                return Err(StoreError::conflict(
                    "a checkpoint lists the same path twice",
                ));
            }
            other => {
                other?;
            }
        }
    }
    tx.commit().await?;
    Ok(id)
}

/// Which checkpoints' files [`attach_files`] reads.
enum Files<'a> {
    /// Those of one checkpoint.
    Of(i64),
    /// Those of the checkpoints of a workspace from an id on.
    From(&'a str, i64),
}

/// Puts the files that `which` names into `records` (the checkpoints it names),
/// each ordered by path, and counts them.
async fn attach_files(
    conn: &mut sqlx::AnyConnection,
    records: &mut [CheckpointRecord],
    which: Files<'_>,
) -> StoreResult<()> {
    if records.is_empty() {
        return Ok(());
    }
    let select = format!("SELECT checkpoint_id, {FILE_COLUMNS} FROM checkpoint_files");
    let rows = match which {
        Files::Of(id) => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "{select} WHERE checkpoint_id = $1 ORDER BY path"
            )))
            .bind(id)
            .fetch_all(&mut *conn)
            .await?
        }
        Files::From(workspace, from_id) => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "{select} WHERE checkpoint_id IN \
                 (SELECT id FROM checkpoints WHERE workspace = $1 AND id >= $2) \
                 ORDER BY checkpoint_id, path"
            )))
            .bind(workspace)
            .bind(from_id)
            .fetch_all(&mut *conn)
            .await?
        }
    };
    let index: HashMap<i64, usize> = records.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    for row in &rows {
        let (checkpoint, file) = file_row(row)?;
        if let Some(&i) = index.get(&checkpoint) {
            records[i].files.push(file);
        }
    }
    for r in records.iter_mut() {
        // The same order on both databases, whatever PostgreSQL's collation.
        r.files.sort_by(|a, b| a.path.cmp(&b.path));
        r.file_count = i64::try_from(r.files.len()).unwrap_or(i64::MAX);
    }
    Ok(())
}

/// The checkpoints of `workspace`, newest first, at most `limit` (none when
/// `limit` is not positive), only those older than `before_id` when given (the
/// next page); `files` empty, `file_count` filled.
///
/// # Errors
/// A failed query.
pub async fn list_checkpoints(
    store: &Store,
    workspace: &str,
    before_id: Option<i64>,
    limit: i64,
) -> StoreResult<Vec<CheckpointRecord>> {
    if limit <= 0 {
        return Ok(Vec::new());
    }
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CHECKPOINT_COLUMNS} FROM checkpoints c \
         WHERE c.workspace = $1 AND c.id < $2 ORDER BY c.id DESC LIMIT $3"
    )))
    .bind(workspace)
    .bind(before_id.unwrap_or(i64::MAX))
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(checkpoint_row).collect()
}

/// Checkpoint `id`, with its files ordered by path.
///
/// # Errors
/// A failed query.
pub async fn get_checkpoint(store: &Store, id: i64) -> StoreResult<Option<CheckpointRecord>> {
    let mut tx = store.pool().begin().await?;
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CHECKPOINT_COLUMNS} FROM checkpoints c WHERE c.id = $1"
    )))
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        tx.commit().await?;
        return Ok(None);
    };
    let mut records = [checkpoint_row(&row)?];
    attach_files(&mut tx, &mut records, Files::Of(id)).await?;
    tx.commit().await?;
    let [record] = records;
    Ok(Some(record))
}

/// The checkpoints of `workspace` from `from_id` on (`id >= from_id`), oldest
/// first, with their files: what a rewind to `from_id` undoes, newest last.
///
/// # Errors
/// A failed query.
pub async fn checkpoints_from(
    store: &Store,
    workspace: &str,
    from_id: i64,
) -> StoreResult<Vec<CheckpointRecord>> {
    let mut tx = store.pool().begin().await?;
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CHECKPOINT_COLUMNS} FROM checkpoints c \
         WHERE c.workspace = $1 AND c.id >= $2 ORDER BY c.id"
    )))
    .bind(workspace)
    .bind(from_id)
    .fetch_all(&mut *tx)
    .await?;
    let mut records = rows
        .iter()
        .map(checkpoint_row)
        .collect::<StoreResult<Vec<_>>>()?;
    attach_files(&mut tx, &mut records, Files::From(workspace, from_id)).await?;
    tx.commit().await?;
    Ok(records)
}

/// The newest checkpoint of `workspace` that a rewind took of itself
/// (`rewind_of` set), with its files.
///
/// # Errors
/// A failed query.
pub async fn last_rewind(store: &Store, workspace: &str) -> StoreResult<Option<CheckpointRecord>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CHECKPOINT_COLUMNS} FROM checkpoints c \
         WHERE c.workspace = $1 AND c.rewind_of IS NOT NULL ORDER BY c.id DESC LIMIT 1"
    )))
    .bind(workspace)
    .fetch_optional(store.pool())
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let id: i64 = row.try_get(0)?;
    get_checkpoint(store, id).await
}

/// Marks checkpoints `ids` as pruned (their content removed), with `problem`
/// saying why; their file rows are kept, to show what the calls did. Unknown ids
/// are skipped.
///
/// # Errors
/// A failed query.
pub async fn mark_pruned(store: &Store, ids: &[i64], problem: &str) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut tx = store.begin_write().await?;
    for chunk in ids.chunks(IDS_PER_UPDATE) {
        // `problem` comes first in the text, as SQLite's `?` are bound in order.
        let sql = format!(
            "UPDATE checkpoints SET status = 'pruned', problem = {} WHERE id IN ({})",
            marks(store.backend(), 1, 1),
            marks(store.backend(), 2, chunk.len())
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(problem);
        for id in chunk {
            query = query.bind(*id);
        }
        query.execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Marks checkpoint `id` as reverted (a hook undid its call right after it), with
/// `note` saying why.
///
/// # Errors
/// A failed query.
pub async fn mark_reverted(store: &Store, id: i64, note: &str) -> StoreResult<()> {
    let sql = format!(
        "UPDATE checkpoints SET status = 'reverted', problem = {} WHERE id = {}",
        marks(store.backend(), 1, 1),
        marks(store.backend(), 2, 1)
    );
    let mut tx = store.begin_write().await?;
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(note)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// `(id, at_ms, bytes)` of every checkpoint not pruned, of every workspace, oldest
/// first.
///
/// # Errors
/// A failed query.
pub async fn checkpoint_ages(store: &Store) -> StoreResult<Vec<(i64, i64, i64)>> {
    let rows = sqlx::query(
        "SELECT id, at_ms, bytes FROM checkpoints WHERE status <> 'pruned' ORDER BY at_ms, id",
    )
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
        .collect()
}

/// Every content hash (before and after) that the files of checkpoints not pruned
/// refer to: the content that must be kept.
///
/// # Errors
/// A failed query.
pub async fn referenced_hashes(store: &Store) -> StoreResult<HashSet<String>> {
    let rows = sqlx::query(
        "SELECT f.before_hash FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id \
         WHERE c.status <> 'pruned' AND f.before_hash IS NOT NULL \
         UNION \
         SELECT f.after_hash FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id \
         WHERE c.status <> 'pruned' AND f.after_hash IS NOT NULL",
    )
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<String, _>(0)?))
        .collect()
}
