//! The streaming, memory-bounded writer of a tool's output and its spill file.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::budget::{Captured, OutputBudget};
use super::cut::{hard_cut, head_cut, lossy};
use super::page::new_output_id;
use super::truncate::{Layout, Scanner, Summary};

const SPILL_BUFFER_BYTES: usize = 64 * 1024;

/// Bounds `text` to `budget`, spilling the whole text to `<spill_dir>/<output_id>.txt`
/// when it is over. Under budget, the text comes back unchanged and no file is written.
///
/// # Errors
/// The spill directory or file could not be created or written; fall back to
/// [`truncate_in_memory`].
pub fn apply_budget(text: &str, budget: &OutputBudget, spill_dir: &Path) -> io::Result<Captured> {
    let mut sink = OutputSink::new(budget.clone(), spill_dir.to_path_buf());
    sink.write(text.as_bytes())?;
    sink.finish()
}

/// Bounds `text` to `budget` exactly as [`apply_budget`] does, without writing
/// anything: the markers say the full output could not be saved, and there is no
/// `output_id`.
pub fn truncate_in_memory(text: &str, budget: &OutputBudget) -> Captured {
    let mut sink = OutputSink::without_spill(budget.clone());
    match sink.write(text.as_bytes()).and_then(|()| sink.finish()) {
        Ok(c) => c,
        // Unreachable without a spill file; keep the budget anyway.
        Err(_) => Captured {
            truncated: text.len() > budget.max_bytes,
            text: hard_cut(text.to_string(), budget.max_bytes),
            output_id: None,
            total_bytes: text.len() as u64,
            total_lines: text.lines().count() as u64,
            spill_path: None,
            omitted_bytes: text.len().saturating_sub(budget.max_bytes) as u64,
            omitted_lines: 0,
            error_lines: 0,
        },
    }
}

/// A bounded sink for a tool's output: write any amount of bytes (lines and UTF-8
/// characters may be split across writes anywhere), then [`finish`](OutputSink::finish).
///
/// Up to `max_bytes` it only buffers. Past that it creates the spill directory and
/// `<output_id>.txt` in it (`create_new`, mode 0600 on Unix), writes what it buffered,
/// and streams the rest through a buffered writer, keeping only the head, the tail
/// and the error lines in memory.
pub struct OutputSink {
    budget: OutputBudget,
    head_cap: usize,
    tail_cap: usize,
    spill_dir: Option<PathBuf>,
    total_bytes: u64,
    total_newlines: u64,
    last_byte: Option<u8>,
    state: State,
}

enum State {
    Buffering(Vec<u8>),
    Spilling(Box<Spill>),
    Failed,
}

struct Spill {
    file: Option<SpillFile>,
    head: Vec<u8>,
    head_newlines: u64,
    tail: Ring,
    middle: Scanner,
}

struct SpillFile {
    writer: BufWriter<File>,
    path: PathBuf,
    id: String,
}

impl fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Buffering(_) => "buffering",
            State::Spilling(_) => "spilling",
            State::Failed => "failed",
        };
        f.debug_struct("OutputSink")
            .field("budget", &self.budget)
            .field("spill_dir", &self.spill_dir)
            .field("total_bytes", &self.total_bytes)
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

impl OutputSink {
    /// A sink with `budget` that spills into `spill_dir` (created when first needed).
    pub fn new(budget: OutputBudget, spill_dir: PathBuf) -> OutputSink {
        OutputSink::build(budget, Some(spill_dir))
    }

    /// A sink with `budget` that never writes a file: over budget, the full output is
    /// lost and the markers say so.
    pub fn without_spill(budget: OutputBudget) -> OutputSink {
        OutputSink::build(budget, None)
    }

    fn build(budget: OutputBudget, spill_dir: Option<PathBuf>) -> OutputSink {
        let (head_cap, tail_cap) = budget.effective_head_tail();
        OutputSink {
            budget,
            head_cap,
            tail_cap,
            spill_dir,
            total_bytes: 0,
            total_newlines: 0,
            last_byte: None,
            state: State::Buffering(Vec::new()),
        }
    }

    /// Bytes written so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// True once the output went over budget and is being spilled.
    pub fn is_spilling(&self) -> bool {
        matches!(self.state, State::Spilling(_))
    }

    /// Appends `bytes` to the output.
    ///
    /// # Errors
    /// Creating or writing the spill file failed (the partial file is removed); the
    /// sink stays failed and every later call fails too.
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return match self.state {
                State::Failed => Err(failed_before()),
                _ => Ok(()),
            };
        }
        let result = self.push(bytes);
        if result.is_err() {
            self.fail();
        }
        result
    }

    fn push(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.count(bytes);
        let mut rest = bytes;
        if let State::Buffering(pending) = &mut self.state {
            // Buffer up to one byte past the budget: enough to know it is over, and
            // enough look-ahead to cut the head at a line end or character boundary.
            let room = self
                .budget
                .max_bytes
                .saturating_add(1)
                .saturating_sub(pending.len());
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            pending.extend_from_slice(now);
            if pending.len() <= self.budget.max_bytes {
                return Ok(());
            }
            rest = later;
            self.start_spill()?;
        }
        match &mut self.state {
            State::Spilling(spill) => spill.push(rest),
            State::Failed => Err(failed_before()),
            State::Buffering(_) => Ok(()),
        }
    }

    fn count(&mut self, bytes: &[u8]) {
        if let Some(&last) = bytes.last() {
            self.last_byte = Some(last);
            self.total_bytes += bytes.len() as u64;
            self.total_newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        }
    }

    /// Moves from buffering to spilling: opens the file, writes the buffered bytes,
    /// keeps the head and pushes the rest through the tail ring.
    fn start_spill(&mut self) -> io::Result<()> {
        let State::Buffering(pending) = std::mem::replace(&mut self.state, State::Failed) else {
            return Ok(());
        };
        let file = match &self.spill_dir {
            Some(dir) => {
                let mut file = create_spill_file(dir)?;
                if let Err(e) = file.writer.write_all(&pending) {
                    remove_partial(file);
                    return Err(e);
                }
                Some(file)
            }
            None => None,
        };
        let head_len = head_cut(&pending, self.head_cap);
        let head_newlines = memchr::memchr_iter(b'\n', &pending[..head_len]).count() as u64;
        let mut spill = Box::new(Spill {
            file,
            head: Vec::new(),
            head_newlines,
            tail: Ring::new(self.tail_cap),
            middle: Scanner::new(
                head_newlines + 1,
                self.budget.max_line_bytes,
                self.budget.max_error_lines,
            ),
        });
        spill.feed_ring(&pending[head_len..]);
        let mut head = pending;
        head.truncate(head_len);
        head.shrink_to_fit();
        spill.head = head;
        self.state = State::Spilling(spill);
        Ok(())
    }

    fn fail(&mut self) {
        if let State::Spilling(spill) = std::mem::replace(&mut self.state, State::Failed)
            && let Some(file) = spill.file
        {
            remove_partial(file);
        }
    }

    /// Ends the output: the text within budget and, when it was over, the spill file.
    ///
    /// # Errors
    /// Writing or flushing the spill file failed (the partial file is removed).
    pub fn finish(mut self) -> io::Result<Captured> {
        let result = self.finish_inner();
        if result.is_err() {
            self.fail();
        }
        result
    }

    fn finish_inner(&mut self) -> io::Result<Captured> {
        let total_lines = self.total_lines();
        if let State::Buffering(pending) = &mut self.state {
            let fits = match std::str::from_utf8(pending) {
                Ok(_) => true,
                // Invalid UTF-8 grows when replaced: within budget as bytes, maybe
                // over it as text.
                Err(_) => String::from_utf8_lossy(pending).len() <= self.budget.max_bytes,
            };
            if fits {
                return Ok(Captured {
                    text: lossy(std::mem::take(pending)),
                    truncated: false,
                    output_id: None,
                    total_bytes: self.total_bytes,
                    total_lines,
                    spill_path: None,
                    omitted_bytes: 0,
                    omitted_lines: 0,
                    error_lines: 0,
                });
            }
            self.start_spill()?;
        }
        let State::Spilling(spill) = std::mem::replace(&mut self.state, State::Failed) else {
            return Err(failed_before());
        };
        let mut spill = *spill;
        let file = match spill.file.take() {
            Some(mut file) => {
                if let Err(e) = file.writer.flush() {
                    remove_partial(file);
                    return Err(e);
                }
                Some((file.id, file.path))
            }
            None => None,
        };
        let summary = Summary {
            total_bytes: self.total_bytes,
            total_newlines: self.total_newlines,
            total_lines,
            output_id: file.as_ref().map(|(id, _)| id.as_str()),
            reader: self.budget.reader.as_deref(),
        };
        let layout = spill.layout();
        let rendered = layout.render(&summary, self.budget.max_bytes);
        let (id, path) = file.unzip();
        Ok(Captured {
            text: rendered.text,
            truncated: true,
            output_id: id,
            total_bytes: self.total_bytes,
            total_lines,
            spill_path: path,
            omitted_bytes: rendered.omitted_bytes,
            omitted_lines: rendered.omitted_lines,
            error_lines: layout.matched,
        })
    }

    fn total_lines(&self) -> u64 {
        self.total_newlines + u64::from(self.last_byte.is_some_and(|b| b != b'\n'))
    }
}

impl Write for OutputSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        OutputSink::write(self, buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.state {
            State::Failed => Err(failed_before()),
            State::Spilling(spill) => match &mut spill.file {
                Some(file) => file.writer.flush(),
                None => Ok(()),
            },
            State::Buffering(_) => Ok(()),
        }
    }
}

fn failed_before() -> io::Error {
    io::Error::other("the output could not be saved: an earlier write to the spill file failed")
}

fn create_spill_file(dir: &Path) -> io::Result<SpillFile> {
    std::fs::create_dir_all(dir)?;
    let mut attempts = 0;
    loop {
        let id = new_output_id();
        let path = dir.join(format!("{id}.txt"));
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        match opts.open(&path) {
            Ok(file) => {
                return Ok(SpillFile {
                    writer: BufWriter::with_capacity(SPILL_BUFFER_BYTES, file),
                    path,
                    id,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 3 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Removes a spill file that could not be written completely: a partial copy is
/// worse than none. Best effort.
fn remove_partial(file: SpillFile) {
    let SpillFile { writer, path, .. } = file;
    // Dropping the writer flushes what it can; the file goes anyway.
    drop(writer);
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(
            "could not remove the partial spill file {}: {e}",
            path.display()
        );
    }
}

impl Spill {
    fn push(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(file) = &mut self.file {
            file.writer.write_all(bytes)?;
        }
        self.feed_ring(bytes);
        Ok(())
    }

    fn feed_ring(&mut self, bytes: &[u8]) {
        let Spill { tail, middle, .. } = self;
        tail.push(bytes, &mut |evicted| middle.feed(evicted));
    }

    /// Decides where the tail starts, lets the scanner see the rest of the omitted
    /// bytes, and gathers what rendering needs.
    fn layout(&mut self) -> Layout {
        Layout::new(
            std::mem::take(&mut self.head),
            self.head_newlines,
            self.tail.to_vec(),
            &mut self.middle,
        )
    }
}

/// A fixed-capacity ring of the last bytes written; evicted bytes go to a callback.
struct Ring {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Ring {
    fn new(cap: usize) -> Ring {
        Ring {
            buf: vec![0; cap],
            start: 0,
            len: 0,
        }
    }

    fn push(&mut self, bytes: &[u8], evict: &mut dyn FnMut(&[u8])) {
        let cap = self.buf.len();
        if cap == 0 {
            evict(bytes);
            return;
        }
        if bytes.len() >= cap {
            self.evict_front(self.len, evict);
            let (gone, keep) = bytes.split_at(bytes.len() - cap);
            evict(gone);
            self.buf.copy_from_slice(keep);
            self.start = 0;
            self.len = cap;
            return;
        }
        let overflow = (self.len + bytes.len()).saturating_sub(cap);
        if overflow > 0 {
            self.evict_front(overflow, evict);
        }
        let end = (self.start + self.len) % cap;
        let first = bytes.len().min(cap - end);
        self.buf[end..end + first].copy_from_slice(&bytes[..first]);
        self.buf[..bytes.len() - first].copy_from_slice(&bytes[first..]);
        self.len += bytes.len();
    }

    fn evict_front(&mut self, n: usize, evict: &mut dyn FnMut(&[u8])) {
        let cap = self.buf.len();
        if n == 0 || cap == 0 {
            return;
        }
        let first = n.min(cap - self.start);
        evict(&self.buf[self.start..self.start + first]);
        if n > first {
            evict(&self.buf[..n - first]);
        }
        self.start = (self.start + n) % cap;
        self.len -= n;
    }

    fn to_vec(&self) -> Vec<u8> {
        let cap = self.buf.len();
        let mut out = Vec::with_capacity(self.len);
        if cap == 0 {
            return out;
        }
        let first = self.len.min(cap - self.start);
        out.extend_from_slice(&self.buf[self.start..self.start + first]);
        out.extend_from_slice(&self.buf[..self.len - first]);
        out
    }
}
