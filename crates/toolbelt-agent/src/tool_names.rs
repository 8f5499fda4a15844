//! The tools the agent names. The loop runs whatever tools its registry holds and
//! never asks for a tool by name; it names a tool only where it gives it a role,
//! and each such name is here, once:
//!
//! - the subagent tools, which this crate defines ([`crate::subagent`]);
//! - the tools of the built-in `explore` agent type, which reads and searches;
//! - the todo-list tools, whose latest result is kept when the history is
//!   compacted;
//! - the tools whose calls the one-line summaries show their own way;
//! - the tools the system prompt and the model's notes name: the example call
//!   and the advice of a small model's prompt, and the tool that reads a result
//!   shortened to save context.
//!
//! A name here is a tool's canonical name; the registry resolves the aliases a
//! profile gives before one is compared with these.

/// Runs a subagent and returns its final answer.
pub const TASK: &str = "task";
/// Starts a subagent in the background.
pub const SPAWN: &str = "spawn";
/// Reads a background subagent's progress or report.
pub const TASK_OUTPUT: &str = "task_output";
/// Stops a background subagent.
pub const TASK_STOP: &str = "task_stop";
/// Lists the background subagents.
pub const TASK_LIST: &str = "task_list";

/// The subagent tools, which subagents get only below the depth limit.
pub const SUBAGENT_TOOLS: &[&str] = &[TASK, SPAWN, TASK_OUTPUT, TASK_STOP, TASK_LIST];

/// Reads a file: the example call of a small model's prompt.
pub(crate) const READ_FILE: &str = "read_file";
/// Writes a whole file.
pub(crate) const WRITE_FILE: &str = "write_file";
/// Replaces a string in a file.
pub(crate) const EDIT_FILE: &str = "edit_file";
/// Lists a folder.
pub(crate) const LIST_DIR: &str = "list_dir";
/// Finds files by pattern.
pub(crate) const GLOB: &str = "glob";
/// Searches the contents of files.
pub(crate) const GREP: &str = "grep";
/// Runs a shell command.
pub(crate) const BASH: &str = "bash";
/// Fetches a web page.
pub(crate) const WEB_FETCH: &str = "web_fetch";
/// Searches the web.
pub(crate) const WEB_SEARCH: &str = "web_search";
/// Reads an output that was cut or shortened, whole.
pub(crate) const READ_OUTPUT: &str = "read_output";

/// The tools of the built-in `explore` type: reading and searching only.
pub const EXPLORE_TOOLS: &[&str] = &[
    READ_FILE,
    LIST_DIR,
    GLOB,
    GREP,
    WEB_FETCH,
    WEB_SEARCH,
    READ_OUTPUT,
    THINK,
];

/// The tools whose result is the whole todo list: the latest one is carried over
/// when older turns are summarised.
pub(crate) const TODO_TOOLS: &[&str] = &["set_todo_list", "update_todos"];

/// The tool whose call is summarised as the thought itself (`Think: "..."`).
pub(crate) const THINK: &str = "think";
