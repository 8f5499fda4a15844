//! `complete_task`: marks a task done, with an optional note.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_store::Kind;

use crate::planner::{TaskData, one_line, parse_id, rfc3339, task_line};
use crate::stored::store_tool;

/// Arguments of `complete_task`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteTaskParams {
    /// The task, e.g. `task-12`.
    pub task_id: String,
    /// What was done, learned or left over.
    #[serde(default)]
    pub completion_note: Option<String>,
}

/// Result of `complete_task`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CompleteTaskOutput {
    /// The task as it is now.
    pub task: TaskData,
    /// True when it was completed before this call: its first completion time and note were kept.
    pub already_completed: bool,
}

store_tool! {
    /// The `complete_task` tool.
    CompleteTask
}

impl TypedTool for CompleteTask {
    type Params = CompleteTaskParams;
    type Output = CompleteTaskOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("complete_task", include_str!("complete_task.md"))
            .title("Complete Task")
            .category(Category::Task)
            .permission("store:write")
            .key_argument("task_id")
            .hints(Hints::writes().idempotent())
            .example(
                "Complete a task with a note",
                serde_json::json!({"task_id": "task-1", "completion_note": "Merged as docs/RELEASE.md"}),
                serde_json::json!({
                    "task": {
                        "id": "task-1",
                        "title": "Write the release notes",
                        "description": null,
                        "project_id": "project-1",
                        "due_date": "2027-06-15T23:59:59Z",
                        "priority": "high",
                        "status": "completed",
                        "completion_note": "Merged as docs/RELEASE.md",
                        "completed_at": "2026-05-05T11:20:31Z",
                        "created_at": "2026-05-04T09:35:00Z",
                        "updated_at": "2026-05-05T11:20:31Z"
                    },
                    "already_completed": false
                }),
            )
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        p: CompleteTaskParams,
    ) -> ToolResult<CompleteTaskOutput> {
        let id = parse_id(Kind::Task, &p.task_id)?;
        let store = self.store.get().await?;
        let done = store
            .complete_task(id, p.completion_note.as_deref())
            .await?;
        let t = &done.task;
        let at = t.completed_at.map(rfc3339).unwrap_or_default();
        let text = if done.already_completed {
            let mut text = format!("{} was already completed at {at}; nothing changed", t.id);
            match (&t.completion_note, p.completion_note.as_deref()) {
                (Some(kept), Some(_)) => text.push_str(&format!(
                    " (its note stays: {}; the new note was not saved)",
                    one_line(kept)
                )),
                (None, Some(_)) => text.push_str(" (the new note was not saved)"),
                _ => {}
            }
            text.push('.');
            text
        } else {
            format!("Completed {}\n{}", t.id, task_line(t))
        };
        Ok(Reply::new(
            CompleteTaskOutput {
                task: TaskData::from(t),
                already_completed: done.already_completed,
            },
            text,
        ))
    }
}
