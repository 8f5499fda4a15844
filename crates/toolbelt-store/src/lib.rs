//! toolbelt's store: one API over SQLite (embedded, the default: a file in the state
//! directory, WAL) and PostgreSQL (`TOOLBELT_DATABASE_URL`), with versioned
//! migrations run at open.
//!
//! - [`Store`] opens a [`Location`], refusing a corrupt, foreign or newer database
//!   without touching it ([`StoreError`]), and hands out write transactions that
//!   take SQLite's write lock up front ([`Store::begin_write`]).
//! - [`RecordId`] and [`Kind`]: planner ids as models see them (`project-12`).
//! - Todo lists per workspace and name, with stable ids: [`read_todos`],
//!   [`replace_todos`], [`update_todos`].
//! - The call log: [`CallLogWriter`] (a [`toolbelt_core::CallLog`] writing in
//!   batches off the call's path) and [`recent_calls`].
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use toolbelt_store::{Location, Store};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(&Location::in_state_dir(dir.path())).await.unwrap();
//! assert_eq!(store.schema_version().await.unwrap(), toolbelt_store::LATEST_VERSION);
//! # });
//! ```

mod calls;
mod error;
mod ids;
mod schema;
mod store;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
mod todos;

pub use calls::{
    CALL_LOG_BATCH_MAX, CALL_LOG_QUEUE_CAPACITY, CallEntry, CallFilter, CallLogWriter, recent_calls,
};
pub use error::{StoreError, StoreResult};
pub use ids::{Kind, RecordId};
pub use schema::LATEST_VERSION;
pub use store::{
    Backend, DEFAULT_FILE_NAME, Location, QUICK_CHECK_MAX_BYTES, SQLITE_BUSY_TIMEOUT_MS, Store,
};
pub use todos::{
    AppliedTodoChanges, DEFAULT_TODO_LIST, MAX_TODO_LIST_NAME_CHARS, StoredTodo, TodoChanges,
    TodoInput, TodoListKey, TodoPatch, read_todos, replace_todos, update_todos,
};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
