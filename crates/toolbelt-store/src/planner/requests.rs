//! What the planner's calls ask for: the new records ([`NewProject`], [`NewGoal`],
//! [`NewTask`]), a [`ProjectUpdate`], and the filters of its lists.

use chrono::NaiveDate;

use super::enums::{GoalStage, Priority, ProjectStatus, TaskStatus};
use crate::ids::RecordId;
#[cfg(doc)]
use crate::store::Store;

/// The most records one list call returns.
pub const MAX_LIST_LIMIT: u32 = 200;
/// How many records a list call returns when no limit is given.
pub const DEFAULT_LIST_LIMIT: u32 = 50;

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
