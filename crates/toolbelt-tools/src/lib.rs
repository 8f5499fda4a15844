//! The built-in tools of toolbelt, one module per tool, each with its description
//! for models in a `<tool>.md` file beside it.
//!
//! - [`Think`]: reason out loud, shown to the user.
//! - [`SetTodoList`]: the agent's todo list.
//! - [`ReadOutput`]: pages an output that was too long and was saved whole.
//! - [`EditFile`], [`MultiEdit`]: replace text in a file, one or several places at once.
//!
//! ```
//! use toolbelt_core::{Registry, Session};
//!
//! let mut registry = Registry::new(Session::new(std::env::temp_dir()));
//! toolbelt_tools::register_builtins(&mut registry).unwrap();
//! assert!(registry.has("think"));
//! ```

mod edit_file;
#[allow(dead_code)]
mod files;
mod multi_edit;
mod read_output;
mod set_todo_list;
mod think;

pub use edit_file::{EditFile, EditFileOutput, EditFileParams, LineSpan};
pub use multi_edit::{
    MultiEdit, MultiEditApplied, MultiEditItem, MultiEditOutput, MultiEditParams,
};
pub use read_output::{ReadOutput, ReadOutputParams, ReadOutputResult};
pub use set_todo_list::{
    SetTodoList, SetTodoListParams, Todo, TodoCounts, TodoListOutput, TodoStatus, render,
};
pub use think::{Think, ThinkOutput, ThinkParams, ThoughtType};

use toolbelt_core::{Registry, RegistryError};

/// Registers every built-in tool.
///
/// # Errors
/// A tool of the same name is already registered.
pub fn register_builtins(registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register_typed(Think)?;
    registry.register_typed(SetTodoList::default())?;
    registry.register_typed(ReadOutput)?;
    registry.register_typed(EditFile)?;
    registry.register_typed(MultiEdit)?;
    Ok(())
}
