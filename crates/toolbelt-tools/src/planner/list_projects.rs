//! `list_projects`: the planner's projects, filtered and paged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_store::{ProjectFilter, ProjectStatus};

use crate::planner::{ProjectData, list_text, next_offset, page_limit, project_line};
use crate::stored::store_tool;

/// Arguments of `list_projects`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProjectsParams {
    /// Only projects in this status: `active`, `paused` or `completed`.
    #[serde(default)]
    #[schemars(transform = crate::planner::nullable_choice)]
    pub status: Option<ProjectStatus>,
    /// At most this many projects (default 50, at most 200).
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// Skip this many projects first (default 0), to page.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// Result of `list_projects`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ListProjectsOutput {
    /// The projects of this page, by id.
    pub projects: Vec<ProjectData>,
    /// How many projects match, over all pages.
    pub total: u64,
    /// The offset of this page.
    pub offset: u64,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

store_tool! {
    /// The `list_projects` tool.
    ListProjects
}

impl TypedTool for ListProjects {
    type Params = ListProjectsParams;
    type Output = ListProjectsOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("list_projects", include_str!("list_projects.md"))
            .title("List Projects")
            .category(Category::Project)
            .permission("store:read")
            .key_argument("status")
            .hints(Hints::read_only())
            .example(
                "The paused projects",
                serde_json::json!({"status": "paused"}),
                serde_json::json!({
                    "projects": [{
                        "id": "project-1",
                        "name": "Toolbelt 1.0",
                        "description": "Ship the first stable release",
                        "status": "paused",
                        "goal_ids": ["goal-1", "goal-2"],
                        "created_at": "2026-05-04T09:30:00Z",
                        "updated_at": "2026-05-06T16:02:11Z"
                    }],
                    "total": 1,
                    "offset": 0,
                    "next_offset": null
                }),
            )
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        p: ListProjectsParams,
    ) -> ToolResult<ListProjectsOutput> {
        let offset = p.offset.unwrap_or(0);
        let status = p.status;
        let store = self.store.get().await?;
        let page = store
            .list_projects(&ProjectFilter {
                status,
                limit: Some(page_limit(p.limit)),
                offset,
            })
            .await?;
        let filters: Vec<String> = status.iter().map(|s| format!("status {s}")).collect();
        let lines: Vec<String> = page.items.iter().map(project_line).collect();
        let text = list_text("project", &filters, &lines, offset, page.total);
        Ok(Reply::new(
            ListProjectsOutput {
                next_offset: next_offset(offset, page.items.len(), page.total),
                projects: page.items.iter().map(ProjectData::from).collect(),
                total: page.total,
                offset,
            },
            text,
        ))
    }
}
