//! Reading the call log: [`recent_calls`] and its [`CallEntry`] rows (written by
//! [`crate::CallLogWriter`]).

use serde::Serialize;
use sqlx::Row;

use crate::error::StoreResult;
use crate::store::Store;

/// A column holding JSON, serialised as that JSON (as text if it is not).
fn raw_json<S: serde::Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match text
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
    {
        Some(Ok(value)) => value.serialize(s),
        _ => text.serialize(s),
    }
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
