//! Registration of every built-in tool: [`register_builtins_with`] sets them up
//! from [`BuiltinOptions`]; [`register_messaging`] adds `message` and `cron` where
//! channels or prompt runs make them useful; [`register_checkpoints`] adds the
//! checkpoint tools where checkpoints are kept.

use std::sync::Arc;

use toolbelt_checkpoint::Checkpoints;
use toolbelt_core::{Registry, RegistryError};
use toolbelt_exec::Shells;
use toolbelt_sandbox::Sandbox;
use toolbelt_store::StoreHandle;

use crate::checkpoints::AskBeforeRewind;
use crate::checkpoints::checkpoint_diff::CheckpointDiff;
use crate::checkpoints::checkpoint_list::CheckpointList;
use crate::checkpoints::rewind::RewindTool;
use crate::coding::ask_user::AskUser;
use crate::coding::read_output::ReadOutput;
use crate::coding::think::Think;
use crate::files::apply_patch::ApplyPatch;
use crate::files::edit_file::EditFile;
use crate::files::list_dir::ListDir;
use crate::files::multi_edit::MultiEdit;
use crate::files::read_file::ReadFile;
use crate::files::write_file::WriteFile;
use crate::message::message::Message;
use crate::planner::analyze_patterns::AnalyzePatterns;
use crate::planner::complete_task::CompleteTask;
use crate::planner::create_goal::CreateGoal;
use crate::planner::create_project::CreateProject;
use crate::planner::create_task::CreateTask;
use crate::planner::delete_project::DeleteProject;
use crate::planner::get_project::GetProject;
use crate::planner::link_goal_to_project::LinkGoalToProject;
use crate::planner::list_goals::ListGoals;
use crate::planner::list_projects::ListProjects;
use crate::planner::list_reviews::ListReviews;
use crate::planner::list_tasks::ListTasks;
use crate::planner::update_project::UpdateProject;
use crate::planner::write_review::WriteReview;
use crate::schedule::cron::Cron;
use crate::search::glob::Glob;
use crate::search::grep::Grep;
use crate::shell::bash::Bash;
use crate::shell::bash_output::BashOutputTool;
use crate::shell::kill_shell::KillShell;
use crate::shell::list_shells::ListShells;
use crate::shell::write_stdin::WriteStdin;
use crate::skill::{SkillTool, Skills};
use crate::todo::set_todo_list::SetTodoList;
use crate::todo::update_todos::UpdateTodos;
use crate::web::WebOptions;
use crate::web::web_fetch::WebFetch;
use crate::web::web_search::WebSearch;

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
    /// The permission rules of every call (see [`crate::apply_policy`]); by default
    /// none but the built-in secret files.
    pub policy: Option<toolbelt_policy::Policy>,
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
    registry.register_typed(AskUser)?;
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
    let policy = options.policy.unwrap_or_default();
    crate::permissions::apply_policy(registry, policy)?;
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

/// Gives the write tools `after` (formatter, syntax check, diagnostics after each
/// write; the files a shell command changed, when it says so) and registers the
/// `diagnostics` tool over it.
///
/// # Errors
/// A tool of the same name is already registered.
pub fn register_diagnostics(
    registry: &mut Registry,
    after: Arc<dyn toolbelt_core::AfterWrite>,
) -> Result<(), RegistryError> {
    registry.register_typed(crate::files::diagnostics::Diagnostics::new(Arc::clone(
        &after,
    )))?;
    registry.set_after_write(Some(after));
    Ok(())
}

/// Registers `checkpoint_list`, `checkpoint_diff` and `rewind` on `checkpoints`,
/// and makes every rewind wait for the person's approval unless a rule decides
/// it (a rule that allows `rewind` lets it run; a dry run is never asked about).
/// Call it after the permission rules are in place ([`crate::apply_policy`]):
/// it wraps the registry's authorizer as it is then.
///
/// # Errors
/// A tool of the same name is already registered.
pub fn register_checkpoints(
    registry: &mut Registry,
    checkpoints: &Checkpoints,
) -> Result<(), RegistryError> {
    registry.register_typed(CheckpointList::new(checkpoints.clone()))?;
    registry.register_typed(CheckpointDiff::new(checkpoints.clone()))?;
    registry.register(RewindTool::new(checkpoints.clone()))?;
    let authorizer = Arc::clone(registry.authorizer());
    registry.set_authorizer(Arc::new(AskBeforeRewind::new(authorizer)));
    Ok(())
}
