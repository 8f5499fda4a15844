//! The planner: projects, goals and tasks, as methods of [`Store`](crate::Store).
//!
//! Every write runs in one transaction from [`Store::begin_write`](crate::Store::begin_write):
//! the records a request names are read and checked inside it (locked with
//! [`Store::for_update`](crate::Store::for_update) on PostgreSQL), so a check and the write it guards see
//! the same state. Requests that cannot be met are
//! [`StoreError::NotFound`](crate::StoreError::NotFound),
//! [`StoreError::Invalid`](crate::StoreError::Invalid) or
//! [`StoreError::Conflict`](crate::StoreError::Conflict) with a message written for
//! the model.
//!
//! Its files: `enums` (the values of a record's fixed fields), `records` (what is
//! stored and what a call answers), `requests` (what a call asks for), `checks`
//! (a request's ids and texts), `rows` (reading and paging rows), and one file of
//! methods per record kind: `projects`, `goals`, `tasks`.

mod checks;
mod enums;
mod goals;
mod projects;
mod records;
mod requests;
pub(crate) mod rows;
mod tasks;

pub use enums::{GoalStage, Priority, ProjectStatus, TaskStatus};
pub use records::{
    Completion, DeletedProject, Goal, GoalLink, GoalSummary, MAX_OVERDUE_LISTED, OverdueTask, Page,
    Project, ProjectStats, Task, completion_rate,
};
pub use requests::{
    DEFAULT_LIST_LIMIT, GoalFilter, MAX_LIST_LIMIT, NewGoal, NewProject, NewTask, ProjectFilter,
    ProjectUpdate, TaskFilter,
};
