//! The projects: created, updated, deleted, read with their stats, listed.

use sqlx::{AnyConnection, Row};
use toolbelt_core::human::plural;

use super::checks::{dedup, missing, number, optional_text, required_text};
use super::enums::{GoalStage, ProjectStatus, TaskStatus};
use super::records::{
    DeletedProject, GoalSummary, MAX_OVERDUE_LISTED, OverdueTask, Page, Project, ProjectStats,
    completion_rate,
};
use super::requests::{NewProject, ProjectFilter, ProjectUpdate};
use super::rows::{
    Arg, PROJECT_COLUMNS, check_goals, corrupt, count, limit_of, links, load_project, offset_of,
    page_rows, project_row, projects_from,
};
use crate::error::{StoreError, StoreResult};
use crate::ids::{Kind, RecordId};
use crate::store::Store;

impl Store {
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
        link_goals(&mut tx, n, goals.iter(), now).await?;
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
            let added = goals.iter().filter(|g| !current.contains(g));
            link_goals(&mut tx, n, added, now).await?;
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
                "{id} still has {tasks} {} ({pending} pending); delete them, move them, or call again with cascade: true",
                plural(tasks as u64, "task")
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
}

/// Links project `project` to each of `goals`, at `now`.
async fn link_goals(
    conn: &mut AnyConnection,
    project: i64,
    goals: impl Iterator<Item = &i64>,
    now: i64,
) -> StoreResult<()> {
    for g in goals {
        sqlx::query(
            "INSERT INTO project_goals (project_id, goal_id, linked_at) VALUES ($1, $2, $3)",
        )
        .bind(project)
        .bind(*g)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
