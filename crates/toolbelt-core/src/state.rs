//! Where a workspace's state lives (the store, spilled outputs, file stamps, agent
//! runs, the server's token): outside the workspace, in the user's state directory,
//! one directory per workspace.
//!
//! - [`workspace_id`]: a readable name plus a short hash of the root's canonical
//!   path (`myproject-3f9a1c0b7d2e`).
//! - [`user_state_home`]: `$XDG_STATE_HOME/toolbelt`, else `$HOME/.local/state/toolbelt`.
//! - [`default_state_dir`]: the directory a workspace uses when nothing names one —
//!   the workspace's own `.toolbelt/` when it already holds a store (nothing lost),
//!   else `<user state home>/<workspace id>`.
//!
//! ```
//! use std::path::Path;
//! use toolbelt_core::state::{default_state_dir, StateSource};
//!
//! let root = std::env::temp_dir();
//! let home = Path::new("/home/me/.local/state/toolbelt");
//! let location = default_state_dir(&root, Some(home));
//! assert_eq!(location.source, StateSource::User);
//! assert!(location.dir.starts_with(home));
//! ```

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The state directory inside a workspace that earlier versions used.
pub const WORKSPACE_STATE_DIR: &str = ".toolbelt";
/// The store's file in a state directory.
pub const STORE_FILE: &str = "toolbelt.db";
/// Characters of the readable part of a workspace id.
const MAX_NAME_CHARS: usize = 40;

/// Why a state directory was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StateSource {
    /// `--state-dir` or `TOOLBELT_STATE_DIR`.
    Explicit,
    /// `state_dir` in the configuration file.
    Config,
    /// The workspace's `.toolbelt/` already holds a store: it is kept.
    Workspace,
    /// The user's state directory.
    User,
    /// Neither `$XDG_STATE_HOME` nor `$HOME` is set: the workspace's `.toolbelt/`.
    NoHome,
}

impl StateSource {
    /// Why, in a few words, for `toolbelt doctor`.
    pub fn reason(self) -> &'static str {
        match self {
            StateSource::Explicit => "--state-dir or TOOLBELT_STATE_DIR",
            StateSource::Config => "state_dir in the config file",
            StateSource::Workspace => "the workspace's .toolbelt/ already holds a store: kept",
            StateSource::User => "default: outside the workspace",
            StateSource::NoHome => {
                "neither XDG_STATE_HOME nor HOME is set: the workspace's .toolbelt/"
            }
        }
    }
}

/// A state directory and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateLocation {
    /// The directory (made on first use).
    pub dir: PathBuf,
    /// Why this one.
    pub source: StateSource,
}

/// `$XDG_STATE_HOME/toolbelt` (when absolute, as the XDG specification asks), else
/// `$HOME/.local/state/toolbelt`; `None` without either. Pass the variables' values.
pub fn user_state_home(xdg_state_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(xdg) = xdg_state_home.filter(|p| p.is_absolute()) {
        return Some(xdg.join("toolbelt"));
    }
    home.filter(|p| p.is_absolute())
        .map(|h| h.join(".local").join("state").join("toolbelt"))
}

/// `$XDG_CONFIG_HOME/toolbelt` (when absolute), else `$HOME/.config/toolbelt`: where
/// the user's own skills (`skills/`) and agent types (`agents/`) live. `None`
/// without either. Pass the variables' values.
pub fn user_config_home(xdg_config_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(xdg) = xdg_config_home.filter(|p| p.is_absolute()) {
        return Some(xdg.join("toolbelt"));
    }
    home.filter(|p| p.is_absolute())
        .map(|h| h.join(".config").join("toolbelt"))
}

/// [`user_config_home`] from this process's environment.
pub fn user_config_home_from_env() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    user_config_home(var("XDG_CONFIG_HOME").as_deref(), var("HOME").as_deref())
}

/// The name of `root`'s state directory: its last component (letters, digits,
/// `.`, `_` and `-`; other characters become `_`) and 12 hex digits of a hash of
/// its canonical path, so two workspaces of the same name never share state.
pub fn workspace_id(root: &Path) -> String {
    let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let name: String = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .take(MAX_NAME_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = name.trim_start_matches('.');
    let name = if name.is_empty() { "root" } else { name };
    let hash = fnv1a64(real.as_os_str().as_encoded_bytes());
    format!("{name}-{:012x}", hash >> 16)
}

/// FNV-1a, 64 bits: a hash that stays the same across builds and platforms.
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// The state directory of the workspace `root` when none is named: its
/// `.toolbelt/` when that already holds a store, else `<state_home>/<workspace id>`
/// (see [`user_state_home`]; without one, `.toolbelt/` in the workspace).
pub fn default_state_dir(root: &Path, state_home: Option<&Path>) -> StateLocation {
    let inside = root.join(WORKSPACE_STATE_DIR);
    if inside.join(STORE_FILE).is_file() {
        return StateLocation {
            dir: inside,
            source: StateSource::Workspace,
        };
    }
    match state_home {
        Some(home) => StateLocation {
            dir: home.join(workspace_id(root)),
            source: StateSource::User,
        },
        None => StateLocation {
            dir: inside,
            source: StateSource::NoHome,
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn xdg_wins_over_home_and_relative_values_are_ignored() {
        let (x, h) = (Path::new("/x/state"), Path::new("/home/u"));
        assert_eq!(
            user_state_home(Some(x), Some(h)),
            Some(PathBuf::from("/x/state/toolbelt"))
        );
        assert_eq!(
            user_state_home(Some(Path::new("rel")), Some(h)),
            Some(PathBuf::from("/home/u/.local/state/toolbelt"))
        );
        assert_eq!(user_state_home(None, None), None);
    }

    #[test]
    fn ids_are_readable_stable_and_differ_by_path() {
        let a = workspace_id(Path::new("/nonexistent/a b/my project"));
        assert_eq!(a, workspace_id(Path::new("/nonexistent/a b/my project")));
        assert!(a.starts_with("my_project-"), "{a}");
        assert_eq!(a.len(), "my_project-".len() + 12);
        assert_ne!(a, workspace_id(Path::new("/nonexistent/b/my project")));
        assert!(workspace_id(Path::new("/")).starts_with("root-"));
        assert!(workspace_id(Path::new("/x/.hidden")).starts_with("hidden-"));
    }

    #[test]
    fn a_workspace_store_is_kept_else_the_user_state_dir() {
        let dir = tempfile::tempdir().unwrap();
        let home = Path::new("/state/toolbelt");
        let fresh = default_state_dir(dir.path(), Some(home));
        assert_eq!(fresh.source, StateSource::User);
        assert_eq!(fresh.dir, home.join(workspace_id(dir.path())));
        // An empty .toolbelt/ (agents, skills) is not a store.
        std::fs::create_dir(dir.path().join(".toolbelt")).unwrap();
        assert_eq!(
            default_state_dir(dir.path(), Some(home)).source,
            StateSource::User
        );
        std::fs::write(dir.path().join(".toolbelt/toolbelt.db"), "").unwrap();
        let kept = default_state_dir(dir.path(), Some(home));
        assert_eq!(
            kept,
            StateLocation {
                dir: dir.path().join(".toolbelt"),
                source: StateSource::Workspace
            }
        );
        assert_eq!(
            default_state_dir(Path::new("/nowhere"), None).source,
            StateSource::NoHome
        );
    }
}
