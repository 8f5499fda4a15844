//! Transcripts: every run is a JSONL file, `<dir>/<run_id>.jsonl`, one event a line
//! (`run`, `turn`, `message`, `envelope`, `usage`, `notice`, `compaction`, `reset`,
//! `hook`, `end`), each with its `time`. A run is resumed from its messages: the last
//! `reset` (the whole history after a compaction) and the messages after it.
//!
//! Each turn starts with a `turn` line (`"turn": 1` for the run's first prompt;
//! older transcripts have none, and a turn starts with the first user message
//! after the run's start or the previous turn's end). A run can be [`fork`]ed
//! before one of its turns: the new run's transcript is the old one's lines up to
//! that turn, its `run` line saying where it came from (`forked_from`).
//!
//! A transcript given a [`TranscriptSink`] hands each line to it as well: a
//! server copies its runs' lines into its store that way, so that every replica
//! lists them ([`info_from_events`] and [`entries_from_events`] read them back).
//!
//! # Security
//! A transcript holds what the model and the tools said; it never holds the API key
//! (the key lives in the provider only).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::AgentError;
use crate::message::{Message, Usage};
use crate::summary::{call_summary, result_summary};

/// Where the lines of transcripts go besides their files.
pub trait TranscriptSink: Send + Sync + std::fmt::Debug {
    /// Line `seq` (from 0, the file's order) of run `run_id`'s transcript, as the
    /// file has it (one JSON object, without the newline). Called on the run's
    /// path: it must not wait.
    fn line(&self, run_id: &str, seq: u64, line: &str);
}

/// The store's copy of a server's runs.
impl TranscriptSink for toolbelt_store::RunEventWriter {
    fn line(&self, run_id: &str, seq: u64, line: &str) {
        self.record(toolbelt_store::RunLine {
            run_id: run_id.to_string(),
            seq,
            event: line.to_string(),
        });
    }
}

/// An open transcript, appended to line by line (each line written whole, so a
/// crash loses at most the line being written).
#[derive(Debug)]
pub struct Transcript {
    path: PathBuf,
    file: File,
    /// The run's id, as the sink is told it.
    run_id: String,
    /// The number of the next line.
    next_seq: u64,
    sink: Option<Arc<dyn TranscriptSink>>,
}

impl Transcript {
    /// Creates `<dir>/<run_id>.jsonl` (and `dir`).
    ///
    /// # Errors
    /// The directory or the file cannot be created.
    pub fn create(dir: &Path, run_id: &str) -> Result<Transcript, AgentError> {
        fn open_new(dir: &Path, path: &Path) -> io::Result<File> {
            fs::create_dir_all(dir)?;
            OpenOptions::new().create_new(true).append(true).open(path)
        }
        let path = dir.join(format!("{run_id}.jsonl"));
        match open_new(dir, &path) {
            Ok(file) => Ok(Transcript {
                path,
                file,
                run_id: run_id.to_string(),
                next_seq: 0,
                sink: None,
            }),
            Err(source) => Err(AgentError::Transcript { path, source }),
        }
    }

    /// Opens an existing transcript to append to it.
    ///
    /// # Errors
    /// It cannot be opened.
    pub fn append(path: &Path) -> Result<Transcript, AgentError> {
        let failed = |source| AgentError::Transcript {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new().append(true).open(path).map_err(failed)?;
        let lines = fs::read(path).map_err(failed)?;
        let next_seq = lines.iter().filter(|b| **b == b'\n').count();
        Ok(Transcript {
            path: path.to_path_buf(),
            file,
            run_id: run_id_of(path),
            next_seq: u64::try_from(next_seq).unwrap_or(u64::MAX),
            sink: None,
        })
    }

    /// The same transcript, handing each line it writes from now on to `sink` too.
    #[must_use]
    pub fn with_sink(mut self, sink: Option<Arc<dyn TranscriptSink>>) -> Transcript {
        self.sink = sink;
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event, with the time added.
    ///
    /// # Errors
    /// The write failed.
    pub fn write(&mut self, event: &Value) -> io::Result<()> {
        let mut line = match event {
            Value::Object(map) => {
                let mut out = Map::with_capacity(map.len() + 1);
                out.insert(
                    "time".into(),
                    Value::String(chrono::Local::now().to_rfc3339()),
                );
                out.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
                serde_json::to_string(&Value::Object(out))?
            }
            other => serde_json::to_string(other)?,
        };
        if let Some(sink) = &self.sink {
            sink.line(&self.run_id, self.next_seq, &line);
        }
        self.next_seq += 1;
        line.push('\n');
        self.file.write_all(line.as_bytes())
    }
}

/// Gives `visit` the events of the transcript at `path`, one JSON value a line, in
/// order; lines that are not JSON (a line cut by a crash) are skipped.
///
/// # Errors
/// The file cannot be read.
fn each_event(path: &Path, visit: impl FnMut(Value)) -> Result<(), AgentError> {
    fn read(path: &Path, mut visit: impl FnMut(Value)) -> io::Result<()> {
        for line in BufReader::new(File::open(path)?).lines() {
            if let Ok(event) = serde_json::from_str::<Value>(&line?) {
                visit(event);
            }
        }
        Ok(())
    }
    read(path, visit).map_err(|source| AgentError::Transcript {
        path: path.to_path_buf(),
        source,
    })
}

/// A transcript read back.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The run's id.
    pub run_id: String,
    /// The conversation to go on from.
    pub messages: Vec<Message>,
    /// Tokens used so far.
    pub usage: Usage,
    /// The turns it has run (the next one is `turns + 1`).
    pub turns: u32,
}

/// Reads the conversation of a transcript. Lines that cannot be read (a line cut by
/// a crash) are skipped.
///
/// # Errors
/// The file cannot be read, or holds no run.
pub fn load(path: &Path) -> Result<Loaded, AgentError> {
    let mut messages = Vec::new();
    let mut usage = Usage::default();
    let mut is_run = false;
    let mut turns = TurnTracker::default();
    each_event(path, |event| {
        turns.see(0, &event);
        match event.get("type").and_then(Value::as_str) {
            Some("run") => is_run = true,
            Some("message") => {
                if let Some(m) = event
                    .get("message")
                    .and_then(|m| serde_json::from_value::<Message>(m.clone()).ok())
                {
                    messages.push(m);
                }
            }
            Some("reset") => {
                if let Some(ms) = event
                    .get("messages")
                    .and_then(|m| serde_json::from_value::<Vec<Message>>(m.clone()).ok())
                {
                    messages = ms;
                }
            }
            Some("usage") => {
                if let Some(u) = event
                    .get("total")
                    .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
                {
                    usage = u;
                }
            }
            _ => {}
        }
    })?;
    if !is_run {
        return Err(AgentError::NotATranscript {
            path: path.to_path_buf(),
        });
    }
    Ok(Loaded {
        run_id: run_id_of(path),
        messages,
        usage,
        turns: turns.count(),
    })
}

/// Where each turn of a transcript starts, from its events in order.
#[derive(Debug, Default)]
struct TurnTracker {
    starts: Vec<TurnStart>,
    /// The line of each start, as `starts`.
    lines: Vec<usize>,
    ends: u32,
    /// The next user message starts a turn unless a `turn` line did.
    expect_prompt: bool,
}

impl TurnTracker {
    /// Takes in `event`, the transcript's line `line` (from 0).
    fn see(&mut self, line: usize, event: &Value) {
        let time = || {
            event
                .get("time")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match event.get("type").and_then(Value::as_str) {
            Some("run") => self.expect_prompt = true,
            Some("end") => {
                self.ends += 1;
                self.expect_prompt = true;
            }
            Some("turn") => {
                let turn = event
                    .get("turn")
                    .and_then(Value::as_u64)
                    .and_then(|t| u32::try_from(t).ok())
                    .unwrap_or_else(|| self.count() + 1);
                self.start(line, turn, time());
            }
            Some("message")
                if self.expect_prompt
                    && event
                        .get("message")
                        .and_then(|m| m.get("role"))
                        .and_then(Value::as_str)
                        == Some("user") =>
            {
                let turn = self.count() + 1;
                self.start(line, turn, time());
            }
            _ => {}
        }
    }

    fn start(&mut self, line: usize, turn: u32, time: String) {
        self.expect_prompt = false;
        let at_ms = chrono::DateTime::parse_from_rfc3339(&time)
            .ok()
            .map(|t| t.timestamp_millis());
        self.starts.push(TurnStart { turn, time, at_ms });
        self.lines.push(line);
    }

    /// The turns started (a turn cut short by a crash counts).
    fn count(&self) -> u32 {
        self.starts.last().map_or(0, |s| s.turn).max(self.ends)
    }

    /// The line where `turn` starts.
    fn line_of(&self, turn: u32) -> Option<usize> {
        self.starts
            .iter()
            .zip(&self.lines)
            .find(|(s, _)| s.turn == turn)
            .map(|(_, l)| *l)
    }
}

/// Where one turn of a run starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnStart {
    /// Its number (1 is the run's first prompt).
    pub turn: u32,
    /// When it started (RFC 3339), as the transcript says.
    pub time: String,
    /// The same in milliseconds since the Unix epoch, when it can be read.
    pub at_ms: Option<i64>,
}

/// The run a run was forked from, and the turn it was forked before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    /// The run forked.
    pub run_id: String,
    /// The turn the fork goes back to: the new run has the turns before it, and
    /// its next turn takes this number.
    pub turn: u32,
}

/// A run's turns, as [`turns`] reads them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Turns {
    /// The run.
    pub run_id: String,
    /// Where each turn started, in order.
    pub starts: Vec<TurnStart>,
    /// The turns run (a turn cut short counts).
    pub count: u32,
    /// The run it was forked from, if it was.
    pub forked_from: Option<ForkedFrom>,
}

impl Turns {
    /// Where turn `turn` started.
    pub fn start(&self, turn: u32) -> Option<&TurnStart> {
        self.starts.iter().find(|s| s.turn == turn)
    }
}

/// A line of a transcript as written (with its newline, which the last line may
/// lack), and what it says when it is JSON.
type Line = (Vec<u8>, Option<Value>);

/// A transcript's lines.
fn lines_of(path: &Path) -> Result<Vec<Line>, AgentError> {
    let bytes = fs::read(path).map_err(|source| AgentError::Transcript {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(bytes
        .split_inclusive(|b| *b == b'\n')
        .map(|line| (line.to_vec(), serde_json::from_slice::<Value>(line).ok()))
        .collect())
}

/// The turns of the transcript at `path`, and where each started.
///
/// # Errors
/// The file cannot be read, or holds no run.
pub fn turns(path: &Path) -> Result<Turns, AgentError> {
    let lines = lines_of(path)?;
    let mut tracker = TurnTracker::default();
    let mut forked_from = None;
    let mut is_run = false;
    for (i, (_, event)) in lines.iter().enumerate() {
        let Some(event) = event else { continue };
        if !is_run && event.get("type").and_then(Value::as_str) == Some("run") {
            is_run = true;
            forked_from = event
                .get("forked_from")
                .and_then(|f| serde_json::from_value::<ForkedFrom>(f.clone()).ok());
        }
        tracker.see(i, event);
    }
    if !is_run {
        return Err(AgentError::NotATranscript {
            path: path.to_path_buf(),
        });
    }
    Ok(Turns {
        run_id: run_id_of(path),
        count: tracker.count(),
        starts: tracker.starts,
        forked_from,
    })
}

/// A run made by [`fork`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Forked {
    /// The new run's id.
    pub run_id: String,
    /// Its transcript.
    pub path: PathBuf,
    /// Where it came from.
    pub from: ForkedFrom,
}

/// Forks the run of the transcript at `path` before its turn `turn`: a new run,
/// beside it, whose transcript is the lines of this one up to that turn (its
/// `run` line with the new id, the time of the fork and `forked_from`), then a
/// notice saying so. The transcript at `path` is left as it is. The new run is
/// resumed like any other; its next turn is number `turn`.
///
/// # Errors
/// The file cannot be read or holds no run, the run has no turn `turn`, or the new
/// transcript cannot be written.
pub fn fork(path: &Path, turn: u32) -> Result<Forked, AgentError> {
    let lines = lines_of(path)?;
    let mut tracker = TurnTracker::default();
    for (i, (_, event)) in lines.iter().enumerate() {
        if let Some(event) = event {
            tracker.see(i, event);
        }
    }
    let from = ForkedFrom {
        run_id: run_id_of(path),
        turn,
    };
    let Some(cut) = tracker.line_of(turn) else {
        return Err(AgentError::NoSuchTurn {
            id: from.run_id,
            turn,
            turns: tracker.count(),
        });
    };
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut run_id = new_run_id();
    while run_id == from.run_id || dir.join(format!("{run_id}.jsonl")).exists() {
        run_id = new_run_id();
    }
    let mut out = Transcript::create(dir, &run_id)?;
    let new_path = out.path.clone();
    let failed = |source: io::Error| AgentError::Transcript {
        path: new_path.clone(),
        source,
    };
    let mut run_seen = false;
    for (raw, event) in &lines[..cut] {
        match event {
            Some(Value::Object(map))
                if !run_seen && map.get("type").and_then(Value::as_str) == Some("run") =>
            {
                run_seen = true;
                let mut run = map.clone();
                run.remove("time");
                run.insert("run_id".into(), Value::String(run_id.clone()));
                run.insert("forked_from".into(), json!(from));
                out.write(&Value::Object(run)).map_err(failed)?;
            }
            _ => {
                out.file.write_all(raw).map_err(failed)?;
                if !raw.ends_with(b"\n") {
                    out.file.write_all(b"\n").map_err(failed)?;
                }
            }
        }
    }
    out.write(&json!({
        "type": "notice",
        "message": format!("forked from run {} before its turn {turn}", from.run_id),
    }))
    .map_err(failed)?;
    Ok(Forked {
        run_id,
        path: new_path,
        from,
    })
}

fn run_id_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One run, as `toolbelt agent --list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// Its id.
    pub id: String,
    /// Its transcript (empty for a run read from its events: [`info_from_events`]).
    pub path: PathBuf,
    /// When it started (RFC 3339).
    pub started: String,
    /// The model.
    pub model: String,
    /// The first prompt, on one line.
    pub prompt: String,
    /// Turns run.
    pub turns: usize,
    /// Model calls made, over all turns.
    pub steps: u64,
    /// How the last turn ended.
    pub outcome: Option<String>,
    /// Tokens used.
    pub usage: Usage,
}

/// The runs in `dir`, oldest first. Files that are not transcripts are skipped.
///
/// # Errors
/// `dir` exists but cannot be read.
pub fn list(dir: &Path) -> io::Result<Vec<RunInfo>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut runs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        if let Some(info) = info_of(&path) {
            runs.push(info);
        }
    }
    runs.sort_by(|a, b| a.started.cmp(&b.started).then(a.id.cmp(&b.id)));
    Ok(runs)
}

fn info_of(path: &Path) -> Option<RunInfo> {
    let file = File::open(path).ok()?;
    let events = BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok());
    let mut info = info_from_events(&run_id_of(path), events)?;
    info.path = path.to_path_buf();
    Some(info)
}

/// Run `run_id` as [`list`] shows it, from the events of its transcript in
/// order (its `path` left empty); `None` when they hold no run.
pub fn info_from_events(run_id: &str, events: impl IntoIterator<Item = Value>) -> Option<RunInfo> {
    let mut info = RunInfo {
        id: run_id.to_string(),
        path: PathBuf::new(),
        started: String::new(),
        model: String::new(),
        prompt: String::new(),
        turns: 0,
        steps: 0,
        outcome: None,
        usage: Usage::default(),
    };
    let mut is_run = false;
    for event in events {
        let text = |key: &str| {
            event
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match event.get("type").and_then(Value::as_str) {
            Some("run") => {
                is_run = true;
                info.started = text("time");
                info.model = text("model");
            }
            Some("message") if info.prompt.is_empty() => {
                if let Some(Message::User { content }) = event
                    .get("message")
                    .and_then(|m| serde_json::from_value::<Message>(m.clone()).ok())
                {
                    info.prompt = content.split_whitespace().collect::<Vec<_>>().join(" ");
                }
            }
            Some("end") => {
                info.turns += 1;
                info.steps += event.get("steps").and_then(Value::as_u64).unwrap_or(0);
                info.outcome = Some(text("outcome"));
                if let Some(u) = event
                    .get("usage")
                    .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
                {
                    info.usage = u;
                }
            }
            _ => {}
        }
    }
    is_run.then_some(info)
}

/// A tool call as a person reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallShown {
    /// The provider's id of the call.
    pub id: String,
    /// The tool as the model named it.
    pub tool: String,
    /// The call in one line (`grep "fn main"`, `Think: "..."`).
    pub summary: String,
    /// The arguments as the model wrote them.
    pub arguments: String,
}

/// One step of a run, as a person reads it: what [`read`] gives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// The run started.
    Run {
        /// When (RFC 3339).
        time: String,
        /// The provider.
        provider: String,
        /// The model.
        model: String,
    },
    /// What the person (or the loop, in the text protocol) said.
    User {
        /// When.
        time: String,
        /// The text.
        text: String,
    },
    /// What the model answered, and the tools it asked for.
    Assistant {
        /// When.
        time: String,
        /// The text.
        text: String,
        /// The calls.
        calls: Vec<CallShown>,
    },
    /// A call's result.
    Result {
        /// When.
        time: String,
        /// The call it answers.
        call_id: String,
        /// The tool.
        tool: String,
        /// `success`, `partial` or `error`.
        status: String,
        /// The result in a few words (`12 matches`, `exit 1`, the error).
        summary: String,
        /// The text the model read.
        text: String,
    },
    /// Something the loop told the model or the person.
    Notice {
        /// When.
        time: String,
        /// What.
        message: String,
    },
    /// Older history was shortened or summarised.
    Compaction {
        /// When.
        time: String,
        /// `tool_results`, `summary` or `dropped`.
        kind: String,
        /// Tokens before.
        tokens_before: u64,
        /// Tokens after.
        tokens_after: u64,
    },
    /// A turn ended.
    End {
        /// When.
        time: String,
        /// How (`final_answer`, `max_steps`, `error`...).
        outcome: String,
        /// The final answer, or what ended the turn.
        message: String,
        /// Model calls made in the turn.
        steps: u64,
        /// Tool calls made in the turn.
        tool_calls: u64,
        /// Tokens used so far.
        usage: Usage,
    },
}

/// The steps of a transcript, in order, as a person reads them: the messages, each
/// call by its summary with its result, notices, compactions, the end of each turn.
/// Lines that cannot be read are skipped.
///
/// # Errors
/// The file cannot be read, or holds no run.
pub fn read(path: &Path) -> Result<Vec<Entry>, AgentError> {
    let mut events = Vec::new();
    each_event(path, |event| events.push(event))?;
    entries_from_events(events).ok_or_else(|| AgentError::NotATranscript {
        path: path.to_path_buf(),
    })
}

/// The steps of a run as [`read`] gives them, from the events of its transcript
/// in order; `None` when they hold no run.
pub fn entries_from_events(events: impl IntoIterator<Item = Value>) -> Option<Vec<Entry>> {
    let entries: Vec<Entry> = events.into_iter().filter_map(|e| entry_of(&e)).collect();
    matches!(entries.first(), Some(Entry::Run { .. })).then_some(entries)
}

fn entry_of(event: &Value) -> Option<Entry> {
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let number = |key: &str| event.get(key).and_then(Value::as_u64).unwrap_or(0);
    let time = text(event, "time");
    Some(match event.get("type").and_then(Value::as_str)? {
        "run" => Entry::Run {
            time,
            provider: text(event, "provider"),
            model: text(event, "model"),
        },
        "message" => match serde_json::from_value::<Message>(event.get("message")?.clone()).ok()? {
            Message::User { content } => Entry::User {
                time,
                text: content,
            },
            Message::Assistant {
                content,
                tool_calls,
            } => Entry::Assistant {
                time,
                text: content,
                calls: tool_calls
                    .into_iter()
                    .map(|c| {
                        let args = serde_json::from_str(&c.arguments).unwrap_or(Value::Null);
                        CallShown {
                            summary: call_summary(&c.name, &args),
                            id: c.id,
                            tool: c.name,
                            arguments: c.arguments,
                        }
                    })
                    .collect(),
            },
            // The results are shown from their envelopes, which say more.
            Message::Tool { .. } => return None,
        },
        "envelope" => {
            let value = event.get("envelope")?;
            let env = serde_json::from_value::<toolbelt_core::Envelope>(value.clone()).ok()?;
            Entry::Result {
                time,
                call_id: text(event, "call_id"),
                tool: value
                    .get("context")
                    .map(|c| text(c, "tool"))
                    .unwrap_or_default(),
                status: text(value, "status"),
                summary: result_summary(&env),
                text: env.text,
            }
        }
        "notice" => Entry::Notice {
            time,
            message: text(event, "message"),
        },
        "compaction" => Entry::Compaction {
            time,
            kind: text(event, "kind"),
            tokens_before: number("tokens_before"),
            tokens_after: number("tokens_after"),
        },
        "end" => Entry::End {
            time,
            outcome: text(event, "outcome"),
            message: text(event, "message"),
            steps: number("steps"),
            tool_calls: number("tool_calls"),
            usage: event
                .get("usage")
                .and_then(|u| serde_json::from_value(u.clone()).ok())
                .unwrap_or_default(),
        },
        _ => return None,
    })
}

/// The transcript of the latest run in `dir`.
///
/// # Errors
/// `dir` cannot be read.
pub fn latest(dir: &Path) -> io::Result<Option<PathBuf>> {
    Ok(list(dir)?.pop().map(|r| r.path))
}

/// The transcript of run `id` in `dir` (a unique prefix of the id will do).
///
/// # Errors
/// No run, or several, match.
pub fn find(dir: &Path, id: &str) -> Result<PathBuf, AgentError> {
    let runs = list(dir).map_err(|source| AgentError::RunsUnreadable {
        dir: dir.to_path_buf(),
        source,
    })?;
    if let Some(run) = runs.iter().find(|r| r.id == id) {
        return Ok(run.path.clone());
    }
    let matching: Vec<_> = runs.iter().filter(|r| r.id.starts_with(id)).collect();
    match matching.as_slice() {
        [one] => Ok(one.path.clone()),
        [] => Err(AgentError::NoSuchRun {
            id: id.to_string(),
            dir: dir.to_path_buf(),
        }),
        many => Err(AgentError::AmbiguousRun {
            id: id.to_string(),
            matches: many.iter().map(|r| r.id.clone()).collect(),
        }),
    }
}

/// A new run id: the time and four random hex digits (`20261124-221503-3f9a`), so
/// that ids sort by time.
pub(crate) fn new_run_id() -> String {
    let now = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{now}-{}", &random[..4])
}
