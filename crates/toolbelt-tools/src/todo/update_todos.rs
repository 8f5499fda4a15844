//! `update_todos`: changes a todo list by id (add, update, remove) without
//! sending the whole list, in one transaction.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{StoreError, TodoChanges, TodoPatch};

use crate::stored::store_tool;
use crate::todo::{READ_IDS_HINT, Todo, TodoCounts, TodoStatus, list_key, list_output, store_id};

/// A todo to add.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTodo {
    /// What to do.
    #[schemars(length(min = 1))]
    pub title: String,
    /// Pending (the default), In Progress or Done.
    #[serde(default)]
    pub status: Option<TodoStatus>,
}

/// A change of one todo.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoChange {
    /// The todo's id.
    #[schemars(range(min = 1))]
    pub id: u64,
    /// Its new title.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub title: Option<String>,
    /// Its new status.
    #[serde(default)]
    pub status: Option<TodoStatus>,
}

/// Arguments of `update_todos`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTodosParams {
    /// Todos to add at the end of the list, in this order.
    #[serde(default)]
    pub add: Option<Vec<NewTodo>>,
    /// Todos to change, by id: a new title, a new status, or both.
    #[serde(default)]
    pub update: Option<Vec<TodoChange>>,
    /// Ids of todos to remove.
    #[serde(default)]
    pub remove: Option<Vec<u64>>,
    /// Which list (1-64 characters); default "default".
    #[serde(default)]
    #[schemars(length(min = 1, max = 64))]
    pub list: Option<String>,
}

/// What an `update_todos` call changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TodoListChanges {
    /// Ids given to the added todos, in order.
    pub added: Vec<u64>,
    /// Ids of the updated todos.
    pub updated: Vec<u64>,
    /// Ids of the removed todos.
    pub removed: Vec<u64>,
}

/// Result of `update_todos`: the list as `set_todo_list` returns it, and the changes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UpdateTodosOutput {
    /// The list's name.
    pub list: String,
    /// The list afterwards, in order.
    pub todos: Vec<Todo>,
    /// The list rendered as markdown: ~~done~~, **in progress**, pending.
    pub brief: String,
    /// A one-line summary for a UI.
    pub message: String,
    /// Counts per status.
    pub counts: TodoCounts,
    /// Always true: the list was changed.
    pub updated: bool,
    /// What changed.
    pub changes: TodoListChanges,
}

store_tool! {
    /// The `update_todos` tool.
    UpdateTodos
}

fn model_ids(ids: Vec<i64>) -> Vec<u64> {
    ids.into_iter()
        .map(|id| u64::try_from(id).unwrap_or(0))
        .collect()
}

fn id_words(label: &str, ids: &[u64]) -> Option<String> {
    (!ids.is_empty()).then(|| {
        let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
        format!("{label} {}", ids.join(", "))
    })
}

impl TypedTool for UpdateTodos {
    type Params = UpdateTodosParams;
    type Output = UpdateTodosOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("update_todos", include_str!("update_todos.md"))
            .title("Update Todos")
            .category(Category::Planning)
            .permission("store:write")
            .hints(Hints::writes())
            .example(
                "Add two todos to the list",
                serde_json::json!({"add": [
                    {"title": "Write the migration", "status": "In Progress"},
                    {"title": "Update the docs"}
                ]}),
                serde_json::json!({
                    "list": "default",
                    "todos": [
                        {"id": 1, "title": "Write the migration", "status": "In Progress"},
                        {"id": 2, "title": "Update the docs", "status": "Pending"}
                    ],
                    "brief": "- **Write the migration** [In Progress]\n- Update the docs [Pending]\n",
                    "message": "Todo list updated: 0 done, 1 in progress, 1 pending",
                    "counts": {"pending": 1, "in_progress": 1, "done": 0},
                    "updated": true,
                    "changes": {"added": [1, 2], "updated": [], "removed": []}
                }),
            )
    }

    fn validate(&self, p: &UpdateTodosParams) -> Vec<Violation> {
        let mut out = Vec::new();
        let none = |len: Option<usize>| len.is_none_or(|n| n == 0);
        if none(p.add.as_ref().map(Vec::len))
            && none(p.update.as_ref().map(Vec::len))
            && none(p.remove.as_ref().map(Vec::len))
        {
            out.push(Violation::new(
                "",
                "nothing to change: give `add`, `update` or `remove` (to read the list, call set_todo_list without todos)",
            ));
        }
        for (i, change) in p.update.iter().flatten().enumerate() {
            if change.title.is_none() && change.status.is_none() {
                out.push(Violation::new(
                    format!("update[{i}]"),
                    "give a new title, a new status, or both",
                ));
            }
        }
        out
    }

    async fn call(&self, ctx: &ToolContext, p: UpdateTodosParams) -> ToolResult<UpdateTodosOutput> {
        let key = list_key(ctx, p.list.as_deref())?;
        let store = self.store.get().await?;
        let changes = TodoChanges {
            add: p
                .add
                .unwrap_or_default()
                .into_iter()
                .map(|t| {
                    let status = t.status.unwrap_or(TodoStatus::Pending);
                    (t.title, status.label().to_string())
                })
                .collect(),
            update: p
                .update
                .unwrap_or_default()
                .into_iter()
                .map(|c| TodoPatch {
                    id: store_id(c.id),
                    title: c.title,
                    status: c.status.map(|s| s.label().to_string()),
                })
                .collect(),
            remove: p
                .remove
                .unwrap_or_default()
                .into_iter()
                .map(store_id)
                .collect(),
        };
        let applied = toolbelt_store::update_todos(store, &key, &changes)
            .await
            .map_err(|e| match e {
                StoreError::NotFound(_) => ToolError::from(e).hint(READ_IDS_HINT),
                e => e.into(),
            })?;
        let todos = applied.todos.into_iter().map(Todo::from).collect();
        let (list, text) = list_output(ctx, key.name(), todos, true);
        let changes = TodoListChanges {
            added: model_ids(applied.added),
            updated: model_ids(applied.updated),
            removed: model_ids(applied.removed),
        };
        let what: Vec<String> = [
            id_words("added", &changes.added),
            id_words("updated", &changes.updated),
            id_words("removed", &changes.removed),
        ]
        .into_iter()
        .flatten()
        .collect();
        let text = match text.split_once('\n') {
            Some((first, rest)) => format!("{first} Changes: {}.\n{rest}", what.join("; ")),
            None => format!("{text} Changes: {}.", what.join("; ")),
        };
        Ok(Reply::new(
            UpdateTodosOutput {
                list: list.list,
                todos: list.todos,
                brief: list.brief,
                message: list.message,
                counts: list.counts,
                updated: true,
                changes,
            },
            text,
        ))
    }
}
