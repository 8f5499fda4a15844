//! The helper: a fresh process (the toolbelt binary, re-run with
//! [`crate::HELPER_ARG`]) that enters namespaces, binds the git files and
//! toolbelt's configuration read-only,
//! restricts itself with Landlock and `no_new_privs`, then starts the command and
//! passes its exit code on.
//!
//! It runs before any thread is started, so no `pre_exec` hook (and no unsafe
//! code) is needed; what it sets up is inherited by the command and everything
//! the command starts.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{Gid, Uid};

use crate::mode::{Plan, SandboxMode};
use crate::probe::Support;
use crate::{chain, config, git};

/// Exit code of the helper when the sandbox cannot be set up (as `env(1)` and
/// container runtimes use 125 for their own failures).
pub const SETUP_FAILED_EXIT_CODE: i32 = 125;
/// Exit code when the command itself cannot be started.
const NOT_STARTED_EXIT_CODE: i32 = 127;

/// Devices a sandboxed command may write: discarding output is not writing.
const WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// Why the sandbox cannot be set up (or a part of it fails the probe); the
/// message goes to the command's stderr after [`crate::REFUSAL_PREFIX`].
#[derive(Debug, thiserror::Error)]
enum SetupError {
    #[error("cannot create namespaces")]
    Namespaces(#[source] nix::Error),
    #[error("cannot write /proc/self/{file}")]
    MapIds {
        file: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("cannot {mount}")]
    Mount {
        mount: Mount,
        #[source]
        source: nix::Error,
    },
    #[error("cannot create {}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "{} is a git repository, and without a mount namespace its hooks and config cannot \
         be kept read-only",
        path.as_ref().map_or_else(String::new, |p| p.display().to_string())
    )]
    GitWithoutMountNamespace { path: Option<PathBuf> },
    #[error(
        "{} must stay read-only, and without a mount namespace it cannot be",
        path.display()
    )]
    ReadOnlyWithoutMountNamespace { path: PathBuf },
    #[error(
        "{} cannot be kept read-only: {} is a symbolic link inside a writable root, which a \
         command could replace",
        path.display(),
        link.display()
    )]
    ReadOnlyThroughLink { path: PathBuf, link: PathBuf },
    #[error("cannot enter the working directory {} again", path.display())]
    WorkingDirectory {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the working directory {} is hidden from commands", path.display())]
    HiddenWorkingDirectory {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Landlock's errors print their own cause (and give it as their source too):
    /// shown, not chained, so that it is said once.
    #[error("cannot set up Landlock: {0}")]
    Landlock(landlock::RulesetError),
    #[error("cannot set no_new_privs")]
    NoNewPrivs,
    #[error("Landlock ABI 3 or later is needed to keep writes out, this kernel has {abi}")]
    OldLandlock { abi: u32 },
    /// The probe's scratch directory.
    #[error(transparent)]
    Scratch(#[from] io::Error),
    #[error("a read-only bind stayed writable")]
    BindStayedWritable,
}

impl From<landlock::RulesetError> for SetupError {
    fn from(e: landlock::RulesetError) -> SetupError {
        SetupError::Landlock(e)
    }
}

/// Runs the helper with the arguments after [`crate::HELPER_ARG`]; returns the
/// process's exit code.
pub(crate) fn main(args: Vec<OsString>) -> i32 {
    let mut args = args.into_iter();
    match args.next().as_ref().and_then(|a| a.to_str()) {
        Some("run") => {
            let plan = args
                .next()
                .and_then(|p| serde_json::from_str::<Plan>(p.to_str()?).ok());
            let (Some(plan), Some(program)) = (plan, args.next()) else {
                eprintln!("toolbelt sandbox: usage: run <plan> <program> [args...]");
                return SETUP_FAILED_EXIT_CODE;
            };
            run(&plan, program, args.collect())
        }
        Some("probe") => {
            let support = probe();
            match serde_json::to_string(&support) {
                Ok(json) => {
                    println!("{json}");
                    0
                }
                Err(e) => {
                    eprintln!("toolbelt sandbox: {e}");
                    SETUP_FAILED_EXIT_CODE
                }
            }
        }
        _ => {
            eprintln!("toolbelt sandbox: usage: run <plan> <program> [args...] | probe");
            SETUP_FAILED_EXIT_CODE
        }
    }
}

/// Sets up `plan`, then runs `program` and returns its exit code.
fn run(plan: &Plan, program: OsString, args: Vec<OsString>) -> i32 {
    if let Err(e) = enter(plan) {
        eprintln!("{}{}", crate::REFUSAL_PREFIX, chain(&e));
        return SETUP_FAILED_EXIT_CODE;
    }
    // In a new PID namespace this child is its init: when it ends, every process
    // it left behind is killed by the kernel.
    match Command::new(&program).args(args).status() {
        Ok(status) => status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(NOT_STARTED_EXIT_CODE),
        Err(e) => {
            eprintln!(
                "toolbelt sandbox: cannot start {}: {e}",
                Path::new(&program).display()
            );
            NOT_STARTED_EXIT_CODE
        }
    }
}

/// Everything of `plan` but starting the command.
fn enter(plan: &Plan) -> Result<(), SetupError> {
    let mut flags = CloneFlags::empty();
    if plan.mount_ns {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    if plan.pid_ns {
        flags |= CloneFlags::CLONE_NEWPID;
    }
    if !plan.network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if !flags.is_empty() || plan.user_ns {
        enter_namespaces(flags, plan.user_ns)?;
    }
    if plan.mount_ns {
        private_mounts()?;
    }
    if plan.mode == SandboxMode::WorkspaceWrite {
        let guard = git::guard(&plan.writable, &plan.writable);
        if !guard.dirs.is_empty() || !guard.files.is_empty() {
            if !plan.mount_ns {
                return Err(SetupError::GitWithoutMountNamespace {
                    path: guard.dirs.first().or(guard.files.first()).cloned(),
                });
            }
            protect_git(&guard)?;
        }
        if protect_config(plan)? || !guard.dirs.is_empty() || !guard.files.is_empty() {
            reenter_working_directory()?;
        }
    }
    if plan.mount_ns && !plan.hidden.is_empty() {
        for dir in &plan.hidden {
            hide(dir)?;
        }
        // A working directory inside a hidden one still reaches what is under the
        // cover; entered again by its path, it is on the cover.
        if let Ok(cwd) = std::env::current_dir()
            && plan.hidden.iter().any(|h| cwd.starts_with(h))
        {
            std::env::set_current_dir(&cwd)
                .map_err(|source| SetupError::HiddenWorkingDirectory { path: cwd, source })?;
        }
    }
    if plan.mode != SandboxMode::None || !plan.network {
        landlock(plan)?;
    }
    Ok(())
}

/// Enters new namespaces (`flags`), in a new user namespace when `user` (the
/// caller's ids mapped to themselves; root keeps every id).
fn enter_namespaces(flags: CloneFlags, user: bool) -> Result<(), SetupError> {
    let (uid, gid) = (Uid::current(), Gid::current());
    let flags = if user {
        flags | CloneFlags::CLONE_NEWUSER
    } else {
        flags
    };
    unshare(flags).map_err(SetupError::Namespaces)?;
    if user {
        map_ids(uid, gid)?;
    }
    Ok(())
}

/// Maps the caller's ids to themselves in a new user namespace. Only one id can
/// be mapped from inside: files of other users are then seen as owned by
/// `nobody`, and root keeps its rights over its own files only.
fn map_ids(uid: Uid, gid: Gid) -> Result<(), SetupError> {
    let write = |file: &'static str, text: String| {
        std::fs::write(Path::new("/proc/self").join(file), text)
            .map_err(|source| SetupError::MapIds { file, source })
    };
    write("setgroups", "deny\n".to_string())?;
    write("uid_map", format!("{uid} {uid} 1\n"))?;
    write("gid_map", format!("{gid} {gid} 1\n"))
}

/// A mount the helper makes; as text, what a failure could not do.
#[derive(Debug)]
enum Mount {
    /// Every mount made private, so what is bound here stays here.
    Private,
    /// A path bound onto itself.
    Bind(PathBuf),
    /// The bind of a path made read-only.
    ReadOnly(PathBuf),
    /// A directory covered by an empty read-only tmpfs.
    Hide(PathBuf),
}

impl std::fmt::Display for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mount::Private => write!(f, "make mounts private"),
            Mount::Bind(path) => write!(f, "bind {}", path.display()),
            Mount::ReadOnly(path) => write!(f, "make {} read-only", path.display()),
            Mount::Hide(path) => write!(f, "hide {}", path.display()),
        }
    }
}

impl Mount {
    /// Makes the mount; a failure names it.
    fn make(self) -> Result<(), SetupError> {
        let made = match &self {
            Mount::Private => mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            ),
            Mount::Bind(path) => mount(
                Some(path),
                path,
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&str>,
            ),
            Mount::ReadOnly(path) => mount(
                None::<&str>,
                path,
                None::<&str>,
                read_only_flags(path),
                None::<&str>,
            ),
            Mount::Hide(dir) => mount(
                Some("tmpfs"),
                dir,
                Some("tmpfs"),
                MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                Some("size=4k,mode=0500"),
            ),
        };
        made.map_err(|source| SetupError::Mount {
            mount: self,
            source,
        })
    }
}

/// The flags that remount the bind of `path` read-only. The flags of the
/// underlying mount are locked in a user namespace: they are kept.
fn read_only_flags(path: &Path) -> MsFlags {
    let kept = statvfs(path).map(|s| s.flags()).unwrap_or(FsFlags::empty());
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (st, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(st) {
            flags |= ms;
        }
    }
    flags
}

/// Makes every mount private, so what is bound here stays here.
fn private_mounts() -> Result<(), SetupError> {
    Mount::Private.make()
}

/// Binds `path` onto itself, read-only when asked.
fn bind(path: &Path, read_only: bool) -> Result<(), SetupError> {
    Mount::Bind(path.to_path_buf()).make()?;
    if read_only {
        Mount::ReadOnly(path.to_path_buf()).make()?;
    }
    Ok(())
}

/// Covers `dir` with an empty read-only tmpfs: what was in it cannot be reached.
fn hide(dir: &Path) -> Result<(), SetupError> {
    if !dir.is_dir() {
        return Ok(());
    }
    Mount::Hide(dir.to_path_buf()).make()
}

/// Keeps the git files of `guard` from being changed (see [`crate::git`]).
fn protect_git(guard: &git::GitGuard) -> Result<(), SetupError> {
    let mut dirs = guard.dirs.clone();
    // Outer directories first, so inner binds are not hidden by outer ones.
    dirs.sort_by_key(|d| d.components().count());
    for dir in &dirs {
        let (hooks, config) = (dir.join("hooks"), dir.join("config"));
        let linked = [&hooks, &config]
            .iter()
            .any(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()));
        if linked {
            // A link could be replaced by a directory of the command's own: keep
            // the whole git directory read-only instead.
            bind(dir, true)?;
            continue;
        }
        bind(dir, false)?;
        for (path, is_dir) in [(&hooks, true), (&config, false)] {
            if !path.exists() {
                let made = if is_dir {
                    std::fs::create_dir(path)
                } else {
                    std::fs::write(path, "")
                };
                made.map_err(|source| SetupError::Create {
                    path: path.clone(),
                    source,
                })?;
            }
        }
        bind(&hooks, true)?;
        bind(&config, true)?;
    }
    for file in &guard.files {
        bind(file, true)?;
    }
    Ok(())
}

/// Keeps toolbelt's configuration and the plan's protected paths from being
/// changed (see [`crate::config`]); says whether anything was bound.
fn protect_config(plan: &Plan) -> Result<bool, SetupError> {
    let binds = config::binds(&plan.writable, &plan.protected).map_err(|e| {
        SetupError::ReadOnlyThroughLink {
            path: e.path,
            link: e.link,
        }
    })?;
    if !plan.mount_ns {
        return match binds.into_iter().find(|(_, read_only)| *read_only) {
            Some((path, _)) => Err(SetupError::ReadOnlyWithoutMountNamespace { path }),
            None => Ok(false),
        };
    }
    for (path, read_only) in &binds {
        bind(path, *read_only)?;
    }
    Ok(!binds.is_empty())
}

/// Enters the working directory again by its path: one inside a directory bound
/// since (`.toolbelt`, `.git`) would otherwise stay on what lies beneath the
/// bind, where the read-only parts are writable.
fn reenter_working_directory() -> Result<(), SetupError> {
    let Ok(cwd) = std::env::current_dir() else {
        return Ok(());
    };
    std::env::set_current_dir(&cwd)
        .map_err(|source| SetupError::WorkingDirectory { path: cwd, source })
}

/// Restricts this process and what it starts with Landlock: read everywhere,
/// write only where `plan` allows; no TCP when the network is off.
fn landlock(plan: &Plan) -> Result<u32, SetupError> {
    let mut ruleset = landlock::Ruleset::default();
    if plan.mode != SandboxMode::None {
        // Truncation (ABI 3) is a write: without it, files outside could be emptied.
        ruleset = ruleset
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V3))?
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI::V7))?;
    }
    if !plan.network {
        // The network namespace already has no way out; this also stops TCP where
        // Landlock can (ABI 4), and abstract Unix sockets of other programs (ABI 6).
        ruleset = ruleset
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessNet::from_all(ABI::V4))?
            .scope(Scope::AbstractUnixSocket)?;
    }
    let mut created = ruleset
        .set_compatibility(CompatLevel::BestEffort)
        .scope(Scope::Signal)?
        .create()?;
    if plan.mode != SandboxMode::None {
        created = created
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI::V7)))?
            .add_rules(path_beneath_rules(
                WRITABLE_DEVICES.iter().filter(|d| Path::new(d).exists()),
                AccessFs::from_file(ABI::V7),
            ))?;
        let mut writable: Vec<&PathBuf> = vec![&plan.tmp];
        if plan.mode == SandboxMode::WorkspaceWrite {
            writable.extend(&plan.writable);
        }
        created = created.add_rules(path_beneath_rules(writable, AccessFs::from_all(ABI::V7)))?;
    }
    let status = created.restrict_self()?;
    if !status.no_new_privs {
        return Err(SetupError::NoNewPrivs);
    }
    let abi = abi_of(status.landlock);
    if plan.mode != SandboxMode::None && abi < 3 {
        return Err(SetupError::OldLandlock { abi });
    }
    Ok(abi)
}

/// The ABI number of a Landlock status (0: not available).
fn abi_of(status: LandlockStatus) -> u32 {
    match status {
        LandlockStatus::Available { effective_abi, .. } => {
            effective_abi.to_string().parse().unwrap_or(0)
        }
        _ => 0,
    }
}

/// Tries each part of the sandbox in this process, in the order `run` uses
/// them, and says what works.
fn probe() -> Support {
    let mut s = Support::default();
    let (uid, gid) = (Uid::current(), Gid::current());
    let root = Uid::effective().is_root();
    match unshare(CloneFlags::CLONE_NEWUSER) {
        Ok(()) => match map_ids(uid, gid) {
            Ok(()) => s.user_namespace = true,
            Err(e) => s.problems.push(format!("user namespace: {}", chain(&e))),
        },
        Err(e) => s.problems.push(format!("user namespace: {e}")),
    }
    let privileged = s.user_namespace || root;
    let mut try_ns = |flag: CloneFlags, name: &str| -> bool {
        if !privileged {
            return false;
        }
        match unshare(flag) {
            Ok(()) => true,
            Err(e) => {
                s.problems.push(format!("{name} namespace: {e}"));
                false
            }
        }
    };
    let mount_ns = try_ns(CloneFlags::CLONE_NEWNS, "mount");
    let network_ns = try_ns(CloneFlags::CLONE_NEWNET, "network");
    let pid_ns = try_ns(CloneFlags::CLONE_NEWPID, "PID");
    s.network_namespace = network_ns;
    s.pid_namespace = pid_ns;
    if mount_ns {
        // Binding read-only is what the mount namespace is for: try it.
        let bound = private_mounts().and_then(|()| {
            let dir = tempfile::tempdir()?;
            bind(dir.path(), true)?;
            match std::fs::write(dir.path().join("probe"), "") {
                Ok(()) => Err(SetupError::BindStayedWritable),
                Err(_) => Ok(()),
            }
        });
        match bound {
            Ok(()) => s.mount_namespace = true,
            Err(e) => s.problems.push(format!("mount namespace: {}", chain(&e))),
        }
    }
    if !privileged {
        s.problems
            .push("mount, network and PID namespaces need a user namespace (or root)".to_string());
    }
    let tmp = std::env::temp_dir();
    let plan = Plan {
        mode: SandboxMode::ReadOnly,
        network: !network_ns,
        writable: Vec::new(),
        tmp,
        user_ns: false,
        mount_ns: false,
        pid_ns: false,
        hidden: Vec::new(),
        protected: Vec::new(),
    };
    match landlock(&plan) {
        Ok(abi) => s.landlock_abi = Some(abi),
        Err(e) => s.problems.push(chain(&e)),
    }
    // The command is started as the first process of the new PID namespace.
    match Command::new("/bin/sh").args(["-c", ":"]).status() {
        Ok(status) if status.success() => {}
        Ok(status) => s
            .problems
            .push(format!("a sandboxed command failed: {status}")),
        Err(e) => {
            s.problems
                .push(format!("a sandboxed command could not start: {e}"));
            s.pid_namespace = false;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_errors_read_as_before() {
        let cases = [
            (
                SetupError::Namespaces(nix::Error::EPERM),
                "cannot create namespaces: EPERM: Operation not permitted",
            ),
            (
                SetupError::MapIds {
                    file: "uid_map",
                    source: io::Error::from_raw_os_error(1),
                },
                "cannot write /proc/self/uid_map: Operation not permitted (os error 1)",
            ),
            (
                SetupError::Mount {
                    mount: Mount::Private,
                    source: nix::Error::EPERM,
                },
                "cannot make mounts private: EPERM: Operation not permitted",
            ),
            (
                SetupError::Mount {
                    mount: Mount::Bind(PathBuf::from("/w/.git")),
                    source: nix::Error::EPERM,
                },
                "cannot bind /w/.git: EPERM: Operation not permitted",
            ),
            (
                SetupError::Mount {
                    mount: Mount::ReadOnly(PathBuf::from("/w/.git/hooks")),
                    source: nix::Error::EPERM,
                },
                "cannot make /w/.git/hooks read-only: EPERM: Operation not permitted",
            ),
            (
                SetupError::Mount {
                    mount: Mount::Hide(PathBuf::from("/home/u/.ssh")),
                    source: nix::Error::EPERM,
                },
                "cannot hide /home/u/.ssh: EPERM: Operation not permitted",
            ),
            (
                SetupError::GitWithoutMountNamespace {
                    path: Some(PathBuf::from("/w/.git")),
                },
                "/w/.git is a git repository, and without a mount namespace its hooks and config \
                 cannot be kept read-only",
            ),
            (
                SetupError::ReadOnlyWithoutMountNamespace {
                    path: PathBuf::from("/w/toolbelt.toml"),
                },
                "/w/toolbelt.toml must stay read-only, and without a mount namespace it cannot be",
            ),
            (
                SetupError::ReadOnlyThroughLink {
                    path: PathBuf::from("/w/.toolbelt/hooks"),
                    link: PathBuf::from("/w/.toolbelt"),
                },
                "/w/.toolbelt/hooks cannot be kept read-only: /w/.toolbelt is a symbolic link \
                 inside a writable root, which a command could replace",
            ),
            (SetupError::NoNewPrivs, "cannot set no_new_privs"),
            (
                SetupError::OldLandlock { abi: 2 },
                "Landlock ABI 3 or later is needed to keep writes out, this kernel has 2",
            ),
            (
                SetupError::BindStayedWritable,
                "a read-only bind stayed writable",
            ),
        ];
        for (err, text) in cases {
            assert_eq!(chain(&err), text);
        }
    }
}
