//! grep and glob for toolbelt, in process on ripgrep's crates (`grep-searcher`,
//! `grep-regex`, `ignore`), through the roots of a [`toolbelt_fs::Jail`], and the
//! directory tree of list_dir.

pub mod glob;
pub mod grep;
pub mod tree;
mod walk;
