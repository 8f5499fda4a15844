//! The built-in tools of toolbelt, one module per tool, each with its description
//! for models in a `<tool>.md` file beside it.
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

mod coding;
mod describe;
mod files;
mod message;
mod planner;
mod schedule;
mod search;
mod shell;
mod skill;
mod store;
mod todo;
mod toolsets;
mod web;

pub use coding::read_output::{ReadOutput, ReadOutputParams, ReadOutputResult};
pub use coding::think::{Think, ThinkOutput, ThinkParams, ThoughtType};
pub use files::apply_patch::{
    ApplyPatch, ApplyPatchOutput, ApplyPatchParams, LooseMatch, PatchAction, PatchedFile,
};
pub use files::edit_file::{EditFile, EditFileOutput, EditFileParams, LineSpan};
pub use files::list_dir::{ListDir, ListDirOutput, ListDirParams};
pub use files::multi_edit::{
    MultiEdit, MultiEditApplied, MultiEditItem, MultiEditOutput, MultiEditParams,
};
pub use files::read_file::{
    ImageData, MAX_IMAGE_BYTES, MAX_READ_BYTES, ReadFile, ReadFileOutput, ReadFileParams, ReadKind,
};
pub use files::write_file::{WriteFile, WriteFileOutput, WriteFileParams, WriteMode};
pub use message::message::{MESSAGE_WAIT_MS, Message, MessageOutput, MessageParams};
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
pub use planner::{
    GoalData, GoalStageParam, PriorityParam, ProjectData, ProjectStatusParam, TaskData,
    TaskStatusParam, rfc3339,
};
pub use schedule::cron::{
    Cron, CronAction, CronOutput, CronParams, JobData, LastRunData, job_data,
};
pub use search::glob::{Glob, GlobFound, GlobParams, GlobResult, GlobSortParam};
pub use search::grep::{Grep, GrepFile, GrepLine, GrepMode, GrepParams, GrepResult};
pub use shell::bash::{
    Bash, BashOutput, BashParams, MAX_BASH_TIMEOUT_SECS, MAX_CONCURRENT_COMMANDS,
};
pub use shell::bash_output::{
    BashOutputParams, BashOutputTool, DEFAULT_BLOCK_SECS, MAX_BLOCK_SECS, ShellReport, ShellState,
};
pub use shell::kill_shell::{KillShell, KillShellParams};
pub use shell::list_shells::{ListShells, ListShellsParams, ShellEntry, ShellList};
pub use shell::write_stdin::{WriteStdin, WriteStdinParams};
pub use skill::{
    MAX_ENTRIES_PER_DIR, MAX_LISTED_DESCRIPTION_CHARS, MAX_LISTED_FILES, MAX_LISTED_SKILLS,
    MAX_SKILL_FILE_BYTES, MAX_SKILL_NAME_LEN, SKILL_FILE, Skill, SkillOutput, SkillParams,
    SkillProblem, SkillScan, SkillTool, Skills, UnknownSkill, skill_dirs,
};
pub use store::{StoreHandle, store_error};
pub use todo::set_todo_list::{
    SetTodoList, SetTodoListParams, Todo, TodoCounts, TodoInput, TodoListOutput, TodoStatus, render,
};
pub use todo::update_todos::{
    NewTodo, TodoChange, TodoListChanges, UpdateTodos, UpdateTodosOutput, UpdateTodosParams,
};
pub use toolsets::TOOLSETS;
pub use web::WebOptions;
pub use web::web_fetch::{
    DEFAULT_FETCH_TIMEOUT_SECS, DEFAULT_MAX_LENGTH, FetchFormat, MAX_FETCH_TIMEOUT_SECS, WebFetch,
    WebFetchOutput, WebFetchParams,
};
pub use web::web_search::{
    TimeRangeParam, WebSearch, WebSearchOutput, WebSearchParams, WebSearchResult,
};

use std::sync::Arc;

use toolbelt_core::{Registry, RegistryError};
use toolbelt_exec::Shells;
use toolbelt_sandbox::Sandbox;

/// How the built-in tools are set up.
#[derive(Debug, Clone, Default)]
pub struct BuiltinOptions {
    /// The sandbox of shell commands (none: they run with the server's rights).
    pub sandbox: Option<Arc<Sandbox>>,
    /// How the web tools reach the web.
    pub web: WebOptions,
    /// The store of todos and the planner; by default a SQLite file in the
    /// session's state directory, opened on first use.
    pub store: Option<StoreHandle>,
    /// The skills `skill` serves; by default those of the session's roots and of
    /// the user's config home, from the environment ([`Skills::from_env`]).
    pub skills: Option<Skills>,
}

/// Registers every built-in tool with the default options. The shell tools share
/// one set of background shells, killed when the registry (the last holder) is
/// dropped.
///
/// # Errors
/// A tool of the same name is already registered.
pub fn register_builtins(registry: &mut Registry) -> Result<(), RegistryError> {
    register_builtins_with(registry, BuiltinOptions::default())
}

/// Registers every built-in tool, set up by `options`.
///
/// # Errors
/// A tool of the same name is already registered.
pub fn register_builtins_with(
    registry: &mut Registry,
    options: BuiltinOptions,
) -> Result<(), RegistryError> {
    let store = options.store.unwrap_or_else(|| {
        StoreHandle::lazy(toolbelt_store::Location::in_state_dir(
            registry.session().state_dir(),
        ))
    });
    registry.register_typed(Think)?;
    registry.register_typed(SetTodoList::new(store.clone()))?;
    registry.register_typed(UpdateTodos::new(store.clone()))?;
    registry.register_typed(WriteReview::new(store.clone()))?;
    registry.register_typed(ListReviews::new(store.clone()))?;
    registry.register_typed(AnalyzePatterns::new(store.clone()))?;
    registry.register_typed(CreateProject::new(store.clone()))?;
    registry.register_typed(UpdateProject::new(store.clone()))?;
    registry.register_typed(DeleteProject::new(store.clone()))?;
    registry.register_typed(GetProject::new(store.clone()))?;
    registry.register_typed(ListProjects::new(store.clone()))?;
    registry.register_typed(CreateGoal::new(store.clone()))?;
    registry.register_typed(LinkGoalToProject::new(store.clone()))?;
    registry.register_typed(ListGoals::new(store.clone()))?;
    registry.register_typed(CreateTask::new(store.clone()))?;
    registry.register_typed(CompleteTask::new(store.clone()))?;
    registry.register_typed(ListTasks::new(store.clone()))?;
    registry.register_typed(ReadOutput)?;
    registry.register_typed(ReadFile)?;
    registry.register_typed(WriteFile)?;
    registry.register_typed(EditFile)?;
    registry.register_typed(MultiEdit)?;
    registry.register_typed(ApplyPatch)?;
    registry.register_typed(ListDir)?;
    registry.register_typed(Grep)?;
    registry.register_typed(Glob)?;
    registry.register_typed(WebFetch::new(&options.web))?;
    registry.register_typed(WebSearch::new(&options.web))?;
    let shells = Shells::new();
    registry.register_typed(Bash::new(shells.clone()).with_sandbox(options.sandbox))?;
    registry.register_typed(BashOutputTool::new(shells.clone()))?;
    registry.register_typed(WriteStdin::new(shells.clone()))?;
    registry.register_typed(KillShell::new(shells.clone()))?;
    registry.register_typed(ListShells::new(shells))?;
    let skills = options
        .skills
        .unwrap_or_else(|| Skills::from_env(registry.session().roots()));
    registry.register(SkillTool::new(skills))?;
    Ok(())
}

/// Registers `message` and `cron` on `messaging`'s channels, outbox and scheduler:
/// `message` when at least one channel is configured, `cron` when a channel is or
/// jobs can run prompts ([`toolbelt_sched::Messaging::runs_prompts`]; a prompt job
/// without a channel keeps its answer as its last run). Without either, neither
/// tool could do anything, and a tool that can only fail costs the model tokens and
/// turns. Returns whether `cron` was registered.
///
/// # Errors
/// A tool of the same name is already registered.
pub fn register_messaging(
    registry: &mut Registry,
    messaging: &toolbelt_sched::Messaging,
) -> Result<bool, RegistryError> {
    let channels = !messaging.channels().is_empty();
    if channels {
        registry.register_typed(Message::new(messaging.clone()))?;
    }
    if channels || messaging.runs_prompts() {
        registry.register_typed(Cron::new(messaging.clone()))?;
        return Ok(true);
    }
    Ok(false)
}
