//! `create_goal`: a new planner goal, for life, the year or the quarter.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{GoalStage, NewGoal, parse_date};

use crate::planner::{GoalData, blank, goal_line, invalid};
use crate::stored::store_tool;

/// Arguments of `create_goal`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateGoalParams {
    /// What the goal is.
    #[schemars(length(min = 1))]
    pub title: String,
    /// More about it.
    #[serde(default)]
    pub description: Option<String>,
    /// Its horizon: `life`, `yearly` or `quarter`.
    pub stage: GoalStage,
    /// The day it should be reached, `YYYY-MM-DD`.
    #[serde(default)]
    pub deadline: Option<String>,
}

store_tool! {
    /// The `create_goal` tool.
    CreateGoal
}

impl TypedTool for CreateGoal {
    type Params = CreateGoalParams;
    type Output = GoalData;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("create_goal", include_str!("create_goal.md"))
            .title("Create Goal")
            .category(Category::Goal)
            .permission("store:write")
            .key_argument("title")
            .hints(Hints::writes())
            .example(
                "A yearly goal with a deadline",
                serde_json::json!({
                    "title": "Become fluent in Rust",
                    "stage": "yearly",
                    "deadline": "2027-12-31"
                }),
                serde_json::json!({
                    "id": "goal-1",
                    "title": "Become fluent in Rust",
                    "description": null,
                    "stage": "yearly",
                    "deadline": "2027-12-31",
                    "project_ids": [],
                    "created_at": "2026-05-04T09:28:40Z",
                    "updated_at": "2026-05-04T09:28:40Z"
                }),
            )
            .example(
                "A goal for the quarter",
                serde_json::json!({
                    "title": "Ship toolbelt 1.0",
                    "description": "Stable tools, documented",
                    "stage": "quarter",
                    "deadline": "2027-06-30"
                }),
                serde_json::json!({
                    "id": "goal-2",
                    "title": "Ship toolbelt 1.0",
                    "description": "Stable tools, documented",
                    "stage": "quarter",
                    "deadline": "2027-06-30",
                    "project_ids": [],
                    "created_at": "2026-05-04T09:29:05Z",
                    "updated_at": "2026-05-04T09:29:05Z"
                }),
            )
    }

    fn validate(&self, p: &CreateGoalParams) -> Vec<Violation> {
        let mut out: Vec<Violation> = blank("title", &p.title, "a title").into_iter().collect();
        if let Some(Err(why)) = p.deadline.as_deref().map(parse_date) {
            out.push(Violation::new("deadline", why.to_string()));
        }
        out
    }

    async fn call(&self, _ctx: &ToolContext, p: CreateGoalParams) -> ToolResult<GoalData> {
        let deadline = match p.deadline.as_deref().map(parse_date) {
            Some(Ok(d)) => Some(d),
            Some(Err(why)) => return Err(invalid("deadline", why)),
            None => None,
        };
        let store = self.store.get().await?;
        let goal = store
            .create_goal(&NewGoal {
                title: p.title,
                description: p.description,
                stage: p.stage,
                deadline,
            })
            .await?;
        let text = format!(
            "Created {}\n{}\nLink projects to it with link_goal_to_project.",
            goal.id,
            goal_line(&goal)
        );
        Ok(Reply::new(GoalData::from(&goal), text))
    }
}
