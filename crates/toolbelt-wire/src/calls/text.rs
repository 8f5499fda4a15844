//! The text protocol of ReAct agents that do not use a provider's function calling:
//!
//! ```text
//! Thought: I need the file first.
//! Action: read_file[{"path": "src/main.rs"}]
//! ```
//!
//! and, to finish, `Finish[the answer]` or a `Final Answer: the answer` line.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::ParsedCall;
use toolbelt_core::ToolCall;

/// At most this many characters of unexpected text are quoted in an error.
const MAX_QUOTED_CHARS: usize = 40;

/// What a text-protocol reply says.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TextReply {
    /// The `Thought:` sections, joined by newlines.
    pub thought: Option<String>,
    /// Every `Action:`, in order: a call, or why it could not be read.
    pub actions: Vec<Result<ParsedCall, TextParseError>>,
    /// The answer of `Finish[...]` or `Final Answer: ...`.
    ///
    /// A reply may hold both actions and a final answer; whether to run the actions
    /// first is the agent loop's choice.
    pub final_answer: Option<String>,
    /// The text from a model-written `Observation:` line to the end. Models sometimes
    /// invent the result of their own action; everything from there on is not read.
    pub ignored_after_observation: Option<String>,
}

/// An `Action:` that could not be read as a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextParseError {
    /// The tool named by the action, if any.
    pub tool: Option<String>,
    /// The 1-based line of the reply where the action is.
    pub line: usize,
    /// What is wrong, for the model.
    pub message: String,
    /// The arguments text, when the problem is in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

impl TextParseError {
    /// The call to hand the registry anyway when the problem is in the arguments, so
    /// that the model gets the usual `INVALID_PARAMS` envelope: the tool with its raw
    /// arguments text. `None` when the action names no tool or has no arguments text
    /// (use [`TextParseError::to_observation`] then).
    pub fn to_call(&self) -> Option<ToolCall> {
        let tool = self.tool.clone()?;
        let args = self.raw_arguments.clone()?;
        Some(ToolCall::new(tool, Value::String(args)))
    }

    /// The text-protocol observation telling the model what to fix:
    /// `Observation (error INVALID_PARAMS): ...`.
    pub fn to_observation(&self) -> String {
        format!(
            "Observation (error INVALID_PARAMS): {self}\nHint: write one action per line as Action: tool_name[{{\"arg\": \"value\"}}] with the arguments as a JSON object"
        )
    }
}

impl fmt::Display for TextParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tool {
            Some(tool) => write!(f, "line {}: action {tool}: {}", self.line, self.message),
            None => write!(f, "line {}: {}", self.line, self.message),
        }
    }
}

impl std::error::Error for TextParseError {}

/// Reads a text-protocol reply: `Thought:`, any number of `Action: tool_name[{...json...}]`,
/// and `Finish[...]` or `Final Answer: ...`.
///
/// Tolerated: keywords in any case, with markdown decoration (`**Action:**`, `- Action:`)
/// or a full-width colon; code fences around the action or the JSON; prose around it
/// (an `Action:` in the middle of a line counts when it is written exactly so and followed
/// by `name[`); `[`, `]` and braces inside JSON strings; several actions; whitespace or
/// newlines between the name and `[`; `Action: tool_name` followed by the JSON (or an
/// `Action Input:` line) on the next lines; `Action: tool_name[]` or no arguments at all;
/// a missing final `]`; Windows line endings. Arguments go through
/// [`super::parse_loose_json`]; when they are not JSON even after repair, the action is
/// a [`TextParseError`] naming the tool and the problem. Never panics.
pub fn parse_text_reply(text: &str) -> TextReply {
    let text = normalize(text);
    let text = text.as_str();
    let mut reply = TextReply::default();
    let mut thoughts: Vec<String> = Vec::new();
    let mut lines = LineCounter::default();
    let mut pos = 0;
    while let Some(m) = next_marker(text, pos) {
        let end = match m.kind {
            Kind::Thought => {
                let end = next_marker(text, m.content).map_or(text.len(), |n| n.start);
                let thought = tidy_block(&text[m.content..end]);
                if !thought.is_empty() {
                    thoughts.push(thought);
                }
                end
            }
            Kind::Action => {
                let (outcome, end) = parse_action(text, &m, lines.line_at(text, m.start));
                match outcome {
                    Outcome::Call(call) => reply.actions.push(Ok(call)),
                    Outcome::Error(e) => reply.actions.push(Err(e)),
                    Outcome::Finish(answer) => reply.final_answer = Some(answer),
                }
                end
            }
            Kind::ActionInput => {
                let end = next_marker(text, m.content).map_or(text.len(), |n| n.start);
                reply.actions.push(Err(TextParseError {
                    tool: None,
                    line: lines.line_at(text, m.start),
                    message: "`Action Input:` without an `Action:` line before it".into(),
                    raw_arguments: Some(text[m.content..end].trim().to_string()),
                }));
                end
            }
            Kind::FinalAnswer => {
                let end = next_observation(text, m.content).unwrap_or(text.len());
                reply.final_answer = Some(tidy_block(&text[m.content..end]));
                end
            }
            Kind::Finish => {
                let (answer, end) = parse_finish(text, m.content);
                reply.final_answer = Some(answer);
                end
            }
            Kind::Observation => {
                reply.ignored_after_observation = Some(text[m.start..].to_string());
                break;
            }
        };
        pos = end.max(m.content);
    }
    if !thoughts.is_empty() {
        reply.thought = Some(thoughts.join("\n"));
    }
    reply
}

/// Windows and old Mac line endings become `\n`; a byte order mark is dropped.
fn normalize(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.to_string()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Thought,
    Action,
    ActionInput,
    FinalAnswer,
    Observation,
    /// `Finish[` at a line start; `content` is the index of the `[`.
    Finish,
}

/// A keyword found in the reply.
#[derive(Debug, Clone, Copy)]
struct Marker {
    kind: Kind,
    /// Where its line (or, in the middle of a line, the keyword) starts.
    start: usize,
    /// Where what follows the keyword starts.
    content: usize,
}

/// Keywords in the order they are tried (longer first where one starts another).
const KEYWORDS: [(&str, Kind); 6] = [
    ("final answer", Kind::FinalAnswer),
    ("thought", Kind::Thought),
    ("action input", Kind::ActionInput),
    ("action", Kind::Action),
    ("observation", Kind::Observation),
    ("finish", Kind::Finish),
];

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Skips spaces and tabs from `i`.
fn skip_blank(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// The keyword marker of the line starting at `line_start`, if it has one.
fn line_marker(text: &str, line_start: usize) -> Option<Marker> {
    let bytes = text.as_bytes();
    let mut i = line_start;
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'*' | b'_' | b'#' | b'>' | b'-') {
        i += 1;
    }
    for (word, kind) in KEYWORDS {
        let Some(candidate) = bytes.get(i..i + word.len()) else {
            continue;
        };
        if !candidate.eq_ignore_ascii_case(word.as_bytes()) {
            continue;
        }
        let mut j = i + word.len();
        if kind == Kind::Finish {
            j = skip_blank(bytes, j);
            if bytes.get(j) == Some(&b'[') {
                return Some(Marker {
                    kind,
                    start: line_start,
                    content: j,
                });
            }
            return None;
        }
        // `Thought 2:`, `**Action**:`, `Action :`
        while j < bytes.len()
            && (matches!(bytes[j], b' ' | b'\t' | b'*' | b'_') || bytes[j].is_ascii_digit())
        {
            j += 1;
        }
        let content = if bytes.get(j) == Some(&b':') {
            j + 1
        } else if text.get(j..).is_some_and(|rest| rest.starts_with('：')) {
            j + '：'.len_utf8()
        } else {
            return None;
        };
        // `**Action:**`
        let mut content = content;
        while content < bytes.len() && matches!(bytes[content], b'*' | b'_') {
            content += 1;
        }
        return Some(Marker {
            kind,
            start: line_start,
            content,
        });
    }
    None
}

/// An exact `Action:` in the middle of `from..to`, followed by `name[`.
fn inline_action(text: &str, from: usize, to: usize) -> Option<Marker> {
    const KEYWORD: &str = "Action:";
    let bytes = text.as_bytes();
    let mut search = from;
    while let Some(rel) = text.get(search..to).and_then(|s| s.find(KEYWORD)) {
        let at = search + rel;
        search = at + KEYWORD.len();
        if at > 0 && bytes[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mut j = skip_blank(bytes, at + KEYWORD.len());
        while j < bytes.len() && bytes[j] == b'`' {
            j += 1;
        }
        let name_start = j;
        while j < to && is_name_byte(bytes[j]) {
            j += 1;
        }
        if j == name_start {
            continue;
        }
        while j < to && matches!(bytes[j], b' ' | b'\t' | b'`') {
            j += 1;
        }
        if bytes.get(j) == Some(&b'[') {
            return Some(Marker {
                kind: Kind::Action,
                start: at,
                content: at + KEYWORD.len(),
            });
        }
    }
    None
}

/// The first marker at or after `from`.
fn next_marker(text: &str, from: usize) -> Option<Marker> {
    let bytes = text.as_bytes();
    let mut line_start = from;
    while line_start <= text.len() {
        let line_end = text
            .get(line_start..)
            .and_then(|s| s.find('\n'))
            .map_or(text.len(), |i| line_start + i);
        let at_line_start = line_start == 0 || bytes.get(line_start - 1) == Some(&b'\n');
        if let Some(m) = line_marker(text, line_start).filter(|_| at_line_start) {
            return Some(m);
        }
        if let Some(m) = inline_action(text, line_start, line_end) {
            return Some(m);
        }
        line_start = line_end + 1;
    }
    None
}

/// The start of the first `Observation:` line at or after `from`.
fn next_observation(text: &str, from: usize) -> Option<usize> {
    let mut pos = from;
    while let Some(m) = next_marker(text, pos) {
        if m.kind == Kind::Observation {
            return Some(m.start);
        }
        pos = m.content;
    }
    None
}

/// True if the line starting at `i` starts a new section, so a scan must stop there.
fn stops_scan(text: &str, i: usize) -> bool {
    line_marker(text, i).is_some()
}

/// Line numbers of increasing offsets, counted incrementally.
#[derive(Debug, Default)]
struct LineCounter {
    offset: usize,
    /// Newlines before `offset`.
    newlines: usize,
}

impl LineCounter {
    /// The 1-based line of `offset`; offsets must not decrease between calls.
    fn line_at(&mut self, text: &str, offset: usize) -> usize {
        let offset = offset.min(text.len());
        if offset >= self.offset {
            self.newlines +=
                memchr::memchr_iter(b'\n', &text.as_bytes()[self.offset..offset]).count();
            self.offset = offset;
        }
        self.newlines + 1
    }
}

/// True if the line starting at `i` is a code fence (```` ``` ```` plus an optional
/// language); returns the index after the line.
fn fence_line(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let j = skip_blank(bytes, i);
    if !text.get(j..).is_some_and(|s| s.starts_with("```")) {
        return None;
    }
    let line_end = text[j..].find('\n').map_or(text.len(), |k| j + k);
    let info = text[j..line_end].trim_start_matches('`').trim();
    info.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-' | b'.'))
        .then_some(line_end)
}

/// Trims a block and drops an unbalanced code fence line at its start or end.
fn tidy_block(block: &str) -> String {
    let mut lines: Vec<&str> = block.trim().lines().collect();
    let is_fence = |l: &str| fence_line(l, 0).is_some();
    if lines.iter().filter(|l| is_fence(l)).count() % 2 == 1 {
        if lines.last().is_some_and(|l| is_fence(l)) {
            lines.pop();
        } else if lines.first().is_some_and(|l| is_fence(l)) {
            lines.remove(0);
        }
    }
    lines.join("\n").trim().to_string()
}

/// Skips blanks, newlines and fence lines from `i`, stopping before (at the newline of)
/// a line that starts a new section.
fn skip_gap(text: &str, mut i: usize) -> usize {
    let bytes = text.as_bytes();
    loop {
        i = skip_blank(bytes, i);
        if bytes.get(i) != Some(&b'\n') || stops_scan(text, i + 1) {
            return i;
        }
        i += 1;
        while let Some(after) = fence_line(text, i) {
            if after >= text.len() || stops_scan(text, after + 1) {
                return after;
            }
            i = after + 1;
        }
    }
}

/// How an `Action:` turned out.
enum Outcome {
    Call(ParsedCall),
    Error(TextParseError),
    Finish(String),
}

/// Reads one action; returns it and where reading stopped.
fn parse_action(text: &str, m: &Marker, line: usize) -> (Outcome, usize) {
    let bytes = text.as_bytes();
    let mut i = skip_gap(text, m.content);
    while i < bytes.len() && matches!(bytes[i], b'`' | b'*') {
        i += 1;
    }
    let name_start = i;
    while i < bytes.len() && is_name_byte(bytes[i]) {
        i += 1;
    }
    let name = &text[name_start..i];
    if name.is_empty() {
        let end = line_end(text, m.content);
        let error = TextParseError {
            tool: None,
            line,
            message: format!(
                "`Action:` is not followed by a tool name{}; write Action: tool_name[{{...json...}}]",
                found(text, name_start)
            ),
            raw_arguments: None,
        };
        return (Outcome::Error(error), end);
    }
    if name.eq_ignore_ascii_case("finish") {
        return finish_action(text, i);
    }

    // What follows the name: `[...]`, `{...}`, the JSON on the next lines, or nothing.
    let mut j = i;
    while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'`' | b'*') {
        j += 1;
    }
    let mut repairs = Vec::new();
    let (args, end) = match bytes.get(j) {
        Some(b'[') => bracket_arguments(text, j, &mut repairs),
        Some(b'{') => object_arguments(text, j),
        None | Some(b'\n') => {
            let k = skip_gap(text, j);
            match bytes.get(k) {
                Some(b'[') => bracket_arguments(text, k, &mut repairs),
                Some(b'{') => object_arguments(text, k),
                Some(b'\n') => match line_marker(text, k + 1) {
                    Some(next) if next.kind == Kind::ActionInput => {
                        action_input(text, next.content)
                    }
                    _ => (String::new(), j),
                },
                _ => (String::new(), j),
            }
        }
        Some(_) => {
            let error = TextParseError {
                tool: Some(name.to_string()),
                line,
                message: format!(
                    "expected `[` and the JSON arguments after the tool name{}",
                    found(text, j)
                ),
                raw_arguments: None,
            };
            return (Outcome::Error(error), line_end(text, j));
        }
    };

    let mut call = ParsedCall::from_arguments_text(name, &args);
    if let Some(e) = call.arguments_error.take() {
        // Positions in the message count from the start of the arguments.
        let ends_with_position = e
            .rsplit_once(" column ")
            .is_some_and(|(_, n)| n.parse::<usize>().is_ok());
        let position = if ends_with_position {
            " of the arguments"
        } else {
            ""
        };
        let error = TextParseError {
            tool: Some(name.to_string()),
            line,
            message: format!("the arguments are not valid JSON: {e}{position}"),
            raw_arguments: call.raw_arguments.take(),
        };
        return (Outcome::Error(error), end);
    }
    repairs.append(&mut call.repairs);
    call.repairs = repairs;
    (Outcome::Call(call), end)
}

/// `, found "..."` quoting what is at `i`, or `` when the text ends there.
fn found(text: &str, i: usize) -> String {
    let rest = text.get(i..).unwrap_or_default();
    let rest = rest.lines().next().unwrap_or_default().trim();
    if rest.is_empty() {
        return String::new();
    }
    let quoted: String = rest.chars().take(MAX_QUOTED_CHARS).collect();
    let more = if rest.chars().count() > MAX_QUOTED_CHARS {
        "..."
    } else {
        ""
    };
    format!(", found {quoted:?}{more}")
}

/// The end of the line holding `i`.
fn line_end(text: &str, i: usize) -> usize {
    let i = i.min(text.len());
    text.get(i..)
        .and_then(|s| s.find('\n'))
        .map_or(text.len(), |k| i + k)
}

/// Scans from `open` (a `[` or `{`) to its matching bracket, across strings; stops at
/// a line that starts a new section. Returns the index of the closer, or where the
/// scan stopped.
fn scan_json(text: &str, open: usize) -> Result<usize, usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' if stops_scan(text, i + 1) => return Err(i),
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'[' | b'{' if !in_string => depth += 1,
            b']' | b'}' if !in_string => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err(text.len())
}

/// `name[ ... ]`: the text inside the brackets and the index after them.
fn bracket_arguments(text: &str, open: usize, repairs: &mut Vec<String>) -> (String, usize) {
    match scan_json(text, open) {
        Ok(close) => (text[open + 1..close].to_string(), close + 1),
        Err(stop) => {
            repairs.push("added missing `]`".to_string());
            (text[open + 1..stop].to_string(), stop)
        }
    }
}

/// `name {...}`: the object and the index after it.
fn object_arguments(text: &str, open: usize) -> (String, usize) {
    match scan_json(text, open) {
        Ok(close) => (text[open..=close].to_string(), close + 1),
        Err(stop) => (text[open..stop].to_string(), stop),
    }
}

/// `Action Input: {...}` (the LangChain form): the object, or the rest of the line.
fn action_input(text: &str, content: usize) -> (String, usize) {
    let i = skip_gap(text, content);
    match text.as_bytes().get(i) {
        Some(b'{') => object_arguments(text, i),
        _ => {
            let end = line_end(text, i);
            (text[i.min(end)..end].to_string(), end)
        }
    }
}

/// `Action: Finish[...]` or `Action: Finish` followed by the answer.
fn finish_action(text: &str, after_name: usize) -> (Outcome, usize) {
    let bytes = text.as_bytes();
    let j = skip_gap(text, after_name);
    if bytes.get(j) == Some(&b'[') {
        let (answer, end) = parse_finish(text, j);
        return (Outcome::Finish(answer), end);
    }
    let end = next_marker(text, after_name).map_or(text.len(), |n| n.start);
    (Outcome::Finish(tidy_block(&text[after_name..end])), end)
}

/// `Finish[answer]`, `open` at the `[`: the answer (a JSON string is decoded) and the
/// index after the `]`. The answer is free text, so only brackets are balanced.
fn parse_finish(text: &str, open: usize) -> (String, usize) {
    // A JSON value in the brackets (`Finish[{"answer": "a ] b"}]`): read as JSON,
    // so that brackets inside its strings do not end it.
    let after = &text[open + 1..];
    let lead = after.len() - after.trim_start().len();
    if after.trim_start().starts_with(['{', '"']) {
        let mut values = serde_json::Deserializer::from_str(&after[lead..]).into_iter::<Value>();
        if let Some(Ok(value)) = values.next() {
            let end = open + 1 + lead + values.byte_offset();
            let rest = &text[end..];
            let close = rest.len() - rest.trim_start().len();
            if rest.trim_start().starts_with(']') {
                let answer = match value {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                return (answer, end + close + 1);
            }
        }
    }
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    let (inner, end) = loop {
        if i >= bytes.len() {
            break (&text[open + 1..], text.len());
        }
        match bytes[i] {
            b'\n' if stops_scan(text, i + 1) => break (&text[open + 1..i], i),
            b'[' => depth += 1,
            b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break (&text[open + 1..i], i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    };
    let inner = inner.trim();
    let answer = match serde_json::from_str::<Value>(inner) {
        Ok(Value::String(s)) => s,
        _ => tidy_block(inner),
    };
    (answer, end)
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
