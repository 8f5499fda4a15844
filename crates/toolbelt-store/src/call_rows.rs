//! The call log's rows as they are written: [`CallRow`] is both a line of the call
//! journal and a row of the `calls` table; [`write_rows`] inserts a batch of them
//! in one transaction, each journalled record once however often it is replayed.

use serde::{Deserialize, Serialize};
use toolbelt_core::CallRecord;

use crate::error::{DbError, StoreError, StoreResult};
use crate::store::{Backend, Store};

/// How long calls stay in the log: each batch written removes those older than
/// this, counted back from the newest record of the batch.
pub const CALL_LOG_RETENTION_MS: i64 = 90 * 24 * 60 * 60 * 1000;

/// One call as the log keeps it: the values of a `calls` row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CallRow {
    /// `<journal id>:<seq>`, unique across journals; `None` for a record that was
    /// never journalled (several such rows may exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) record_key: Option<String>,
    pub(crate) at_ms: i64,
    pub(crate) tool: String,
    pub(crate) call_id: String,
    pub(crate) args: String,
    pub(crate) status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error_code: Option<String>,
    pub(crate) duration_ms: i64,
    pub(crate) bytes_out: i64,
    pub(crate) workspace: String,
    /// The JSON of the call's origin, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) checkpoint: Option<String>,
    /// The JSON of the hooks that ran, when any did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hooks: Option<String>,
}

impl CallRow {
    /// The row of `record`, run in `workspace`, kept under `record_key`.
    pub(crate) fn new(record: CallRecord, workspace: &str, record_key: Option<String>) -> CallRow {
        let origin = origin_json(&record);
        let hooks = hooks_json(&record);
        CallRow {
            record_key,
            at_ms: record.at_ms,
            tool: record.tool,
            call_id: record.call_id,
            args: record.args,
            status: record.status,
            error_code: record.error_code,
            duration_ms: as_i64(record.duration_ms),
            bytes_out: as_i64(record.bytes_out),
            workspace: workspace.to_string(),
            origin,
            checkpoint: record.checkpoint,
            hooks,
        }
    }
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
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

/// Writes `rows` in one transaction. A batch the database refuses for what one of
/// its rows holds is written row by row, and a row refused on its own is left out
/// with a warning: writing it again would never succeed, and it must not hold up
/// the rows after it. Any other failure (the database unreachable, busy, closed) is
/// returned, and the batch can be written again: a row already written under its
/// record key is not written twice.
///
/// # Errors
/// The database cannot be reached or fails the transaction.
pub(crate) async fn write_rows(store: &Store, rows: &[CallRow]) -> StoreResult<()> {
    let Err(e) = insert_rows(store, rows).await else {
        return Ok(());
    };
    if !refuses_data(&e, store.backend()) {
        return Err(e);
    }
    if let [_] = rows {
        warn_refused(&e);
        return Ok(());
    }
    for row in rows {
        match insert_rows(store, std::slice::from_ref(row)).await {
            Ok(()) => {}
            Err(e) if refuses_data(&e, store.backend()) => warn_refused(&e),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn warn_refused(e: &StoreError) {
    tracing::warn!(
        "the database refused a call record, which is left out of the call log: {}",
        toolbelt_core::error_chain(e)
    );
}

/// True when the database refused a statement for the values it was given (bad
/// data, a constraint, a value too large), not for its own state: PostgreSQL's
/// SQLSTATE classes 22, 23 and 54; SQLite's `TOOBIG`, `CONSTRAINT`, `MISMATCH`
/// and `RANGE`.
fn refuses_data(e: &StoreError, backend: Backend) -> bool {
    let StoreError::Query(DbError(e)) = e else {
        return false;
    };
    match e {
        sqlx::Error::Encode(_) => true,
        sqlx::Error::Database(db) => {
            let Some(code) = db.code() else {
                return false;
            };
            match backend {
                Backend::Postgres => ["22", "23", "54"].iter().any(|c| code.starts_with(c)),
                Backend::Sqlite => code
                    .parse::<i32>()
                    .is_ok_and(|c| matches!(c & 0xff, 18 | 19 | 20 | 25)),
            }
        }
        _ => false,
    }
}

/// The columns [`insert_rows`] writes, in its order.
const INSERT_COLUMNS: &str = "record_key, at_ms, tool, call_id, args, status, error_code, duration_ms, bytes_out, workspace, origin, checkpoint, hooks";
/// How many they are.
const INSERT_COLUMN_COUNT: usize = 13;

/// `INSERT INTO calls (...) VALUES (...), (...) ON CONFLICT (record_key) DO
/// NOTHING` for `rows` rows: numbered placeholders (`$1`, ..., `$9`, `$10`, ...)
/// for PostgreSQL, plain `?` for SQLite, whose binding looks every numbered name up
/// in a list (a batch's binding would cost the square of its parameters).
fn insert_rows_sql(rows: usize, backend: Backend) -> String {
    let mut sql = format!("INSERT INTO calls ({INSERT_COLUMNS}) VALUES ");
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..INSERT_COLUMN_COUNT {
            if column > 0 {
                sql.push_str(", ");
            }
            match backend {
                Backend::Sqlite => sql.push('?'),
                Backend::Postgres => {
                    sql.push('$');
                    sql.push_str(&(row * INSERT_COLUMN_COUNT + column + 1).to_string());
                }
            }
        }
        sql.push(')');
    }
    sql.push_str(" ON CONFLICT (record_key) DO NOTHING");
    sql
}

async fn insert_rows(store: &Store, rows: &[CallRow]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut tx = store.begin_write().await?;
    if let Some(newest) = rows.iter().map(|r| r.at_ms).max() {
        sqlx::query("DELETE FROM calls WHERE at_ms < $1")
            .bind(newest.saturating_sub(CALL_LOG_RETENTION_MS))
            .execute(&mut *tx)
            .await?;
    }
    // The whole batch in one statement: one round trip to the database, not one a
    // call. Only placeholders are built into the text; every value is bound (13 a
    // row, far within SQLite's and PostgreSQL's limits at CALL_LOG_BATCH_MAX rows).
    let mut query = sqlx::query(sqlx::AssertSqlSafe(insert_rows_sql(
        rows.len(),
        store.backend(),
    )));
    for r in rows {
        query = query
            .bind(r.record_key.as_deref())
            .bind(r.at_ms)
            .bind(&r.tool)
            .bind(&r.call_id)
            .bind(&r.args)
            .bind(&r.status)
            .bind(r.error_code.as_deref())
            .bind(r.duration_ms)
            .bind(r.bytes_out)
            .bind(&r.workspace)
            .bind(r.origin.as_deref())
            .bind(r.checkpoint.as_deref())
            .bind(r.hooks.as_deref());
    }
    query.execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_insert_names_each_column_once_and_skips_known_keys() {
        assert_eq!(
            INSERT_COLUMNS.split(", ").count(),
            INSERT_COLUMN_COUNT,
            "{INSERT_COLUMNS}"
        );
        let sqlite = insert_rows_sql(2, Backend::Sqlite);
        assert_eq!(sqlite.matches('?').count(), 2 * INSERT_COLUMN_COUNT);
        assert!(
            sqlite.ends_with(") ON CONFLICT (record_key) DO NOTHING"),
            "{sqlite}"
        );
        let postgres = insert_rows_sql(2, Backend::Postgres);
        assert!(postgres.contains("$26)"), "{postgres}");
        assert!(!postgres.contains("$27"), "{postgres}");
    }
}
