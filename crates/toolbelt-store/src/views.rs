//! Read-only views for people: the call log filtered and paged ([`list_calls`]),
//! the calls logged after a given one ([`calls_after`], for a live view), and every
//! todo list of every workspace ([`all_todo_lists`]).

use serde::Serialize;
use sqlx::Row;

use crate::calls::{CALL_COLUMNS, CallEntry, call_entry};
use crate::error::StoreResult;
use crate::store::Store;

/// Most calls [`list_calls`] and [`calls_after`] return at once.
pub const MAX_CALLS_PAGE: u32 = 500;
/// Calls per page when [`CallQuery::limit`] is `None`.
pub const DEFAULT_CALLS_PAGE: u32 = 50;
/// Most todo lists [`all_todo_lists`] returns (most recently changed first).
pub const MAX_TODO_LISTS: u32 = 200;

/// Which logged calls [`list_calls`] returns. Every filter is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallQuery {
    /// Only calls of this tool (canonical name).
    pub tool: Option<String>,
    /// Only calls of this status (`success`, `partial`, `error`).
    pub status: Option<String>,
    /// Only calls started at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Only calls started before this time (ms since the epoch).
    pub until_ms: Option<i64>,
    /// Only calls logged before this row id: the next page of a listing.
    pub before_id: Option<i64>,
    /// At most this many ([`DEFAULT_CALLS_PAGE`] when `None`, capped at [`MAX_CALLS_PAGE`]).
    pub limit: Option<u32>,
}

/// Bound values of a dynamic query.
enum Bind<'a> {
    Text(&'a str),
    Int(i64),
}

/// The logged calls matching `query`, newest first.
///
/// # Errors
/// The query fails.
pub async fn list_calls(store: &Store, query: &CallQuery) -> StoreResult<Vec<CallEntry>> {
    let mut clauses = Vec::new();
    let mut binds = Vec::new();
    if let Some(tool) = &query.tool {
        binds.push(Bind::Text(tool));
        clauses.push(format!("tool = ${}", binds.len()));
    }
    if let Some(status) = &query.status {
        binds.push(Bind::Text(status));
        clauses.push(format!("status = ${}", binds.len()));
    }
    if let Some(since) = query.since_ms {
        binds.push(Bind::Int(since));
        clauses.push(format!("at_ms >= ${}", binds.len()));
    }
    if let Some(until) = query.until_ms {
        binds.push(Bind::Int(until));
        clauses.push(format!("at_ms < ${}", binds.len()));
    }
    if let Some(before) = query.before_id {
        binds.push(Bind::Int(before));
        clauses.push(format!("id < ${}", binds.len()));
    }
    let limit = query
        .limit
        .unwrap_or(DEFAULT_CALLS_PAGE)
        .clamp(1, MAX_CALLS_PAGE);
    binds.push(Bind::Int(i64::from(limit)));
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let sql = format!(
        "SELECT {CALL_COLUMNS} FROM calls {filter} ORDER BY id DESC LIMIT ${}",
        binds.len()
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for bind in binds {
        q = match bind {
            Bind::Text(t) => q.bind(t),
            Bind::Int(n) => q.bind(n),
        };
    }
    let rows = q.fetch_all(store.pool()).await?;
    rows.iter().map(call_entry).collect()
}

/// The calls logged after row `after_id`, oldest first, at most `limit` (capped at
/// [`MAX_CALLS_PAGE`]).
///
/// # Errors
/// The query fails.
pub async fn calls_after(store: &Store, after_id: i64, limit: u32) -> StoreResult<Vec<CallEntry>> {
    let limit = limit.clamp(1, MAX_CALLS_PAGE);
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CALL_COLUMNS} FROM calls WHERE id > $1 ORDER BY id LIMIT $2"
    )))
    .bind(after_id)
    .bind(i64::from(limit))
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(call_entry).collect()
}

/// The id of the newest logged call, 0 when the log is empty.
///
/// # Errors
/// The query fails.
pub async fn last_call_id(store: &Store) -> StoreResult<i64> {
    let row = sqlx::query("SELECT CAST(COALESCE(MAX(id), 0) AS BIGINT) FROM calls")
        .fetch_one(store.pool())
        .await?;
    Ok(row.try_get(0)?)
}

/// One todo of [`TodoListView`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TodoView {
    /// Its id in the list.
    pub id: i64,
    /// What to do.
    pub title: String,
    /// Its status as written (`Pending`, `In Progress`, `Done`).
    pub status: String,
}

/// A todo list with its todos.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TodoListView {
    /// The workspace it belongs to.
    pub workspace: String,
    /// Its name.
    pub name: String,
    /// When it last changed (ms since the epoch).
    pub updated_at: i64,
    /// Its todos, in order.
    pub todos: Vec<TodoView>,
}

/// Every todo list (at most [`MAX_TODO_LISTS`], most recently changed first), with
/// its todos in order.
///
/// # Errors
/// The query fails.
pub async fn all_todo_lists(store: &Store) -> StoreResult<Vec<TodoListView>> {
    let mut tx = store.pool().begin().await?;
    let lists = sqlx::query(
        "SELECT workspace, name, updated_at FROM todo_lists ORDER BY updated_at DESC, workspace, name LIMIT $1",
    )
    .bind(i64::from(MAX_TODO_LISTS))
    .fetch_all(&mut *tx)
    .await?;
    let mut out = Vec::with_capacity(lists.len());
    for row in &lists {
        let workspace: String = row.try_get(0)?;
        let name: String = row.try_get(1)?;
        let todos = sqlx::query(
            "SELECT id, title, status FROM todos WHERE workspace = $1 AND list = $2 ORDER BY position, id",
        )
        .bind(&workspace)
        .bind(&name)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| {
            Ok(TodoView {
                id: r.try_get(0)?,
                title: r.try_get(1)?,
                status: r.try_get(2)?,
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
        out.push(TodoListView {
            workspace,
            name,
            updated_at: row.try_get(2)?,
            todos,
        });
    }
    tx.commit().await?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallLogWriter, TodoInput, TodoListKey, replace_todos};
    use toolbelt_core::{CallLog, CallRecord};

    fn record(tool: &str, status: &str, at_ms: i64) -> CallRecord {
        CallRecord {
            at_ms,
            tool: tool.into(),
            call_id: format!("c-{at_ms}"),
            args: "{}".into(),
            status: status.into(),
            error_code: None,
            duration_ms: 1,
            bytes_out: 10,
            ..CallRecord::default()
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn calls_filtered_paged_and_followed() {
        tokio::time::timeout(std::time::Duration::from_secs(30), async {
            let t = crate::testing::sqlite().await.unwrap();
            let writer = CallLogWriter::start(t.store.clone(), "/w");
            let now = crate::now_ms();
            writer.record(record("think", "success", now - 3000));
            writer.record(record("write_file", "error", now - 2000));
            writer.record(record("think", "success", now - 1000));
            writer.flush().await;
            let all = list_calls(&t.store, &CallQuery::default()).await.unwrap();
            let tools: Vec<&str> = all.iter().map(|c| c.tool.as_str()).collect();
            assert_eq!(tools, ["think", "write_file", "think"]);
            let errors = list_calls(
                &t.store,
                &CallQuery {
                    status: Some("error".into()),
                    ..CallQuery::default()
                },
            )
            .await
            .unwrap();
            assert_eq!(errors.len(), 1);
            assert_eq!(errors[0].tool, "write_file");
            let page = list_calls(
                &t.store,
                &CallQuery {
                    before_id: Some(all[0].id),
                    limit: Some(1),
                    tool: Some("think".into()),
                    since_ms: Some(now - 5000),
                    until_ms: Some(now),
                    ..CallQuery::default()
                },
            )
            .await
            .unwrap();
            assert_eq!(page, vec![all[2].clone()]);
            let after = calls_after(&t.store, all[2].id, 10).await.unwrap();
            assert_eq!(after.len(), 2);
            assert_eq!(last_call_id(&t.store).await.unwrap(), all[0].id);
        })
        .await
        .unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn todo_lists_of_every_workspace() {
        tokio::time::timeout(std::time::Duration::from_secs(30), async {
            let t = crate::testing::sqlite().await.unwrap();
            let key = TodoListKey::new("/a", "default").unwrap();
            let input = |title: &str, status: &str| TodoInput {
                id: None,
                title: title.into(),
                status: status.into(),
            };
            replace_todos(
                &t.store,
                &key,
                &[input("one", "Done"), input("two", "In Progress")],
            )
            .await
            .unwrap();
            let lists = all_todo_lists(&t.store).await.unwrap();
            assert_eq!(lists.len(), 1);
            assert_eq!(lists[0].workspace, "/a");
            assert_eq!(
                lists[0].todos,
                vec![
                    TodoView {
                        id: 1,
                        title: "one".into(),
                        status: "Done".into()
                    },
                    TodoView {
                        id: 2,
                        title: "two".into(),
                        status: "In Progress".into()
                    },
                ]
            );
        })
        .await
        .unwrap();
    }
}
