//! The budget of a model-facing text and the result of bounding an output to it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::envelope::{Envelope, Status};

/// Default budget of a model-facing text.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 30_000;
/// Default cap on error lines kept from the omitted middle of an output.
pub const DEFAULT_MAX_ERROR_LINES: usize = 40;
/// Default cap on the bytes kept of one error line.
pub const DEFAULT_MAX_LINE_BYTES: usize = 256;
/// Room kept free for the markers of a truncated text; head and tail are shrunk so
/// that `head_bytes + tail_bytes + MARKER_RESERVE_BYTES <= max_bytes`.
pub const MARKER_RESERVE_BYTES: usize = 512;

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
    /// for [`ERROR_MARKERS`](super::ERROR_MARKERS).
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
    pub(super) fn effective_head_tail(&self) -> (usize, usize) {
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
    /// The handle of the spilled full output, for [`read_spilled`](super::read_spilled).
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

    /// The counters; when truncated, `truncated`/`output_id` into `data` when it is
    /// an object (else into `context`) and the spill path into `context.output_path`.
    pub(super) fn annotate(
        &self,
        counters: &mut BTreeMap<String, Value>,
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

    fn counters_into(&self, counters: &mut BTreeMap<String, Value>) {
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
