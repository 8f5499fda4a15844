//! Running shell commands for toolbelt's shell tools.
//!
//! [`run`] runs one command with `bash -c` in its own session and process group
//! (no controlling terminal), with
//! standard input closed (or given bytes, [`ExecRequest::stdin`]), and returns its bounded, UTF-8 output:
//!
//! - **time**: after the timeout the tree gets `SIGTERM`, then `SIGKILL` after a
//!   grace period; [`TIMEOUT_EXIT_CODE`] is reported;
//! - **the whole tree**: every process of it is marked in its environment, so
//!   children that left the group (`setsid`, `nohup`, `disown`) are found and
//!   killed too, when the command times out, is cancelled, or ends leaving them
//!   behind ([`tree`]);
//! - **output**: read as it comes into the core's bounded sinks (head, tail and
//!   the error lines in between within budget, the whole spilled to a file), so
//!   memory stays bounded for gigabytes of output or one endless line; a
//!   background process that keeps the pipes open does not hold the call past
//!   the drain timeout;
//! - **encodings**: output that is not UTF-8 is decoded from the locale's
//!   encoding or GB18030 ([`decode`]);
//! - **environment**: built by [`EnvPolicy`]: a core set, secrets scrubbed,
//!   non-interactive settings;
//! - **sandbox**: with [`ExecRequest::sandbox`] the command runs through
//!   `toolbelt-sandbox`'s helper (Landlock, namespaces, `no_new_privs`, a private
//!   `TMPDIR`); in its PID namespace whatever the command leaves running dies
//!   with it.
//!
//! [`Shells`] runs commands in the background instead ([`background`]): each
//! session gets an id, its standard input is a pipe, its new output is read
//! call by call within a bound, and its tree is killed on request, on its
//! optional timeout, and when the manager is dropped.

pub mod background;
pub mod decode;
mod env;
mod run;
mod session;
mod tool_error;
pub mod tree;

pub use background::{
    DEFAULT_MAX_LIVE, DEFAULT_MAX_UNREAD_BYTES, ShellError, ShellInfo, ShellRead, ShellStatus,
    Shells, StartRequest,
};
pub use env::{CORE_VARS, EnvPolicy, Inherit, NON_INTERACTIVE, SECRET_NAME_PARTS, looks_secret};
pub use run::{
    CANCELLED_EXIT_CODE, DEFAULT_DRAIN_TIMEOUT, DEFAULT_KILL_GRACE, ExecError, ExecOutcome,
    ExecRequest, StreamOutput, TIMEOUT_EXIT_CODE, default_shell, run,
};

/// Whether `program` can be started: a path (with a `/`) to an executable file,
/// or the name of an executable file in a directory of `PATH`.
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(std::path::Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(program))))
}

/// `argv` as a shell line for [`ExecRequest`]: each element single-quoted and the
/// program `exec`ed, so that no shell stays between it and the timeout.
pub fn exec_line(argv: &[String]) -> String {
    let quoted: Vec<String> = argv
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    format!("exec {}", quoted.join(" "))
}
