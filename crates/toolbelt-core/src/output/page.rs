//! Saved outputs: their ids, their files, and reading them back a page at a time.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::cut::complete_prefix_len;
use crate::human::{group, plural};

/// Default number of lines [`read_spilled`] returns when `limit` is 0.
pub const DEFAULT_READ_LIMIT_LINES: usize = 200;
/// Most lines one page of [`read_spilled`] returns.
pub const MAX_READ_LIMIT_LINES: usize = 2_000;
/// Most bytes of one page of [`read_spilled`] (below the default output budget, so a
/// page is never itself truncated).
pub const MAX_PAGE_BYTES: usize = 24_000;
/// Most bytes of one line shown by [`read_spilled`]; longer lines are cut with a note.
pub const MAX_PAGE_LINE_BYTES: usize = 2_000;

const OUTPUT_ID_PREFIX: &str = "out_";
const OUTPUT_ID_HEX_LEN: usize = 32;
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Room kept for the footer line of a page of [`read_spilled`].
const PAGE_FOOTER_RESERVE_BYTES: usize = 160;
/// The smallest page [`read_spilled_within`] makes: a cut line and its footer.
const MIN_PAGE_BYTES: usize = 1_024;

/// A new output id: `out_` and a UUIDv7 in 32 lowercase hex digits.
pub(super) fn new_output_id() -> String {
    format!("{OUTPUT_ID_PREFIX}{}", uuid::Uuid::now_v7().simple())
}

/// Why a spilled output could not be read.
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
}

/// One page of a spilled output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpilledPage {
    /// The lines, numbered like `cat -n` (`{:>6}\t{line}`), then a footer line saying
    /// which lines these are of how many and, when more remains, `continue with offset=N`.
    pub text: String,
    /// Number of the first line shown (0 when none is).
    pub first_line: u64,
    /// Number of the last line shown (0 when none is).
    pub last_line: u64,
    /// Lines of the whole output.
    pub total_lines: u64,
    /// Bytes of the whole output.
    pub total_bytes: u64,
    /// The offset that continues after this page, when more remains.
    pub next_offset: Option<u64>,
    /// Lines longer than [`MAX_PAGE_LINE_BYTES`] that were cut.
    pub cut_lines: usize,
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
/// [`DEFAULT_READ_LIMIT_LINES`], at most [`MAX_READ_LIMIT_LINES`]) from line `offset`
/// (1-based; 0 means 1; negative counts from the end, `-100` = the last 100 lines).
/// Lines are cut at [`MAX_PAGE_LINE_BYTES`] and the page at [`MAX_PAGE_BYTES`]. The
/// file is streamed twice (count, then read); memory stays bounded by the page.
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
/// [`MAX_PAGE_LINE_BYTES`]), so that a page fits a smaller output budget and is
/// never truncated and spilled again itself.
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
    let max_page_bytes = max_page_bytes.clamp(MIN_PAGE_BYTES, MAX_PAGE_BYTES);
    let max_line_bytes = MAX_PAGE_LINE_BYTES.min(max_page_bytes / 4);
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
    let limit = match limit {
        0 => DEFAULT_READ_LIMIT_LINES,
        n => n.min(MAX_READ_LIMIT_LINES),
    };
    let start = match offset {
        o if o > 0 => o.unsigned_abs(),
        0 => 1,
        o => total_lines.saturating_sub(o.unsigned_abs()) + 1,
    };
    let mut page = SpilledPage {
        text: String::new(),
        first_line: 0,
        last_line: 0,
        total_lines,
        total_bytes,
        next_offset: None,
        cut_lines: 0,
    };
    if total_lines == 0 {
        page.text = "[the output is empty]".to_string();
        return Ok(page);
    }
    if start > total_lines {
        page.text = format!(
            "[offset {offset} is past the end: the output has {} {}; use an offset from 1 to {}, or a negative one such as -{} for the last lines]",
            group(total_lines),
            plural(total_lines, "line"),
            total_lines,
            DEFAULT_READ_LIMIT_LINES.min(usize::try_from(total_lines).unwrap_or(usize::MAX)),
        );
        return Ok(page);
    }

    let reader = BufReader::with_capacity(READ_BUFFER_BYTES, open()?);
    fill_page(
        reader,
        &mut page,
        start,
        limit,
        max_line_bytes,
        max_page_bytes,
    )
    .map_err(io_err)?;
    let range = format!(
        "lines {}-{} of {}",
        group(page.first_line),
        group(page.last_line),
        group(total_lines)
    );
    if page.last_line < total_lines {
        let next = page.last_line + 1;
        page.next_offset = Some(next);
        page.text
            .push_str(&format!("[{range}; continue with offset={next}]"));
    } else {
        page.text.push_str(&format!("[{range}; end of output]"));
    }
    Ok(page)
}

/// Appends the numbered lines `start..start + limit` of `reader` to `page`, as many
/// as fit in `max_page_bytes`.
fn fill_page(
    mut reader: BufReader<File>,
    page: &mut SpilledPage,
    start: u64,
    limit: usize,
    max_line_bytes: usize,
    max_page_bytes: usize,
) -> io::Result<()> {
    skip_lines(&mut reader, start - 1)?;
    let mut line = Vec::with_capacity(max_line_bytes);
    let mut line_no = start;
    while line_no < start + limit as u64 {
        line.clear();
        let Some(len) = read_line_capped(&mut reader, &mut line, max_line_bytes)? else {
            break;
        };
        let whole = len == line.len() as u64;
        if whole && line.last() == Some(&b'\r') {
            line.pop();
        }
        let shown = &line[..complete_prefix_len(&line)];
        let mut rendered = format!("{line_no:>6}\t{}", String::from_utf8_lossy(shown));
        if !whole {
            let rest = len - shown.len() as u64;
            rendered.push_str(&format!(
                " [... line cut: {} more {}]",
                group(rest),
                plural(rest, "byte")
            ));
        }
        if page.first_line != 0
            && page.text.len() + rendered.len() + 1 + PAGE_FOOTER_RESERVE_BYTES > max_page_bytes
        {
            break;
        }
        page.cut_lines += usize::from(!whole);
        page.text.push_str(&rendered);
        page.text.push('\n');
        if page.first_line == 0 {
            page.first_line = line_no;
        }
        page.last_line = line_no;
        line_no += 1;
    }
    Ok(())
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

/// Skips `n` lines.
fn skip_lines<R: BufRead>(reader: &mut R, mut n: u64) -> io::Result<()> {
    while n > 0 {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        let mut consumed = buf.len();
        for i in memchr::memchr_iter(b'\n', buf) {
            n -= 1;
            if n == 0 {
                consumed = i + 1;
                break;
            }
        }
        reader.consume(consumed);
    }
    Ok(())
}

/// Reads one line, appending at most `cap` bytes of it (without the `\n`) to `out`.
/// Returns the line's full length, or `None` at the end of the stream.
fn read_line_capped<R: BufRead>(
    reader: &mut R,
    out: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<u64>> {
    let mut total = 0u64;
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(total));
        }
        any = true;
        let (len, consumed, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i, i + 1, true),
            None => (buf.len(), buf.len(), false),
        };
        let room = cap.saturating_sub(out.len());
        out.extend_from_slice(&buf[..len.min(room)]);
        total += len as u64;
        reader.consume(consumed);
        if done {
            return Ok(Some(total));
        }
    }
}
