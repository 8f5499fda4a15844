//! The sandbox of toolbelt's shell commands, on Linux: Landlock, user, mount,
//! network and PID namespaces, and `no_new_privs`.
//!
//! - [`SandboxMode`]: `none`, `read-only` (write nowhere but a private temporary
//!   directory) or `workspace-write` (write inside the roots too, with the git
//!   hooks and config of the roots, toolbelt's `toolbelt.toml` and
//!   `.toolbelt/hooks`, and the paths given to [`Sandbox::protecting`] kept
//!   read-only); the network on or off.
//! - [`Support`]: what this machine enforces, probed once by running the helper
//!   and trying each part for real.
//! - [`Sandbox`]: a mode checked against the probe, which wraps a command line in
//!   the helper. A mode that cannot be enforced is refused, never weakened.
//!
//! The helper is a fresh process (the toolbelt binary re-run with [`HELPER_ARG`],
//! or the small `toolbelt-sandbox` binary): it enters the namespaces, binds the
//! git files read-only, restricts itself with Landlock, then starts the command,
//! which inherits all of it. In a new PID namespace the command is the
//! namespace's first process, so everything it leaves running dies with it.
//!
//! A program embedding the sandbox calls [`dispatch`] first thing in `main`, so
//! that it can serve as its own helper (as `toolbelt-sandbox`'s own `main` does).
//!
//! ```no_run
//! use toolbelt_sandbox::{Sandbox, SandboxMode};
//!
//! let roots = vec![std::env::current_dir().unwrap()];
//! match Sandbox::new(SandboxMode::WorkspaceWrite, false, &roots) {
//!     Ok(Some(sandbox)) => {
//!         let (program, args) = sandbox.command("/bin/bash".as_ref(), "make");
//!         std::process::Command::new(program).args(args).status().unwrap();
//!     }
//!     Ok(None) => unreachable!("workspace-write always has something to enforce"),
//!     Err(refused) => eprintln!("{refused}"),
//! }
//! ```

mod config;
mod git;
mod helper;
mod mode;
mod probe;
mod sandbox;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

pub use helper::SETUP_FAILED_EXIT_CODE;
pub use mode::SandboxMode;
pub use probe::{MIN_LANDLOCK_ABI, Support};
pub use sandbox::{Sandbox, describe};

/// The first argument that turns a program calling [`dispatch`] into the helper.
pub const HELPER_ARG: &str = "__toolbelt_sandbox";

/// How the helper's message starts when it refused to run a command (it then
/// exits with [`SETUP_FAILED_EXIT_CODE`]); the reason follows.
pub const REFUSAL_PREFIX: &str = "toolbelt sandbox: the command was not run: ";

/// The name of the stand-alone helper binary.
pub const HELPER_BIN: &str = "toolbelt-sandbox";

/// Set by [`dispatch`]: this program is its own helper.
static SELF_HELPER: AtomicBool = AtomicBool::new(false);

/// Why a sandbox cannot be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The machine cannot enforce the mode.
    #[error(
        "sandbox {mode} with the network {net} cannot be enforced on this machine: it needs {missing}{why}",
        net = if *network { "on" } else { "off" },
        why = if problems.is_empty() { String::new() } else { format!(" ({})", problems.join("; ")) }
    )]
    Unsupported {
        /// The mode asked for.
        mode: SandboxMode,
        /// The network asked for.
        network: bool,
        /// What is missing.
        missing: String,
        /// What the probe found wrong.
        problems: Vec<String>,
    },
    /// A root holds a git repository whose hooks cannot be kept read-only.
    #[error(
        "sandbox workspace-write cannot keep the hooks and config of {path} read-only on this \
         machine: it needs mount namespaces{why}",
        path = path.display(),
        why = if problems.is_empty() { String::new() } else { format!(" ({})", problems.join("; ")) }
    )]
    GitNeedsMountNamespace {
        /// The git directory or file.
        path: PathBuf,
        /// What the probe found wrong.
        problems: Vec<String>,
    },
    /// A path to keep read-only exists, and this machine has no mount namespace
    /// to bind it so.
    #[error(
        "sandbox workspace-write cannot keep {path} read-only on this machine: it needs mount \
         namespaces{why}",
        path = path.display(),
        why = if problems.is_empty() { String::new() } else { format!(" ({})", problems.join("; ")) }
    )]
    ReadOnlyNeedsMountNamespace {
        /// The path (toolbelt's configuration, or one given to
        /// [`Sandbox::protecting`]).
        path: PathBuf,
        /// What the probe found wrong.
        problems: Vec<String>,
    },
    /// A path to keep read-only is reached through a symbolic link inside a
    /// writable root, which a command could replace.
    #[error(
        "sandbox workspace-write cannot keep {path} read-only: {link} is a symbolic link inside \
         a writable root, which a command could replace; make it a regular file or directory",
        path = path.display(),
        link = link.display()
    )]
    ReadOnlyThroughLink {
        /// The path to keep read-only.
        path: PathBuf,
        /// The link on the way to it (maybe the path itself).
        link: PathBuf,
    },
    /// A path given to [`Sandbox::protecting`] is not valid UTF-8 (the helper is
    /// told its plan as JSON).
    #[error(
        "sandbox workspace-write cannot keep {path} read-only: the path is not valid UTF-8",
        path = path.display()
    )]
    ReadOnlyNotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// No helper program was found.
    #[error(
        "no sandbox helper: run the tools through the toolbelt binary, or put {HELPER_BIN} \
         beside this program"
    )]
    NoHelper,
    /// A root cannot be resolved.
    #[error("sandbox root {path}", path = path.display())]
    Root {
        /// The root.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The private temporary directory cannot be made, or the plan naming it
    /// cannot be written for the helper.
    #[error("cannot make the sandbox's temporary directory")]
    TempDir(#[from] std::io::Error),
}

/// `e` and its causes, joined by `: `: how the helper, a process of its own, and the
/// probe say an error where it leaves (on stderr, or in the probe's problems).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Runs the helper and exits when this process was started as one (first
/// argument [`HELPER_ARG`]); otherwise records that this program can serve as
/// its own helper and returns. Call it first thing in `main`, before any thread
/// is started.
pub fn dispatch() {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == HELPER_ARG) {
        std::process::exit(helper::main(args.collect()));
    }
    SELF_HELPER.store(true, Ordering::Relaxed);
}

/// The helper program: this one when it called [`dispatch`], else a
/// `toolbelt-sandbox` or `toolbelt` binary beside it (or one directory up, as
/// for test binaries under `target/*/deps`).
#[must_use]
pub fn locate_helper() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    if SELF_HELPER.load(Ordering::Relaxed) {
        return Some(exe);
    }
    let dir = exe.parent()?;
    [Some(dir), dir.parent()]
        .into_iter()
        .flatten()
        .flat_map(|d| [d.join(HELPER_BIN), d.join("toolbelt")])
        .find(|p| p.is_file())
}
