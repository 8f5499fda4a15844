//! [`SavedOutputs`]: where the saved outputs are kept beyond this process's spill
//! directory, so that `read_output` answered by another process (a replica of a
//! server on the same store) pages them all the same.

use std::fmt;
use std::path::{Path, PathBuf};

use super::fill::SpilledPage;
use super::page::SpillError;
use crate::human::human_bytes;

/// A boxed future that can move between threads (the same type as
/// [`crate::BoxFuture`], spelled here so that this module needs no other).
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Why a saved output could not be kept beyond this process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// The spill file could not be read.
    #[error("could not read the saved output {path}")]
    Read {
        /// The spill file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The output is larger than what is kept of saved outputs.
    #[error(
        "the output is {}, more than the {} kept of saved outputs",
        human_bytes(*bytes),
        human_bytes(*max_bytes)
    )]
    TooLarge {
        /// Bytes of the output.
        bytes: u64,
        /// What is kept at most.
        max_bytes: u64,
    },
    /// The store refused the output.
    #[error("could not keep the saved output {output_id} in the store")]
    Store {
        /// The output.
        output_id: String,
        /// The failure.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Keeps saved outputs where every process sharing it can page them (a store).
///
/// The registry calls [`save`](SavedOutputs::save) after a call whose result was
/// cut and saved, before the call's answer leaves; `read_output` calls
/// [`page`](SavedOutputs::page) when the output is not in this process's spill
/// directory. A page must be byte for byte the one
/// [`read_spilled_within`](super::read_spilled_within) makes of the file: make it
/// with [`PageFill`](super::PageFill), fed the bytes from where the page starts.
pub trait SavedOutputs: Send + Sync + fmt::Debug {
    /// Keeps the output `output_id`, whose whole text is the file at `path`,
    /// reading it in bounded pieces.
    ///
    /// # Errors
    /// The file cannot be read, the output is too large, or the store fails.
    fn save<'a>(
        &'a self,
        output_id: &'a str,
        path: &'a Path,
    ) -> BoxFuture<'a, Result<(), SaveError>>;

    /// A page of the output `output_id`, as
    /// [`read_spilled_within`](super::read_spilled_within) has it.
    ///
    /// # Errors
    /// [`SpillError::InvalidId`], [`SpillError::NotFound`] (never kept, or expired),
    /// [`SpillError::Store`] when the store fails.
    ///
    /// # Security
    /// `output_id` comes from the model: check it with
    /// [`is_valid_output_id`](super::is_valid_output_id) first.
    fn page<'a>(
        &'a self,
        output_id: &'a str,
        offset: i64,
        limit: usize,
        max_page_bytes: usize,
    ) -> BoxFuture<'a, Result<SpilledPage, SpillError>>;
}
