//! The planner's records as stored ([`Project`], [`Goal`], [`Task`]) and what its
//! calls answer: a [`Page`] of a list, [`ProjectStats`], [`DeletedProject`],
//! [`GoalLink`], [`Completion`].

use serde::{Serialize, Serializer};

use super::enums::{GoalStage, Priority, ProjectStatus, TaskStatus};
use crate::ids::RecordId;
#[cfg(doc)]
use crate::store::Store;

/// The most overdue tasks [`ProjectStats::overdue`] lists (all are counted).
pub const MAX_OVERDUE_LISTED: usize = 20;

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

/// One page of a list, and how many records match in all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page<T> {
    /// The records of this page, by id.
    pub items: Vec<T>,
    /// How many records match the filters, over all pages.
    pub total: u64,
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
}
