//! The goals: created, read, linked to projects, listed.

use sqlx::Row;

use super::checks::{missing, number, optional_text, required_text};
use super::records::{Goal, GoalLink, Page};
use super::requests::{GoalFilter, NewGoal};
use super::rows::{
    Arg, GOAL_COLUMNS, check_goals, goals_from, limit_of, load_goal, offset_of, page_rows,
    project_row,
};
#[cfg(doc)]
use crate::error::StoreError;
use crate::error::StoreResult;
use crate::ids::{Kind, RecordId};
use crate::store::Store;

impl Store {
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
}
