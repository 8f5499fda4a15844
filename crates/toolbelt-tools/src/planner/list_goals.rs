//! `list_goals`: the planner's goals, filtered and paged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_store::{GoalFilter, GoalStage, Kind};

use crate::planner::{GoalData, goal_line, list_text, next_offset, page_limit, parse_id};
use crate::stored::store_tool;

/// Arguments of `list_goals`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListGoalsParams {
    /// Only goals of this horizon: `life`, `yearly` or `quarter`.
    #[serde(default)]
    #[schemars(transform = crate::planner::nullable_choice)]
    pub stage: Option<GoalStage>,
    /// Only goals linked to this project, e.g. `project-3`.
    #[serde(default)]
    pub project_id: Option<String>,
    /// At most this many goals (default 50, at most 200).
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// Skip this many goals first (default 0), to page.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// Result of `list_goals`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ListGoalsOutput {
    /// The goals of this page, by id.
    pub goals: Vec<GoalData>,
    /// How many goals match, over all pages.
    pub total: u64,
    /// The offset of this page.
    pub offset: u64,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

store_tool! {
    /// The `list_goals` tool.
    ListGoals
}

impl TypedTool for ListGoals {
    type Params = ListGoalsParams;
    type Output = ListGoalsOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("list_goals", include_str!("list_goals.md"))
            .title("List Goals")
            .category(Category::Goal)
            .permission("store:read")
            .key_argument("stage")
            .hints(Hints::read_only())
            .example(
                "The quarter's goals",
                serde_json::json!({"stage": "quarter"}),
                serde_json::json!({
                    "goals": [{
                        "id": "goal-2",
                        "title": "Ship toolbelt 1.0",
                        "description": "Stable tools, documented",
                        "stage": "quarter",
                        "deadline": "2027-06-30",
                        "project_ids": ["project-1"],
                        "created_at": "2026-05-04T09:29:05Z",
                        "updated_at": "2026-05-04T09:29:05Z"
                    }],
                    "total": 1,
                    "offset": 0,
                    "next_offset": null
                }),
            )
    }

    async fn call(&self, _ctx: &ToolContext, p: ListGoalsParams) -> ToolResult<ListGoalsOutput> {
        let project_id = match p.project_id.as_deref() {
            Some(t) => Some(parse_id(Kind::Project, t)?),
            None => None,
        };
        let offset = p.offset.unwrap_or(0);
        let stage = p.stage;
        let store = self.store.get().await?;
        let page = store
            .list_goals(&GoalFilter {
                stage,
                project_id,
                limit: Some(page_limit(p.limit)),
                offset,
            })
            .await?;
        let mut filters: Vec<String> = stage.iter().map(|s| format!("stage {s}")).collect();
        filters.extend(project_id.iter().map(|id| format!("project {id}")));
        let lines: Vec<String> = page.items.iter().map(goal_line).collect();
        let text = list_text("goal", &filters, &lines, offset, page.total);
        Ok(Reply::new(
            ListGoalsOutput {
                next_offset: next_offset(offset, page.items.len(), page.total),
                goals: page.items.iter().map(GoalData::from).collect(),
                total: page.total,
                offset,
            },
            text,
        ))
    }
}
