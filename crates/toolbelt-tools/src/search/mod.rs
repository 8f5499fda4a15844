//! The search toolset: [`grep::Grep`] searches file contents (ripgrep's engine),
//! [`glob::Glob`] finds files by name.

pub(crate) mod glob;
pub(crate) mod grep;
