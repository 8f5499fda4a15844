//! `create_task`: a new pending task, optionally in a project.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{DayEdge, Kind, NewTask, Priority, parse_instant};

use crate::planner::{TaskData, blank, invalid, parse_id, task_line};
use crate::stored::store_tool;

/// Arguments of `create_task`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTaskParams {
    /// What to do.
    #[schemars(length(min = 1))]
    pub title: String,
    /// More about it.
    #[serde(default)]
    pub description: Option<String>,
    /// The project it belongs to, e.g. `project-3`.
    #[serde(default)]
    pub project_id: Option<String>,
    /// When it is due: an RFC 3339 date-time with a zone (`2026-03-01T17:00:00Z`), or a date `YYYY-MM-DD` meaning the end of that day (23:59:59 UTC).
    #[serde(default)]
    pub due_date: Option<String>,
    /// `low`, `medium` (the default) or `high`.
    #[serde(default)]
    #[schemars(transform = crate::planner::nullable_choice)]
    pub priority: Option<Priority>,
}

store_tool! {
    /// The `create_task` tool.
    CreateTask
}

impl TypedTool for CreateTask {
    type Params = CreateTaskParams;
    type Output = TaskData;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("create_task", include_str!("create_task.md"))
            .title("Create Task")
            .category(Category::Task)
            .permission("store:write")
            .key_argument("title")
            .hints(Hints::writes())
            .example(
                "A task due on a day, in a project",
                serde_json::json!({
                    "title": "Write the release notes",
                    "project_id": "project-1",
                    "due_date": "2027-06-15",
                    "priority": "high"
                }),
                serde_json::json!({
                    "id": "task-1",
                    "title": "Write the release notes",
                    "description": null,
                    "project_id": "project-1",
                    "due_date": "2027-06-15T23:59:59Z",
                    "priority": "high",
                    "status": "pending",
                    "completion_note": null,
                    "completed_at": null,
                    "created_at": "2026-05-04T09:35:00Z",
                    "updated_at": "2026-05-04T09:35:00Z"
                }),
            )
            .example(
                "A task due at a time in another zone",
                serde_json::json!({
                    "title": "Tag the release",
                    "description": "After the notes are merged",
                    "project_id": "project-1",
                    "due_date": "2027-06-20T17:00:00+08:00"
                }),
                serde_json::json!({
                    "id": "task-2",
                    "title": "Tag the release",
                    "description": "After the notes are merged",
                    "project_id": "project-1",
                    "due_date": "2027-06-20T09:00:00Z",
                    "priority": "medium",
                    "status": "pending",
                    "completion_note": null,
                    "completed_at": null,
                    "created_at": "2026-05-04T09:36:00Z",
                    "updated_at": "2026-05-04T09:36:00Z"
                }),
            )
    }

    fn validate(&self, p: &CreateTaskParams) -> Vec<Violation> {
        let mut out: Vec<Violation> = blank("title", &p.title, "a title").into_iter().collect();
        if let Some(Err(why)) = p
            .due_date
            .as_deref()
            .map(|d| parse_instant(d, DayEdge::End))
        {
            out.push(Violation::new("due_date", why.to_string()));
        }
        out
    }

    async fn call(&self, _ctx: &ToolContext, p: CreateTaskParams) -> ToolResult<TaskData> {
        let due_at = match p
            .due_date
            .as_deref()
            .map(|d| parse_instant(d, DayEdge::End))
        {
            Some(Ok(ms)) => Some(ms),
            Some(Err(why)) => return Err(invalid("due_date", why)),
            None => None,
        };
        let project_id = match p.project_id.as_deref() {
            Some(t) => Some(parse_id(Kind::Project, t)?),
            None => None,
        };
        let store = self.store.get().await?;
        let task = store
            .create_task(&NewTask {
                title: p.title,
                description: p.description,
                project_id,
                due_at,
                priority: p.priority.unwrap_or(Priority::Medium),
            })
            .await?;
        let text = format!(
            "Created {}\n{}\nMark it done with complete_task.",
            task.id,
            task_line(&task)
        );
        Ok(Reply::new(TaskData::from(&task), text))
    }
}
