//! What the write tools ask around a write so that the model sees what its edit
//! broke: a formatter and a syntax check on the staged text before the write, the
//! problems the file has after it (new, fixed, already there) once written, and the
//! same for files a shell command changed.
//!
//! The tools know nothing of how problems are found: an [`AfterWrite`] (the
//! binary's, over tree-sitter, linters and language servers) is held by the
//! registry and reached through [`ToolContext::after_write`](crate::ToolContext::after_write).

use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A boxed future that may move between threads.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// How bad a problem is, worst first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The code does not parse, build or type-check.
    Error,
    /// Likely wrong.
    Warning,
    /// Worth knowing.
    Info,
    /// A suggestion.
    Hint,
}

impl Severity {
    /// The lower-case name (`error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }

    /// Reads `error`, `warning`, `info` or `hint` (also `information`, `note`).
    pub fn parse(s: &str) -> Option<Severity> {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" | "fatal" => Some(Severity::Error),
            "warning" | "warn" => Some(Severity::Warning),
            "info" | "information" | "note" => Some(Severity::Info),
            "hint" => Some(Severity::Hint),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A place in a file: 1-based line and column (columns count characters).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct Position {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, in characters.
    pub col: u32,
}

/// One problem in a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// The file, as shown to the model (relative to the working directory beneath it).
    pub path: String,
    /// Line of its start, from 1.
    pub line: u32,
    /// Column of its start, from 1.
    pub col: u32,
    /// Where it ends.
    pub end: Position,
    /// error, warning, info or hint.
    pub severity: Severity,
    /// The checker's code for it (`invalid-syntax`, `reportReturnType`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What found it: `syntax`, a linter's or a language server's name.
    pub source: String,
    /// What is wrong.
    pub message: String,
    /// True when the change being reported brought it.
    #[serde(default)]
    pub new: bool,
}

impl Diagnostic {
    /// `path:line:col severity code message` on one line.
    pub fn one_line(&self) -> String {
        let code = self
            .code
            .as_deref()
            .map(|c| format!(" {c}"))
            .unwrap_or_default();
        let message = self.message.lines().next().unwrap_or_default();
        format!(
            "{}:{}:{} {}{code} {message}",
            self.path, self.line, self.col, self.severity
        )
    }
}

/// The counts and notes of a check, beside its list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiagnosticsSummary {
    /// Problems the change brought.
    pub new: usize,
    /// Problems the change removed.
    pub fixed: usize,
    /// Problems that were there before and still are (a count only).
    pub already_there: usize,
    /// Checkers that had no answer for this content in time (`basedpyright still indexing (2.4 s)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// One-line notes: a checker missing, a formatter that failed, a server turned off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The `read_output` id of the full list when more were found than are shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_id: Option<String>,
}

/// What the checks found after a change, counted against before it: the part of a
/// write tool's data (flattened into it) and the block added to its text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiagnosticsReport {
    /// The problems shown: the new ones first, up to the limits per file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// How many are new, fixed and already there; what is pending; notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics_summary: Option<DiagnosticsSummary>,
    /// The block added to the tool's text (empty: nothing to say).
    #[serde(skip)]
    #[schemars(skip)]
    pub text: String,
}

impl DiagnosticsReport {
    /// True when there is nothing to tell the model.
    pub fn is_quiet(&self) -> bool {
        self.text.is_empty()
    }

    /// Appends the block to a tool's text, separated by a blank line.
    pub fn append_to(&self, text: &mut String) {
        if self.is_quiet() {
            return;
        }
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&self.text);
    }

    /// Adds a one-line note (to the summary and the text).
    pub fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(&format!("Note: {note}\n"));
        self.diagnostics_summary
            .get_or_insert_with(DiagnosticsSummary::default)
            .notes
            .push(note);
    }

    /// Adds `other`'s problems, counts, notes and text to this report's (the
    /// files of one call).
    pub fn merge(&mut self, other: DiagnosticsReport) {
        self.diagnostics.extend(other.diagnostics);
        if let Some(theirs) = other.diagnostics_summary {
            let ours = self
                .diagnostics_summary
                .get_or_insert_with(DiagnosticsSummary::default);
            ours.new += theirs.new;
            ours.fixed += theirs.fixed;
            ours.already_there += theirs.already_there;
            ours.pending.extend(theirs.pending);
            ours.notes.extend(theirs.notes);
            ours.output_id = ours.output_id.take().or(theirs.output_id);
        }
        if !other.text.is_empty() {
            if !self.text.is_empty() && !self.text.ends_with('\n') {
                self.text.push('\n');
            }
            self.text.push_str(&other.text);
        }
    }
}

/// The staged content of a write, after the formatter and the syntax check.
#[derive(Debug, Clone, Default)]
pub struct Staged {
    /// The text to write (formatted where a formatter ran and kept its changes).
    pub text: String,
    /// Set when the write must not happen (`reject = "syntax"`): the message shown
    /// to the model, with the would-be lines, the original ones and the positions.
    pub rejected: Option<Rejection>,
    /// One-line notes for the result (a formatter that failed or timed out).
    pub notes: Vec<String>,
}

/// Why a staged write is refused.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// What the model reads.
    pub message: String,
    /// The new syntax errors.
    pub diagnostics: Vec<Diagnostic>,
}

/// A write about to happen.
#[derive(Debug, Clone, Copy)]
pub struct StageRequest<'a> {
    /// The file's absolute path.
    pub file: &'a Path,
    /// The path as shown to the model.
    pub shown: &'a str,
    /// The content before (None: a new file).
    pub old: Option<&'a str>,
    /// The content the tool computed.
    pub new: &'a str,
}

/// A write that happened.
#[derive(Debug, Clone, Copy)]
pub struct Written<'a> {
    /// The file's absolute path.
    pub file: &'a Path,
    /// The path as shown to the model.
    pub shown: &'a str,
    /// The content before (None: a new file).
    pub old: Option<&'a str>,
    /// The content written.
    pub new: &'a str,
}

/// A set of files to check: the working directory (for display) and the files.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    /// Paths are shown relative to it when beneath it.
    pub cwd: PathBuf,
    /// The files, absolute.
    pub files: Vec<PathBuf>,
}

/// The post-edit pipeline, as the write tools and the registry see it.
pub trait AfterWrite: Send + Sync {
    /// Before a write: runs the formatter on the staged text and checks its syntax.
    /// Never fails: a formatter that cannot run leaves the text as it was, with a note.
    fn stage<'a>(&'a self, request: StageRequest<'a>) -> BoxFuture<'a, Staged>;

    /// After a write: the file's problems now, compared with before. Bounded by the
    /// configured budget; `None` when diagnostics after edits are off.
    fn collect<'a>(&'a self, written: Written<'a>) -> BoxFuture<'a, Option<DiagnosticsReport>>;

    /// Whether files a shell command changed are checked ([`AfterWrite::changed`]).
    fn after_bash(&self) -> bool;

    /// Files changed by a call that did not go through the write tools (a shell
    /// command): their problems now, counted against the last check of each file
    /// where there was one (else all reported, said so).
    fn changed(&self, request: CheckRequest) -> BoxFuture<'_, Option<DiagnosticsReport>>;

    /// On demand (the `diagnostics` tool): every problem of the files, all counted
    /// as there already.
    fn check(&self, request: CheckRequest) -> BoxFuture<'_, DiagnosticsReport>;
}

impl fmt::Debug for dyn AfterWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AfterWrite")
    }
}
