//! `delete_project`: deletes a project, and with `cascade` its tasks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::human::plural;
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_store::Kind;

use crate::planner::{one_line, parse_id};
use crate::stored::store_tool;

/// Arguments of `delete_project`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteProjectParams {
    /// The project, e.g. `project-3`.
    pub project_id: String,
    /// Also delete the project's tasks. Without it, a project that still has tasks is not deleted.
    #[serde(default)]
    pub cascade: bool,
}

/// Result of `delete_project`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DeleteProjectOutput {
    /// The project deleted.
    pub project_id: String,
    /// Its name.
    pub name: String,
    /// Whether its tasks were to be deleted with it.
    pub cascade: bool,
    /// How many of its tasks were deleted.
    pub tasks_deleted: u64,
    /// How many goal links were removed (the goals remain).
    pub goals_unlinked: u64,
    /// How many reviews lost their link to it (the reviews remain).
    pub reviews_unlinked: u64,
}

store_tool! {
    /// The `delete_project` tool.
    DeleteProject
}

impl TypedTool for DeleteProject {
    type Params = DeleteProjectParams;
    type Output = DeleteProjectOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("delete_project", include_str!("delete_project.md"))
            .title("Delete Project")
            .category(Category::Project)
            .permission("store:write")
            .key_argument("project_id")
            .hints(Hints::writes().destructive().idempotent())
            .example(
                "Delete a project together with its tasks",
                serde_json::json!({"project_id": "project-1", "cascade": true}),
                serde_json::json!({
                    "project_id": "project-1",
                    "name": "Toolbelt 1.0",
                    "cascade": true,
                    "tasks_deleted": 2,
                    "goals_unlinked": 2,
                    "reviews_unlinked": 0
                }),
            )
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        p: DeleteProjectParams,
    ) -> ToolResult<DeleteProjectOutput> {
        let id = parse_id(Kind::Project, &p.project_id)?;
        let store = self.store.get().await?;
        let d = store.delete_project(id, p.cascade).await?;
        let mut text = format!("Deleted {} \"{}\"", d.id, one_line(&d.name));
        if d.tasks_deleted > 0 {
            text.push_str(&format!(
                " and its {} {}",
                d.tasks_deleted,
                plural(d.tasks_deleted, "task")
            ));
        } else {
            text.push_str(" (it had no tasks)");
        }
        text.push('.');
        let mut unlinked = Vec::new();
        if d.goals_unlinked > 0 {
            unlinked.push(format!(
                "{} {}",
                d.goals_unlinked,
                plural(d.goals_unlinked, "goal")
            ));
        }
        if d.reviews_unlinked > 0 {
            unlinked.push(format!(
                "{} {}",
                d.reviews_unlinked,
                plural(d.reviews_unlinked, "review")
            ));
        }
        if !unlinked.is_empty() {
            text.push_str(&format!(
                " Unlinked {}; they remain.",
                unlinked.join(" and ")
            ));
        }
        Ok(Reply::new(
            DeleteProjectOutput {
                project_id: d.id.to_string(),
                name: d.name,
                cascade: p.cascade,
                tasks_deleted: d.tasks_deleted,
                goals_unlinked: d.goals_unlinked,
                reviews_unlinked: d.reviews_unlinked,
            },
            text,
        ))
    }
}
