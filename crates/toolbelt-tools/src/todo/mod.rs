//! The todo toolset: [`set_todo_list::SetTodoList`] writes or reads the agent's
//! todo list, [`update_todos::UpdateTodos`] changes it by id; and what they
//! share: the todos as models see them, the list's key, and the output of a list.

pub(crate) mod set_todo_list;
pub(crate) mod update_todos;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{ToolContext, ToolError};
use toolbelt_store::{DEFAULT_TODO_LIST, StoredTodo, TodoListKey};

use crate::stored::workspace_key;

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
    /// `Pending`, `In Progress` or `Done`, as stored and shown.
    pub fn label(self) -> &'static str {
        match self {
            TodoStatus::Pending => "Pending",
            TodoStatus::InProgress => "In Progress",
            TodoStatus::Done => "Done",
        }
    }

    /// The status of a stored label; anything unknown reads as `Pending`.
    pub fn from_label(label: &str) -> TodoStatus {
        match label {
            "Done" => TodoStatus::Done,
            "In Progress" => TodoStatus::InProgress,
            _ => TodoStatus::Pending,
        }
    }
}

/// One todo of a list, with its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Todo {
    /// Its id in the list: stable across changes, never reused.
    pub id: u64,
    /// What to do.
    pub title: String,
    /// Pending, In Progress or Done.
    pub status: TodoStatus,
}

impl From<StoredTodo> for Todo {
    fn from(t: StoredTodo) -> Todo {
        Todo {
            id: u64::try_from(t.id).unwrap_or(0),
            title: t.title,
            status: TodoStatus::from_label(&t.status),
        }
    }
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
    /// The list's name.
    pub list: String,
    /// The current list, in order.
    pub todos: Vec<Todo>,
    /// The list rendered as markdown: ~~done~~, **in progress**, pending.
    pub brief: String,
    /// A one-line summary for a UI.
    pub message: String,
    /// Counts per status.
    pub counts: TodoCounts,
    /// True when the call changed the list, false when it only read it.
    pub updated: bool,
}

/// Renders a list as a todo list is written: `- ~~title~~ [Done]`, `- **title** [In Progress]`, `- title [Pending]`.
pub fn render(todos: &[Todo]) -> String {
    let mut out = String::new();
    for t in todos {
        out.push_str(&render_line(t));
        out.push('\n');
    }
    out
}

fn render_line(t: &Todo) -> String {
    match t.status {
        TodoStatus::Done => format!("- ~~{}~~ [{}]", t.title, t.status.label()),
        TodoStatus::InProgress => format!("- **{}** [{}]", t.title, t.status.label()),
        TodoStatus::Pending => format!("- {} [{}]", t.title, t.status.label()),
    }
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

/// The key of a list: the session's first root (its cwd without roots) and the name.
pub(crate) fn list_key(ctx: &ToolContext, list: Option<&str>) -> Result<TodoListKey, ToolError> {
    Ok(TodoListKey::new(
        workspace_key(ctx),
        list.unwrap_or(DEFAULT_TODO_LIST),
    )?)
}

/// A store id as the model sends it.
pub(crate) fn store_id(id: u64) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}

/// What to do after a NOT_FOUND of unknown todo ids.
pub(crate) const READ_IDS_HINT: &str =
    "call set_todo_list without todos to read the list with its ids";

/// The output of a list after a read (`updated` false) or a change, and the text
/// the model reads: the summary, then each todo with its id.
pub(crate) fn list_output(
    ctx: &ToolContext,
    list: &str,
    todos: Vec<Todo>,
    updated: bool,
) -> (TodoListOutput, String) {
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
    let mut text = format!("{message}.");
    for t in &todos {
        text.push('\n');
        text.push_str(&render_line(t));
        text.push_str(&format!(" (id {})", t.id));
    }
    let output = TodoListOutput {
        list: list.to_string(),
        todos,
        brief,
        message,
        counts: c,
        updated,
    };
    (output, text)
}
