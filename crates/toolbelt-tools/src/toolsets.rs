//! The built-in toolsets: what `--tools`, `TOOLBELT_TOOLS` and `[tools]` name.

use toolbelt_core::toolset::Toolset;

/// Every built-in toolset, in display order. Each tool of a category belongs to the
/// set of that category (checked by a test); `think`, `read_output` and `ask_user`
/// only to `coding`.
pub const TOOLSETS: &[Toolset] = &[
    Toolset::new(
        "files",
        "Read, write, edit, patch, list and check files.",
        &[
            "read_file",
            "write_file",
            "edit_file",
            "multi_edit",
            "apply_patch",
            "list_dir",
            "diagnostics",
        ],
        &[],
    ),
    Toolset::new(
        "search",
        "Search file contents and names.",
        &["grep", "glob"],
        &[],
    ),
    Toolset::new(
        "shell",
        "Run commands, in the foreground or in background shells.",
        &[
            "bash",
            "bash_output",
            "write_stdin",
            "kill_shell",
            "list_shells",
        ],
        &[],
    ),
    Toolset::new(
        "web",
        "Fetch pages and search the web.",
        &["web_fetch", "web_search"],
        &[],
    ),
    Toolset::new(
        "todos",
        "The agent's todo list.",
        &["set_todo_list", "update_todos"],
        &[],
    ),
    Toolset::new(
        "planner",
        "Projects, goals, tasks, reviews and their patterns.",
        &[
            "create_project",
            "update_project",
            "delete_project",
            "get_project",
            "list_projects",
            "create_goal",
            "link_goal_to_project",
            "list_goals",
            "create_task",
            "complete_task",
            "list_tasks",
            "write_review",
            "list_reviews",
            "analyze_patterns",
        ],
        &[],
    ),
    Toolset::new(
        "agent",
        "Skills, and subagents (with a model configured).",
        &[
            "skill",
            "task",
            "spawn",
            "task_output",
            "task_stop",
            "task_list",
        ],
        &[],
    ),
    Toolset::new(
        "schedule",
        "Jobs that send messages on a schedule (with a channel configured).",
        &["cron"],
        &[],
    ),
    Toolset::new(
        "message",
        "Messages to chat channels (with a channel configured).",
        &["message"],
        &[],
    ),
    Toolset::new(
        "checkpoints",
        "See and undo what calls changed in the files (when checkpoints are kept).",
        &["checkpoint_list", "checkpoint_diff", "rewind"],
        &[],
    ),
    Toolset::new(
        "minimal",
        "The least a coding agent works with, for small models: read, write and edit files, the shell, grep and glob.",
        &[
            "read_file",
            "write_file",
            "edit_file",
            "bash",
            "grep",
            "glob",
        ],
        &[],
    ),
    Toolset::new(
        "coding",
        "What a coding agent needs: files, search, shell, todos, think, read_output and ask_user.",
        &["think", "read_output", "ask_user"],
        &["files", "search", "shell", "todos"],
    ),
];
