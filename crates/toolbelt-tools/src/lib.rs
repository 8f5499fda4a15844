//! The built-in tools of toolbelt, one folder per toolset (`files/`, `search/`,
//! `shell/`, `web/`, `todo/`, `planner/`, `message/`, `schedule/`, `skill/`, and
//! `coding/` for `think` and `read_output`), each tool one `<tool>.rs` with its
//! description for models in a `<tool>.md` beside it, and what a set's tools share
//! in its `mod.rs`; `builtins.rs` registers them. The tools kept in the store hold
//! only the shared [`StoreHandle`]; the errors of the crates below convert into
//! [`ToolError`](toolbelt_core::ToolError) with `From`, so a tool writes `?`.
//!
//! - [`Think`]: reason out loud, shown to the user.
//! - [`SetTodoList`]: the agent's todo list, kept in the store per workspace and
//!   per named list, with stable ids; [`UpdateTodos`] changes it by id.
//! - [`WriteReview`], [`ListReviews`], [`AnalyzePatterns`]: the user's reviews and the
//!   patterns in them (mood, tags, themes, tasks, streaks), kept in the store.
//! - The planner, kept in the store: projects ([`CreateProject`], [`UpdateProject`],
//!   [`DeleteProject`], [`GetProject`], [`ListProjects`]), goals ([`CreateGoal`],
//!   [`LinkGoalToProject`], [`ListGoals`]) and tasks ([`CreateTask`],
//!   [`CompleteTask`], [`ListTasks`]).
//! - [`ReadOutput`]: pages an output that was too long and was saved whole.
//! - [`ReadFile`], [`WriteFile`], [`ListDir`]: files in the workspace, read as
//!   numbered lines, written atomically, listed as a tree.
//! - [`ApplyPatch`]: adds, deletes, updates and moves files with one patch, all or nothing.
//! - [`EditFile`], [`MultiEdit`]: replace text in a file, one or several places at once.
//! - [`Grep`]: searches file contents (ripgrep's engine); [`Glob`]: finds files by name.
//! - [`WebFetch`]: fetches a page behind an SSRF guard and returns its main content;
//!   [`WebSearch`]: searches the web (DuckDuckGo without a key, Brave, SearXNG).
//! - [`Message`]: sends to a configured channel (webhook, Telegram, Slack, Discord,
//!   email, file) through the store's outbox; [`Cron`]: jobs that send messages,
//!   or run a prompt by the agent and send its answer, on a schedule, fired by the
//!   server. [`register_messaging`] registers `message` when a channel is
//!   configured, `cron` when a channel is or jobs can run prompts.
//! - [`Bash`]: runs a shell command; the whole process tree is stopped on timeout.
//!   With `run_in_background` it starts a background shell instead, which
//!   [`BashOutputTool`] (`bash_output`), [`WriteStdin`], [`KillShell`] and
//!   [`ListShells`] reach through one shared [`toolbelt_exec::Shells`]. Commands
//!   run in the sandbox of [`BuiltinOptions::sandbox`], when one is given.
//! - [`SkillTool`] (`skill`): loads a skill's instructions; [`Skills`] finds the
//!   skills (folders with a `SKILL.md`) in the workspace and the user's config home.
//!
//! [`TOOLSETS`] groups them (`files`, `search`, `shell`, `coding`, ...) for
//! [`Registry::select`](toolbelt_core::Registry::select).
//!
//! ```
//! use toolbelt_core::{Registry, Session};
//!
//! let mut registry = Registry::new(Session::new(std::env::temp_dir()));
//! toolbelt_tools::register_builtins(&mut registry).unwrap();
//! assert!(registry.has("think"));
//! ```

mod builtins;
mod coding;
mod describe;
mod files;
mod message;
mod permissions;
mod planner;
pub mod profiles;
mod schedule;
mod search;
mod shell;
mod skill;
mod stored;
mod todo;
mod toolsets;
mod web;

pub use builtins::{BuiltinOptions, register_builtins, register_builtins_with, register_messaging};
pub use coding::ask_user::{AskUser, AskUserOutput, AskUserParams};
pub use coding::read_output::{ReadOutput, ReadOutputParams, ReadOutputResult};
pub use coding::think::{Think, ThinkOutput, ThinkParams, ThoughtType};
pub use files::apply_patch::{
    ApplyPatch, ApplyPatchOutput, ApplyPatchParams, LooseMatch, PatchAction, PatchedFile,
};
pub use files::edit_file::{EditFile, EditFileOutput, EditFileParams};
pub use files::edits::LineSpan;
pub use files::list_dir::{ListDir, ListDirOutput, ListDirParams};
pub use files::multi_edit::{
    MultiEdit, MultiEditApplied, MultiEditItem, MultiEditOutput, MultiEditParams,
};
pub use files::read_file::{
    ImageData, MAX_IMAGE_BYTES, MAX_READ_BYTES, ReadFile, ReadFileOutput, ReadFileParams, ReadKind,
};
pub use files::write_file::{WriteFile, WriteFileOutput, WriteFileParams, WriteMode};
pub use message::message::{Message, MessageParams};
pub use message::{MESSAGE_WAIT_MS, MessageOutput};
pub use permissions::{apply_policy, tool_kinds};
pub use planner::analyze_patterns::{AnalyzePatterns, AnalyzePatternsParams};
pub use planner::complete_task::{CompleteTask, CompleteTaskOutput, CompleteTaskParams};
pub use planner::create_goal::{CreateGoal, CreateGoalParams};
pub use planner::create_project::{CreateProject, CreateProjectParams};
pub use planner::create_task::{CreateTask, CreateTaskParams};
pub use planner::delete_project::{DeleteProject, DeleteProjectOutput, DeleteProjectParams};
pub use planner::get_project::{
    GetProject, GetProjectOutput, GetProjectParams, LinkedGoalData, OverdueTaskData,
    ProjectStatsData,
};
pub use planner::link_goal_to_project::{
    LinkGoalOutput, LinkGoalToProject, LinkGoalToProjectParams,
};
pub use planner::list_goals::{ListGoals, ListGoalsOutput, ListGoalsParams};
pub use planner::list_projects::{ListProjects, ListProjectsOutput, ListProjectsParams};
pub use planner::list_reviews::{ListReviews, ListReviewsParams};
pub use planner::list_tasks::{ListTasks, ListTasksOutput, ListTasksParams};
pub use planner::update_project::{ProjectUpdates, UpdateProject, UpdateProjectParams};
pub use planner::write_review::{WriteReview, WriteReviewParams};
pub use planner::{GoalData, ProjectData, TaskData, rfc3339};
pub use schedule::cron::{
    Cron, CronAction, CronOutput, CronParams, JobData, LastRunData, job_data,
};
pub use search::glob::{Glob, GlobFound, GlobParams, GlobResult, GlobSortParam};
pub use search::grep::{Grep, GrepFile, GrepLine, GrepMode, GrepParams, GrepResult};
pub use shell::bash::{
    Bash, BashOutput, BashParams, MAX_BASH_TIMEOUT_SECS, MAX_CONCURRENT_COMMANDS,
};
pub use shell::bash_output::{
    BashOutputParams, BashOutputTool, DEFAULT_BLOCK_SECS, MAX_BLOCK_SECS,
};
pub use shell::kill_shell::{KillShell, KillShellParams};
pub use shell::list_shells::{ListShells, ListShellsParams, ShellEntry, ShellList};
pub use shell::write_stdin::{WriteStdin, WriteStdinParams};
pub use shell::{ShellReport, ShellState};
pub use skill::{
    MAX_ENTRIES_PER_DIR, MAX_LISTED_DESCRIPTION_CHARS, MAX_LISTED_FILES, MAX_LISTED_SKILLS,
    MAX_SKILL_FILE_BYTES, MAX_SKILL_NAME_LEN, SKILL_FILE, Skill, SkillOutput, SkillParams,
    SkillProblem, SkillScan, SkillTool, Skills, UnknownSkill, skill_dirs,
};
pub use todo::set_todo_list::{SetTodoList, SetTodoListParams, TodoInput};
pub use todo::update_todos::{
    NewTodo, TodoChange, TodoListChanges, UpdateTodos, UpdateTodosOutput, UpdateTodosParams,
};
pub use todo::{Todo, TodoCounts, TodoListOutput, TodoStatus, render};
pub use toolbelt_store::StoreHandle;
pub use toolsets::TOOLSETS;
pub use web::WebOptions;
pub use web::web_fetch::{
    DEFAULT_FETCH_TIMEOUT_SECS, DEFAULT_MAX_LENGTH, FetchFormat, MAX_FETCH_TIMEOUT_SECS, WebFetch,
    WebFetchOutput, WebFetchParams,
};
pub use web::web_search::{
    TimeRangeParam, WebSearch, WebSearchOutput, WebSearchParams, WebSearchResult,
};
