//! `create_project`: a new planner project, optionally serving goals.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{Kind, NewProject, ProjectStatus};

use crate::planner::{ProjectData, blank, one_line, parse_ids};
use crate::stored::store_tool;

/// Arguments of `create_project`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProjectParams {
    /// The project's name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// What the project is about.
    #[serde(default)]
    pub description: Option<String>,
    /// Goals the project serves, by id (`goal-3`); each must exist.
    #[serde(default)]
    pub goal_ids: Option<Vec<String>>,
    /// `active` (the default), `paused` or `completed`.
    #[serde(default)]
    #[schemars(transform = crate::planner::nullable_choice)]
    pub status: Option<ProjectStatus>,
}

store_tool! {
    /// The `create_project` tool.
    CreateProject
}

impl TypedTool for CreateProject {
    type Params = CreateProjectParams;
    type Output = ProjectData;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("create_project", include_str!("create_project.md"))
            .title("Create Project")
            .category(Category::Project)
            .permission("store:write")
            .key_argument("name")
            .hints(Hints::writes())
            .example(
                "Create a project that serves a goal",
                serde_json::json!({
                    "name": "Toolbelt 1.0",
                    "description": "Ship the first stable release",
                    "goal_ids": ["goal-1"]
                }),
                serde_json::json!({
                    "id": "project-1",
                    "name": "Toolbelt 1.0",
                    "description": "Ship the first stable release",
                    "status": "active",
                    "goal_ids": ["goal-1"],
                    "created_at": "2026-05-04T09:30:00Z",
                    "updated_at": "2026-05-04T09:30:00Z"
                }),
            )
    }

    fn validate(&self, p: &CreateProjectParams) -> Vec<Violation> {
        blank("name", &p.name, "a name").into_iter().collect()
    }

    async fn call(&self, _ctx: &ToolContext, p: CreateProjectParams) -> ToolResult<ProjectData> {
        let goal_ids = parse_ids(Kind::Goal, p.goal_ids.as_deref().unwrap_or_default())?;
        let store = self.store.get().await?;
        let project = store
            .create_project(&NewProject {
                name: p.name,
                description: p.description,
                status: p.status.unwrap_or(ProjectStatus::Active),
                goal_ids,
            })
            .await?;
        let mut text = format!(
            "Created {} \"{}\" ({})",
            project.id,
            one_line(&project.name),
            project.status
        );
        if project.goal_ids.is_empty() {
            text.push_str("; no goals linked (link_goal_to_project links one).");
        } else {
            let ids: Vec<String> = project.goal_ids.iter().map(ToString::to_string).collect();
            text.push_str(&format!(", serving {}.", ids.join(", ")));
        }
        Ok(Reply::new(ProjectData::from(&project), text))
    }
}
