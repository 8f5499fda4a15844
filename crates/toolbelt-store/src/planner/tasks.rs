//! The tasks: created, read, completed, listed.

use sqlx::Row;

use super::checks::{missing, number, optional_text, required_text};
use super::enums::TaskStatus;
use super::records::{Completion, Page, Task};
use super::requests::{NewTask, TaskFilter};
use super::rows::{
    Arg, TASK_COLUMNS, limit_of, load_task, offset_of, page_rows, project_row, task_from,
};
#[cfg(doc)]
use crate::error::StoreError;
use crate::error::StoreResult;
use crate::ids::{Kind, RecordId};
use crate::store::Store;

impl Store {
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
