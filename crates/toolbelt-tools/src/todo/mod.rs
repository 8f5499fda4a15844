//! The todo toolset: [`set_todo_list::SetTodoList`] writes or reads the agent's
//! todo list, [`update_todos::UpdateTodos`] changes it by id.

pub(crate) mod set_todo_list;
pub(crate) mod update_todos;
