//! What an edit broke, for toolbelt's write tools: the post-edit pipeline behind
//! the core's [`AfterWrite`](toolbelt_core::AfterWrite).
//!
//! - [`syntax`]: the in-process syntax check (tree-sitter), always on, about a
//!   millisecond: the errors a change adds, and `reject = "syntax"`;
//! - [`format`](mod@format): a configured formatter on the staged text, keeping only its
//!   changes on the edited lines by default;
//! - [`lint`]: linters that are not language servers, their output read by a
//!   named parser (exit codes are not trusted);
//! - [`lsp`]: language servers over async-lsp, every change versioned, a
//!   diagnostic counted only for its version (never stale), a hard budget per
//!   call, crashes and garbage contained;
//! - [`compare`]: only new problems (by checker, code, message and the line
//!   shifted through the diff); [`report`]: the block the model reads;
//! - [`config`]: `[diagnostics]`, `[format.*]`, `[lint.*]`, `[lsp.*]`;
//!   [`Engine`] puts them together.

pub mod compare;
pub mod config;
mod engine;
pub mod format;
pub mod lint;
pub mod lsp;
pub mod report;
pub mod syntax;

pub use config::{Config, ConfigError};
pub use engine::{Engine, ProgramStatus};
