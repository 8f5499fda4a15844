//! A saved output cut into chunks of whole lines, for a store to keep and page.
//!
//! Every chunk ends at the last line end that fits in [`SAVED_CHUNK_BYTES`], so a
//! line lies whole in one chunk, except a line longer than a chunk: it starts a
//! chunk and is cut into full chunks, its end sharing the next chunk with the
//! lines after it. The chunks, in order, are the output byte for byte.

use std::io::{self, Read};

/// Most bytes of one chunk.
pub const SAVED_CHUNK_BYTES: usize = 256 * 1024;

/// One chunk of a saved output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedChunk {
    /// Its place, from 0.
    pub seq: u64,
    /// The 1-based number of the line its first byte is in (a line longer than a
    /// chunk: every chunk of it has that line's number).
    pub first_line: u64,
    /// Lines ending in it: its line ends, and the output's last line when that has
    /// none and ends here. The chunk holds the ends of lines `first_line ..
    /// first_line + lines`.
    pub lines: u64,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// Reads an output and hands it out in [`SavedChunk`]s. Memory stays within two
/// chunks however large the output.
#[derive(Debug)]
pub struct LineChunks<R> {
    reader: R,
    chunk_bytes: usize,
    /// Bytes read and not yet handed out (at most `chunk_bytes + 1`: one byte of
    /// look-ahead says whether the output goes on).
    pending: Vec<u8>,
    eof: bool,
    seq: u64,
    /// Line ends handed out so far.
    newlines: u64,
    total_bytes: u64,
    last_byte: Option<u8>,
}

impl<R: Read> LineChunks<R> {
    /// Chunks of [`SAVED_CHUNK_BYTES`] of what `reader` reads.
    pub fn new(reader: R) -> LineChunks<R> {
        LineChunks::with_chunk_bytes(reader, SAVED_CHUNK_BYTES)
    }

    /// Chunks of at most `chunk_bytes` (at least 1).
    pub fn with_chunk_bytes(reader: R, chunk_bytes: usize) -> LineChunks<R> {
        LineChunks {
            reader,
            chunk_bytes: chunk_bytes.max(1),
            pending: Vec::new(),
            eof: false,
            seq: 0,
            newlines: 0,
            total_bytes: 0,
            last_byte: None,
        }
    }

    /// The next chunk, or `None` at the end of the output.
    ///
    /// # Errors
    /// Reading failed.
    pub fn next_chunk(&mut self) -> io::Result<Option<SavedChunk>> {
        self.fill()?;
        if self.pending.is_empty() {
            return Ok(None);
        }
        let last = self.pending.len() <= self.chunk_bytes;
        let cut = if last {
            self.pending.len()
        } else {
            let window = &self.pending[..self.chunk_bytes];
            memchr::memrchr(b'\n', window).map_or(self.chunk_bytes, |i| i + 1)
        };
        let rest = self.pending.split_off(cut);
        let data = std::mem::replace(&mut self.pending, rest);
        let newlines = memchr::memchr_iter(b'\n', &data).count() as u64;
        let unterminated = last && data.last() != Some(&b'\n');
        let chunk = SavedChunk {
            seq: self.seq,
            first_line: self.newlines + 1,
            lines: newlines + u64::from(unterminated),
            data,
        };
        self.seq += 1;
        self.newlines += newlines;
        self.total_bytes += chunk.data.len() as u64;
        self.last_byte = chunk.data.last().copied();
        Ok(Some(chunk))
    }

    /// Bytes and lines handed out so far (a last line without `\n` counts): the
    /// output's, once [`LineChunks::next_chunk`] said `None`.
    pub fn totals(&self) -> (u64, u64) {
        let open_line = self.last_byte.is_some_and(|b| b != b'\n');
        (self.total_bytes, self.newlines + u64::from(open_line))
    }

    /// Reads until a chunk and one more byte are pending, or the output ends.
    fn fill(&mut self) -> io::Result<()> {
        let want = self.chunk_bytes + 1;
        while !self.eof && self.pending.len() < want {
            let have = self.pending.len();
            self.pending.resize(want, 0);
            let read = loop {
                match self.reader.read(&mut self.pending[have..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            match read {
                Ok(n) => {
                    self.pending.truncate(have + n);
                    self.eof = n == 0;
                }
                Err(e) => {
                    self.pending.truncate(have);
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}
