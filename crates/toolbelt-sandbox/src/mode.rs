//! What a sandbox allows: the file-system mode and the network, and the plan the
//! helper carries out for one command.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What commands may write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No file-system sandbox: commands run with the server's own rights.
    #[default]
    None,
    /// Commands read everything and write nowhere but their private temporary
    /// directory (and `/dev/null`).
    ReadOnly,
    /// Commands write inside the workspace roots and their private temporary
    /// directory only; the `hooks` and `config` of the roots' git repositories,
    /// toolbelt's configuration (`toolbelt.toml`, `.toolbelt/hooks`) and the
    /// paths given to [`crate::Sandbox::protecting`] stay read-only.
    WorkspaceWrite,
}

impl SandboxMode {
    /// Every mode, in order of strictness.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::None,
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
    ];

    /// The mode named `name` (`none`, `read-only`, `workspace-write`).
    #[must_use]
    pub fn parse(name: &str) -> Option<SandboxMode> {
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.as_str() == name.trim().to_ascii_lowercase().replace('_', "-"))
    }

    /// Its name in configuration.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            SandboxMode::None => "none",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the helper sets up before it starts one command; passed to it as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Plan {
    /// The file-system mode.
    pub(crate) mode: SandboxMode,
    /// Network reachable (no network namespace, no Landlock network rules).
    pub(crate) network: bool,
    /// Directories written under [`SandboxMode::WorkspaceWrite`] (absolute).
    pub(crate) writable: Vec<PathBuf>,
    /// The private temporary directory, writable in every mode.
    pub(crate) tmp: PathBuf,
    /// Enter a new user namespace (else, as root, the other namespaces alone).
    pub(crate) user_ns: bool,
    /// Enter a new mount namespace and keep the roots' git hooks and config
    /// read-only there; without it, a root holding a git directory is refused.
    pub(crate) mount_ns: bool,
    /// Enter a new PID namespace: every process of the command dies with it.
    pub(crate) pid_ns: bool,
    /// Directories hidden under an empty read-only tmpfs (needs `mount_ns`): the
    /// server's state, which holds its token.
    #[serde(default)]
    pub(crate) hidden: Vec<PathBuf>,
    /// Paths kept read-only under [`SandboxMode::WorkspaceWrite`] besides
    /// toolbelt's configuration (absolute; see [`crate::config`]).
    #[serde(default)]
    pub(crate) protected: Vec<PathBuf>,
}
