//! Lenient JSON: strict first, then the repairs that cannot change meaning.

use serde_json::Value;

/// At most this many `{`/`[` positions are tried as the start of the JSON value when
/// prose precedes it.
const MAX_START_CANDIDATES: usize = 8;
/// Text that is not JSON even after repair; the message says what is wrong and
/// where (``expected `,` or `}` at line 1 column 9``).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotJson(pub String);

/// Parses JSON leniently, repairing the breakage language models commonly produce, and
/// says what was repaired.
///
/// Strict JSON is returned as is, with no repairs. Otherwise these repairs are tried,
/// each reported as a short phrase in the returned list:
///
/// - a byte order mark and a markdown code fence (```` ```json ... ``` ````) are removed;
/// - prose before and after one JSON object or array is removed (a second JSON object
///   in the prose is an error: which one was meant is unclear);
/// - trailing commas are removed;
/// - a truncated end is closed: an unterminated string, then the open arrays and objects;
/// - Python's `True`, `False` and `None` outside strings become `true`, `false`, `null`;
/// - single-quoted strings become double-quoted, only where the closing quote is
///   followed by `:`, `,`, `}`, `]` or the end (so `'it's'` is left alone);
/// - raw control characters (newlines, tabs) inside strings are escaped.
///
/// Unquoted keys, comments and other guesses are not repaired.
///
/// # Errors
/// The text is not JSON even after repair. The message says what is wrong and where,
/// as a line and column (in characters) of `s`, e.g.
/// ``expected `,` or `}` at line 1 column 9``.
pub fn parse_loose_json(s: &str) -> Result<(Value, Vec<String>), NotJson> {
    let strict_error = match serde_json::from_str::<Value>(s) {
        Ok(v) => return Ok((v, Vec::new())),
        Err(e) => e,
    };
    let mut repairs = Repairs::default();
    let mut start = 0;
    if s.starts_with('\u{feff}') {
        start = '\u{feff}'.len_utf8();
        repairs.add("removed byte order mark");
    }
    let (mut start, mut end) = trim_range(s, start, s.len());
    if start >= end {
        return Err(NotJson("no JSON value: the text is empty".into()));
    }

    if let Some(fence) = find_fence(s, start, end) {
        repairs.add("removed code fence");
        if !s[start..fence.open].trim().is_empty() {
            repairs.add("removed text before the JSON");
        }
        if !s[fence.close..end].trim().is_empty() {
            repairs.add("removed text after the JSON");
        }
        (start, end) = trim_range(s, fence.content_start, fence.content_end);
        if start >= end {
            return Err(NotJson("no JSON value: the code fence is empty".into()));
        }
    }

    let bytes = s.as_bytes();
    let starts_with_bracket = matches!(bytes[start], b'{' | b'[');
    let candidates: Vec<usize> = if starts_with_bracket {
        vec![start]
    } else {
        let found: Vec<usize> = (start..end)
            .filter(|&i| matches!(bytes[i], b'{' | b'['))
            .take(MAX_START_CANDIDATES)
            .collect();
        if found.is_empty() { vec![start] } else { found }
    };

    let mut first_error: Option<NotJson> = None;
    for cand in candidates {
        let mut reps = repairs.clone();
        if cand > start {
            reps.add("removed text before the JSON");
        }
        let span_end = match matching_close(bytes, cand, end) {
            Some(close) => close + 1,
            None => end,
        };
        let text_after = span_end < end && !s[span_end..end].trim().is_empty();
        match repair_and_parse(s, cand, span_end) {
            Ok((value, token_repairs)) => {
                if text_after {
                    if let Some(second) = second_object(s, span_end, end) {
                        let (line, col) = line_col(s, second);
                        return Err(NotJson(format!(
                            "found more than one JSON value (another starts at line {line} column {col}); send exactly one"
                        )));
                    }
                    reps.add("removed text after the JSON");
                }
                for r in token_repairs {
                    reps.add(&r);
                }
                return Ok((value, reps.0));
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| NotJson(strict_error.to_string())))
}

/// An ordered list of repair phrases without duplicates.
#[derive(Debug, Clone, Default)]
struct Repairs(Vec<String>);

impl Repairs {
    fn add(&mut self, phrase: &str) {
        if !self.0.iter().any(|p| p == phrase) {
            self.0.push(phrase.to_string());
        }
    }
}

/// `start..end` without surrounding whitespace.
fn trim_range(s: &str, start: usize, end: usize) -> (usize, usize) {
    let slice = &s[start..end];
    let lead = slice.len() - slice.trim_start().len();
    let trail = slice.len() - slice.trim_end().len();
    let (a, b) = (start + lead, end - trail);
    if a > b { (a, a) } else { (a, b) }
}

/// Where a markdown code fence is.
struct Fence {
    /// Index of the opening backticks.
    open: usize,
    /// First byte of the fenced content.
    content_start: usize,
    /// One past the last byte of the fenced content.
    content_end: usize,
    /// One past the closing backticks (or the end).
    close: usize,
}

/// True if only spaces and tabs precede `i` on its line (within `start..`).
fn at_line_start(s: &str, start: usize, i: usize) -> bool {
    s[start..i]
        .bytes()
        .rev()
        .take_while(|&b| b != b'\n')
        .all(|b| b == b' ' || b == b'\t')
}

/// The first code fence in `start..end` that opens at a line start before any `{` or `[`
/// (a fence after a bracket is more likely inside a JSON string).
fn find_fence(s: &str, start: usize, end: usize) -> Option<Fence> {
    let region = &s[start..end];
    let rel = region.find("```")?;
    let open = start + rel;
    if !at_line_start(s, start, open) || region[..rel].contains(['{', '[']) {
        return None;
    }
    let after_ticks = open + 3 + s[open + 3..end].bytes().take_while(|&b| b == b'`').count();
    let line_end = s[after_ticks..end]
        .find('\n')
        .map_or(end, |i| after_ticks + i);
    let info = s[after_ticks..line_end].trim();
    let is_info = info
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-' | b'.'));
    let content_start = if is_info {
        (line_end + 1).min(end)
    } else {
        after_ticks
    };
    // The closing fence: at a line start, else at the very end of the text.
    let mut search = content_start;
    while let Some(rel) = s[search..end].find("```") {
        let at = search + rel;
        if at_line_start(s, content_start, at) {
            return Some(Fence {
                open,
                content_start,
                content_end: at,
                close: at + 3 + s[at + 3..end].bytes().take_while(|&b| b == b'`').count(),
            });
        }
        search = at + 3;
    }
    let trimmed_end = s[content_start..end].trim_end();
    let content_end = if trimmed_end.ends_with("```") {
        content_start + trimmed_end.trim_end_matches('`').len()
    } else {
        end
    };
    Some(Fence {
        open,
        content_start,
        content_end,
        close: end,
    })
}

/// The index of the bracket closing the one at `open`, skipping double-quoted
/// strings; `None` when the text ends first or a bracket does not match.
pub(crate) fn matching_close(bytes: &[u8], open: usize, end: usize) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut i = open;
    while i < end {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' => stack.push(b'}'),
                b'[' => stack.push(b']'),
                b'}' | b']' => {
                    if stack.pop() != Some(b) {
                        return None;
                    }
                    if stack.is_empty() {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// The start of a strict JSON object within `start..end`, if there is one.
fn second_object(s: &str, start: usize, end: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    (start..end)
        .filter(|&i| bytes[i] == b'{')
        .take(MAX_START_CANDIDATES)
        .find(|&i| {
            matching_close(bytes, i, end).is_some_and(|close| {
                serde_json::from_str::<Value>(&s[i..=close]).is_ok_and(|v| v.is_object())
            })
        })
}

/// Line and column (1-based, column in characters) of byte `offset` in `s`.
pub(crate) fn line_col(s: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(s.len());
    while !s.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &s[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// Repairs the tokens of `s[start..end]` and parses the result.
fn repair_and_parse(s: &str, start: usize, end: usize) -> Result<(Value, Vec<String>), NotJson> {
    let fixed = Fixer::new(s.as_bytes(), end).run(start);
    let Ok(text) = String::from_utf8(fixed.out) else {
        return Err(NotJson("the text is not valid UTF-8 after repair".into()));
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => Ok((v, fixed.repairs)),
        Err(e) => Err(NotJson(locate_error(s, &text, &fixed.map, end, &e))),
    }
}

/// The serde error message with its position moved from the repaired text back to `s`.
fn locate_error(
    s: &str,
    repaired: &str,
    map: &[usize],
    span_end: usize,
    e: &serde_json::Error,
) -> String {
    let full = e.to_string();
    if e.line() == 0 {
        return full;
    }
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    let line_start = if e.line() == 1 {
        0
    } else {
        repaired
            .match_indices('\n')
            .nth(e.line() - 2)
            .map_or(repaired.len(), |(i, _)| i + 1)
    };
    let at = (line_start + e.column().saturating_sub(1)).min(repaired.len());
    let original = map.get(at).copied().unwrap_or(span_end);
    let (line, col) = line_col(s, original);
    format!("{message} at line {line} column {col}")
}

/// The output of [`Fixer::run`].
struct Fixed {
    out: Vec<u8>,
    /// For each output byte, the input byte it came from.
    map: Vec<usize>,
    repairs: Vec<String>,
}

/// One pass over the tokens, fixing what is safe to fix.
struct Fixer<'a> {
    src: &'a [u8],
    end: usize,
    out: Vec<u8>,
    map: Vec<usize>,
    /// Closers of the open arrays and objects.
    stack: Vec<u8>,
    /// The last byte outside whitespace written, and where.
    last: Option<(u8, usize)>,
    trailing_commas: usize,
    python: Vec<(&'static str, &'static str)>,
    single_quotes: bool,
    control_chars: bool,
    closed_string: bool,
}

impl<'a> Fixer<'a> {
    fn new(src: &'a [u8], end: usize) -> Fixer<'a> {
        Fixer {
            src,
            end,
            out: Vec::with_capacity(end),
            map: Vec::with_capacity(end),
            stack: Vec::new(),
            last: None,
            trailing_commas: 0,
            python: Vec::new(),
            single_quotes: false,
            control_chars: false,
            closed_string: false,
        }
    }

    fn push(&mut self, b: u8, from: usize) {
        if !b.is_ascii_whitespace() {
            self.last = Some((b, self.out.len()));
        }
        self.out.push(b);
        self.map.push(from);
    }

    fn drop_trailing_comma(&mut self) {
        if let Some((b',', at)) = self.last {
            self.out.remove(at);
            self.map.remove(at);
            self.trailing_commas += 1;
            self.last = None;
        }
    }

    fn run(mut self, start: usize) -> Fixed {
        let mut i = start;
        while i < self.end {
            let b = self.src[i];
            match b {
                b'"' => i = self.double_quoted(i),
                b'\'' if self.at_value_position() => i = self.single_quoted(i),
                b'{' | b'[' => {
                    self.push(b, i);
                    self.stack.push(if b == b'{' { b'}' } else { b']' });
                    i += 1;
                }
                b'}' | b']' => {
                    self.drop_trailing_comma();
                    self.push(b, i);
                    if self.stack.last() == Some(&b) {
                        self.stack.pop();
                    }
                    i += 1;
                }
                b if b.is_ascii_alphabetic() || b == b'_' => i = self.word(i),
                _ => {
                    self.push(b, i);
                    i += 1;
                }
            }
        }
        if !self.stack.is_empty() {
            self.drop_trailing_comma();
            let closers: Vec<u8> = self.stack.iter().rev().copied().collect();
            for c in &closers {
                self.push(*c, self.end);
            }
        }
        let mut repairs = Vec::new();
        if self.control_chars {
            repairs.push("escaped control characters in strings".to_string());
        }
        if self.single_quotes {
            repairs.push("converted single-quoted strings to double quotes".to_string());
        }
        for (py, json) in &self.python {
            repairs.push(format!("replaced Python {py} with {json}"));
        }
        match self.trailing_commas {
            0 => {}
            1 => repairs.push("removed trailing comma".to_string()),
            n => repairs.push(format!("removed {n} trailing commas")),
        }
        if self.closed_string {
            repairs.push("closed unterminated string".to_string());
        }
        match self.stack.len() {
            0 => {}
            1 => repairs.push("closed 1 bracket".to_string()),
            n => repairs.push(format!("closed {n} brackets")),
        }
        Fixed {
            out: self.out,
            map: self.map,
            repairs,
        }
    }

    fn at_value_position(&self) -> bool {
        matches!(self.last, None | Some((b'{' | b'[' | b',' | b':', _)))
    }

    /// Writes a control character inside a string as an escape.
    fn push_escaped_control(&mut self, b: u8, from: usize) {
        self.control_chars = true;
        let escaped = match b {
            b'\n' => "\\n".to_string(),
            b'\r' => "\\r".to_string(),
            b'\t' => "\\t".to_string(),
            _ => format!("\\u{b:04x}"),
        };
        for e in escaped.bytes() {
            self.push(e, from);
        }
    }

    /// Copies a double-quoted string starting at `i`; returns the index after it.
    fn double_quoted(&mut self, mut i: usize) -> usize {
        self.push(b'"', i);
        i += 1;
        while i < self.end {
            let b = self.src[i];
            match b {
                b'\\' if i + 1 < self.end => {
                    self.push(b, i);
                    self.push(self.src[i + 1], i + 1);
                    i += 2;
                }
                // A lone backslash at a truncated end escapes nothing.
                b'\\' => i += 1,
                b'"' => {
                    self.push(b, i);
                    return i + 1;
                }
                b if b < 0x20 => {
                    self.push_escaped_control(b, i);
                    i += 1;
                }
                _ => {
                    self.push(b, i);
                    i += 1;
                }
            }
        }
        self.closed_string = true;
        self.push(b'"', self.end);
        i
    }

    /// Converts a single-quoted string starting at `i` when its end is unambiguous;
    /// otherwise copies the quote as is (and parsing fails there).
    fn single_quoted(&mut self, i: usize) -> usize {
        let mut j = i + 1;
        let close = loop {
            if j >= self.end {
                break None;
            }
            match self.src[j] {
                b'\\' => j += 2,
                b'\'' => break Some(j),
                _ => j += 1,
            }
        };
        let Some(close) = close else {
            self.push(b'\'', i);
            return i + 1;
        };
        let mut k = close + 1;
        while k < self.end && self.src[k].is_ascii_whitespace() {
            k += 1;
        }
        if k < self.end && !matches!(self.src[k], b':' | b',' | b'}' | b']') {
            self.push(b'\'', i);
            return i + 1;
        }
        self.single_quotes = true;
        self.push(b'"', i);
        let mut j = i + 1;
        while j < close {
            let b = self.src[j];
            match b {
                b'\\' if self.src.get(j + 1) == Some(&b'\'') => {
                    self.push(b'\'', j + 1);
                    j += 2;
                }
                b'\\' => {
                    self.push(b, j);
                    if let Some(&next) = self.src.get(j + 1) {
                        self.push(next, j + 1);
                    }
                    j += 2;
                }
                b'"' => {
                    self.push(b'\\', j);
                    self.push(b'"', j);
                    j += 1;
                }
                b if b < 0x20 => {
                    self.push_escaped_control(b, j);
                    j += 1;
                }
                _ => {
                    self.push(b, j);
                    j += 1;
                }
            }
        }
        self.push(b'"', close);
        close + 1
    }

    /// Copies a bare word starting at `i`, replacing Python literals.
    fn word(&mut self, i: usize) -> usize {
        let mut j = i;
        while j < self.end && (self.src[j].is_ascii_alphanumeric() || self.src[j] == b'_') {
            j += 1;
        }
        let replacement = match &self.src[i..j] {
            b"True" => Some(("True", "true")),
            b"False" => Some(("False", "false")),
            b"None" => Some(("None", "null")),
            _ => None,
        };
        match replacement {
            Some((py, json)) => {
                if !self.python.contains(&(py, json)) {
                    self.python.push((py, json));
                }
                for b in json.bytes() {
                    self.push(b, i);
                }
            }
            None => {
                for k in i..j {
                    self.push(self.src[k], k);
                }
            }
        }
        j
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
