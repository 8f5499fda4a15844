//! Saved outputs: their ids, their files, and reading them back a page at a time.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use super::fill::{MAX_PAGE_BYTES, PageFill, PageRequest, SpilledPage};

const OUTPUT_ID_PREFIX: &str = "out_";
const OUTPUT_ID_HEX_LEN: usize = 32;
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// A new output id: `out_` and a UUIDv7 in 32 lowercase hex digits.
pub(super) fn new_output_id() -> String {
    format!("{OUTPUT_ID_PREFIX}{}", uuid::Uuid::now_v7().simple())
}

/// Why a saved output could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpillError {
    /// Not an id this module hands out.
    #[error(
        "invalid output_id {0:?}: use the output_id of a truncated result, \"out_\" followed by 32 lowercase hex digits"
    )]
    InvalidId(String),
    /// No spilled output has this id (never existed, or was cleaned up).
    #[error(
        "no saved output has output_id {0:?}; it may have been cleaned up, so run the call again"
    )]
    NotFound(String),
    /// Reading the spill file failed.
    #[error("could not read the saved output {path}")]
    Io {
        /// The spill file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// Reading the saved output from the store failed.
    #[error("could not read the saved output {output_id} from the store")]
    Store {
        /// The output.
        output_id: String,
        /// The failure.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// True for ids of the form `out_` + 32 lowercase hex digits, the only ones
/// [`OutputSink`](super::OutputSink) hands out.
///
/// # Security
/// Strict by design: an accepted id is a plain file name, never a path (`..`, `/`,
/// `\`, absolute paths and NUL are all rejected).
pub fn is_valid_output_id(id: &str) -> bool {
    id.strip_prefix(OUTPUT_ID_PREFIX).is_some_and(|hex| {
        hex.len() == OUTPUT_ID_HEX_LEN
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The spill file of `output_id` in `spill_dir`, or `None` for an invalid id.
///
/// # Security
/// Only ids passing [`is_valid_output_id`] are joined to `spill_dir`.
pub fn spilled_path(spill_dir: &Path, output_id: &str) -> Option<PathBuf> {
    is_valid_output_id(output_id).then(|| spill_dir.join(format!("{output_id}.txt")))
}

/// Reads a page of the spilled output `output_id`: `limit` lines (0 means
/// [`DEFAULT_READ_LIMIT_LINES`](super::DEFAULT_READ_LIMIT_LINES), at most
/// [`MAX_READ_LIMIT_LINES`](super::MAX_READ_LIMIT_LINES)) from line `offset` (1-based;
/// 0 means 1; negative counts from the end, `-100` = the last 100 lines). Lines are
/// cut at [`MAX_PAGE_LINE_BYTES`](super::MAX_PAGE_LINE_BYTES) and the page at
/// [`MAX_PAGE_BYTES`]. The file is streamed twice (count, then read); memory stays
/// bounded by the page. [`PageFill`] makes the page, as it does from the store.
///
/// # Errors
/// [`SpillError::InvalidId`] for an id [`is_valid_output_id`] rejects,
/// [`SpillError::NotFound`] when no such file exists, [`SpillError::Io`] when reading fails.
///
/// # Security
/// The id is validated before it touches the file system, and only a regular file
/// (not a symlink) is read.
pub fn read_spilled(
    spill_dir: &Path,
    output_id: &str,
    offset: i64,
    limit: usize,
) -> Result<SpilledPage, SpillError> {
    read_spilled_within(spill_dir, output_id, offset, limit, MAX_PAGE_BYTES)
}

/// [`read_spilled`] with the page held to `max_page_bytes` (at most
/// [`MAX_PAGE_BYTES`]; lines are cut at a quarter of it when that is less than
/// [`MAX_PAGE_LINE_BYTES`](super::MAX_PAGE_LINE_BYTES)), so that a page fits a
/// smaller output budget and is never truncated and spilled again itself.
///
/// # Errors
/// As [`read_spilled`].
pub fn read_spilled_within(
    spill_dir: &Path,
    output_id: &str,
    offset: i64,
    limit: usize,
    max_page_bytes: usize,
) -> Result<SpilledPage, SpillError> {
    let path = spilled_path(spill_dir, output_id)
        .ok_or_else(|| SpillError::InvalidId(output_id.to_string()))?;
    let io_err = |source: io::Error| SpillError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_file() => {}
        Ok(_) => return Err(SpillError::NotFound(output_id.to_string())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(SpillError::NotFound(output_id.to_string()));
        }
        Err(e) => return Err(io_err(e)),
    }
    let open = || {
        File::open(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => SpillError::NotFound(output_id.to_string()),
            _ => io_err(e),
        })
    };

    let (total_bytes, total_lines) = count_lines(open()?).map_err(io_err)?;
    let request = PageRequest {
        offset,
        limit,
        max_page_bytes,
    };
    let mut fill = PageFill::new(request, total_bytes, total_lines);
    if fill.start_line().is_some() {
        let reader = BufReader::with_capacity(READ_BUFFER_BYTES, open()?);
        fill.feed(reader).map_err(io_err)?;
    }
    Ok(fill.finish())
}

/// Bytes and lines of a stream (a last line without `\n` counts).
fn count_lines(mut file: File) -> io::Result<(u64, u64)> {
    let mut buf = vec![0; READ_BUFFER_BYTES];
    let (mut bytes, mut newlines, mut last) = (0u64, 0u64, None);
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        bytes += n as u64;
        newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        last = chunk.last().copied();
    }
    Ok((
        bytes,
        newlines + u64::from(last.is_some_and(|b| b != b'\n')),
    ))
}
