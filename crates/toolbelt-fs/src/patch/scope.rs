//! [`PathScope`]: where a patch's paths live, and why a path is refused
//! ([`ScopeError`]).

use std::path::{Component, Path, PathBuf};

/// Where patch paths live: relative paths are joined to `cwd`; every path, once
/// `.` and `..` are folded, must lie under one of `roots`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathScope {
    /// The directory relative paths start from (absolute).
    pub cwd: PathBuf,
    /// The directories every path must lie in (absolute).
    pub roots: Vec<PathBuf>,
}

impl PathScope {
    /// A scope with `cwd` and `roots`.
    #[must_use]
    pub fn new(cwd: impl Into<PathBuf>, roots: Vec<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            roots,
        }
    }

    /// The absolute, lexically folded path of `raw`.
    ///
    /// # Errors
    /// A [`ScopeError`] (its message is for the model) when `raw` is empty, holds a
    /// NUL byte, climbs out of the roots with `..`, or is an absolute path
    /// elsewhere.
    ///
    /// # Security
    /// Lexical only: symlinks are not followed, so the result must still be opened
    /// through a confined resolver (the jail), which refuses the rest.
    pub fn locate(&self, raw: &str) -> Result<PathBuf, ScopeError> {
        if raw.is_empty() {
            return Err(ScopeError::Empty);
        }
        if raw.contains('\0') {
            return Err(ScopeError::Nul {
                path: raw.to_string(),
            });
        }
        let given = Path::new(raw);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.cwd.join(given)
        };
        let mut folded = PathBuf::new();
        let mut climbed_out = false;
        for component in joined.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => folded.push(component),
                Component::CurDir => {}
                Component::ParentDir => {
                    if folded.parent().is_some() {
                        folded.pop();
                    } else {
                        climbed_out = true;
                    }
                }
                Component::Normal(part) => folded.push(part),
            }
        }
        if self.roots.iter().any(|root| folded.starts_with(root)) && !climbed_out {
            return Ok(folded);
        }
        let (path, roots) = (raw.to_string(), self.roots.clone());
        Err(if given.is_absolute() {
            ScopeError::Outside { path, roots }
        } else {
            ScopeError::ClimbsOut { path, roots }
        })
    }

    /// `abs` relative to `cwd` when beneath it, else absolute.
    #[must_use]
    pub fn display(&self, abs: &Path) -> String {
        abs.strip_prefix(&self.cwd).map_or_else(
            |_| abs.display().to_string(),
            |rel| rel.display().to_string(),
        )
    }
}

/// Why [`PathScope::locate`] refuses a path; the message is for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScopeError {
    /// The path is empty.
    #[error("empty path")]
    Empty,
    /// The path holds a NUL byte.
    #[error("path {path:?} contains a NUL byte")]
    Nul {
        /// The path as written.
        path: String,
    },
    /// An absolute path outside every root.
    #[error(
        "{path} is outside the workspace ({}); use a path inside it",
        shown_roots(roots)
    )]
    Outside {
        /// The path as written.
        path: String,
        /// The roots of the scope.
        roots: Vec<PathBuf>,
    },
    /// A relative path that climbs out of the roots with `..`.
    #[error(
        "{path} leaves the workspace ({}) through `..`; use a path inside it",
        shown_roots(roots)
    )]
    ClimbsOut {
        /// The path as written.
        path: String,
        /// The roots of the scope.
        roots: Vec<PathBuf>,
    },
}

/// `roots` as a model reads them: `/a, /b`.
fn shown_roots(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
