//! [`Sandbox`]: a checked mode, the roots it may write, and how to run a command
//! inside it.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::mode::{Plan, SandboxMode};
use crate::probe::Support;
use crate::{SandboxError, config, git};

/// A sandbox for shell commands, checked against what the machine enforces.
///
/// Built once per workspace; [`Sandbox::command`] wraps each command line in the
/// helper that sets the sandbox up. Its private temporary directory (the
/// commands' `TMPDIR`) is removed when it is dropped.
#[derive(Debug)]
pub struct Sandbox {
    mode: SandboxMode,
    network: bool,
    helper: PathBuf,
    plan: Plan,
    plan_json: String,
    /// A mount namespace works here: directories can be hidden.
    can_hide: bool,
    /// What the probe found wrong, for a refusal.
    problems: Vec<String>,
    tmp: tempfile::TempDir,
}

impl Sandbox {
    /// The sandbox for `mode` and `network` over `roots`, probed with the helper
    /// [`crate::locate_helper`] finds. `None` when there is nothing to enforce
    /// (mode `none` with the network on).
    ///
    /// # Errors
    /// The mode cannot be enforced here ([`SandboxError::Unsupported`],
    /// [`SandboxError::GitNeedsMountNamespace`],
    /// [`SandboxError::ReadOnlyNeedsMountNamespace`]), toolbelt's configuration
    /// lies behind a symbolic link in a root ([`SandboxError::ReadOnlyThroughLink`]),
    /// a root cannot be resolved, or the temporary directory cannot be made.
    ///
    /// # Security
    /// Never weakens a mode: what cannot be enforced is refused.
    pub fn new(
        mode: SandboxMode,
        network: bool,
        roots: &[PathBuf],
    ) -> Result<Option<Sandbox>, SandboxError> {
        if mode == SandboxMode::None && network {
            return Ok(None);
        }
        let helper = crate::locate_helper().ok_or(SandboxError::NoHelper)?;
        Sandbox::with_helper(mode, network, roots, helper, Support::probe()).map(Some)
    }

    /// As [`Sandbox::new`], with an explicit helper and what it probed.
    ///
    /// # Errors
    /// As [`Sandbox::new`].
    pub fn with_helper(
        mode: SandboxMode,
        network: bool,
        roots: &[PathBuf],
        helper: PathBuf,
        support: &Support,
    ) -> Result<Sandbox, SandboxError> {
        support.check(mode, network)?;
        let mut writable = Vec::new();
        for root in roots {
            let real = std::fs::canonicalize(root).map_err(|source| SandboxError::Root {
                path: root.clone(),
                source,
            })?;
            if real.to_str().is_none() {
                return Err(SandboxError::Root {
                    path: root.clone(),
                    source: std::io::Error::other("the path is not valid UTF-8"),
                });
            }
            writable.push(real);
        }
        let guard = git::guard(&writable, &writable);
        if mode == SandboxMode::WorkspaceWrite
            && !support.mount_namespace
            && let Some(path) = guard.dirs.first().or(guard.files.first())
        {
            return Err(SandboxError::GitNeedsMountNamespace {
                path: path.clone(),
                problems: support.problems.clone(),
            });
        }
        if mode == SandboxMode::WorkspaceWrite {
            check_protected(&writable, &[], support.mount_namespace, &support.problems)?;
        }
        let tmp = tempfile::Builder::new()
            .prefix("toolbelt-sandbox-")
            .tempdir()?;
        let tmp_path = std::fs::canonicalize(tmp.path())?;
        let plan = Plan {
            mode,
            network,
            writable,
            tmp: tmp_path,
            user_ns: support.user_namespace,
            mount_ns: mode == SandboxMode::WorkspaceWrite && support.mount_namespace,
            pid_ns: support.pid_namespace,
            hidden: Vec::new(),
            protected: Vec::new(),
        };
        let plan_json = plan_json(&plan)?;
        Ok(Sandbox {
            mode,
            network,
            helper,
            plan,
            plan_json,
            can_hide: support.mount_namespace,
            problems: support.problems.clone(),
            tmp,
        })
    }

    /// Hides `dirs` from commands: each existing directory is covered by an empty,
    /// read-only file system in the command's mount namespace, so nothing in it can
    /// be read or written. Directories that do not exist are skipped. Under mode
    /// `none` nothing is hidden; without a mount namespace nothing can be (see
    /// [`Sandbox::hidden`]).
    ///
    /// # Errors
    /// The plan cannot be written for the helper.
    ///
    /// # Security
    /// For the server's own state (its token, the store): a directory made after
    /// this call is not hidden, so make the directories first.
    pub fn hiding(mut self, dirs: &[PathBuf]) -> Result<Sandbox, SandboxError> {
        if self.mode == SandboxMode::None || !self.can_hide {
            return Ok(self);
        }
        for dir in dirs {
            if let Ok(real) = std::fs::canonicalize(dir)
                && real.is_dir()
                && !self.plan.hidden.contains(&real)
            {
                self.plan.hidden.push(real);
            }
        }
        if !self.plan.hidden.is_empty() {
            self.plan.mount_ns = true;
        }
        self.plan_json = plan_json(&self.plan)?;
        Ok(self)
    }

    /// The directories commands cannot see (see [`Sandbox::hiding`]).
    #[must_use]
    pub fn hidden(&self) -> &[PathBuf] {
        &self.plan.hidden
    }

    /// Keeps `paths` read-only under [`SandboxMode::WorkspaceWrite`], as it keeps
    /// toolbelt's configuration: the hook scripts a person keeps elsewhere in the
    /// workspace. A relative path is taken from the first root. Each path that
    /// exists inside a writable root when a command starts is bound read-only
    /// (a directory with everything in it), and the directories between its root
    /// and it cannot be renamed; one outside the roots is read-only already.
    /// Under the other modes nothing changes: `read-only` writes none of them
    /// anyway, `none` enforces nothing.
    ///
    /// # Errors
    /// A path that exists needs a mount namespace this machine lacks
    /// ([`SandboxError::ReadOnlyNeedsMountNamespace`]), is reached through a
    /// symbolic link inside a root ([`SandboxError::ReadOnlyThroughLink`]), or
    /// is not valid UTF-8 ([`SandboxError::ReadOnlyNotUtf8`]); nothing is added
    /// then.
    ///
    /// # Security
    /// A path that does not exist yet is protected from the first command
    /// started after it is made; until then a command may create it.
    pub fn protecting(mut self, paths: &[PathBuf]) -> Result<Sandbox, SandboxError> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Ok(self);
        }
        let mut protected = self.plan.protected.clone();
        for path in paths {
            if path.to_str().is_none() {
                return Err(SandboxError::ReadOnlyNotUtf8 { path: path.clone() });
            }
            let path = match self.plan.writable.first() {
                Some(root) if path.is_relative() => root.join(path),
                _ => path.clone(),
            };
            if !protected.contains(&path) {
                protected.push(path);
            }
        }
        check_protected(
            &self.plan.writable,
            &protected,
            self.plan.mount_ns,
            &self.problems,
        )?;
        self.plan.protected = protected;
        self.plan_json = plan_json(&self.plan)?;
        Ok(self)
    }

    /// The paths given to [`Sandbox::protecting`] (absolute), kept read-only
    /// besides toolbelt's configuration.
    #[must_use]
    pub fn protected(&self) -> &[PathBuf] {
        &self.plan.protected
    }

    /// The file-system mode.
    #[must_use]
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether the network is reachable.
    #[must_use]
    pub fn network(&self) -> bool {
        self.network
    }

    /// The helper program that sets the sandbox up.
    #[must_use]
    pub fn helper(&self) -> &Path {
        &self.helper
    }

    /// The private temporary directory: give it to commands as `TMPDIR`.
    #[must_use]
    pub fn tmp_dir(&self) -> &Path {
        self.tmp.path()
    }

    /// The program and arguments that run `shell -c command` inside the sandbox.
    #[must_use]
    pub fn command(&self, shell: &Path, command: &str) -> (PathBuf, Vec<OsString>) {
        let args = vec![
            OsString::from(crate::HELPER_ARG),
            OsString::from("run"),
            OsString::from(&self.plan_json),
            shell.as_os_str().to_owned(),
            OsString::from("-c"),
            OsString::from(command),
        ];
        (self.helper.clone(), args)
    }

    /// What commands may do, for the model: a paragraph for a tool description.
    #[must_use]
    pub fn describe(&self) -> String {
        describe(self.mode, self.network)
    }
}

/// Refuses protected paths (toolbelt's configuration in `writable`, and
/// `protected`) that cannot be kept read-only: one behind a symbolic link a
/// command could replace, or any existing one without a mount namespace.
fn check_protected(
    writable: &[PathBuf],
    protected: &[PathBuf],
    mount_namespace: bool,
    problems: &[String],
) -> Result<(), SandboxError> {
    let binds =
        config::binds(writable, protected).map_err(|e| SandboxError::ReadOnlyThroughLink {
            path: e.path,
            link: e.link,
        })?;
    match binds.into_iter().find(|(_, read_only)| *read_only) {
        Some((path, _)) if !mount_namespace => Err(SandboxError::ReadOnlyNeedsMountNamespace {
            path,
            problems: problems.to_vec(),
        }),
        _ => Ok(()),
    }
}

/// The plan as the helper reads it (it fails only on a path that is not UTF-8,
/// such as a temporary directory's).
fn plan_json(plan: &Plan) -> std::io::Result<String> {
    Ok(serde_json::to_string(plan)?)
}

/// What commands may do under `mode` with the network on or off, for the model.
#[must_use]
pub fn describe(mode: SandboxMode, network: bool) -> String {
    let mut text = String::new();
    match mode {
        SandboxMode::None => {
            text.push_str("Sandbox: none. Commands run with the server's own rights.");
        }
        SandboxMode::ReadOnly => text.push_str(
            "Sandbox: read-only (Landlock). Commands can read files but write only to $TMPDIR \
             (a private temporary directory) and /dev/null; other writes fail with \
             \"Permission denied\".",
        ),
        SandboxMode::WorkspaceWrite => text.push_str(
            "Sandbox: workspace-write (Landlock and namespaces). Commands can write only inside \
             the workspace roots and $TMPDIR (a private temporary directory); writes elsewhere \
             fail with \"Permission denied\". .git/hooks and .git/config are read-only, and so \
             are toolbelt's own configuration and hooks (toolbelt.toml, .toolbelt/hooks): \
             writing them fails with \"Read-only file system\".",
        ),
    }
    if network {
        text.push_str(" Network: on.");
    } else {
        let _ = write!(
            text,
            " Network: off (a network namespace): connections{} fail, so commands that \
             download (package installs, git fetch) cannot work.",
            if mode == SandboxMode::None {
                ""
            } else {
                ", even to 127.0.0.1,"
            }
        );
    }
    text
}
