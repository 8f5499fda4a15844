//! Output budgets and spill files.
//!
//! Every text a model reads has a budget ([`OutputBudget`], 30,000 bytes by default).
//! Output over it is cut to the head, the tail **and the lines in between that look
//! like errors** ([`ERROR_MARKERS`], then [`WARNING_MARKERS`]), with markers saying
//! what was left out; the full output is streamed to `<spill_dir>/<output_id>.txt`,
//! from where [`read_spilled`] pages it back (the `read_output` tool).
//!
//! - [`OutputSink`]: a streaming, memory-bounded writer for a tool's output; finish
//!   it to get a [`Captured`].
//! - [`apply_budget`] / [`truncate_in_memory`]: the same for a text already in memory.
//! - [`Captured::apply_to`]: puts the result into an [`Envelope`]
//!   (`partial`, `data.truncated`, `data.output_id`, `stats.output_bytes`/`output_lines`).
//!
//! ```
//! use std::io::Write;
//! use toolbelt_core::output::{OutputBudget, OutputSink, read_spilled};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let mut sink = OutputSink::new(OutputBudget::with_max_bytes(2_000), dir.path().to_path_buf());
//! for i in 1..=1_000 {
//!     if i == 500 {
//!         writeln!(sink, "error[E0425]: cannot find value `x` in this scope").unwrap();
//!     } else {
//!         writeln!(sink, "compiling crate {i}").unwrap();
//!     }
//! }
//! let captured = sink.finish().unwrap();
//! assert!(captured.truncated && captured.text.len() <= 2_000);
//! assert!(captured.text.contains("[line 500] error[E0425]"));
//! let id = captured.output_id.unwrap();
//! let page = read_spilled(dir.path(), &id, 500, 1).unwrap();
//! assert!(page.text.starts_with("   500\terror[E0425]"));
//! ```
//!
//! Memory stays bounded whatever the output: the sink holds at most `max_bytes`
//! before it spills, then the head, a ring buffer of the tail, a prefix of the
//! current line and at most `max_error_lines` error lines of `max_line_bytes` each.

use std::collections::VecDeque;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value};

use crate::envelope::{Envelope, ErrorCode, Status};
use crate::human::{human_bytes, plural};
use crate::tool::Reply;
use crate::tool::ToolError;

/// Default budget of a model-facing text.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 30_000;
/// Default cap on error lines kept from the omitted middle of an output.
pub const DEFAULT_MAX_ERROR_LINES: usize = 40;
/// Default cap on the bytes kept of one error line.
pub const DEFAULT_MAX_LINE_BYTES: usize = 256;
/// Room kept free for the markers of a truncated text; head and tail are shrunk so
/// that `head_bytes + tail_bytes + MARKER_RESERVE_BYTES <= max_bytes`.
pub const MARKER_RESERVE_BYTES: usize = 512;

/// Default number of lines [`read_spilled`] returns when `limit` is 0.
pub const DEFAULT_READ_LIMIT_LINES: usize = 200;
/// Most lines one page of [`read_spilled`] returns.
pub const MAX_READ_LIMIT_LINES: usize = 2_000;
/// Most bytes of one page of [`read_spilled`] (below the default output budget, so a
/// page is never itself truncated).
pub const MAX_PAGE_BYTES: usize = 24_000;
/// Most bytes of one line shown by [`read_spilled`]; longer lines are cut with a note.
pub const MAX_PAGE_LINE_BYTES: usize = 2_000;

/// Substrings (case-sensitive) that make a line from the omitted middle of an output
/// an error line, kept in the truncated text with its line number. Only the first
/// `max_line_bytes` of a line are searched.
pub const ERROR_MARKERS: &[&str] = &[
    "error",
    "Error",
    "ERROR",
    "FAIL",
    "failed",
    "Failed",
    "panicked",
    "panic:",
    "Traceback",
    "Exception",
    "fatal",
    "Fatal",
    "FATAL",
    "test result:",
    "Segmentation fault",
    "core dumped",
];

/// Substrings (case-sensitive) that make a line a warning line: kept like error lines,
/// but only while fewer than `max_error_lines` error lines were found.
pub const WARNING_MARKERS: &[&str] = &["warning", "Warning", "WARNING", "WARN"];

const OUTPUT_ID_PREFIX: &str = "out_";
const OUTPUT_ID_HEX_LEN: usize = 32;
const SPILL_BUFFER_BYTES: usize = 64 * 1024;
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Slack left when choosing error lines, for marker numbers that grow a digit.
const FIT_SLACK_BYTES: usize = 32;
/// Attempts at fitting a rendering into the budget before cutting it hard.
const MAX_FIT_ROUNDS: usize = 64;
/// Room kept for the footer line of a page of [`read_spilled`].
const PAGE_FOOTER_RESERVE_BYTES: usize = 160;
/// The smallest page [`read_spilled_within`] makes: a cut line and its footer.
const MIN_PAGE_BYTES: usize = 1_024;

/// The markers by their first byte, so that classifying a line is one pass over it.
type MarkerTable = Vec<Vec<(&'static [u8], Severity)>>;

static MARKERS_BY_FIRST_BYTE: LazyLock<MarkerTable> = LazyLock::new(|| {
    let mut table: MarkerTable = vec![Vec::new(); 256];
    let all = ERROR_MARKERS
        .iter()
        .map(|m| (m, Severity::Error))
        .chain(WARNING_MARKERS.iter().map(|m| (m, Severity::Warning)));
    for (marker, severity) in all {
        if let Some(&first) = marker.as_bytes().first() {
            table[usize::from(first)].push((marker.as_bytes(), severity));
        }
    }
    table
});

/// Limits on the text a model reads from one call.
///
/// Over `max_bytes`, the text keeps up to `head_bytes` of the start, up to
/// `tail_bytes` of the end and up to `max_error_lines` error lines (each cut to
/// `max_line_bytes`) from the middle, with markers; the whole text, markers
/// included, never exceeds `max_bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputBudget {
    /// Maximum bytes of the text, markers included.
    pub max_bytes: usize,
    /// Bytes kept from the start of a truncated output (cut back to a line end when
    /// one is in its second half).
    pub head_bytes: usize,
    /// Bytes kept from the end of a truncated output (cut forward to a line start
    /// when one is in its first half).
    pub tail_bytes: usize,
    /// Most error (or warning) lines kept from the omitted middle: half from its
    /// start, half from its end.
    pub max_error_lines: usize,
    /// Most bytes kept of one error line; also how much of each line is searched
    /// for [`ERROR_MARKERS`].
    pub max_line_bytes: usize,
    /// The tool that reads a saved output back, as the model knows it: the
    /// markers of a truncated output name it. `None`: the markers give the
    /// `output_id` alone (no such tool is served).
    pub reader: Option<Arc<str>>,
}

impl OutputBudget {
    /// The same budget, with `reader` named in the markers of truncated output.
    #[must_use]
    pub fn with_reader(mut self, reader: Option<Arc<str>>) -> OutputBudget {
        self.reader = reader;
        self
    }

    /// A budget of `max_bytes` split the default way: a quarter for the head, 35% for
    /// the tail, the rest for error lines and markers.
    pub fn with_max_bytes(max_bytes: usize) -> OutputBudget {
        let head_bytes = max_bytes / 4;
        let tail_bytes = max_bytes / 20 * 7;
        let error_share = max_bytes.saturating_sub(head_bytes + tail_bytes + MARKER_RESERVE_BYTES);
        OutputBudget {
            max_bytes,
            head_bytes,
            tail_bytes,
            max_error_lines: DEFAULT_MAX_ERROR_LINES.min(error_share / DEFAULT_MAX_LINE_BYTES),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            reader: None,
        }
    }

    /// Head and tail sizes that leave [`MARKER_RESERVE_BYTES`] free, scaled down
    /// proportionally when the configured ones do not.
    fn effective_head_tail(&self) -> (usize, usize) {
        let room = self.max_bytes.saturating_sub(MARKER_RESERVE_BYTES);
        let (head, tail) = (self.head_bytes, self.tail_bytes);
        let sum = head.saturating_add(tail);
        if sum <= room {
            return (head, tail);
        }
        let scaled_head = head as u128 * room as u128 / sum as u128;
        let head = usize::try_from(scaled_head).unwrap_or(room).min(room);
        (head, room - head)
    }
}

impl Default for OutputBudget {
    fn default() -> Self {
        OutputBudget::with_max_bytes(DEFAULT_MAX_OUTPUT_BYTES)
    }
}

/// The result of bounding an output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The text within budget (always valid UTF-8, `len() <= max_bytes`).
    pub text: String,
    /// True when `text` is not the whole output.
    pub truncated: bool,
    /// The handle of the spilled full output, for [`read_spilled`].
    pub output_id: Option<String>,
    /// Bytes of the whole output.
    pub total_bytes: u64,
    /// Lines of the whole output (a last line without `\n` counts).
    pub total_lines: u64,
    /// Where the full output was written.
    pub spill_path: Option<PathBuf>,
    /// Bytes of the output not shown in `text` (error lines shown from the middle
    /// still count as omitted).
    pub omitted_bytes: u64,
    /// Lines touched by the omitted bytes.
    pub omitted_lines: u64,
    /// Lines in the omitted part that look like errors or warnings, shown or not.
    pub error_lines: u64,
}

impl Captured {
    /// Puts the result into `env`: sets `text` and the counters `output_bytes` and
    /// `output_lines`; when truncated, turns `success` into `partial` (an error stays
    /// an error) and sets `truncated: true` and `output_id` in `data` when it is an
    /// object, else in `context`. The spill file's path goes to `context.output_path`.
    pub fn apply_to(self, env: &mut Envelope) {
        self.annotate(
            &mut env.stats.counters,
            &mut env.data,
            &mut env.context.extra,
        );
        if self.truncated && env.status == Status::Success {
            env.status = Status::Partial;
        }
        env.text = self.text;
    }

    /// A reply carrying this result, for tools written as functions over JSON: `data`
    /// gets `truncated` and `output_id` when it is an object (else `context` does), the
    /// reply is partial when truncated, with the same counters as [`Captured::apply_to`].
    pub fn into_reply(self, data: Value) -> Reply<Value> {
        let mut reply = Reply::new(data, String::new()).partial(self.truncated);
        self.annotate(&mut reply.stats, &mut reply.data, &mut reply.context);
        reply.text = self.text;
        reply
    }

    /// The counters; when truncated, `truncated`/`output_id` into `data` when it is
    /// an object (else into `context`) and the spill path into `context.output_path`.
    fn annotate(
        &self,
        counters: &mut std::collections::BTreeMap<String, Value>,
        data: &mut Value,
        context: &mut Map<String, Value>,
    ) {
        self.counters_into(counters);
        if !self.truncated {
            return;
        }
        let marks = self.marks();
        match data {
            Value::Object(data) => data.extend(marks),
            _ => context.extend(marks),
        }
        if let Some(path) = &self.spill_path {
            context.insert("output_path".into(), path.display().to_string().into());
        }
    }

    fn counters_into(&self, counters: &mut std::collections::BTreeMap<String, Value>) {
        counters.insert("output_bytes".into(), self.total_bytes.into());
        counters.insert("output_lines".into(), self.total_lines.into());
    }

    fn marks(&self) -> Map<String, Value> {
        let mut marks = Map::new();
        marks.insert("truncated".into(), Value::Bool(true));
        if let Some(id) = &self.output_id {
            marks.insert("output_id".into(), Value::String(id.clone()));
        }
        marks
    }
}

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

fn new_output_id() -> String {
    format!("{OUTPUT_ID_PREFIX}{}", uuid::Uuid::now_v7().simple())
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
        let tail = self.tail.to_vec();
        // The byte just before the tail: the last omitted byte, or the head's last.
        let before_tail = self.middle.last_byte.or_else(|| self.head.last().copied());
        let at_line_start = before_tail.is_none_or(|b| b == b'\n');
        let skip = if at_line_start {
            0
        } else {
            match memchr::memchr(b'\n', &tail[..tail.len() / 2]) {
                Some(i) => i + 1,
                None => leading_continuations(&tail),
            }
        };
        self.middle.feed(&tail[..skip]);
        self.middle.finish();
        let picker = &self.middle.picker;
        Layout {
            head: std::mem::take(&mut self.head),
            head_newlines: self.head_newlines,
            tail,
            skip,
            before_tail,
            candidates: picker.ranked(),
            matched: picker.seen,
        }
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

/// Splits the omitted middle into lines and offers each to the [`Picker`].
struct Scanner {
    line_no: u64,
    prefix: Vec<u8>,
    line_len: u64,
    max_line_bytes: usize,
    last_byte: Option<u8>,
    picker: Picker,
}

impl Scanner {
    fn new(first_line: u64, max_line_bytes: usize, max_error_lines: usize) -> Scanner {
        Scanner {
            line_no: first_line,
            prefix: Vec::new(),
            line_len: 0,
            max_line_bytes,
            last_byte: None,
            picker: Picker::new(max_error_lines),
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        if let Some(&b) = bytes.last() {
            self.last_byte = Some(b);
        }
        while !bytes.is_empty() {
            match memchr::memchr(b'\n', bytes) {
                Some(i) => {
                    self.take(&bytes[..i]);
                    self.end_line();
                    bytes = &bytes[i + 1..];
                }
                None => {
                    self.take(bytes);
                    break;
                }
            }
        }
    }

    fn take(&mut self, segment: &[u8]) {
        let room = self.max_line_bytes.saturating_sub(self.prefix.len());
        self.prefix
            .extend_from_slice(&segment[..room.min(segment.len())]);
        self.line_len += segment.len() as u64;
    }

    fn end_line(&mut self) {
        let mut line: &[u8] = &self.prefix;
        let whole = self.line_len == line.len() as u64;
        if whole && line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if let Some(severity) = classify(line) {
            self.picker.offer(severity, self.line_no, line, !whole);
        }
        self.prefix.clear();
        self.line_len = 0;
        self.line_no += 1;
    }

    fn finish(&mut self) {
        if self.line_len > 0 {
            self.end_line();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Severity {
    Error,
    Warning,
}

/// The severity of a line: `Error` if it contains an [`ERROR_MARKERS`] entry, else
/// `Warning` if it contains a [`WARNING_MARKERS`] entry.
fn classify(line: &[u8]) -> Option<Severity> {
    let table = &*MARKERS_BY_FIRST_BYTE;
    let mut found = None;
    for (i, &b) in line.iter().enumerate() {
        let Some(candidates) = table.get(usize::from(b)) else {
            continue;
        };
        for &(marker, severity) in candidates {
            if line[i..].starts_with(marker) {
                if severity == Severity::Error {
                    return Some(Severity::Error);
                }
                found = Some(severity);
            }
        }
    }
    found
}

/// One kept line from the omitted middle.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Picked {
    line_no: u64,
    bytes: Vec<u8>,
    cut: bool,
    repeats: u64,
}

impl Picked {
    fn render(&self) -> String {
        let mut shown = &self.bytes[..complete_prefix_len(&self.bytes)];
        if self.cut {
            shown = shown.trim_ascii_end();
        }
        let mut out = format!(
            "[line {}] {}",
            group(self.line_no),
            String::from_utf8_lossy(shown)
        );
        if self.cut {
            out.push_str(" [... line cut]");
        }
        if self.repeats > 0 {
            out.push_str(&format!(
                " [+{} identical {}]",
                group(self.repeats),
                plural(self.repeats, "line")
            ));
        }
        out
    }
}

/// Keeps the first and the last error lines (half the cap each), deduplicated, and
/// the first warning lines for any room left.
struct Picker {
    first: Vec<Picked>,
    last: VecDeque<Picked>,
    warnings: Vec<Picked>,
    first_cap: usize,
    last_cap: usize,
    warning_cap: usize,
    seen: u64,
}

impl Picker {
    fn new(max_lines: usize) -> Picker {
        let first_cap = max_lines.div_ceil(2);
        Picker {
            first: Vec::new(),
            last: VecDeque::new(),
            warnings: Vec::new(),
            first_cap,
            last_cap: max_lines - first_cap,
            warning_cap: max_lines,
            seen: 0,
        }
    }

    fn offer(&mut self, severity: Severity, line_no: u64, bytes: &[u8], cut: bool) {
        self.seen += 1;
        let kept = match severity {
            Severity::Error => {
                let mut kept = self.first.iter_mut().chain(self.last.iter_mut());
                kept.find(|p| p.bytes == bytes && p.cut == cut)
            }
            Severity::Warning => self
                .warnings
                .iter_mut()
                .find(|p| p.bytes == bytes && p.cut == cut),
        };
        if let Some(p) = kept {
            p.repeats += 1;
            return;
        }
        let picked = Picked {
            line_no,
            bytes: bytes.to_vec(),
            cut,
            repeats: 0,
        };
        match severity {
            Severity::Error if self.first.len() < self.first_cap => self.first.push(picked),
            Severity::Error if self.last_cap > 0 => {
                if self.last.len() == self.last_cap {
                    self.last.pop_front();
                }
                self.last.push_back(picked);
            }
            Severity::Warning if self.warnings.len() < self.warning_cap => {
                self.warnings.push(picked);
            }
            Severity::Error | Severity::Warning => {}
        }
    }

    /// The kept lines, most important first: errors alternately from the start and
    /// the end of the middle, then warnings in order, all within the cap.
    fn ranked(&self) -> Vec<Picked> {
        let mut out = Vec::with_capacity(self.warning_cap);
        let mut firsts = self.first.iter();
        let mut lasts = self.last.iter().rev();
        loop {
            let a = firsts.next();
            let b = lasts.next();
            if a.is_none() && b.is_none() {
                break;
            }
            out.extend(a.cloned());
            out.extend(b.cloned());
        }
        let room = self.warning_cap.saturating_sub(out.len());
        out.extend(self.warnings.iter().take(room).cloned());
        out
    }
}

/// Totals of the whole output, for the markers.
struct Summary<'a> {
    total_bytes: u64,
    total_newlines: u64,
    total_lines: u64,
    output_id: Option<&'a str>,
    reader: Option<&'a str>,
}

/// What a truncated rendering is made of.
struct Layout {
    head: Vec<u8>,
    head_newlines: u64,
    tail: Vec<u8>,
    skip: usize,
    before_tail: Option<u8>,
    candidates: Vec<Picked>,
    matched: u64,
}

struct Rendered {
    text: String,
    omitted_bytes: u64,
    omitted_lines: u64,
}

impl Layout {
    /// Renders within `max_bytes`: error lines by rank while they fit, then head and
    /// tail shrunk if the text is still over (invalid UTF-8 grows when replaced), and
    /// as a last resort a hard cut.
    fn render(&self, summary: &Summary<'_>, max_bytes: usize) -> Rendered {
        let mut head_len = self.head.len();
        let mut skip = self.skip;
        let lines: Vec<String> = self.candidates.iter().map(Picked::render).collect();

        // Choose error lines by rank within the room the rest leaves (measured with an
        // empty section, whose end marker counts every match as not shown).
        let base = self.render_lines(summary, head_len, skip, &[""], 0);
        let mut room = max_bytes.saturating_sub(base.text.len() + FIT_SLACK_BYTES);
        let mut chosen: Vec<usize> = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if line.len() < room {
                room -= line.len() + 1;
                chosen.push(i);
            }
        }

        let mut last = None;
        for _ in 0..MAX_FIT_ROUNDS {
            let mut order = chosen.clone();
            order.sort_by_key(|&i| self.candidates[i].line_no);
            let shown: Vec<&str> = order.iter().map(|&i| lines[i].as_str()).collect();
            let shown_matches: u64 = order.iter().map(|&i| 1 + self.candidates[i].repeats).sum();
            let rendered = self.render_lines(summary, head_len, skip, &shown, shown_matches);
            let Some(over) = rendered
                .text
                .len()
                .checked_sub(max_bytes)
                .filter(|&o| o > 0)
            else {
                return rendered;
            };
            last = Some(rendered);
            // Drop error lines by rank first, then shrink head and tail proportionally.
            if chosen.pop().is_some() {
                continue;
            }
            let tail_shown = self.tail.len() - skip;
            let both = head_len + tail_shown;
            if both == 0 {
                break;
            }
            let cut_head = over.saturating_mul(head_len).div_ceil(both).min(head_len);
            let cut_tail = over
                .saturating_mul(tail_shown)
                .div_ceil(both)
                .min(tail_shown);
            head_len = floor_char_boundary(&self.head, head_len - cut_head);
            skip = ceil_char_boundary(&self.tail, skip + cut_tail);
        }
        let mut rendered =
            last.unwrap_or_else(|| self.render_lines(summary, head_len, skip, &[], 0));
        rendered.text = hard_cut(rendered.text, max_bytes);
        rendered
    }

    fn render_lines(
        &self,
        summary: &Summary<'_>,
        head_len: usize,
        skip: usize,
        lines: &[&str],
        shown_matches: u64,
    ) -> Rendered {
        let head = &self.head[..head_len];
        let tail = &self.tail[skip..];
        let head_nl = if head_len == self.head.len() {
            self.head_newlines
        } else {
            memchr::memchr_iter(b'\n', head).count() as u64
        };
        let tail_nl = memchr::memchr_iter(b'\n', tail).count() as u64;
        let before_tail = if skip > 0 {
            self.tail.get(skip - 1).copied()
        } else {
            self.before_tail
        };
        let first_line = head_nl + 1;
        let last_line = (summary.total_newlines + 1)
            .saturating_sub(tail_nl + u64::from(before_tail == Some(b'\n')))
            .max(first_line);
        let omitted_lines = last_line - first_line + 1;
        let omitted_bytes = summary
            .total_bytes
            .saturating_sub(head.len() as u64 + tail.len() as u64);

        let mut text = String::with_capacity(head.len() + tail.len() + 1024);
        text.push_str(&String::from_utf8_lossy(head));
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let range = format!(
            "lines {}-{} omitted ({} {}, {})",
            group(first_line),
            group(last_line),
            group(omitted_lines),
            plural(omitted_lines, "line"),
            human_bytes(omitted_bytes),
        );
        let source = match (summary.output_id, summary.reader) {
            (Some(id), Some(reader)) => format!(
                "full output: output_id={id}, read it with {reader}(output_id, offset, limit)"
            ),
            (Some(id), None) => format!("full output: output_id={id}"),
            (None, _) => "the full output could not be saved".to_string(),
        };
        let not_shown = self.matched.saturating_sub(shown_matches);
        if lines.is_empty() {
            let errors = if self.matched > 0 {
                format!(
                    "; {} of them {} like errors or warnings",
                    group(self.matched),
                    if self.matched == 1 { "looks" } else { "look" }
                )
            } else {
                String::new()
            };
            text.push_str(&format!("[... {range}; {source}{errors} ...]\n"));
        } else {
            text.push_str(&format!(
                "[... {range}; {source}; the omitted lines that look like errors or warnings: ...]\n"
            ));
            for line in lines {
                text.push_str(line);
                text.push('\n');
            }
            if not_shown > 0 {
                text.push_str(&format!(
                    "[... end of error lines; {} more not shown ...]\n",
                    group(not_shown)
                ));
            } else {
                text.push_str("[... end of error lines ...]\n");
            }
        }
        text.push_str(&String::from_utf8_lossy(tail));
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[output truncated: {} {} ({}) in all, lines {}-{} not shown above",
            group(summary.total_lines),
            plural(summary.total_lines, "line"),
            human_bytes(summary.total_bytes),
            group(first_line),
            group(last_line),
        ));
        match (summary.output_id, summary.reader) {
            (Some(id), Some(reader)) => text.push_str(&format!(
                "; read them with {reader}(output_id={id}, offset={first_line})]"
            )),
            (Some(id), None) => text.push_str(&format!("; output_id={id}, offset={first_line}]")),
            (None, _) => text.push(']'),
        }
        Rendered {
            text,
            omitted_bytes,
            omitted_lines,
        }
    }
}

/// Where the head ends: after the last `\n` within `cap` when that is in the second
/// half, else at a character boundary at or below `cap`.
fn head_cut(bytes: &[u8], cap: usize) -> usize {
    let cap = cap.min(bytes.len());
    match memchr::memrchr(b'\n', &bytes[..cap]) {
        Some(i) if i + 1 >= cap / 2 => i + 1,
        _ => floor_char_boundary(bytes, cap),
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The largest index `<= i` not in the middle of a UTF-8 sequence (looking back at
/// most 3 bytes; invalid bytes are boundaries).
fn floor_char_boundary(bytes: &[u8], i: usize) -> usize {
    if i >= bytes.len() {
        return bytes.len();
    }
    let mut j = i;
    while j > 0 && i - j < 3 && bytes.get(j).copied().is_some_and(is_continuation) {
        j -= 1;
    }
    if bytes.get(j).copied().is_some_and(is_continuation) {
        i
    } else {
        j
    }
}

/// The smallest index `>= i` not in the middle of a UTF-8 sequence.
fn ceil_char_boundary(bytes: &[u8], i: usize) -> usize {
    if i >= bytes.len() {
        return bytes.len();
    }
    let mut j = i;
    while j < bytes.len() && j - i < 3 && bytes.get(j).copied().is_some_and(is_continuation) {
        j += 1;
    }
    j
}

fn leading_continuations(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|&&b| is_continuation(b))
        .count()
}

/// The length of `bytes` without an incomplete UTF-8 sequence at its end.
fn complete_prefix_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(4) {
        let b = bytes[n - back];
        if is_continuation(b) {
            continue;
        }
        let need = match b {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if need > back { n - back } else { n };
    }
    n
}

fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Cuts `text` to at most `max_bytes` at a character boundary.
fn hard_cut(mut text: String, max_bytes: usize) -> String {
    if text.len() > max_bytes {
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// `1234567` as `1,234,567`: how counts are shown to models and people.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------
// Paging a spilled output.

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
    #[error("could not read the saved output {path}: {source}")]
    Io {
        /// The spill file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: io::Error,
    },
}

/// INVALID_PARAMS for an id of the wrong shape, NOT_FOUND for one that is gone,
/// INTERNAL when the saved file cannot be read.
impl From<SpillError> for ToolError {
    fn from(e: SpillError) -> ToolError {
        match e {
            SpillError::InvalidId(_) => ToolError::new(ErrorCode::InvalidParams, e.to_string()),
            SpillError::NotFound(_) => ToolError::new(ErrorCode::NotFound, e.to_string()).hint(
                "output ids come from truncated results of this session; run the original call again",
            ),
            SpillError::Io { .. } => ToolError::new(ErrorCode::Internal, e.to_string()),
        }
    }
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
/// [`OutputSink`] hands out.
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

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
