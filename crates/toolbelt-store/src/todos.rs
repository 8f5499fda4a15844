//! Todo lists, per workspace and per named list, with ids that stay stable.
//!
//! Each list ([`TodoListKey`]) numbers its todos 1, 2, 3... from `todo_lists.next_id`;
//! an id is never reused, even after its todo is removed. Every change is one write
//! transaction: [`replace_todos`] sets the whole list, [`update_todos`] adds,
//! updates and removes by id.

use std::collections::{HashMap, HashSet};
use toolbelt_core::human::noun;

use sqlx::{Any, Row, Transaction};

use crate::error::{StoreError, StoreResult};
use crate::store::Store;

/// The list used when none is named.
pub const DEFAULT_TODO_LIST: &str = "default";
/// Longest list name, in characters.
pub const MAX_TODO_LIST_NAME_CHARS: usize = 64;

/// Which list: the workspace it belongs to and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoListKey {
    workspace: String,
    name: String,
}

impl TodoListKey {
    /// The list `name` of `workspace`.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] when the name is empty or longer than
    /// [`MAX_TODO_LIST_NAME_CHARS`] characters.
    pub fn new(workspace: impl Into<String>, name: impl Into<String>) -> StoreResult<TodoListKey> {
        let name = name.into();
        let chars = name.chars().count();
        if chars == 0 || chars > MAX_TODO_LIST_NAME_CHARS {
            return Err(StoreError::invalid(format!(
                "list: a todo list name has 1 to {MAX_TODO_LIST_NAME_CHARS} characters, {chars} given; leave it out for the {DEFAULT_TODO_LIST:?} list"
            )));
        }
        Ok(TodoListKey {
            workspace: workspace.into(),
            name,
        })
    }

    /// The workspace.
    pub fn workspace(&self) -> &str {
        &self.workspace
    }

    /// The list's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A stored todo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTodo {
    /// Its id in the list (1, 2, 3...), stable across changes.
    pub id: i64,
    /// What to do.
    pub title: String,
    /// Its status, as the caller spells it (`Pending`, `In Progress`, `Done`).
    pub status: String,
}

/// One todo of a replacement list ([`replace_todos`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoInput {
    /// The id of the todo this one continues; without it, an existing todo with
    /// the same title keeps its id, else a new id is given.
    pub id: Option<i64>,
    /// What to do.
    pub title: String,
    /// Its status.
    pub status: String,
}

/// A change of one todo ([`update_todos`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoPatch {
    /// The todo.
    pub id: i64,
    /// A new title.
    pub title: Option<String>,
    /// A new status.
    pub status: Option<String>,
}

/// Incremental changes to a list ([`update_todos`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TodoChanges {
    /// New todos `(title, status)`, appended in this order.
    pub add: Vec<(String, String)>,
    /// Changes of existing todos.
    pub update: Vec<TodoPatch>,
    /// Ids of todos to remove.
    pub remove: Vec<i64>,
}

impl TodoChanges {
    /// True when nothing is asked.
    pub fn is_empty(&self) -> bool {
        self.add.is_empty() && self.update.is_empty() && self.remove.is_empty()
    }
}

/// What [`update_todos`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedTodoChanges {
    /// The list afterwards, in order.
    pub todos: Vec<StoredTodo>,
    /// Ids given to the added todos, in order.
    pub added: Vec<i64>,
    /// Ids of the updated todos, in request order.
    pub updated: Vec<i64>,
    /// Ids of the removed todos, in request order.
    pub removed: Vec<i64>,
}

/// The todos of a list, in order (empty for a list never written).
///
/// # Errors
/// The query fails.
pub async fn read_todos(store: &Store, key: &TodoListKey) -> StoreResult<Vec<StoredTodo>> {
    let rows = sqlx::query(
        "SELECT id, title, status FROM todos WHERE workspace = $1 AND list = $2 ORDER BY position, id",
    )
    .bind(&key.workspace)
    .bind(&key.name)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(stored_todo).collect()
}

fn stored_todo(row: &sqlx::any::AnyRow) -> StoreResult<StoredTodo> {
    Ok(StoredTodo {
        id: row.try_get(0)?,
        title: row.try_get(1)?,
        status: row.try_get(2)?,
    })
}

/// A todo as held inside a transaction.
struct Current {
    todo: StoredTodo,
    created_at: i64,
    updated_at: i64,
}

/// Creates the list row if missing, locks it, and reads `next_id` and the todos.
async fn lock_list(
    store: &Store,
    tx: &mut Transaction<'static, Any>,
    key: &TodoListKey,
    now: i64,
) -> StoreResult<(i64, Vec<Current>)> {
    sqlx::query(
        "INSERT INTO todo_lists (workspace, name, next_id, updated_at) VALUES ($1, $2, 1, $3) ON CONFLICT (workspace, name) DO NOTHING",
    )
    .bind(&key.workspace)
    .bind(&key.name)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    let next_id: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT next_id FROM todo_lists WHERE workspace = $1 AND name = $2{}",
        store.for_update()
    )))
    .bind(&key.workspace)
    .bind(&key.name)
    .fetch_one(&mut **tx)
    .await?
    .try_get(0)?;
    let rows = sqlx::query(
        "SELECT id, title, status, created_at, updated_at FROM todos WHERE workspace = $1 AND list = $2 ORDER BY position, id",
    )
    .bind(&key.workspace)
    .bind(&key.name)
    .fetch_all(&mut **tx)
    .await?;
    let mut current = Vec::with_capacity(rows.len());
    for row in &rows {
        current.push(Current {
            todo: stored_todo(row)?,
            created_at: row.try_get(3)?,
            updated_at: row.try_get(4)?,
        });
    }
    Ok((next_id, current))
}

async fn save_list_row(
    tx: &mut Transaction<'static, Any>,
    key: &TodoListKey,
    next_id: i64,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE todo_lists SET next_id = $1, updated_at = $2 WHERE workspace = $3 AND name = $4",
    )
    .bind(next_id)
    .bind(now)
    .bind(&key.workspace)
    .bind(&key.name)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn id_list(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn unknown_ids_error(key: &TodoListKey, unknown: &[i64], current: &[Current]) -> StoreError {
    let known: Vec<i64> = current.iter().map(|c| c.todo.id).collect();
    let have = if known.is_empty() {
        "it is empty".to_string()
    } else {
        format!("its ids are {}", id_list(&known))
    };
    let noun = noun(unknown.len() as u64, "id", "ids");
    StoreError::not_found(format!(
        "todo list {:?} has no todo with {noun} {}; {have}; nothing was changed",
        key.name,
        id_list(unknown)
    ))
}

/// Replaces the whole list with `items`, in one write transaction, and returns it.
///
/// Ids: an item with `id` keeps that todo's id; an item without one takes the id
/// of an existing todo with exactly the same title (the first one not yet taken),
/// else a new id. Todos left out are removed; their ids are not reused.
///
/// # Errors
/// [`StoreError::NotFound`] when an `id` is not in the list, [`StoreError::Invalid`]
/// when an id is given twice (nothing is changed then), or a failed query.
pub async fn replace_todos(
    store: &Store,
    key: &TodoListKey,
    items: &[TodoInput],
) -> StoreResult<Vec<StoredTodo>> {
    let now = crate::now_ms();
    let mut tx = store.begin_write().await?;
    let (mut next_id, current) = lock_list(store, &mut tx, key, now).await?;
    let by_id: HashMap<i64, usize> = current
        .iter()
        .enumerate()
        .map(|(i, c)| (c.todo.id, i))
        .collect();

    let mut unknown = Vec::new();
    let mut seen = HashSet::new();
    for item in items {
        if let Some(id) = item.id {
            if !by_id.contains_key(&id) {
                unknown.push(id);
            } else if !seen.insert(id) {
                return Err(StoreError::invalid(format!(
                    "todos: id {id} is given to more than one todo; give each id once, and leave it out for new todos"
                )));
            }
        }
    }
    if !unknown.is_empty() {
        return Err(unknown_ids_error(key, &unknown, &current));
    }

    // Explicit ids first, then titles take the ids still free, first come first served.
    let mut taken: HashSet<i64> = seen;
    let mut ids = Vec::with_capacity(items.len());
    for item in items {
        let id = match item.id {
            Some(id) => id,
            None => match current
                .iter()
                .find(|c| c.todo.title == item.title && !taken.contains(&c.todo.id))
            {
                Some(c) => c.todo.id,
                None => {
                    let id = next_id;
                    next_id += 1;
                    id
                }
            },
        };
        taken.insert(id);
        ids.push(id);
    }

    sqlx::query("DELETE FROM todos WHERE workspace = $1 AND list = $2")
        .bind(&key.workspace)
        .bind(&key.name)
        .execute(&mut *tx)
        .await?;
    let mut out = Vec::with_capacity(items.len());
    for (position, (item, id)) in items.iter().zip(ids).enumerate() {
        let before = by_id.get(&id).map(|i| &current[*i]);
        let (created_at, updated_at) = match before {
            Some(c) if c.todo.title == item.title && c.todo.status == item.status => {
                (c.created_at, c.updated_at)
            }
            Some(c) => (c.created_at, now),
            None => (now, now),
        };
        insert_todo(
            &mut tx,
            key,
            id,
            position_of(position),
            item,
            created_at,
            updated_at,
        )
        .await?;
        out.push(StoredTodo {
            id,
            title: item.title.clone(),
            status: item.status.clone(),
        });
    }
    save_list_row(&mut tx, key, next_id, now).await?;
    tx.commit().await?;
    Ok(out)
}

fn position_of(index: usize) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

async fn insert_todo(
    tx: &mut Transaction<'static, Any>,
    key: &TodoListKey,
    id: i64,
    position: i64,
    item: &TodoInput,
    created_at: i64,
    updated_at: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO todos (workspace, list, id, position, title, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&key.workspace)
    .bind(&key.name)
    .bind(id)
    .bind(position)
    .bind(&item.title)
    .bind(&item.status)
    .bind(created_at)
    .bind(updated_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Applies `changes` in one write transaction: removals, then updates, then
/// additions (appended at the end, with new ids). Positions of the other todos
/// keep their order.
///
/// # Errors
/// [`StoreError::Invalid`] when nothing is asked, or an id is updated twice or
/// both updated and removed; [`StoreError::NotFound`] listing every id not in the
/// list. In both cases nothing is changed.
pub async fn update_todos(
    store: &Store,
    key: &TodoListKey,
    changes: &TodoChanges,
) -> StoreResult<AppliedTodoChanges> {
    if changes.is_empty() {
        return Err(StoreError::invalid(
            "nothing to change: give todos to add, update (by id) or remove (by id)",
        ));
    }
    let mut updated_once = HashSet::new();
    for patch in &changes.update {
        if !updated_once.insert(patch.id) {
            return Err(StoreError::invalid(format!(
                "update: todo {} is updated twice; merge the two changes into one",
                patch.id
            )));
        }
    }
    if let Some(id) = changes.remove.iter().find(|id| updated_once.contains(id)) {
        return Err(StoreError::invalid(format!(
            "todo {id} is both updated and removed; do one or the other"
        )));
    }

    let now = crate::now_ms();
    let mut tx = store.begin_write().await?;
    let (mut next_id, current) = lock_list(store, &mut tx, key, now).await?;
    let known: HashSet<i64> = current.iter().map(|c| c.todo.id).collect();
    let mut unknown: Vec<i64> = Vec::new();
    for id in changes
        .update
        .iter()
        .map(|p| p.id)
        .chain(changes.remove.iter().copied())
    {
        if !known.contains(&id) && !unknown.contains(&id) {
            unknown.push(id);
        }
    }
    if !unknown.is_empty() {
        return Err(unknown_ids_error(key, &unknown, &current));
    }

    let mut removed = Vec::new();
    for id in &changes.remove {
        if removed.contains(id) {
            continue;
        }
        sqlx::query("DELETE FROM todos WHERE workspace = $1 AND list = $2 AND id = $3")
            .bind(&key.workspace)
            .bind(&key.name)
            .bind(*id)
            .execute(&mut *tx)
            .await?;
        removed.push(*id);
    }
    let mut updated = Vec::new();
    for patch in &changes.update {
        sqlx::query(
            "UPDATE todos SET title = COALESCE($1, title), status = COALESCE($2, status), updated_at = $3 WHERE workspace = $4 AND list = $5 AND id = $6",
        )
        .bind(patch.title.as_deref())
        .bind(patch.status.as_deref())
        .bind(now)
        .bind(&key.workspace)
        .bind(&key.name)
        .bind(patch.id)
        .execute(&mut *tx)
        .await?;
        updated.push(patch.id);
    }
    let mut position: i64 = sqlx::query(
        "SELECT CAST(COALESCE(MAX(position), -1) AS BIGINT) FROM todos WHERE workspace = $1 AND list = $2",
    )
    .bind(&key.workspace)
    .bind(&key.name)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    let mut added = Vec::new();
    for (title, status) in &changes.add {
        position += 1;
        let id = next_id;
        next_id += 1;
        let item = TodoInput {
            id: Some(id),
            title: title.clone(),
            status: status.clone(),
        };
        insert_todo(&mut tx, key, id, position, &item, now, now).await?;
        added.push(id);
    }
    save_list_row(&mut tx, key, next_id, now).await?;
    let rows = sqlx::query(
        "SELECT id, title, status FROM todos WHERE workspace = $1 AND list = $2 ORDER BY position, id",
    )
    .bind(&key.workspace)
    .bind(&key.name)
    .fetch_all(&mut *tx)
    .await?;
    let todos = rows
        .iter()
        .map(stored_todo)
        .collect::<StoreResult<Vec<_>>>()?;
    tx.commit().await?;
    Ok(AppliedTodoChanges {
        todos,
        added,
        updated,
        removed,
    })
}
