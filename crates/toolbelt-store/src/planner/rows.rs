//! Reading the planner's rows: decoding them into records, loading one record by
//! id (with a lock when a write needs one), and one page of a filtered list.

use std::collections::BTreeMap;

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AssertSqlSafe, Row};

use super::checks::{missing, number};
use super::enums::{GoalStage, Priority, ProjectStatus, TaskStatus};
use super::records::{Goal, Project, Task};
use super::requests::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT};
use crate::error::{StoreError, StoreResult};
use crate::ids::{Kind, RecordId};
use crate::store::{Backend, Store};

pub(super) fn limit_of(limit: Option<u32>) -> i64 {
    i64::from(limit.unwrap_or(DEFAULT_LIST_LIMIT).clamp(1, MAX_LIST_LIMIT))
}

pub(super) fn offset_of(offset: u64) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

pub(super) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(super) fn corrupt(column: &str, value: &str) -> StoreError {
    StoreError::from(sqlx::Error::Decode(
        format!("unexpected {column} {value:?} in the store").into(),
    ))
}

pub(super) const PROJECT_COLUMNS: &str = "id, name, description, status, created_at, updated_at";
pub(super) const GOAL_COLUMNS: &str =
    "id, title, description, stage, deadline, created_at, updated_at";
pub(super) const TASK_COLUMNS: &str = "id, title, description, project_id, due_at, priority, status, completion_note, completed_at, created_at, updated_at";

pub(super) fn project_from(row: &AnyRow, goal_ids: Vec<RecordId>) -> StoreResult<Project> {
    let status: String = row.try_get(3)?;
    Ok(Project {
        id: RecordId::new(Kind::Project, row.try_get(0)?),
        name: row.try_get(1)?,
        description: row.try_get(2)?,
        status: ProjectStatus::parse(&status).ok_or_else(|| corrupt("project status", &status))?,
        goal_ids,
        created_at: row.try_get(4)?,
        updated_at: row.try_get(5)?,
    })
}

pub(super) fn goal_from(row: &AnyRow, project_ids: Vec<RecordId>) -> StoreResult<Goal> {
    let stage: String = row.try_get(3)?;
    Ok(Goal {
        id: RecordId::new(Kind::Goal, row.try_get(0)?),
        title: row.try_get(1)?,
        description: row.try_get(2)?,
        stage: GoalStage::parse(&stage).ok_or_else(|| corrupt("goal stage", &stage))?,
        deadline: row.try_get(4)?,
        project_ids,
        created_at: row.try_get(5)?,
        updated_at: row.try_get(6)?,
    })
}

pub(super) fn task_from(row: &AnyRow) -> StoreResult<Task> {
    let priority: String = row.try_get(5)?;
    let status: String = row.try_get(6)?;
    Ok(Task {
        id: RecordId::new(Kind::Task, row.try_get(0)?),
        title: row.try_get(1)?,
        description: row.try_get(2)?,
        project_id: row
            .try_get::<Option<i64>, _>(3)?
            .map(|n| RecordId::new(Kind::Project, n)),
        due_at: row.try_get(4)?,
        priority: Priority::parse(&priority).ok_or_else(|| corrupt("task priority", &priority))?,
        status: TaskStatus::parse(&status).ok_or_else(|| corrupt("task status", &status))?,
        completion_note: row.try_get(7)?,
        completed_at: row.try_get(8)?,
        created_at: row.try_get(9)?,
        updated_at: row.try_get(10)?,
    })
}

/// `$first, $first+1, ...` for `n` values.
pub(crate) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The links of `project_goals` whose `key` column is one of `numbers`, grouped
/// by it: `key` is `project_id` or `goal_id`.
pub(super) async fn links(
    conn: &mut AnyConnection,
    key: &'static str,
    numbers: &[i64],
) -> StoreResult<BTreeMap<i64, Vec<i64>>> {
    let mut out: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    if numbers.is_empty() {
        return Ok(out);
    }
    let other = if key == "project_id" {
        "goal_id"
    } else {
        "project_id"
    };
    let sql = format!(
        "SELECT {key}, {other} FROM project_goals WHERE {key} IN ({}) ORDER BY {key}, {other}",
        placeholders(1, numbers.len())
    );
    let mut q = sqlx::query(AssertSqlSafe(sql));
    for n in numbers {
        q = q.bind(*n);
    }
    for row in q.fetch_all(&mut *conn).await? {
        out.entry(row.try_get(0)?)
            .or_default()
            .push(row.try_get(1)?);
    }
    Ok(out)
}

pub(super) async fn projects_from(
    conn: &mut AnyConnection,
    rows: &[AnyRow],
) -> StoreResult<Vec<Project>> {
    let numbers = rows
        .iter()
        .map(|r| r.try_get::<i64, _>(0))
        .collect::<Result<Vec<_>, _>>()?;
    let mut goals = links(conn, "project_id", &numbers).await?;
    rows.iter()
        .zip(numbers)
        .map(|(row, n)| {
            let ids = goals
                .remove(&n)
                .unwrap_or_default()
                .into_iter()
                .map(|g| RecordId::new(Kind::Goal, g))
                .collect();
            project_from(row, ids)
        })
        .collect()
}

pub(super) async fn goals_from(
    conn: &mut AnyConnection,
    rows: &[AnyRow],
) -> StoreResult<Vec<Goal>> {
    let numbers = rows
        .iter()
        .map(|r| r.try_get::<i64, _>(0))
        .collect::<Result<Vec<_>, _>>()?;
    let mut projects = links(conn, "goal_id", &numbers).await?;
    rows.iter()
        .zip(numbers)
        .map(|(row, n)| {
            let ids = projects
                .remove(&n)
                .unwrap_or_default()
                .into_iter()
                .map(|p| RecordId::new(Kind::Project, p))
                .collect();
            goal_from(row, ids)
        })
        .collect()
}

/// The project row `n`, locked with `lock` (`Store::for_update` or "").
pub(super) async fn project_row(
    conn: &mut AnyConnection,
    n: i64,
    lock: &str,
) -> StoreResult<Option<AnyRow>> {
    let sql = format!("SELECT {PROJECT_COLUMNS} FROM projects WHERE id = $1{lock}");
    Ok(sqlx::query(AssertSqlSafe(sql))
        .bind(n)
        .fetch_optional(&mut *conn)
        .await?)
}

pub(super) async fn load_project(
    conn: &mut AnyConnection,
    id: RecordId,
    lock: &str,
) -> StoreResult<Project> {
    let n = number(Kind::Project, id)?;
    let row = project_row(conn, n, lock)
        .await?
        .ok_or_else(|| missing(id))?;
    let mut projects = projects_from(conn, std::slice::from_ref(&row)).await?;
    projects.pop().ok_or_else(|| missing(id))
}

pub(super) async fn load_goal(
    conn: &mut AnyConnection,
    id: RecordId,
    lock: &str,
) -> StoreResult<Goal> {
    let n = number(Kind::Goal, id)?;
    let sql = format!("SELECT {GOAL_COLUMNS} FROM goals WHERE id = $1{lock}");
    let row = sqlx::query(AssertSqlSafe(sql))
        .bind(n)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| missing(id))?;
    let mut goals = goals_from(conn, std::slice::from_ref(&row)).await?;
    goals.pop().ok_or_else(|| missing(id))
}

pub(super) async fn load_task(
    conn: &mut AnyConnection,
    id: RecordId,
    lock: &str,
) -> StoreResult<Task> {
    let n = number(Kind::Task, id)?;
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1{lock}");
    let row = sqlx::query(AssertSqlSafe(sql))
        .bind(n)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| missing(id))?;
    task_from(&row)
}

/// Checks that every goal of `numbers` exists, locking them with `lock`.
pub(super) async fn check_goals(
    conn: &mut AnyConnection,
    numbers: &[i64],
    lock: &str,
) -> StoreResult<()> {
    for n in numbers {
        let sql = format!("SELECT id FROM goals WHERE id = $1{lock}");
        if sqlx::query(AssertSqlSafe(sql))
            .bind(*n)
            .fetch_optional(&mut *conn)
            .await?
            .is_none()
        {
            return Err(missing(RecordId::new(Kind::Goal, *n)));
        }
    }
    Ok(())
}

/// A value bound to a filter's placeholder.
pub(super) enum Arg {
    Int(i64),
    Text(&'static str),
}

/// `WHERE` clauses joined with `AND`, or nothing.
pub(super) fn where_clause(clauses: &[String]) -> String {
    if clauses.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", clauses.join(" AND "))
    }
}

pub(super) async fn page_rows(
    conn: &mut AnyConnection,
    table: &str,
    columns: &str,
    clauses: &[String],
    args: &[Arg],
    limit: i64,
    offset: i64,
) -> StoreResult<(Vec<AnyRow>, u64)> {
    let filter = where_clause(clauses);
    let sql = format!("SELECT CAST(COUNT(*) AS BIGINT) FROM {table}{filter}");
    let mut q = sqlx::query(AssertSqlSafe(sql));
    for a in args {
        q = match a {
            Arg::Int(v) => q.bind(*v),
            Arg::Text(v) => q.bind(*v),
        };
    }
    let total: i64 = q.fetch_one(&mut *conn).await?.try_get(0)?;
    let n = args.len();
    let sql = format!(
        "SELECT {columns} FROM {table}{filter} ORDER BY id LIMIT ${} OFFSET ${}",
        n + 1,
        n + 2
    );
    let mut q = sqlx::query(AssertSqlSafe(sql));
    for a in args {
        q = match a {
            Arg::Int(v) => q.bind(*v),
            Arg::Text(v) => q.bind(*v),
        };
    }
    let rows = q.bind(limit).bind(offset).fetch_all(&mut *conn).await?;
    Ok((rows, count(total)))
}

impl Store {
    /// `" FOR KEY SHARE"` on PostgreSQL, nothing on SQLite: locks a row that a write
    /// refers to (a task's project, a linked goal) so that it cannot be deleted
    /// before the write commits, while other writers referring to it go ahead.
    pub(super) fn for_reference(&self) -> &'static str {
        match self.backend() {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR KEY SHARE",
        }
    }
}
