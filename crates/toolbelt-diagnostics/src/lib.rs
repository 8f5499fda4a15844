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

/// What the tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::PathBuf;

    /// The `ruff` the tests run: the tests' virtual environment's
    /// (`TOOLBELT_PY_VENV`, else `~/.cache/toolbelt/venv`, made by
    /// tests/python/setup.sh), else one on `PATH`. None (the test is skipped)
    /// when there is none, unless `TOOLBELT_REQUIRE_CHECKERS=1` (CI) fails it.
    pub(crate) fn ruff() -> Option<String> {
        let venv = std::env::var_os("TOOLBELT_PY_VENV")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/toolbelt/venv"))
            })
            .map(|v| v.join("bin/ruff"))
            .filter(|p| p.is_file());
        let found = venv
            .map(|p| p.display().to_string())
            .or_else(|| toolbelt_exec::on_path("ruff").then(|| "ruff".to_owned()));
        if found.is_none() {
            assert!(
                std::env::var("TOOLBELT_REQUIRE_CHECKERS").as_deref() != Ok("1"),
                "ruff is not installed (tests/python/setup.sh installs it)"
            );
            println!("skipped: ruff is not installed (tests/python/setup.sh installs it)");
        }
        found
    }
}
