//! `set_todo_list`: the agent's todo list, rendered for the user, kept
//! in the store per workspace and per named list, with ids that stay stable.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_store::StoreError;

use crate::stored::store_tool;
use crate::todo::{
    READ_IDS_HINT, Todo, TodoListOutput, TodoStatus, list_key, list_output, store_id,
};

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

store_tool! {
    /// The `set_todo_list` tool: lists live in the store, per workspace (the
    /// session's first root) and per name.
    SetTodoList
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
