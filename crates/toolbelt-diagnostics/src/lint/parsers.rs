//! Reading linters' output: ruff's JSON, SARIF 2.1.0, gcc-style lines and
//! configured patterns, into the problems of one file.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::diagnostics::{Diagnostic, Position, Severity};

use super::paths::{FileMatcher, uri_path};
use super::{MAX_PROBLEMS, OutputError, Parser};

/// The code given to ruff's syntax errors when it gives none.
const RUFF_SYNTAX_CODE: &str = "invalid-syntax";
/// The form of a gcc-style line, as messages name it.
const GCC_FORM: &str = "`path:line:col: severity: message`";
/// A gcc-style line: `path:line[:col]: severity: message`.
const GCC_PATTERN: &str = r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<severity>fatal error|error|warning|note|remark|info|hint|help)\s*:\s?(?P<message>.*)$";
/// A trailing `[code]` of a gcc-style message (`[-Wunused-variable]`, `[SC2086]`).
const CODE_SUFFIX_PATTERN: &str = r"^(?P<message>.*?)\s*\[(?P<code>[^\[\]\s]+)\]$";
/// Shown for a problem reported without a message.
const NO_MESSAGE: &str = "(no message)";

static GCC: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(GCC_PATTERN).ok());
static CODE_SUFFIX: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(CODE_SUFFIX_PATTERN).ok());

/// The file whose problems are wanted, and how they are labelled.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The file, absolute.
    pub(crate) file: &'a Path,
    /// Its path as shown to the model.
    pub(crate) shown: &'a str,
    /// Relative paths in the output are relative to it.
    pub(crate) cwd: &'a Path,
    /// The source of the problems (the linter's name).
    pub(crate) source: &'a str,
}

/// What was read of an output.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// The problems of the target file, at most [`MAX_PROBLEMS`].
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// Problems recognised in the output, of any file (for JSON: 1 when it was read).
    pub(crate) recognised: usize,
}

/// How the parser's lines look, for a message saying none did.
pub(crate) fn form(parser: &Parser) -> String {
    match parser {
        Parser::Regex(regex) => format!("of the pattern `{}`", regex.as_str()),
        Parser::Gcc => GCC_FORM.to_string(),
        Parser::RuffJson | Parser::Sarif => "of the parser".to_string(),
    }
}

/// Reads `text` with `parser` for `target`'s problems.
///
/// # Errors
/// JSON output that is not JSON or not of the expected shape.
pub(crate) fn read(parser: &Parser, text: &str, target: &Target<'_>) -> Result<Read, OutputError> {
    let mut found = Collector::new(target);
    match parser {
        Parser::RuffJson => read_ruff(text, &mut found)?,
        Parser::Sarif => read_sarif(text, &mut found)?,
        Parser::Gcc => {
            if let Some(gcc) = GCC.as_ref() {
                read_lines(gcc, text, &mut found, gcc_problem);
            }
        }
        Parser::Regex(regex) => read_lines(regex, text, &mut found, pattern_problem),
    }
    Ok(found.finish())
}

/// One problem as read, before it becomes a [`Diagnostic`].
#[derive(Debug)]
struct Found {
    /// Line and column of its start (0 is read as 1).
    start: (u32, u32),
    /// Line and column of its end (none: its start).
    end: Option<(u32, u32)>,
    severity: Severity,
    code: Option<String>,
    message: String,
}

/// Gathers the problems of the target file.
struct Collector<'a> {
    target: &'a Target<'a>,
    matcher: FileMatcher,
    read: Read,
}

impl<'a> Collector<'a> {
    fn new(target: &'a Target<'a>) -> Collector<'a> {
        Collector {
            target,
            matcher: FileMatcher::new(target.file, target.cwd),
            read: Read::default(),
        }
    }

    /// True once [`MAX_PROBLEMS`] are kept: the rest of the output is not read.
    fn full(&self) -> bool {
        self.read.diagnostics.len() >= MAX_PROBLEMS
    }

    /// Counts a problem of some file without keeping it.
    fn recognise(&mut self) {
        self.read.recognised += 1;
    }

    /// Keeps a problem of the target file.
    fn keep(&mut self, found: Found) {
        if self.full() {
            return;
        }
        let start = (found.start.0.max(1), found.start.1.max(1));
        let end = found
            .end
            .map(|(line, col)| (line.max(1), col.max(1)))
            .filter(|&end| end >= start)
            .unwrap_or(start);
        let message = found.message.trim();
        self.read.diagnostics.push(Diagnostic {
            path: self.target.shown.to_string(),
            line: start.0,
            col: start.1,
            end: Position {
                line: end.0,
                col: end.1,
            },
            severity: found.severity,
            code: found.code.filter(|c| !c.trim().is_empty()),
            source: self.target.source.to_string(),
            message: if message.is_empty() {
                NO_MESSAGE.to_string()
            } else {
                message.to_string()
            },
            new: false,
        });
    }

    fn finish(self) -> Read {
        self.read
    }
}

/// One finding of `ruff check --output-format=json` (fields not read are left out).
#[derive(Debug, Deserialize)]
struct RuffFinding {
    code: Option<String>,
    #[serde(default)]
    message: String,
    location: Option<RuffLocation>,
    end_location: Option<RuffLocation>,
    filename: Option<String>,
}

/// A place in ruff's JSON: 1-based row and column (in characters).
#[derive(Debug, Deserialize)]
struct RuffLocation {
    row: u32,
    column: u32,
}

/// Reads ruff's JSON array of findings.
fn read_ruff(text: &str, found: &mut Collector<'_>) -> Result<(), OutputError> {
    let findings: Vec<RuffFinding> = match serde_json::from_str(text) {
        Ok(findings) => findings,
        Err(e) if e.is_data() => {
            return Err(OutputError::Shape {
                expected: "a JSON array of ruff findings",
            });
        }
        Err(e) => return Err(OutputError::Json(e)),
    };
    found.recognise();
    for finding in findings {
        if found.full() {
            break;
        }
        if let Some(name) = &finding.filename
            && !found.matcher.is_file(name)
        {
            continue;
        }
        let code = finding.code.unwrap_or_else(|| RUFF_SYNTAX_CODE.to_string());
        found.keep(Found {
            start: finding.location.map_or((1, 1), |l| (l.row, l.column)),
            end: finding.end_location.map(|l| (l.row, l.column)),
            severity: ruff_severity(&code),
            code: Some(code),
            message: finding.message,
        });
    }
    Ok(())
}

/// The severity of a ruff finding by its code. Ruff gives every finding the same
/// severity (its JSON's `severity` is `error` for all of them in ruff 0.17), so
/// the code decides: syntax errors (code `null` in some versions, given
/// `invalid-syntax` here; `invalid-syntax` in ruff 0.17; `E999` in old ones),
/// every `E9` code (syntax and io errors) and every `F82` code (undefined names:
/// `F821`, `F822`, `F823`) are [`Severity::Error`]; every other rule is a
/// [`Severity::Warning`].
fn ruff_severity(code: &str) -> Severity {
    if code == RUFF_SYNTAX_CODE || code.starts_with("E9") || code.starts_with("F82") {
        Severity::Error
    } else {
        Severity::Warning
    }
}

/// Reads a SARIF 2.1.0 log: every result of every run.
fn read_sarif(text: &str, found: &mut Collector<'_>) -> Result<(), OutputError> {
    let log: Value = serde_json::from_str(text).map_err(OutputError::Json)?;
    let Some(runs) = log.get("runs").and_then(Value::as_array) else {
        return Err(OutputError::Shape {
            expected: "a SARIF log (an object with `runs`)",
        });
    };
    found.recognise();
    for run in runs {
        let results = run.get("results").and_then(Value::as_array);
        for result in results.into_iter().flatten() {
            if found.full() {
                return Ok(());
            }
            if let Some(problem) = sarif_result(run, result, found) {
                found.keep(problem);
            }
        }
    }
    Ok(())
}

/// One SARIF result, when it is a problem of the target file.
///
/// Missing columns are read as 1; a missing end line is the start line, and a
/// missing end column is the start column on the start line, else 1.
fn sarif_result(run: &Value, result: &Value, found: &mut Collector<'_>) -> Option<Found> {
    let kind = result.get("kind").and_then(Value::as_str);
    if matches!(kind, Some("pass" | "notApplicable")) {
        return None;
    }
    let physical = result.get("locations")?.get(0)?.get("physicalLocation")?;
    let artifact = physical.get("artifactLocation")?;
    let uri = artifact.get("uri")?.as_str()?;
    let base = artifact
        .get("uriBaseId")
        .and_then(Value::as_str)
        .and_then(|id| base_uri(run, id));
    if !found.matcher.is_file_uri(uri, base.as_deref()) {
        return None;
    }
    let region = physical.get("region");
    let at = |key: &str| region.and_then(|r| r.get(key)).and_then(as_u32);
    let start = (at("startLine").unwrap_or(1), at("startColumn").unwrap_or(1));
    let end_line = at("endLine").unwrap_or(start.0);
    let end_col = at("endColumn").unwrap_or(if end_line == start.0 { start.1 } else { 1 });
    Some(Found {
        start,
        end: Some((end_line, end_col)),
        severity: sarif_level(result.get("level").and_then(Value::as_str)),
        code: result
            .get("ruleId")
            .or_else(|| result.get("rule").and_then(|r| r.get("id")))
            .and_then(Value::as_str)
            .map(str::to_string),
        message: sarif_message(result),
    })
}

/// The directory a run's `originalUriBaseIds` gives for `id`.
fn base_uri(run: &Value, id: &str) -> Option<PathBuf> {
    let uri = run
        .get("originalUriBaseIds")?
        .get(id)?
        .get("uri")?
        .as_str()?;
    Some(uri_path(uri))
}

/// SARIF's `level`: `error`, `warning` (also when absent, SARIF's default),
/// `note` (info) or `none` (hint).
fn sarif_level(level: Option<&str>) -> Severity {
    match level {
        Some("error") => Severity::Error,
        Some("note") => Severity::Info,
        Some("none") => Severity::Hint,
        _ => Severity::Warning,
    }
}

/// A SARIF result's `message.text` (or `markdown`).
fn sarif_message(result: &Value) -> String {
    let message = result.get("message");
    ["text", "markdown"]
        .into_iter()
        .find_map(|key| message.and_then(|m| m.get(key)).and_then(Value::as_str))
        .unwrap_or_default()
        .to_string()
}

/// A JSON number as a `u32` (saturating).
fn as_u32(value: &Value) -> Option<u32> {
    value.as_u64().map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// Reads the lines of `text` that `regex` matches, each through `problem`.
fn read_lines(
    regex: &Regex,
    text: &str,
    found: &mut Collector<'_>,
    problem: fn(&Captures<'_>) -> Option<Found>,
) {
    for line in text.lines() {
        if found.full() {
            return;
        }
        let Some(caps) = regex.captures(line.trim_end_matches('\r')) else {
            continue;
        };
        let Some(problem) = problem(&caps) else {
            continue;
        };
        found.recognise();
        let other_file = caps
            .name("file")
            .is_some_and(|file| !found.matcher.is_file(file.as_str().trim()));
        if !other_file {
            found.keep(problem);
        }
    }
}

/// A gcc-style line's problem; a trailing `[code]` of its message is its code.
fn gcc_problem(caps: &Captures<'_>) -> Option<Found> {
    let line = number(caps, "line")?;
    let col = number(caps, "col").unwrap_or(1);
    let text = caps.name("message").map_or("", |m| m.as_str());
    let (message, code) = match CODE_SUFFIX.as_ref().and_then(|re| re.captures(text)) {
        Some(split) => (
            split.name("message").map_or(text, |m| m.as_str()),
            split.name("code").map(|c| c.as_str().to_string()),
        ),
        None => (text, None),
    };
    Some(Found {
        start: (line, col),
        end: None,
        severity: severity_word(caps.name("severity").map_or("", |m| m.as_str()))
            .unwrap_or(Severity::Warning),
        code,
        message: message.to_string(),
    })
}

/// A configured pattern's problem. A missing column is 1, a missing end line the
/// start line, a missing end column the start column on the start line (else 1),
/// a missing or unknown severity [`Severity::Warning`].
fn pattern_problem(caps: &Captures<'_>) -> Option<Found> {
    let line = number(caps, "line")?;
    let message = caps.name("message")?.as_str();
    let col = number(caps, "col").unwrap_or(1);
    let end_line = number(caps, "end_line").unwrap_or(line);
    let end_col = number(caps, "end_col").unwrap_or(if end_line == line { col } else { 1 });
    Some(Found {
        start: (line, col),
        end: Some((end_line, end_col)),
        severity: caps
            .name("severity")
            .and_then(|s| severity_word(s.as_str()))
            .unwrap_or(Severity::Warning),
        code: caps.name("code").map(|c| c.as_str().trim().to_string()),
        message: message.to_string(),
    })
}

/// A group's number, when it took part and is one.
fn number(caps: &Captures<'_>, group: &str) -> Option<u32> {
    caps.name(group)?.as_str().trim().parse().ok()
}

/// A severity as linters write it: the core's words (`error`, `warning`, `info`,
/// `note`, `hint`, ...), `fatal error`, `remark`, `help`, `style`, `suggestion`,
/// and the letters `E`, `F`, `W`, `I`, `N`, `H`.
fn severity_word(word: &str) -> Option<Severity> {
    let word = word.trim().to_ascii_lowercase();
    Severity::parse(&word).or(match word.as_str() {
        "fatal error" | "e" | "f" => Some(Severity::Error),
        "w" => Some(Severity::Warning),
        "remark" | "i" | "n" => Some(Severity::Info),
        "help" | "style" | "suggestion" | "h" => Some(Severity::Hint),
        _ => None,
    })
}

#[cfg(test)]
#[path = "parsers_tests.rs"]
mod tests;
