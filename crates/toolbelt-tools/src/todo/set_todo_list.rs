//! `set_todo_list`: the agent's todo list, rendered for the user (seed 000), kept
//! in the store per workspace and per named list, with ids that stay stable.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_store::{DEFAULT_TODO_LIST, StoreError, StoredTodo, TodoListKey};

use crate::stored::store_tool;

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

/// One todo of the list sent to `set_todo_list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoInput {
    /// The id of the existing todo this one continues (from an earlier result).
    /// Leave it out for a new todo; a todo with the same title as an existing one
    /// keeps that one's id.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub id: Option<u64>,
    /// What to do.
    #[schemars(length(min = 1))]
    pub title: String,
    /// Pending, In Progress or Done.
    pub status: TodoStatus,
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

/// Arguments of `set_todo_list`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTodoListParams {
    /// The whole updated list; it replaces the previous one. Leave it out to read the current list.
    #[serde(default)]
    pub todos: Option<Vec<TodoInput>>,
    /// Which list (1-64 characters); default "default".
    #[serde(default)]
    #[schemars(length(min = 1, max = 64))]
    pub list: Option<String>,
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

store_tool! {
    /// The `set_todo_list` tool: lists live in the store, per workspace (the
    /// session's first root) and per name.
    SetTodoList
}

/// Renders a list as seed 000 does: `- ~~title~~ [Done]`, `- **title** [In Progress]`, `- title [Pending]`.
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
    let session = ctx.session();
    let workspace = session.roots().first().map_or_else(
        || session.cwd().display().to_string(),
        |r| r.display().to_string(),
    );
    Ok(TodoListKey::new(
        workspace,
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

impl TypedTool for SetTodoList {
    type Params = SetTodoListParams;
    type Output = TodoListOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("set_todo_list", include_str!("set_todo_list.md"))
            .title("Set Todo List")
            .category(Category::Planning)
            .permission("store:write")
            .hints(Hints::writes().idempotent())
            .example(
                "Plan three steps, the first one under way",
                serde_json::json!({"todos": [
                    {"title": "Read the failing test", "status": "Done"},
                    {"title": "Fix the parser", "status": "In Progress"},
                    {"title": "Run the whole suite", "status": "Pending"}
                ]}),
                serde_json::json!({
                    "list": "default",
                    "todos": [
                        {"id": 1, "title": "Read the failing test", "status": "Done"},
                        {"id": 2, "title": "Fix the parser", "status": "In Progress"},
                        {"id": 3, "title": "Run the whole suite", "status": "Pending"}
                    ],
                    "brief": "- ~~Read the failing test~~ [Done]\n- **Fix the parser** [In Progress]\n- Run the whole suite [Pending]\n",
                    "message": "Todo list updated: 1 done, 1 in progress, 1 pending",
                    "counts": {"pending": 1, "in_progress": 1, "done": 1},
                    "updated": true
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: SetTodoListParams) -> ToolResult<TodoListOutput> {
        let key = list_key(ctx, p.list.as_deref())?;
        let store = self.store.get().await?;
        let updated = p.todos.is_some();
        let stored = match p.todos {
            Some(items) => {
                let items: Vec<toolbelt_store::TodoInput> = items
                    .into_iter()
                    .map(|t| toolbelt_store::TodoInput {
                        id: t.id.map(store_id),
                        title: t.title,
                        status: t.status.label().to_string(),
                    })
                    .collect();
                toolbelt_store::replace_todos(store, &key, &items).await
            }
            None => toolbelt_store::read_todos(store, &key).await,
        }
        .map_err(|e| match e {
            StoreError::NotFound(_) => ToolError::from(e).hint(READ_IDS_HINT),
            e => e.into(),
        })?;
        let todos = stored.into_iter().map(Todo::from).collect();
        let (output, text) = list_output(ctx, key.name(), todos, updated);
        Ok(Reply::new(output, text))
    }
}
