//! `update_project`: changes a project's name, description, status or goals.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{Kind, ProjectStatus, ProjectUpdate};

use crate::planner::{ProjectData, blank, parse_id, parse_ids, project_line};
use crate::stored::store_tool;

/// The fields `update_project` changes; those left out stay as they are.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectUpdates {
    /// A new name.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub name: Option<String>,
    /// A new description; an empty string clears it.
    #[serde(default)]
    pub description: Option<String>,
    /// A new status: `active`, `paused` or `completed`.
    #[serde(default)]
    #[schemars(transform = crate::planner::nullable_choice)]
    pub status: Option<ProjectStatus>,
    /// The goals the project serves, replacing the current set (`[]` unlinks them all).
    #[serde(default)]
    pub goal_ids: Option<Vec<String>>,
}

/// Arguments of `update_project`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProjectParams {
    /// The project, e.g. `project-3`.
    pub project_id: String,
    /// What to change: at least one of `name`, `description`, `status`, `goal_ids`.
    pub updates: ProjectUpdates,
}

store_tool! {
    /// The `update_project` tool.
    UpdateProject
}

impl TypedTool for UpdateProject {
    type Params = UpdateProjectParams;
    type Output = ProjectData;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("update_project", include_str!("update_project.md"))
            .title("Update Project")
            .category(Category::Project)
            .permission("store:write")
            .key_argument("project_id")
            .hints(Hints::writes().idempotent())
            .example(
                "Pause a project and make it serve two goals",
                serde_json::json!({
                    "project_id": "project-1",
                    "updates": {"status": "paused", "goal_ids": ["goal-1", "goal-2"]}
                }),
                serde_json::json!({
                    "id": "project-1",
                    "name": "Toolbelt 1.0",
                    "description": "Ship the first stable release",
                    "status": "paused",
                    "goal_ids": ["goal-1", "goal-2"],
                    "created_at": "2026-05-04T09:30:00Z",
                    "updated_at": "2026-05-06T16:02:11Z"
                }),
            )
    }

    fn validate(&self, p: &UpdateProjectParams) -> Vec<Violation> {
        let u = &p.updates;
        if u.name.is_none() && u.description.is_none() && u.status.is_none() && u.goal_ids.is_none()
        {
            return vec![Violation::new(
                "updates",
                format!(
                    "is empty; give at least one of the fields that can be updated: {}",
                    ProjectUpdate::FIELDS
                ),
            )];
        }
        u.name
            .as_deref()
            .and_then(|n| blank("updates.name", n, "a name"))
            .into_iter()
            .collect()
    }

    async fn call(&self, _ctx: &ToolContext, p: UpdateProjectParams) -> ToolResult<ProjectData> {
        let id = parse_id(Kind::Project, &p.project_id)?;
        let goal_ids = match &p.updates.goal_ids {
            Some(ids) => Some(parse_ids(Kind::Goal, ids)?),
            None => None,
        };
        let update = ProjectUpdate {
            name: p.updates.name,
            description: p.updates.description,
            status: p.updates.status,
            goal_ids,
        };
        let store = self.store.get().await?;
        let project = store.update_project(id, &update).await?;
        let text = format!(
            "Updated {} ({}):\n{}",
            project.id,
            update.fields().join(", "),
            project_line(&project)
        );
        Ok(Reply::new(ProjectData::from(&project), text))
    }
}
