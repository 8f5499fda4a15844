//! The built-in tools of toolbelt, one folder per toolset (`files/`, `search/`,
//! `shell/`, `web/`, `todo/`, `planner/`, `message/`, `schedule/`, `skill/`,
//! `checkpoints/`, and `coding/` for `think`, `ask_user` and `read_output`), each
//! tool one `<tool>.rs` with its description for models in a `<tool>.md` beside
//! it, and what a set's tools share in its `mod.rs`; what several sets share
//! lives beside them (the workspace, the delivery of a message, the store). The
//! tools kept in the store hold only the shared [`StoreHandle`]; the errors of
//! the crates below convert into [`ToolError`](toolbelt_core::ToolError) with
//! `From`, so a tool writes `?` (those of `toolbelt-checkpoint` through a
//! function of their toolset).
//!
//! Other crates reach the tools through registration, not by type:
//!
//! - [`register_builtins`] and [`register_builtins_with`] register every tool, set
//!   up by [`BuiltinOptions`] (the sandbox of shell commands, [`WebOptions`], the
//!   store, the [`Skills`], the permission rules);
//!   [`register_messaging`] registers `message` when a channel is configured,
//!   `cron` when a channel is or jobs can run prompts; [`register_checkpoints`]
//!   registers `checkpoint_list`, `checkpoint_diff` and `rewind` when the
//!   workspace keeps checkpoints (a rewind waits for the person's approval);
//!   [`register_diagnostics`] gives the write tools the post-edit pipeline
//!   (formatter, syntax check, diagnostics) and registers `diagnostics`.
//! - The tools: `think`, `ask_user` and `read_output`; `read_file`, `write_file`,
//!   `edit_file`, `multi_edit`, `apply_patch` and `list_dir` on the workspace's
//!   files; `grep` and `glob`; `web_fetch` and `web_search`; `bash` and the
//!   background shells (`bash_output`, `write_stdin`, `kill_shell`,
//!   `list_shells`); the todo list (`set_todo_list`, `update_todos`), reviews and
//!   the planner, kept in the store; `message` and `cron`; and [`SkillTool`]
//!   (`skill`), which loads a skill's instructions from [`Skills`] (folders with a
//!   `SKILL.md` in the workspace and the user's config home).
//! - [`profiles`] name the tools as other agents' harnesses do; [`TOOLSETS`]
//!   groups them (`files`, `search`, `shell`, `coding`, ...) for
//!   [`Registry::select`](toolbelt_core::Registry::select); [`apply_policy`] puts
//!   permission rules on a registry.
//!
//! ```
//! use toolbelt_core::{Registry, Session};
//!
//! let mut registry = Registry::new(Session::new(std::env::temp_dir()));
//! toolbelt_tools::register_builtins(&mut registry).unwrap();
//! assert!(registry.has("think"));
//! ```

mod builtins;
mod checkpoints;
mod coding;
mod delivery;
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
mod workspace;

pub use builtins::{
    BuiltinOptions, register_builtins, register_builtins_with, register_checkpoints,
    register_diagnostics, register_messaging,
};
pub use coding::ask_user::AskUser;
pub use files::read_file::MAX_READ_BYTES;
pub use permissions::{apply_policy, tool_kinds};
pub use schedule::cron::{JobData, LastRunData, job_data};
pub use skill::{
    SKILL_FILE, Skill, SkillProblem, SkillScan, SkillTool, Skills, UnknownSkill, skill_dirs,
};
pub use toolbelt_store::StoreHandle;
pub use toolsets::TOOLSETS;
pub use web::WebOptions;
