//! The planner: projects, goals and tasks, as methods of [`Store`].
//!
//! Every write runs in one transaction from [`Store::begin_write`]: the records a
//! request names are read and checked inside it (locked with
//! [`Store::for_update`] on PostgreSQL), so a check and the write it guards see
//! the same state. Requests that cannot be met are [`StoreError::NotFound`],
//! [`StoreError::Invalid`] or [`StoreError::Conflict`] with a message written for
//! the model.

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AssertSqlSafe, Row};

use crate::error::{StoreError, StoreResult};
use crate::ids::{Kind, RecordId};
use crate::store::{Backend, Store};

/// The most records one list call returns.
pub const MAX_LIST_LIMIT: u32 = 200;
/// How many records a list call returns when no limit is given.
pub const DEFAULT_LIST_LIMIT: u32 = 50;
/// The most overdue tasks [`ProjectStats::overdue`] lists (all are counted).
pub const MAX_OVERDUE_LISTED: usize = 20;

macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        /// A plain `enum` of strings, without the values' doc comments: models
        /// read what each value means in the field's description, and a wrong
        /// value is reported with the values allowed.
        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "enum": [$($text),+],
                })
            }
        }

        impl $name {
            /// Every value, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as stored and as models write it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Reads a value written by [`Self::as_str`].
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

text_enum! {
    /// Where a project stands.
    ProjectStatus {
        /// Being worked on (the default).
        Active => "active",
        /// On hold.
        Paused => "paused",
        /// Done.
        Completed => "completed",
    }
}

text_enum! {
    /// The horizon of a goal.
    GoalStage {
        /// A life goal.
        Life => "life",
        /// A goal for the year.
        Yearly => "yearly",
        /// A goal for the quarter.
        Quarter => "quarter",
    }
}

text_enum! {
    /// Where a task stands.
    TaskStatus {
        /// Not done yet.
        Pending => "pending",
        /// Done.
        Completed => "completed",
    }
}

text_enum! {
    /// How urgent a task is.
    Priority {
        /// Can wait.
        Low => "low",
        /// The default.
        Medium => "medium",
        /// First.
        High => "high",
    }
}

fn ser_id<S: Serializer>(id: &RecordId, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(id)
}

fn ser_opt_id<S: Serializer>(id: &Option<RecordId>, s: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(id) => s.collect_str(id),
        None => s.serialize_none(),
    }
}

fn ser_ids<S: Serializer>(ids: &[RecordId], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ids.iter().map(|id| id.to_string()))
}

/// A project. Times are milliseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Project {
    /// `project-N`.
    #[serde(serialize_with = "ser_id")]
    pub id: RecordId,
    /// Its name (never blank).
    pub name: String,
    /// What it is about.
    pub description: Option<String>,
    /// Where it stands.
    pub status: ProjectStatus,
    /// The goals it serves, by id.
    #[serde(serialize_with = "ser_ids")]
    pub goal_ids: Vec<RecordId>,
    /// When it was created.
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: i64,
}

/// A goal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Goal {
    /// `goal-N`.
    #[serde(serialize_with = "ser_id")]
    pub id: RecordId,
    /// What it is.
    pub title: String,
    /// More about it.
    pub description: Option<String>,
    /// Its horizon.
    pub stage: GoalStage,
    /// The day it should be reached, `YYYY-MM-DD`.
    pub deadline: Option<String>,
    /// The projects linked to it, by id.
    #[serde(serialize_with = "ser_ids")]
    pub project_ids: Vec<RecordId>,
    /// When it was created.
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: i64,
}

/// A task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    /// `task-N`.
    #[serde(serialize_with = "ser_id")]
    pub id: RecordId,
    /// What to do.
    pub title: String,
    /// More about it.
    pub description: Option<String>,
    /// The project it belongs to.
    #[serde(serialize_with = "ser_opt_id")]
    pub project_id: Option<RecordId>,
    /// When it is due.
    pub due_at: Option<i64>,
    /// How urgent it is.
    pub priority: Priority,
    /// Pending or completed.
    pub status: TaskStatus,
    /// What was said when it was completed.
    pub completion_note: Option<String>,
    /// When it was completed.
    pub completed_at: Option<i64>,
    /// When it was created.
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: i64,
}

/// What [`Store::create_project`] needs.
#[derive(Debug, Clone, PartialEq)]
pub struct NewProject {
    /// The name (not blank; trimmed).
    pub name: String,
    /// What it is about (blank means none).
    pub description: Option<String>,
    /// Where it stands.
    pub status: ProjectStatus,
    /// Goals to link (duplicates ignored).
    pub goal_ids: Vec<RecordId>,
}

/// What [`Store::update_project`] changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectUpdate {
    /// A new name (not blank).
    pub name: Option<String>,
    /// A new description (blank clears it).
    pub description: Option<String>,
    /// A new status.
    pub status: Option<ProjectStatus>,
    /// The new set of linked goals, replacing the old one.
    pub goal_ids: Option<Vec<RecordId>>,
}

impl ProjectUpdate {
    /// The fields an update can change, for messages.
    pub const FIELDS: &'static str = "name, description, status, goal_ids";

    /// True when it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.description.is_none()
            && self.status.is_none()
            && self.goal_ids.is_none()
    }

    /// The names of the fields it sets.
    pub fn fields(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.name.is_some() {
            out.push("name");
        }
        if self.description.is_some() {
            out.push("description");
        }
        if self.status.is_some() {
            out.push("status");
        }
        if self.goal_ids.is_some() {
            out.push("goal_ids");
        }
        out
    }
}

/// What [`Store::create_goal`] needs.
#[derive(Debug, Clone, PartialEq)]
pub struct NewGoal {
    /// The title (not blank; trimmed).
    pub title: String,
    /// More about it (blank means none).
    pub description: Option<String>,
    /// Its horizon.
    pub stage: GoalStage,
    /// The day it should be reached.
    pub deadline: Option<NaiveDate>,
}

/// What [`Store::create_task`] needs.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// The title (not blank; trimmed).
    pub title: String,
    /// More about it (blank means none).
    pub description: Option<String>,
    /// The project it belongs to.
    pub project_id: Option<RecordId>,
    /// When it is due, in milliseconds since the Unix epoch.
    pub due_at: Option<i64>,
    /// How urgent it is.
    pub priority: Priority,
}

/// One page of a list, and how many records match in all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page<T> {
    /// The records of this page, by id.
    pub items: Vec<T>,
    /// How many records match the filters, over all pages.
    pub total: u64,
}

/// Which projects [`Store::list_projects`] returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectFilter {
    /// Only projects in this status.
    pub status: Option<ProjectStatus>,
    /// At most this many ([`DEFAULT_LIST_LIMIT`] when `None`, capped at [`MAX_LIST_LIMIT`]).
    pub limit: Option<u32>,
    /// Skip this many.
    pub offset: u64,
}

/// Which goals [`Store::list_goals`] returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoalFilter {
    /// Only goals of this stage.
    pub stage: Option<GoalStage>,
    /// Only goals linked to this project (which must exist).
    pub project_id: Option<RecordId>,
    /// At most this many ([`DEFAULT_LIST_LIMIT`] when `None`, capped at [`MAX_LIST_LIMIT`]).
    pub limit: Option<u32>,
    /// Skip this many.
    pub offset: u64,
}

/// Which tasks [`Store::list_tasks`] returns. Both due bounds are inclusive; a
/// task without a due time matches neither.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskFilter {
    /// Only tasks of this project (which must exist).
    pub project_id: Option<RecordId>,
    /// Only tasks in this status.
    pub status: Option<TaskStatus>,
    /// Only tasks of this priority.
    pub priority: Option<Priority>,
    /// Only tasks due at or before this time (ms).
    pub due_before: Option<i64>,
    /// Only tasks due at or after this time (ms).
    pub due_after: Option<i64>,
    /// At most this many ([`DEFAULT_LIST_LIMIT`] when `None`, capped at [`MAX_LIST_LIMIT`]).
    pub limit: Option<u32>,
    /// Skip this many.
    pub offset: u64,
}

/// What [`Store::delete_project`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeletedProject {
    /// The project deleted.
    #[serde(serialize_with = "ser_id")]
    pub id: RecordId,
    /// Its name.
    pub name: String,
    /// How many of its tasks were deleted with it.
    pub tasks_deleted: u64,
    /// How many goal links went with it (the goals stay).
    pub goals_unlinked: u64,
    /// How many reviews lost their link to it (the reviews stay).
    pub reviews_unlinked: u64,
}

/// What [`Store::link_goal_to_project`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoalLink {
    /// The goal.
    #[serde(serialize_with = "ser_id")]
    pub goal_id: RecordId,
    /// The project.
    #[serde(serialize_with = "ser_id")]
    pub project_id: RecordId,
    /// True when they were linked before this call (nothing changed).
    pub already_linked: bool,
    /// When they were linked.
    pub linked_at: i64,
}

/// What [`Store::complete_task`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Completion {
    /// The task as it is now.
    pub task: Task,
    /// True when it was completed before this call: its completion time and
    /// note were kept.
    pub already_completed: bool,
}

/// A pending task past its due time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverdueTask {
    /// `task-N`.
    #[serde(serialize_with = "ser_id")]
    pub id: RecordId,
    /// What to do.
    pub title: String,
    /// When it was due (ms).
    pub due_at: i64,
}

/// A goal as [`ProjectStats`] names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoalSummary {
    /// `goal-N`.
    #[serde(serialize_with = "ser_id")]
    pub id: RecordId,
    /// What it is.
    pub title: String,
    /// Its horizon.
    pub stage: GoalStage,
    /// `YYYY-MM-DD`.
    pub deadline: Option<String>,
}

/// Where a project stands, as of a given time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectStats {
    /// Tasks not done yet.
    pub pending: u64,
    /// Tasks done.
    pub completed: u64,
    /// All its tasks.
    pub total: u64,
    /// `completed / total`, rounded to 3 decimals; 0 without tasks.
    pub completion_rate: f64,
    /// How many pending tasks are past their due time.
    pub overdue_count: u64,
    /// The first [`MAX_OVERDUE_LISTED`] of them, earliest due first.
    pub overdue: Vec<OverdueTask>,
    /// The goals linked to the project, by id.
    pub goals: Vec<GoalSummary>,
}

/// `completed / total` rounded to 3 decimals, 0 when `total` is 0.
pub fn completion_rate(completed: u64, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = completed as f64 / total as f64;
    (rate * 1000.0).round() / 1000.0
}

/// The row number of `id`, which must be of `kind`.
fn number(kind: Kind, id: RecordId) -> StoreResult<i64> {
    if id.kind == kind {
        Ok(id.number)
    } else {
        Err(StoreError::not_found(format!(
            "\"{id}\" is a {} id, not a {} id; {} lists the {}s and their ids",
            id.kind.prefix(),
            kind.prefix(),
            kind.list_tool(),
            kind.prefix()
        )))
    }
}

fn missing(id: RecordId) -> StoreError {
    let kind = id.kind.prefix();
    StoreError::not_found(format!(
        "no {kind} has the id {id}; {} lists the {kind}s and their ids",
        id.kind.list_tool()
    ))
}

/// A required text: trimmed, not blank.
fn required_text(field: &str, text: &str) -> StoreResult<String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(StoreError::invalid(format!(
            "{field} is blank; give a {field} with at least one visible character"
        )));
    }
    Ok(t.to_string())
}

/// An optional text: blank means none.
fn optional_text(text: Option<&str>) -> Option<String> {
    text.map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

fn dedup(ids: &[RecordId], kind: Kind) -> StoreResult<Vec<i64>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for id in ids {
        let n = number(kind, *id)?;
        if seen.insert(n) {
            out.push(n);
        }
    }
    Ok(out)
}

fn limit_of(limit: Option<u32>) -> i64 {
    i64::from(limit.unwrap_or(DEFAULT_LIST_LIMIT).clamp(1, MAX_LIST_LIMIT))
}

fn offset_of(offset: u64) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn corrupt(column: &str, value: &str) -> StoreError {
    StoreError::Query(sqlx::Error::Decode(
        format!("unexpected {column} {value:?} in the store").into(),
    ))
}

const PROJECT_COLUMNS: &str = "id, name, description, status, created_at, updated_at";
const GOAL_COLUMNS: &str = "id, title, description, stage, deadline, created_at, updated_at";
const TASK_COLUMNS: &str = "id, title, description, project_id, due_at, priority, status, completion_note, completed_at, created_at, updated_at";

fn project_from(row: &AnyRow, goal_ids: Vec<RecordId>) -> StoreResult<Project> {
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

fn goal_from(row: &AnyRow, project_ids: Vec<RecordId>) -> StoreResult<Goal> {
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

fn task_from(row: &AnyRow) -> StoreResult<Task> {
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
fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The links of `project_goals` whose `key` column is one of `numbers`, grouped
/// by it: `key` is `project_id` or `goal_id`.
async fn links(
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

async fn projects_from(conn: &mut AnyConnection, rows: &[AnyRow]) -> StoreResult<Vec<Project>> {
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

async fn goals_from(conn: &mut AnyConnection, rows: &[AnyRow]) -> StoreResult<Vec<Goal>> {
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
async fn project_row(conn: &mut AnyConnection, n: i64, lock: &str) -> StoreResult<Option<AnyRow>> {
    let sql = format!("SELECT {PROJECT_COLUMNS} FROM projects WHERE id = $1{lock}");
    Ok(sqlx::query(AssertSqlSafe(sql))
        .bind(n)
        .fetch_optional(&mut *conn)
        .await?)
}

async fn load_project(conn: &mut AnyConnection, id: RecordId, lock: &str) -> StoreResult<Project> {
    let n = number(Kind::Project, id)?;
    let row = project_row(conn, n, lock)
        .await?
        .ok_or_else(|| missing(id))?;
    let mut projects = projects_from(conn, std::slice::from_ref(&row)).await?;
    projects.pop().ok_or_else(|| missing(id))
}

async fn load_goal(conn: &mut AnyConnection, id: RecordId, lock: &str) -> StoreResult<Goal> {
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

async fn load_task(conn: &mut AnyConnection, id: RecordId, lock: &str) -> StoreResult<Task> {
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
async fn check_goals(conn: &mut AnyConnection, numbers: &[i64], lock: &str) -> StoreResult<()> {
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
enum Arg {
    Int(i64),
    Text(&'static str),
}

/// `WHERE` clauses joined with `AND`, or nothing.
fn where_clause(clauses: &[String]) -> String {
    if clauses.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", clauses.join(" AND "))
    }
}

async fn page_rows(
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
    fn for_reference(&self) -> &'static str {
        match self.backend() {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR KEY SHARE",
        }
    }

    /// Creates a project linked to `new.goal_ids`.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for a blank name, [`StoreError::NotFound`] for a goal
    /// id that names no goal (nothing is written then), or a failed query.
    pub async fn create_project(&self, new: &NewProject) -> StoreResult<Project> {
        let name = required_text("name", &new.name)?;
        let goals = dedup(&new.goal_ids, Kind::Goal)?;
        let now = crate::now_ms();
        let mut tx = self.begin_write().await?;
        check_goals(&mut tx, &goals, self.for_reference()).await?;
        let n: i64 = sqlx::query(
            "INSERT INTO projects (name, description, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
        )
        .bind(name)
        .bind(optional_text(new.description.as_deref()))
        .bind(new.status.as_str())
        .bind(now)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        for g in &goals {
            sqlx::query(
                "INSERT INTO project_goals (project_id, goal_id, linked_at) VALUES ($1, $2, $3)",
            )
            .bind(n)
            .bind(*g)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        let project = load_project(&mut tx, RecordId::new(Kind::Project, n), "").await?;
        tx.commit().await?;
        Ok(project)
    }

    /// Changes the fields `update` sets; `goal_ids` replaces the set of linked goals
    /// (links that stay keep their time).
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for an empty update or a blank name,
    /// [`StoreError::NotFound`] for an unknown project or goal, or a failed query.
    pub async fn update_project(
        &self,
        id: RecordId,
        update: &ProjectUpdate,
    ) -> StoreResult<Project> {
        if update.is_empty() {
            return Err(StoreError::invalid(format!(
                "updates is empty; give at least one of the fields that can be updated: {}",
                ProjectUpdate::FIELDS
            )));
        }
        let n = number(Kind::Project, id)?;
        let name = match &update.name {
            Some(name) => Some(required_text("name", name)?),
            None => None,
        };
        let goals = match &update.goal_ids {
            Some(ids) => Some(dedup(ids, Kind::Goal)?),
            None => None,
        };
        let now = crate::now_ms();
        let mut tx = self.begin_write().await?;
        if project_row(&mut tx, n, self.for_update()).await?.is_none() {
            return Err(missing(id));
        }
        if let Some(goals) = &goals {
            check_goals(&mut tx, goals, self.for_reference()).await?;
        }
        sqlx::query(
            "UPDATE projects SET name = COALESCE($2, name), description = CASE WHEN $3 = 1 THEN $4 ELSE description END, status = COALESCE($5, status), updated_at = $6 WHERE id = $1",
        )
        .bind(n)
        .bind(name)
        .bind(i64::from(update.description.is_some()))
        .bind(optional_text(update.description.as_deref()))
        .bind(update.status.map(ProjectStatus::as_str))
        .bind(now)
        .execute(&mut *tx)
        .await?;
        if let Some(goals) = goals {
            let current = links(&mut tx, "project_id", &[n])
                .await?
                .remove(&n)
                .unwrap_or_default();
            for g in current.iter().filter(|g| !goals.contains(g)) {
                sqlx::query("DELETE FROM project_goals WHERE project_id = $1 AND goal_id = $2")
                    .bind(n)
                    .bind(*g)
                    .execute(&mut *tx)
                    .await?;
            }
            for g in goals.iter().filter(|g| !current.contains(g)) {
                sqlx::query(
                    "INSERT INTO project_goals (project_id, goal_id, linked_at) VALUES ($1, $2, $3)",
                )
                .bind(n)
                .bind(*g)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
        }
        let project = load_project(&mut tx, id, "").await?;
        tx.commit().await?;
        Ok(project)
    }

    /// Deletes a project and its goal links; reviews linked to it lose the link.
    /// With `cascade` its tasks are deleted too; without, a project that still has
    /// tasks is refused.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown project, [`StoreError::Conflict`]
    /// when it has tasks and `cascade` is false, or a failed query.
    pub async fn delete_project(&self, id: RecordId, cascade: bool) -> StoreResult<DeletedProject> {
        let n = number(Kind::Project, id)?;
        let mut tx = self.begin_write().await?;
        let row = project_row(&mut tx, n, self.for_update())
            .await?
            .ok_or_else(|| missing(id))?;
        let name: String = row.try_get(1)?;
        let counts = sqlx::query(
            "SELECT CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END), 0) AS BIGINT) FROM tasks WHERE project_id = $1",
        )
        .bind(n)
        .fetch_one(&mut *tx)
        .await?;
        let tasks = count(counts.try_get(0)?);
        let pending = count(counts.try_get(1)?);
        if tasks > 0 && !cascade {
            return Err(StoreError::conflict(format!(
                "{id} still has {tasks} task{} ({pending} pending); delete them, move them, or call again with cascade: true",
                if tasks == 1 { "" } else { "s" }
            )));
        }
        let goals: i64 =
            sqlx::query("SELECT CAST(COUNT(*) AS BIGINT) FROM project_goals WHERE project_id = $1")
                .bind(n)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
        let reviews: i64 = sqlx::query(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM review_projects WHERE project_id = $1",
        )
        .bind(n)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        let deleted = sqlx::query("DELETE FROM tasks WHERE project_id = $1")
            .bind(n)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("DELETE FROM projects WHERE id = $1")
            .bind(n)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(DeletedProject {
            id,
            name,
            tasks_deleted: deleted,
            goals_unlinked: count(goals),
            reviews_unlinked: count(reviews),
        })
    }

    /// The project `id`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown project, or a failed query.
    pub async fn project(&self, id: RecordId) -> StoreResult<Project> {
        let mut conn = self.pool().acquire().await?;
        load_project(&mut conn, id, "").await
    }

    /// The project `id` and its stats as of `now_ms` (tasks due before it and
    /// still pending are overdue), read in one transaction.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown project, or a failed query.
    pub async fn project_with_stats(
        &self,
        id: RecordId,
        now_ms: i64,
    ) -> StoreResult<(Project, ProjectStats)> {
        let mut tx = self.pool().begin().await?;
        let project = load_project(&mut tx, id, "").await?;
        let n = id.number;
        let mut pending = 0;
        let mut completed = 0;
        for row in sqlx::query(
            "SELECT status, CAST(COUNT(*) AS BIGINT) FROM tasks WHERE project_id = $1 GROUP BY status",
        )
        .bind(n)
        .fetch_all(&mut *tx)
        .await?
        {
            let status: String = row.try_get(0)?;
            let c = count(row.try_get(1)?);
            match TaskStatus::parse(&status) {
                Some(TaskStatus::Pending) => pending += c,
                Some(TaskStatus::Completed) => completed += c,
                None => return Err(corrupt("task status", &status)),
            }
        }
        let total = pending + completed;
        let overdue_count = count(
            sqlx::query(
                "SELECT CAST(COUNT(*) AS BIGINT) FROM tasks WHERE project_id = $1 AND status = 'pending' AND due_at < $2",
            )
            .bind(n)
            .bind(now_ms)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?,
        );
        let overdue = sqlx::query(
            "SELECT id, title, due_at FROM tasks WHERE project_id = $1 AND status = 'pending' AND due_at < $2 ORDER BY due_at, id LIMIT $3",
        )
        .bind(n)
        .bind(now_ms)
        .bind(i64::try_from(MAX_OVERDUE_LISTED).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| {
            Ok(OverdueTask {
                id: RecordId::new(Kind::Task, r.try_get(0)?),
                title: r.try_get(1)?,
                due_at: r.try_get(2)?,
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
        let goals = sqlx::query(
            "SELECT g.id, g.title, g.stage, g.deadline FROM project_goals pg JOIN goals g ON g.id = pg.goal_id WHERE pg.project_id = $1 ORDER BY g.id",
        )
        .bind(n)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| {
            let stage: String = r.try_get(2)?;
            Ok(GoalSummary {
                id: RecordId::new(Kind::Goal, r.try_get(0)?),
                title: r.try_get(1)?,
                stage: GoalStage::parse(&stage).ok_or_else(|| corrupt("goal stage", &stage))?,
                deadline: r.try_get(3)?,
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
        tx.commit().await?;
        Ok((
            project,
            ProjectStats {
                pending,
                completed,
                total,
                completion_rate: completion_rate(completed, total),
                overdue_count,
                overdue,
                goals,
            },
        ))
    }

    /// One page of projects, by id.
    ///
    /// # Errors
    /// A failed query.
    pub async fn list_projects(&self, filter: &ProjectFilter) -> StoreResult<Page<Project>> {
        let mut clauses = Vec::new();
        let mut args = Vec::new();
        if let Some(status) = filter.status {
            args.push(Arg::Text(status.as_str()));
            clauses.push(format!("status = ${}", args.len()));
        }
        let mut tx = self.pool().begin().await?;
        let (rows, total) = page_rows(
            &mut tx,
            "projects",
            PROJECT_COLUMNS,
            &clauses,
            &args,
            limit_of(filter.limit),
            offset_of(filter.offset),
        )
        .await?;
        let items = projects_from(&mut tx, &rows).await?;
        tx.commit().await?;
        Ok(Page { items, total })
    }

    /// Creates a goal.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for a blank title, or a failed query.
    pub async fn create_goal(&self, new: &NewGoal) -> StoreResult<Goal> {
        let title = required_text("title", &new.title)?;
        let now = crate::now_ms();
        let mut tx = self.begin_write().await?;
        let n: i64 = sqlx::query(
            "INSERT INTO goals (title, description, stage, deadline, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) RETURNING id",
        )
        .bind(title)
        .bind(optional_text(new.description.as_deref()))
        .bind(new.stage.as_str())
        .bind(new.deadline.map(|d| d.format("%Y-%m-%d").to_string()))
        .bind(now)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        let goal = load_goal(&mut tx, RecordId::new(Kind::Goal, n), "").await?;
        tx.commit().await?;
        Ok(goal)
    }

    /// The goal `id`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown goal, or a failed query.
    pub async fn goal(&self, id: RecordId) -> StoreResult<Goal> {
        let mut conn = self.pool().acquire().await?;
        load_goal(&mut conn, id, "").await
    }

    /// Links a goal to a project. Linking twice is not an error: the second call
    /// changes nothing and says `already_linked`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown goal or project, or a failed query.
    pub async fn link_goal_to_project(
        &self,
        goal_id: RecordId,
        project_id: RecordId,
    ) -> StoreResult<GoalLink> {
        let g = number(Kind::Goal, goal_id)?;
        let p = number(Kind::Project, project_id)?;
        let now = crate::now_ms();
        let mut tx = self.begin_write().await?;
        let lock = self.for_reference();
        check_goals(&mut tx, &[g], lock).await?;
        if project_row(&mut tx, p, lock).await?.is_none() {
            return Err(missing(project_id));
        }
        let inserted = sqlx::query(
            "INSERT INTO project_goals (project_id, goal_id, linked_at) VALUES ($1, $2, $3) ON CONFLICT (project_id, goal_id) DO NOTHING",
        )
        .bind(p)
        .bind(g)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let linked_at: i64 = sqlx::query(
            "SELECT linked_at FROM project_goals WHERE project_id = $1 AND goal_id = $2",
        )
        .bind(p)
        .bind(g)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        tx.commit().await?;
        Ok(GoalLink {
            goal_id,
            project_id,
            already_linked: inserted == 0,
            linked_at,
        })
    }

    /// One page of goals, by id.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when the filter's project does not exist, or a
    /// failed query.
    pub async fn list_goals(&self, filter: &GoalFilter) -> StoreResult<Page<Goal>> {
        let mut clauses = Vec::new();
        let mut args = Vec::new();
        let mut tx = self.pool().begin().await?;
        if let Some(stage) = filter.stage {
            args.push(Arg::Text(stage.as_str()));
            clauses.push(format!("stage = ${}", args.len()));
        }
        if let Some(project) = filter.project_id {
            let p = number(Kind::Project, project)?;
            if project_row(&mut tx, p, "").await?.is_none() {
                return Err(missing(project));
            }
            args.push(Arg::Int(p));
            clauses.push(format!(
                "id IN (SELECT goal_id FROM project_goals WHERE project_id = ${})",
                args.len()
            ));
        }
        let (rows, total) = page_rows(
            &mut tx,
            "goals",
            GOAL_COLUMNS,
            &clauses,
            &args,
            limit_of(filter.limit),
            offset_of(filter.offset),
        )
        .await?;
        let items = goals_from(&mut tx, &rows).await?;
        tx.commit().await?;
        Ok(Page { items, total })
    }

    /// Creates a pending task.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for a blank title, [`StoreError::NotFound`] for an
    /// unknown project, or a failed query.
    pub async fn create_task(&self, new: &NewTask) -> StoreResult<Task> {
        let title = required_text("title", &new.title)?;
        let project = match new.project_id {
            Some(id) => Some((id, number(Kind::Project, id)?)),
            None => None,
        };
        let now = crate::now_ms();
        let mut tx = self.begin_write().await?;
        if let Some((id, p)) = project
            && project_row(&mut tx, p, self.for_reference())
                .await?
                .is_none()
        {
            return Err(missing(id));
        }
        let n: i64 = sqlx::query(
            "INSERT INTO tasks (title, description, project_id, due_at, priority, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6) RETURNING id",
        )
        .bind(title)
        .bind(optional_text(new.description.as_deref()))
        .bind(project.map(|(_, p)| p))
        .bind(new.due_at)
        .bind(new.priority.as_str())
        .bind(now)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        let task = load_task(&mut tx, RecordId::new(Kind::Task, n), "").await?;
        tx.commit().await?;
        Ok(task)
    }

    /// The task `id`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown task, or a failed query.
    pub async fn task(&self, id: RecordId) -> StoreResult<Task> {
        let mut conn = self.pool().acquire().await?;
        load_task(&mut conn, id, "").await
    }

    /// Marks a task completed with an optional note. Completing a completed task
    /// changes nothing (its first completion time and note are kept) and says
    /// `already_completed`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown task, or a failed query.
    pub async fn complete_task(&self, id: RecordId, note: Option<&str>) -> StoreResult<Completion> {
        let now = crate::now_ms();
        let mut tx = self.begin_write().await?;
        let task = load_task(&mut tx, id, self.for_update()).await?;
        if task.status == TaskStatus::Completed {
            tx.commit().await?;
            return Ok(Completion {
                task,
                already_completed: true,
            });
        }
        sqlx::query(
            "UPDATE tasks SET status = 'completed', completion_note = $2, completed_at = $3, updated_at = $3 WHERE id = $1",
        )
        .bind(id.number)
        .bind(optional_text(note))
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let task = load_task(&mut tx, id, "").await?;
        tx.commit().await?;
        Ok(Completion {
            task,
            already_completed: false,
        })
    }

    /// One page of tasks, by id.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when the filter's project does not exist, or a
    /// failed query.
    pub async fn list_tasks(&self, filter: &TaskFilter) -> StoreResult<Page<Task>> {
        let mut clauses = Vec::new();
        let mut args = Vec::new();
        let mut tx = self.pool().begin().await?;
        if let Some(project) = filter.project_id {
            let p = number(Kind::Project, project)?;
            if project_row(&mut tx, p, "").await?.is_none() {
                return Err(missing(project));
            }
            args.push(Arg::Int(p));
            clauses.push(format!("project_id = ${}", args.len()));
        }
        if let Some(status) = filter.status {
            args.push(Arg::Text(status.as_str()));
            clauses.push(format!("status = ${}", args.len()));
        }
        if let Some(priority) = filter.priority {
            args.push(Arg::Text(priority.as_str()));
            clauses.push(format!("priority = ${}", args.len()));
        }
        if let Some(before) = filter.due_before {
            args.push(Arg::Int(before));
            clauses.push(format!("due_at <= ${}", args.len()));
        }
        if let Some(after) = filter.due_after {
            args.push(Arg::Int(after));
            clauses.push(format!("due_at >= ${}", args.len()));
        }
        let (rows, total) = page_rows(
            &mut tx,
            "tasks",
            TASK_COLUMNS,
            &clauses,
            &args,
            limit_of(filter.limit),
            offset_of(filter.offset),
        )
        .await?;
        let items = rows
            .iter()
            .map(task_from)
            .collect::<StoreResult<Vec<_>>>()?;
        tx.commit().await?;
        Ok(Page { items, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_rate_is_rounded_to_three_decimals() {
        assert_eq!(completion_rate(0, 0), 0.0);
        assert_eq!(completion_rate(3, 7), 0.429);
        assert_eq!(completion_rate(2, 3), 0.667);
        assert_eq!(completion_rate(4, 4), 1.0);
    }

    #[test]
    fn enums_read_back_what_they_write() {
        for s in ProjectStatus::ALL {
            assert_eq!(ProjectStatus::parse(s.as_str()), Some(*s));
        }
        assert_eq!(ProjectStatus::parse("done"), None);
        assert_eq!(GoalStage::parse("quarter"), Some(GoalStage::Quarter));
        assert_eq!(Priority::parse("high"), Some(Priority::High));
        assert_eq!(TaskStatus::parse("completed"), Some(TaskStatus::Completed));
    }

    #[test]
    fn a_wrong_kind_of_id_is_not_found_with_a_hint() {
        let err = number(Kind::Project, RecordId::new(Kind::Task, 1))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "\"task-1\" is a task id, not a project id; list_projects lists the projects and their ids"
            )
        );
        assert_eq!(
            missing(RecordId::new(Kind::Goal, 9)).to_string(),
            "no goal has the id goal-9; list_goals lists the goals and their ids"
        );
    }
}
