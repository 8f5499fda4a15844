//! `set_todo_list`: the agent's todo list, rendered for the user (seed 000).

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};

/// Where a todo stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    #[serde(rename = "In Progress")]
    InProgress,
    /// Finished.
    Done,
}

impl TodoStatus {
    fn label(self) -> &'static str {
        match self {
            TodoStatus::Pending => "Pending",
            TodoStatus::InProgress => "In Progress",
            TodoStatus::Done => "Done",
        }
    }
}

/// One todo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    /// What to do.
    #[schemars(length(min = 1))]
    pub title: String,
    /// Pending, In Progress or Done.
    pub status: TodoStatus,
}

/// Arguments of `set_todo_list`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTodoListParams {
    /// The whole updated list; it replaces the previous one. Leave it out to read the current list.
    #[serde(default)]
    pub todos: Option<Vec<Todo>>,
}

/// How many todos are in each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TodoCounts {
    /// Not started.
    pub pending: usize,
    /// Being worked on.
    pub in_progress: usize,
    /// Finished.
    pub done: usize,
}

/// Result of `set_todo_list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TodoListOutput {
    /// The current list.
    pub todos: Vec<Todo>,
    /// The list rendered as markdown: ~~done~~, **in progress**, pending.
    pub brief: String,
    /// A one-line summary for a UI.
    pub message: String,
    /// Counts per status.
    pub counts: TodoCounts,
    /// True when the call replaced the list, false when it only read it.
    pub updated: bool,
}

/// The `set_todo_list` tool. The list lives as long as the tool (one session).
#[derive(Debug, Default)]
pub struct SetTodoList {
    todos: Mutex<Vec<Todo>>,
}

/// Renders a list as seed 000 does: `- ~~title~~ [Done]`, `- **title** [In Progress]`, `- title [Pending]`.
pub fn render(todos: &[Todo]) -> String {
    let mut out = String::new();
    for t in todos {
        let line = match t.status {
            TodoStatus::Done => format!("- ~~{}~~ [{}]\n", t.title, t.status.label()),
            TodoStatus::InProgress => format!("- **{}** [{}]\n", t.title, t.status.label()),
            TodoStatus::Pending => format!("- {} [{}]\n", t.title, t.status.label()),
        };
        out.push_str(&line);
    }
    out
}

fn counts(todos: &[Todo]) -> TodoCounts {
    let mut c = TodoCounts::default();
    for t in todos {
        match t.status {
            TodoStatus::Pending => c.pending += 1,
            TodoStatus::InProgress => c.in_progress += 1,
            TodoStatus::Done => c.done += 1,
        }
    }
    c
}

impl TypedTool for SetTodoList {
    type Params = SetTodoListParams;
    type Output = TodoListOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("set_todo_list", include_str!("set_todo_list.md"))
            .title("Set Todo List")
            .category(Category::Planning)
            .permission("store:write")
            .hints(Hints {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: false,
                concurrency_safe: false,
            })
            .example(
                "Plan three steps, the first one under way",
                serde_json::json!({"todos": [
                    {"title": "Read the failing test", "status": "Done"},
                    {"title": "Fix the parser", "status": "In Progress"},
                    {"title": "Run the whole suite", "status": "Pending"}
                ]}),
                serde_json::json!({
                    "todos": [
                        {"title": "Read the failing test", "status": "Done"},
                        {"title": "Fix the parser", "status": "In Progress"},
                        {"title": "Run the whole suite", "status": "Pending"}
                    ],
                    "brief": "- ~~Read the failing test~~ [Done]\n- **Fix the parser** [In Progress]\n- Run the whole suite [Pending]\n",
                    "message": "Todo list updated: 1 done, 1 in progress, 1 pending",
                    "counts": {"pending": 1, "in_progress": 1, "done": 1},
                    "updated": true
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: SetTodoListParams) -> ToolResult<TodoListOutput> {
        let updated = p.todos.is_some();
        let todos = {
            let mut guard = self.todos.lock().map_err(|_| {
                ToolError::new(
                    ErrorCode::Internal,
                    "the todo list is unavailable after an earlier failure",
                )
            })?;
            if let Some(new) = p.todos {
                *guard = new;
            }
            guard.clone()
        };
        let c = counts(&todos);
        let brief = render(&todos);
        let verb = if updated { "updated" } else { "unchanged" };
        let message = if todos.is_empty() {
            format!("Todo list {verb}: empty")
        } else {
            format!(
                "Todo list {verb}: {} done, {} in progress, {} pending",
                c.done, c.in_progress, c.pending
            )
        };
        ctx.emit(&brief);
        let text = if todos.is_empty() {
            format!("{message}.")
        } else {
            format!("{message}.\n{brief}")
        };
        Ok(Reply::new(
            TodoListOutput {
                todos,
                brief,
                message,
                counts: c,
                updated,
            },
            text.trim_end().to_string(),
        ))
    }
}
