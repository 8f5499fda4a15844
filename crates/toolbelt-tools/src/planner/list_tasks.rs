//! `list_tasks`: the planner's tasks, filtered and paged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{DayEdge, Kind, Priority, TaskFilter, TaskStatus, parse_instant};

use crate::planner::{
    TaskData, invalid, list_text, next_offset, page_limit, parse_id, rfc3339, task_line,
};
use crate::stored::store_tool;

/// Arguments of `list_tasks`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksParams {
    /// Only tasks of this project, e.g. `project-3`.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Only `pending` or only `completed` tasks.
    #[serde(default)]
    #[schemars(transform = crate::planner::nullable_choice)]
    pub status: Option<TaskStatus>,
    /// Only tasks of this priority: `low`, `medium` or `high`.
    #[serde(default)]
    #[schemars(transform = crate::planner::nullable_choice)]
    pub priority: Option<Priority>,
    /// Only tasks due at or before this time: an RFC 3339 date-time with a zone, or a date `YYYY-MM-DD` (through the end of that day, UTC).
    #[serde(default)]
    pub due_before: Option<String>,
    /// Only tasks due at or after this time: an RFC 3339 date-time with a zone, or a date `YYYY-MM-DD` (from the start of that day, UTC).
    #[serde(default)]
    pub due_after: Option<String>,
    /// At most this many tasks (default 50, at most 200).
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// Skip this many tasks first (default 0), to page.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// Result of `list_tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ListTasksOutput {
    /// The tasks of this page, by id.
    pub tasks: Vec<TaskData>,
    /// How many tasks match, over all pages.
    pub total: u64,
    /// The offset of this page.
    pub offset: u64,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

store_tool! {
    /// The `list_tasks` tool.
    ListTasks
}

fn bounds(p: &ListTasksParams) -> [(&'static str, Option<&str>, DayEdge); 2] {
    [
        ("due_before", p.due_before.as_deref(), DayEdge::End),
        ("due_after", p.due_after.as_deref(), DayEdge::Start),
    ]
}

impl TypedTool for ListTasks {
    type Params = ListTasksParams;
    type Output = ListTasksOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("list_tasks", include_str!("list_tasks.md"))
            .title("List Tasks")
            .category(Category::Task)
            .permission("store:read")
            .key_argument("project_id")
            .hints(Hints::read_only())
            .example(
                "A project's pending tasks due by the end of June 2027",
                serde_json::json!({"project_id": "project-1", "status": "pending", "due_before": "2027-06-30"}),
                serde_json::json!({
                    "tasks": [{
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
                    }],
                    "total": 1,
                    "offset": 0,
                    "next_offset": null
                }),
            )
    }

    fn validate(&self, p: &ListTasksParams) -> Vec<Violation> {
        bounds(p)
            .into_iter()
            .filter_map(
                |(field, text, edge)| match text.map(|t| parse_instant(t, edge)) {
                    Some(Err(why)) => Some(Violation::new(field, why.to_string())),
                    _ => None,
                },
            )
            .collect()
    }

    async fn call(&self, _ctx: &ToolContext, p: ListTasksParams) -> ToolResult<ListTasksOutput> {
        let mut due = [None, None];
        for (slot, (field, text, edge)) in due.iter_mut().zip(bounds(&p)) {
            *slot = match text.map(|t| parse_instant(t, edge)) {
                Some(Ok(ms)) => Some(ms),
                Some(Err(why)) => return Err(invalid(field, why)),
                None => None,
            };
        }
        let [due_before, due_after] = due;
        let project_id = match p.project_id.as_deref() {
            Some(t) => Some(parse_id(Kind::Project, t)?),
            None => None,
        };
        let offset = p.offset.unwrap_or(0);
        let status = p.status;
        let priority = p.priority;
        let store = self.store.get().await?;
        let page = store
            .list_tasks(&TaskFilter {
                project_id,
                status,
                priority,
                due_before,
                due_after,
                limit: Some(page_limit(p.limit)),
                offset,
            })
            .await?;
        let mut filters = Vec::new();
        filters.extend(project_id.iter().map(|id| format!("project {id}")));
        filters.extend(status.iter().map(|s| format!("status {s}")));
        filters.extend(priority.iter().map(|s| format!("priority {s}")));
        filters.extend(
            due_after
                .iter()
                .map(|ms| format!("due from {}", rfc3339(*ms))),
        );
        filters.extend(
            due_before
                .iter()
                .map(|ms| format!("due by {}", rfc3339(*ms))),
        );
        let lines: Vec<String> = page.items.iter().map(task_line).collect();
        let text = list_text("task", &filters, &lines, offset, page.total);
        Ok(Reply::new(
            ListTasksOutput {
                next_offset: next_offset(offset, page.items.len(), page.total),
                tasks: page.items.iter().map(TaskData::from).collect(),
                total: page.total,
                offset,
            },
            text,
        ))
    }
}
