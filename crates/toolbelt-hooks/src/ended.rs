//! How a command or `http` hook ended, before what it said is read.

/// Bytes of a hook's standard output that are read: room for a long
/// `additionalContext` (the model is shown 4 KiB of it, the whole saved for
/// `read_output`); past it the output is ignored.
pub const MAX_HOOK_OUTPUT_BYTES: usize = 1024 * 1024;

/// How a command hook ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// It exited with this code.
    Exit {
        code: i32,
        stdout: String,
        stderr: String,
        /// Its standard output was longer than what was read.
        cut: bool,
    },
    /// A signal ended it.
    Signal(i32),
    /// It ran past its time and was stopped.
    Timeout(u64),
    /// It could not be started.
    NotStarted(toolbelt_exec::ExecError),
    /// An `http` hook that did not answer.
    Http(HttpFailed),
}

/// Why an `http` hook did not answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpFailed {
    /// The client could not be made.
    #[error("the HTTP client cannot be made")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The request did not go through, or its answer broke off.
    #[error("it could not be reached")]
    Send(#[source] reqwest::Error),
    /// It answered with a status that is not success.
    #[error("it answered HTTP {0}")]
    Status(reqwest::StatusCode),
}
