//! What the planner tools share: their enums as models write them, the records as
//! they come back (ids like `project-12`, times in RFC 3339 UTC), errors naming
//! the field, and the one-line renderings of records.

pub(crate) mod analyze_patterns;
pub(crate) mod complete_task;
pub(crate) mod create_goal;
pub(crate) mod create_project;
pub(crate) mod create_task;
pub(crate) mod delete_project;
pub(crate) mod get_project;
pub(crate) mod link_goal_to_project;
pub(crate) mod list_goals;
pub(crate) mod list_projects;
pub(crate) mod list_reviews;
pub(crate) mod list_tasks;
pub(crate) mod reviews;
pub(crate) mod update_project;
pub(crate) mod write_review;

use schemars::JsonSchema;
use serde::Serialize;
use toolbelt_core::human::plural;
use toolbelt_core::{ErrorCode, ToolError, Violation};
use toolbelt_store::{
    Goal, GoalStage, Kind, Priority, Project, ProjectStatus, RecordId, Task, TaskStatus,
};

/// Rewrites the schema of an optional enum, `{"type": ["string", "null"], "enum":
/// [..., null]}`, as `{"anyOf": [{"type": "string", "enum": [...]}, {"type":
/// "null"}]}`, so that a wrong value is reported with every allowed value.
pub(crate) fn nullable_choice(schema: &mut schemars::Schema) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let Some(serde_json::Value::Array(values)) = map.remove("enum") else {
        return;
    };
    let values: Vec<serde_json::Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    map.remove("type");
    map.insert(
        "anyOf".into(),
        serde_json::json!([{"type": "string", "enum": values}, {"type": "null"}]),
    );
}

/// A project as the planner tools return it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProjectData {
    /// `project-N`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it is about.
    pub description: Option<String>,
    /// `active`, `paused` or `completed`.
    pub status: ProjectStatus,
    /// The goals it serves.
    pub goal_ids: Vec<String>,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// When it last changed (RFC 3339, UTC).
    pub updated_at: String,
}

impl From<&Project> for ProjectData {
    fn from(p: &Project) -> ProjectData {
        ProjectData {
            id: p.id.to_string(),
            name: p.name.clone(),
            description: p.description.clone(),
            status: p.status,
            goal_ids: p.goal_ids.iter().map(ToString::to_string).collect(),
            created_at: rfc3339(p.created_at),
            updated_at: rfc3339(p.updated_at),
        }
    }
}

/// A goal as the planner tools return it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GoalData {
    /// `goal-N`.
    pub id: String,
    /// What it is.
    pub title: String,
    /// More about it.
    pub description: Option<String>,
    /// `life`, `yearly` or `quarter`.
    pub stage: GoalStage,
    /// The day it should be reached, `YYYY-MM-DD`.
    pub deadline: Option<String>,
    /// The projects linked to it.
    pub project_ids: Vec<String>,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// When it last changed (RFC 3339, UTC).
    pub updated_at: String,
}

impl From<&Goal> for GoalData {
    fn from(g: &Goal) -> GoalData {
        GoalData {
            id: g.id.to_string(),
            title: g.title.clone(),
            description: g.description.clone(),
            stage: g.stage,
            deadline: g.deadline.clone(),
            project_ids: g.project_ids.iter().map(ToString::to_string).collect(),
            created_at: rfc3339(g.created_at),
            updated_at: rfc3339(g.updated_at),
        }
    }
}

/// A task as the planner tools return it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskData {
    /// `task-N`.
    pub id: String,
    /// What to do.
    pub title: String,
    /// More about it.
    pub description: Option<String>,
    /// The project it belongs to.
    pub project_id: Option<String>,
    /// When it is due (RFC 3339, UTC).
    pub due_date: Option<String>,
    /// `low`, `medium` or `high`.
    pub priority: Priority,
    /// `pending` or `completed`.
    pub status: TaskStatus,
    /// What was said when it was completed.
    pub completion_note: Option<String>,
    /// When it was completed (RFC 3339, UTC).
    pub completed_at: Option<String>,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// When it last changed (RFC 3339, UTC).
    pub updated_at: String,
}

impl From<&Task> for TaskData {
    fn from(t: &Task) -> TaskData {
        TaskData {
            id: t.id.to_string(),
            title: t.title.clone(),
            description: t.description.clone(),
            project_id: t.project_id.map(|p| p.to_string()),
            due_date: t.due_at.map(rfc3339),
            priority: t.priority,
            status: t.status,
            completion_note: t.completion_note.clone(),
            completed_at: t.completed_at.map(rfc3339),
            created_at: rfc3339(t.created_at),
            updated_at: rfc3339(t.updated_at),
        }
    }
}

/// Milliseconds since the epoch as RFC 3339 in UTC, to the second: `2026-03-01T17:00:00Z`
/// (the store's formatting, shared with the review tools).
pub use toolbelt_store::rfc3339_utc as rfc3339;

/// Reads an id of `kind`; a malformed id or one of another kind is NOT_FOUND with
/// a hint naming the tool that lists them.
pub(crate) fn parse_id(kind: Kind, text: &str) -> Result<RecordId, ToolError> {
    Ok(RecordId::parse(kind, text)?)
}

/// Reads ids of `kind`.
pub(crate) fn parse_ids(kind: Kind, texts: &[String]) -> Result<Vec<RecordId>, ToolError> {
    texts.iter().map(|t| parse_id(kind, t)).collect()
}

/// A violation when a required text is only whitespace.
pub(crate) fn blank(path: &str, text: &str, what: &str) -> Option<Violation> {
    (!text.is_empty() && text.trim().is_empty()).then(|| {
        Violation::new(
            path,
            format!("is only whitespace; give {what} with at least one visible character"),
        )
    })
}

/// An INVALID_PARAMS error for `field`, for a value that passed validation but
/// not the store.
pub(crate) fn invalid(field: &str, message: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::InvalidParams, format!("{field}: {message}"))
        .hint("fix the argument and call again")
}

/// Text on one line: newlines and runs of whitespace become one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn list_ids(ids: &[RecordId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `project-1 [active] Toolbelt 1.0 (goals: goal-1, goal-2)`.
pub(crate) fn project_line(p: &Project) -> String {
    let mut line = format!("{} [{}] {}", p.id, p.status, one_line(&p.name));
    if !p.goal_ids.is_empty() {
        line.push_str(&format!(" (goals: {})", list_ids(&p.goal_ids)));
    }
    line
}

/// `goal-1 [quarter, deadline 2027-06-30] Ship 1.0 (projects: project-1)`.
pub(crate) fn goal_line(g: &Goal) -> String {
    let mut line = format!("{} [{}", g.id, g.stage);
    if let Some(d) = &g.deadline {
        line.push_str(&format!(", deadline {d}"));
    }
    line.push_str(&format!("] {}", one_line(&g.title)));
    if !g.project_ids.is_empty() {
        line.push_str(&format!(" (projects: {})", list_ids(&g.project_ids)));
    }
    line
}

/// `task-1 [pending, high, due 2027-06-15T23:59:59Z] Write the tests (project-1)`.
pub(crate) fn task_line(t: &Task) -> String {
    let mut line = match (t.status, t.completed_at) {
        (TaskStatus::Completed, Some(at)) => {
            format!("{} [completed {}, {}", t.id, rfc3339(at), t.priority)
        }
        _ => format!("{} [{}, {}", t.id, t.status, t.priority),
    };
    if let Some(due) = t.due_at {
        line.push_str(&format!(", due {}", rfc3339(due)));
    }
    line.push_str(&format!("] {}", one_line(&t.title)));
    if let Some(p) = t.project_id {
        line.push_str(&format!(" ({p})"));
    }
    line
}

/// The page size a list call uses.
pub(crate) fn page_limit(limit: Option<u32>) -> u32 {
    limit
        .unwrap_or(toolbelt_store::DEFAULT_LIST_LIMIT)
        .clamp(1, toolbelt_store::MAX_LIST_LIMIT)
}

/// The offset of the next page, when there is one.
pub(crate) fn next_offset(offset: u64, shown: usize, total: u64) -> Option<u64> {
    let end = offset + shown as u64;
    (shown > 0 && end < total).then_some(end)
}

/// The text of a list: a header, then one line per record.
pub(crate) fn list_text(
    noun: &str,
    filters: &[String],
    lines: &[String],
    offset: u64,
    total: u64,
) -> String {
    let filtered = if filters.is_empty() {
        String::new()
    } else {
        format!(" matching {}", filters.join(", "))
    };
    if lines.is_empty() {
        if total > 0 {
            return format!(
                "No {noun}s at offset {offset}: {total} {}{filtered} in all; call again with a smaller offset.",
                plural(total, noun)
            );
        }
        return format!("No {noun}s{filtered}.");
    }
    let shown = lines.len() as u64;
    let mut text = if offset == 0 && shown == total {
        format!("{total} {}{filtered}:", plural(total, noun))
    } else {
        format!(
            "{}-{} of {total} {}{filtered}:",
            offset + 1,
            offset + shown,
            plural(total, noun)
        )
    };
    for line in lines {
        text.push('\n');
        text.push_str(line);
    }
    if let Some(next) = next_offset(offset, lines.len(), total) {
        text.push_str(&format!("\nMore: call again with offset {next}."));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_say_what_they_show_and_how_to_page() {
        let lines = vec!["a".to_string(), "b".to_string()];
        assert_eq!(list_text("task", &[], &lines, 0, 2), "2 tasks:\na\nb");
        assert_eq!(
            list_text("task", &["status pending".into()], &lines, 2, 7),
            "3-4 of 7 tasks matching status pending:\na\nb\nMore: call again with offset 4."
        );
        assert_eq!(list_text("goal", &[], &[], 0, 0), "No goals.");
        assert_eq!(
            list_text("goal", &[], &[], 10, 1),
            "No goals at offset 10: 1 goal in all; call again with a smaller offset."
        );
    }
}
