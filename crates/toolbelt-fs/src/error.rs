//! [`FsError`]: why a file operation was refused or failed, worded for the model.

use std::io;
use std::path::PathBuf;

use toolbelt_core::ErrorCode;

use crate::EntryKind;

/// Why a file operation was refused or failed. The `Display` text is written for
/// the model: it names the path and says what to do next; an OS error stays the
/// [`source`](std::error::Error::source), joined on by
/// [`error_chain`](toolbelt_core::error_chain).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// The path is malformed: empty, with a NUL byte, too long, or `~`.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The path lies outside every workspace root.
    #[error("{}", outside_message(.path, .roots))]
    Outside {
        /// The path as given.
        path: String,
        /// The workspace roots.
        roots: Vec<PathBuf>,
    },
    /// A symlink on the way points outside the workspace.
    #[error("{path} is a symlink to {}, which is outside the workspace; it cannot be followed", .target.display())]
    SymlinkEscape {
        /// The symlink, as a workspace path.
        path: String,
        /// Where it points.
        target: PathBuf,
    },
    /// Symlinks on the way form a loop or a chain too long to follow.
    #[error(
        "{path}: too many levels of symbolic links (a loop, or a chain longer than {MAX_SYMLINK_HOPS})"
    )]
    SymlinkLoop {
        /// The path as given.
        path: String,
    },
    /// Nothing exists at the path.
    #[error("{path} does not exist")]
    NotFound {
        /// The path.
        path: String,
    },
    /// A directory was expected.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path.
        path: String,
    },
    /// A file was expected, and this is a directory.
    #[error("{path} is a directory, not a file")]
    IsADirectory {
        /// The path.
        path: String,
    },
    /// A regular file was expected; FIFOs, sockets and devices are refused.
    #[error("{path} is a {}, not a regular file; only regular files can be read or written", .kind.describe())]
    NotAFile {
        /// The path.
        path: String,
        /// What it is.
        kind: EntryKind,
    },
    /// The file exists and the operation must not replace it.
    #[error("{path} already exists")]
    Exists {
        /// The path.
        path: String,
    },
    /// The file is larger than the operation allows.
    #[error("{path} is {size} bytes, over the limit of {limit_bytes} bytes")]
    TooLarge {
        /// The path.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit_bytes: u64,
    },
    /// Another writer holds the lock on the file's directory.
    #[error("{path} is being written by another call; try again")]
    Busy {
        /// The path.
        path: String,
    },
    /// A workspace root cannot be opened.
    #[error("workspace root {} cannot be opened", .root.display())]
    RootUnavailable {
        /// The root.
        root: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Any other I/O failure.
    #[error("cannot {op} {path}")]
    Io {
        /// What was being done ("read", "write", ...).
        op: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        source: io::Error,
    },
}

/// How many symlinks one resolution may follow before it is called a loop.
pub const MAX_SYMLINK_HOPS: usize = 40;

fn outside_message(path: &str, roots: &[PathBuf]) -> String {
    if roots.is_empty() {
        return format!("{path} is outside the workspace; use a path inside it");
    }
    let names: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    format!(
        "{path} is outside the workspace ({}); use a path inside it",
        names.join(", ")
    )
}

impl FsError {
    /// The envelope error code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            FsError::InvalidPath { .. }
            | FsError::SymlinkLoop { .. }
            | FsError::NotADirectory { .. }
            | FsError::IsADirectory { .. }
            | FsError::NotAFile { .. } => ErrorCode::InvalidParams,
            FsError::Outside { .. } | FsError::SymlinkEscape { .. } => ErrorCode::AccessDenied,
            FsError::NotFound { .. } => ErrorCode::NotFound,
            FsError::Exists { .. } | FsError::Busy { .. } => ErrorCode::Conflict,
            FsError::TooLarge { .. } => ErrorCode::TooLarge,
            FsError::RootUnavailable { .. } => ErrorCode::DependencyMissing,
            FsError::Io { source, .. } => match source.kind() {
                io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                    ErrorCode::AccessDenied
                }
                io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => ErrorCode::TooLarge,
                _ => ErrorCode::Internal,
            },
        }
    }

    /// Classifies an OS error met while doing `op` on `path`.
    pub(crate) fn from_io(op: &'static str, path: &str, err: io::Error) -> FsError {
        let path = path.to_owned();
        if let Some(errno) = err.raw_os_error() {
            let errno = rustix::io::Errno::from_raw_os_error(errno);
            match errno {
                rustix::io::Errno::NOENT => return FsError::NotFound { path },
                rustix::io::Errno::NOTDIR => return FsError::NotADirectory { path },
                rustix::io::Errno::ISDIR => return FsError::IsADirectory { path },
                rustix::io::Errno::LOOP => return FsError::SymlinkLoop { path },
                rustix::io::Errno::EXIST => return FsError::Exists { path },
                rustix::io::Errno::XDEV => {
                    return FsError::Outside {
                        path,
                        roots: Vec::new(),
                    };
                }
                rustix::io::Errno::NAMETOOLONG => {
                    return FsError::InvalidPath {
                        path,
                        reason: "a name in it is longer than the file system allows (255 bytes)"
                            .into(),
                    };
                }
                _ => {}
            }
        }
        if err.kind() == io::ErrorKind::NotFound {
            return FsError::NotFound { path };
        }
        // cap-std reports an attempt to leave the directory handle this way.
        if err.kind() == io::ErrorKind::PermissionDenied
            && err.to_string().contains("outside of the filesystem")
        {
            return FsError::Outside {
                path,
                roots: Vec::new(),
            };
        }
        FsError::Io {
            op,
            path,
            source: err,
        }
    }
}

/// What stopped a step of a file operation, before the operation and its path
/// are named: the step returns this, and the one caller that knows which
/// operation it was on which path turns it into an [`FsError`].
#[derive(Debug)]
pub(crate) enum Failed {
    /// An OS error.
    Io(io::Error),
    /// A refusal that is whole already (too large, busy, a bad path, not a file).
    Refused(FsError),
}

impl From<io::Error> for Failed {
    fn from(err: io::Error) -> Failed {
        Failed::Io(err)
    }
}

impl From<FsError> for Failed {
    fn from(err: FsError) -> Failed {
        Failed::Refused(err)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use toolbelt_core::ToolError;

    #[test]
    fn fs_errors_for_the_model_carry_code_message_and_hint() {
        let err: ToolError = FsError::NotFound {
            path: "/w/a.txt".into(),
        }
        .into();
        assert_eq!(err.code, ErrorCode::NotFound);
        assert_eq!(
            err.message,
            FsError::NotFound {
                path: "/w/a.txt".into()
            }
            .to_string()
        );
        assert_eq!(
            err.hint.as_deref(),
            Some("list_dir or glob shows what exists")
        );
        let err: ToolError = FsError::TooLarge {
            path: "/w/a.txt".into(),
            size: 10,
            limit_bytes: 5,
        }
        .into();
        assert_eq!(err.hint, None);
    }
}
