//! `link_goal_to_project`: a project serves a goal. Idempotent.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_store::Kind;

use crate::planner::{parse_id, rfc3339};
use crate::stored::store_tool;

/// Arguments of `link_goal_to_project`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkGoalToProjectParams {
    /// The goal, e.g. `goal-2`.
    pub goal_id: String,
    /// The project, e.g. `project-3`.
    pub project_id: String,
}

/// Result of `link_goal_to_project`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LinkGoalOutput {
    /// The goal.
    pub goal_id: String,
    /// The project.
    pub project_id: String,
    /// True when they were already linked: nothing changed.
    pub already_linked: bool,
    /// When they were linked (RFC 3339, UTC).
    pub linked_at: String,
}

store_tool! {
    /// The `link_goal_to_project` tool.
    LinkGoalToProject
}

impl TypedTool for LinkGoalToProject {
    type Params = LinkGoalToProjectParams;
    type Output = LinkGoalOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe(
            "link_goal_to_project",
            include_str!("link_goal_to_project.md"),
        )
        .title("Link Goal to Project")
        .category(Category::Goal)
        .permission("store:write")
        .key_argument("goal_id")
        .hints(Hints::writes().idempotent())
        .example(
            "A project serves one more goal",
            serde_json::json!({"goal_id": "goal-2", "project_id": "project-1"}),
            serde_json::json!({
                "goal_id": "goal-2",
                "project_id": "project-1",
                "already_linked": false,
                "linked_at": "2026-05-04T09:31:12Z"
            }),
        )
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        p: LinkGoalToProjectParams,
    ) -> ToolResult<LinkGoalOutput> {
        let goal = parse_id(Kind::Goal, &p.goal_id)?;
        let project = parse_id(Kind::Project, &p.project_id)?;
        let store = self.store.get().await?;
        let link = store.link_goal_to_project(goal, project).await?;
        let linked_at = rfc3339(link.linked_at);
        let text = if link.already_linked {
            format!(
                "{} and {} were already linked (since {linked_at}); nothing changed.",
                link.goal_id, link.project_id
            )
        } else {
            format!("Linked {} to {}.", link.goal_id, link.project_id)
        };
        Ok(Reply::new(
            LinkGoalOutput {
                goal_id: link.goal_id.to_string(),
                project_id: link.project_id.to_string(),
                already_linked: link.already_linked,
                linked_at,
            },
            text,
        ))
    }
}
