//! What can go wrong with checkpoints and rewinds.

use std::io;
use std::path::{Path, PathBuf};

use toolbelt_core::human::{noun, plural};
use toolbelt_store::StoreError;

/// A checkpoint or a rewind that failed. Each message says its own layer; the
/// cause is the source.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file could not be read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was done (`read`, `write`, `make`).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Kept content does not match its hash.
    #[error("the kept content {} is damaged", path.display())]
    Damaged {
        /// Its file.
        path: PathBuf,
    },
    /// The store failed.
    #[error("the checkpoint records cannot be used")]
    Store(#[from] StoreError),
    /// No checkpoint has this id.
    #[error("no checkpoint {0} in this workspace")]
    NotFound(String),
    /// An id that is not `cp-N` (or `N`).
    #[error("{0:?} is not a checkpoint id (they look like cp-12)")]
    BadId(String),
    /// The checkpoint's content was pruned.
    #[error("checkpoint {0} was pruned: its content is no longer kept")]
    Pruned(String),
    /// Files changed outside toolbelt since it last wrote them.
    #[error("{} {} changed since toolbelt last wrote {}: {}", .0.len(), plural(.0.len() as u64, "file"), noun(.0.len() as u64, "it", "them"), .0.join(", "))]
    Conflicts(Vec<String>),
    /// A path leaves the workspace, or goes through a symbolic link.
    #[error("{} is outside the workspace or behind a symbolic link", path.display())]
    Outside {
        /// The path.
        path: PathBuf,
    },
    /// A `--files` glob that does not parse.
    #[error("{glob:?} is not a valid glob")]
    BadGlob {
        /// The glob.
        glob: String,
        /// What is wrong with it.
        #[source]
        source: globset::Error,
    },
    /// `--undo` with no rewind to undo.
    #[error("there is no rewind to undo in this workspace")]
    NoRewind,
    /// The work on a blocking thread failed (a panic).
    #[error("the checkpoint's work failed")]
    Task(#[from] tokio::task::JoinError),
    /// A checkpoint is required and none could be taken.
    #[error("no space left for checkpoints")]
    NoSpace,
}

impl CheckpointError {
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> CheckpointError {
        CheckpointError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the device is full.
    pub fn is_no_space(&self) -> bool {
        match self {
            CheckpointError::NoSpace => true,
            CheckpointError::Io { source, .. } => {
                source.kind() == io::ErrorKind::StorageFull || source.raw_os_error() == Some(28)
            }
            _ => false,
        }
    }
}
