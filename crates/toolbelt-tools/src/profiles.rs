//! The built-in name profiles: the names models know the built-in tools by.
//!
//! A profile renames the tools a model sees (see [`toolbelt_core::profile`]);
//! these are the tables of the ones toolbelt ships, beside the tools they name.
//! Each has a descriptive name; the older names `seed001`, `seed002` and
//! `seed003` are accepted as aliases of `exec`, `run-command` and
//! `camel-planner`.
//!
//! ```
//! let claude = toolbelt_tools::profiles::by_name("claude").unwrap();
//! assert_eq!(claude.exposed("read_file"), "Read");
//! assert_eq!(claude.canonical("LS"), Some("list_dir"));
//! assert_eq!(claude.exposed("think"), "think");
//! assert_eq!(toolbelt_tools::profiles::by_name("seed002").unwrap().name(), "run-command");
//! ```

use toolbelt_core::profile::{ParamCase, Profile};

/// `claude`: the names of Anthropic's coding agent tools.
const CLAUDE: &[(&str, &str)] = &[
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("multi_edit", "MultiEdit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("list_dir", "LS"),
    ("bash", "Bash"),
    ("bash_output", "BashOutput"),
    ("kill_shell", "KillShell"),
    ("set_todo_list", "TodoWrite"),
    ("ask_user", "AskUserQuestion"),
    ("task", "Task"),
    ("web_fetch", "WebFetch"),
    ("web_search", "WebSearch"),
];

/// `kimi`: the names of Moonshot's Kimi CLI tools.
const KIMI: &[(&str, &str)] = &[
    ("read_file", "ReadFile"),
    ("write_file", "WriteFile"),
    ("edit_file", "StrReplaceFile"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("bash", "Bash"),
    ("think", "Think"),
    ("set_todo_list", "SetTodoList"),
    ("web_search", "WebSearch"),
    ("web_fetch", "WebFetch"),
    ("task", "Task"),
];

/// `exec`: agents whose shell tool is `exec` (their other tools keep their names).
const EXEC: &[(&str, &str)] = &[("bash", "exec")];

/// `run-command`: coding assistants whose shell tool is `run_command` (their `grep`,
/// `list_dir`, `read_file` and `write_file` keep their names).
const RUN_COMMAND: &[(&str, &str)] = &[("bash", "run_command")];

/// `camel-planner`: the camelCase names of the project planner's tools (and of the
/// list tools that find their ids), with camelCase parameters.
const CAMEL_PLANNER: &[(&str, &str)] = &[
    ("create_project", "createProject"),
    ("update_project", "updateProject"),
    ("delete_project", "deleteProject"),
    ("get_project", "getProject"),
    ("create_goal", "createGoal"),
    ("link_goal_to_project", "linkGoalToProject"),
    ("create_task", "createTask"),
    ("complete_task", "completeTask"),
    ("write_review", "writeReview"),
    ("analyze_patterns", "analyzePatterns"),
    ("list_projects", "listProjects"),
    ("list_goals", "listGoals"),
    ("list_tasks", "listTasks"),
    ("list_reviews", "listReviews"),
];

/// The names of the built-in profiles, each accepted by [`by_name`].
pub const NAMES: [&str; 6] = [
    "default",
    "claude",
    "kimi",
    "exec",
    "run-command",
    "camel-planner",
];

/// Older names of built-in profiles, and the profile each stands for.
pub const ALIASES: [(&str, &str); 3] = [
    ("seed001", "exec"),
    ("seed002", "run-command"),
    ("seed003", "camel-planner"),
];

/// A built-in profile by name (one of [`NAMES`], or an alias in [`ALIASES`]).
pub fn by_name(name: &str) -> Option<Profile> {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, profile)| profile);
    let (table, params) = match name {
        "default" => return Some(Profile::default_profile()),
        "claude" => (CLAUDE, ParamCase::Canonical),
        "kimi" => (KIMI, ParamCase::Canonical),
        "exec" => (EXEC, ParamCase::Canonical),
        "run-command" => (RUN_COMMAND, ParamCase::Canonical),
        "camel-planner" => (CAMEL_PLANNER, ParamCase::Camel),
        _ => return None,
    };
    Some(Profile::table(name, table).with_param_case(params))
}

/// Every name a built-in profile exposes a tool as, with the tool's canonical name:
/// permission rules may name a tool by any of them, whatever the active profile.
pub fn exposed_names() -> impl Iterator<Item = (&'static str, &'static str)> {
    [CLAUDE, KIMI, EXEC, RUN_COMMAND, CAMEL_PLANNER]
        .into_iter()
        .flatten()
        .map(|&(canonical, exposed)| (exposed, canonical))
}

#[cfg(test)]
#[path = "profiles_tests.rs"]
mod tests;
