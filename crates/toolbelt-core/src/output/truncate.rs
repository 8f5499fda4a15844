//! The layout of a truncated text: head, the error lines of the omitted middle,
//! tail, and the markers saying what was left out.

use crate::human::noun;
use std::collections::VecDeque;
use std::sync::LazyLock;

use super::cut::{
    ceil_char_boundary, complete_prefix_len, floor_char_boundary, hard_cut, leading_continuations,
};
use crate::human::{group, human_bytes, plural};

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

/// Slack left when choosing error lines, for marker numbers that grow a digit.
const FIT_SLACK_BYTES: usize = 32;
/// Attempts at fitting a rendering into the budget before cutting it hard.
const MAX_FIT_ROUNDS: usize = 64;

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

/// Splits the omitted middle into lines and offers each to the [`Picker`].
pub(super) struct Scanner {
    line_no: u64,
    prefix: Vec<u8>,
    line_len: u64,
    max_line_bytes: usize,
    last_byte: Option<u8>,
    picker: Picker,
}

impl Scanner {
    pub(super) fn new(first_line: u64, max_line_bytes: usize, max_error_lines: usize) -> Scanner {
        Scanner {
            line_no: first_line,
            prefix: Vec::new(),
            line_len: 0,
            max_line_bytes,
            last_byte: None,
            picker: Picker::new(max_error_lines),
        }
    }

    pub(super) fn feed(&mut self, mut bytes: &[u8]) {
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
pub(super) struct Summary<'a> {
    pub(super) total_bytes: u64,
    pub(super) total_newlines: u64,
    pub(super) total_lines: u64,
    pub(super) output_id: Option<&'a str>,
    pub(super) reader: Option<&'a str>,
}

/// What a truncated rendering is made of.
pub(super) struct Layout {
    head: Vec<u8>,
    head_newlines: u64,
    tail: Vec<u8>,
    skip: usize,
    before_tail: Option<u8>,
    candidates: Vec<Picked>,
    /// Lines of the omitted part that look like errors or warnings.
    pub(super) matched: u64,
}

pub(super) struct Rendered {
    pub(super) text: String,
    pub(super) omitted_bytes: u64,
    pub(super) omitted_lines: u64,
}

impl Layout {
    /// The layout of a text cut to `head` and `tail` (the last bytes written), the
    /// bytes between them having gone through `middle`: decides where the tail
    /// starts (at a line start when one is in its first half) and lets the scanner
    /// see the rest of the omitted bytes.
    pub(super) fn new(
        head: Vec<u8>,
        head_newlines: u64,
        tail: Vec<u8>,
        middle: &mut Scanner,
    ) -> Layout {
        // The byte just before the tail: the last omitted byte, or the head's last.
        let before_tail = middle.last_byte.or_else(|| head.last().copied());
        let at_line_start = before_tail.is_none_or(|b| b == b'\n');
        let skip = if at_line_start {
            0
        } else {
            match memchr::memchr(b'\n', &tail[..tail.len() / 2]) {
                Some(i) => i + 1,
                None => leading_continuations(&tail),
            }
        };
        middle.feed(&tail[..skip]);
        middle.finish();
        let picker = &middle.picker;
        Layout {
            head,
            head_newlines,
            tail,
            skip,
            before_tail,
            candidates: picker.ranked(),
            matched: picker.seen,
        }
    }

    /// Renders within `max_bytes`: error lines by rank while they fit, then head and
    /// tail shrunk if the text is still over (invalid UTF-8 grows when replaced), and
    /// as a last resort a hard cut.
    pub(super) fn render(&self, summary: &Summary<'_>, max_bytes: usize) -> Rendered {
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
                    noun(self.matched, "looks", "look")
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
