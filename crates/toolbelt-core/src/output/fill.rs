//! One page of a saved output, filled from its bytes wherever they are kept: the
//! spill file or the store's chunks. [`PageFill`] is fed any number of
//! [`BufRead`]s in order (lines and characters may be split between them anywhere)
//! and renders the same page, byte for byte, whatever the split.

use std::io::{self, BufRead};

use super::cut::complete_prefix_len;
use crate::human::{group, plural};

/// Default number of lines a page has when `limit` is 0.
pub const DEFAULT_READ_LIMIT_LINES: usize = 200;
/// Most lines one page has.
pub const MAX_READ_LIMIT_LINES: usize = 2_000;
/// Most bytes of one page (below the default output budget, so a page is never
/// itself truncated).
pub const MAX_PAGE_BYTES: usize = 24_000;
/// Most bytes of one line shown on a page; longer lines are cut with a note.
pub const MAX_PAGE_LINE_BYTES: usize = 2_000;

/// Room kept for the footer line of a page.
const PAGE_FOOTER_RESERVE_BYTES: usize = 160;
/// The smallest page made: a cut line and its footer.
const MIN_PAGE_BYTES: usize = 1_024;

/// One page of a saved output.
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

/// Which page of a saved output is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// First line, 1-based; 0 means 1; negative counts from the end (`-100` = the
    /// last 100 lines).
    pub offset: i64,
    /// Lines (0 means [`DEFAULT_READ_LIMIT_LINES`], at most [`MAX_READ_LIMIT_LINES`]).
    pub limit: usize,
    /// Most bytes of the page (held between 1,024 and [`MAX_PAGE_BYTES`]; lines are
    /// cut at a quarter of it when that is less than [`MAX_PAGE_LINE_BYTES`]).
    pub max_page_bytes: usize,
}

/// A page being filled. Make it from the output's totals ([`PageFill::new`]); when
/// [`PageFill::start_line`] is `Some`, [`begin_at`](PageFill::begin_at) the line
/// the bytes to come start in and [`feed`](PageFill::feed) them until it answers
/// `false`; then [`finish`](PageFill::finish).
///
/// Memory stays bounded by the page: of a line, at most the bytes shown are kept.
#[derive(Debug)]
pub struct PageFill {
    page: SpilledPage,
    /// The first line of the page; 0 when the page needs no lines.
    start: u64,
    /// One past the last line the page may show.
    end: u64,
    max_line_bytes: usize,
    max_page_bytes: usize,
    /// Line ends still to pass before the page's first line.
    skip: u64,
    /// Number of the line being read.
    line_no: u64,
    /// The shown prefix of the line being read.
    line: Vec<u8>,
    /// Bytes of the line being read so far (without its `\n`).
    line_len: u64,
    /// Whether any byte of the line being read was seen.
    in_line: bool,
    /// The page is full, or its last line was read.
    done: bool,
}

impl PageFill {
    /// A page of an output of `total_bytes` bytes and `total_lines` lines. An empty
    /// output and an offset past the end make a page that needs no lines (its text
    /// says so).
    pub fn new(request: PageRequest, total_bytes: u64, total_lines: u64) -> PageFill {
        let max_page_bytes = request.max_page_bytes.clamp(MIN_PAGE_BYTES, MAX_PAGE_BYTES);
        let limit = match request.limit {
            0 => DEFAULT_READ_LIMIT_LINES,
            n => n.min(MAX_READ_LIMIT_LINES),
        };
        let start = match request.offset {
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
        let needs_lines = total_lines > 0 && start <= total_lines;
        if total_lines == 0 {
            page.text = "[the output is empty]".to_string();
        } else if start > total_lines {
            page.text = format!(
                "[offset {} is past the end: the output has {} {}; use an offset from 1 to {}, or a negative one such as -{} for the last lines]",
                request.offset,
                group(total_lines),
                plural(total_lines, "line"),
                total_lines,
                DEFAULT_READ_LIMIT_LINES.min(usize::try_from(total_lines).unwrap_or(usize::MAX)),
            );
        }
        PageFill {
            page,
            start: if needs_lines { start } else { 0 },
            end: start.saturating_add(limit as u64),
            max_line_bytes: MAX_PAGE_LINE_BYTES.min(max_page_bytes / 4),
            max_page_bytes,
            skip: start.saturating_sub(1),
            line_no: start,
            line: Vec::new(),
            line_len: 0,
            in_line: false,
            done: !needs_lines,
        }
    }

    /// The first line the page shows, when it needs lines at all.
    pub fn start_line(&self) -> Option<u64> {
        (self.start > 0).then_some(self.start)
    }

    /// Says that the bytes to be fed start in line `line` (1-based, at most
    /// [`PageFill::start_line`]): at its start, or anywhere in it when `line` is
    /// before the page's first line. Without it, the bytes start at the output's
    /// first byte.
    pub fn begin_at(&mut self, line: u64) {
        if self.start > 0 {
            self.skip = self.start.saturating_sub(line.max(1));
        }
    }

    /// Reads the next bytes of the output from `reader`, to its end or until the
    /// page is done. Returns whether the page wants more bytes.
    ///
    /// # Errors
    /// Reading failed.
    pub fn feed<R: BufRead>(&mut self, mut reader: R) -> io::Result<bool> {
        while !self.done {
            let buf = reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(true);
            }
            let consumed = if self.skip > 0 {
                self.skip_in(buf)
            } else {
                self.read_in(buf)
            };
            reader.consume(consumed);
        }
        Ok(false)
    }

    /// Passes the line ends of `buf` still to be skipped; the bytes consumed.
    fn skip_in(&mut self, buf: &[u8]) -> usize {
        for i in memchr::memchr_iter(b'\n', buf) {
            self.skip -= 1;
            if self.skip == 0 {
                return i + 1;
            }
        }
        buf.len()
    }

    /// Adds the bytes of `buf` up to the end of the current line; the bytes consumed.
    fn read_in(&mut self, buf: &[u8]) -> usize {
        self.in_line = true;
        let (len, consumed, ends) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i, i + 1, true),
            None => (buf.len(), buf.len(), false),
        };
        let room = self.max_line_bytes.saturating_sub(self.line.len());
        self.line.extend_from_slice(&buf[..len.min(room)]);
        self.line_len += len as u64;
        if ends {
            self.end_line();
        }
        consumed
    }

    /// Renders the line read onto the page, unless the page is full.
    fn end_line(&mut self) {
        let (line_len, whole) = (self.line_len, self.line_len == self.line.len() as u64);
        let mut line = std::mem::take(&mut self.line);
        self.line_len = 0;
        self.in_line = false;
        if whole && line.last() == Some(&b'\r') {
            line.pop();
        }
        let shown = &line[..complete_prefix_len(&line)];
        let mut rendered = format!("{:>6}\t{}", self.line_no, String::from_utf8_lossy(shown));
        if !whole {
            let rest = line_len - shown.len() as u64;
            rendered.push_str(&format!(
                " [... line cut: {} more {}]",
                group(rest),
                plural(rest, "byte")
            ));
        }
        line.clear();
        self.line = line;
        let page = &mut self.page;
        if page.first_line != 0
            && page.text.len() + rendered.len() + 1 + PAGE_FOOTER_RESERVE_BYTES
                > self.max_page_bytes
        {
            self.done = true;
            return;
        }
        page.cut_lines += usize::from(!whole);
        page.text.push_str(&rendered);
        page.text.push('\n');
        if page.first_line == 0 {
            page.first_line = self.line_no;
        }
        page.last_line = self.line_no;
        self.line_no += 1;
        self.done = self.line_no >= self.end;
    }

    /// The page: the last line when the output ends without a line end, and the
    /// footer saying which lines these are and how to go on.
    pub fn finish(mut self) -> SpilledPage {
        if self.start == 0 {
            return self.page;
        }
        if !self.done && self.skip == 0 && self.in_line {
            self.end_line();
        }
        let page = &mut self.page;
        let total = page.total_lines;
        let range = format!(
            "lines {}-{} of {}",
            group(page.first_line),
            group(page.last_line),
            group(total)
        );
        if page.last_line < total {
            let next = page.last_line + 1;
            page.next_offset = Some(next);
            page.text
                .push_str(&format!("[{range}; continue with offset={next}]"));
        } else {
            page.text.push_str(&format!("[{range}; end of output]"));
        }
        self.page
    }
}
