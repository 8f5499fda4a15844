//! Linters that are not language servers: a command run on one file after it is
//! written, whose output is read by a [`Parser`] into [`Diagnostic`]s.
//!
//! A person configures one per language, e.g.
//!
//! ```toml
//! [lint.python]
//! command = ["ruff", "check", "--output-format=json", "{path}"]
//! parser = "ruff-json"
//! ```
//!
//! and [`run`] runs it on a file:
//!
//! - `{path}` (or `{file}`) in any argument is replaced by the file's absolute
//!   path; a command without either gets the path as its last argument;
//! - the exit code is not trusted to mean failure (ruff exits 1 when it finds
//!   problems, some linters exit 0 with errors): the output is always read. Only
//!   output that cannot be read together with a non-zero exit code, a program
//!   that cannot start, or a timeout is a [`LintError`];
//! - only the problems of the file asked about are returned, at most
//!   [`MAX_PROBLEMS`], from at most [`MAX_OUTPUT_BYTES`] of output per stream.
//!
//! [`parse`] is the reading alone, without running anything:
//!
//! ```
//! use std::path::Path;
//! use toolbelt_diagnostics::lint::{Parser, parse};
//!
//! let parser: Parser = "gcc".parse()?;
//! let out = "/w/a.c:3:5: warning: unused variable 'x' [-Wunused-variable]\n";
//! let found = parse(&parser, out, Path::new("/w/a.c"), "a.c", Path::new("/w"), "gcc")?;
//! assert_eq!(found[0].one_line(), "a.c:3:5 warning -Wunused-variable unused variable 'x'");
//! # Ok::<(), toolbelt_diagnostics::lint::LintError>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use toolbelt_core::diagnostics::Diagnostic;
use toolbelt_core::human::human_bytes;
use toolbelt_exec::ExecError;

pub(crate) mod command;
mod parsers;
mod paths;

use command::{Ended, Invocation};

/// How long a linter may run by default.
pub const DEFAULT_LINT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of a linter's standard output (and, apart, of its standard error) that
/// are read.
pub const MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;
/// Most problems returned for one file.
pub const MAX_PROBLEMS: usize = 1_000;
/// The placeholders replaced by the file's absolute path.
const PATH_PLACEHOLDERS: [&str; 2] = ["{path}", "{file}"];
/// The named groups a `regex:` parser must have.
const REQUIRED_GROUPS: [&str; 2] = ["line", "message"];

/// How a linter's output is read.
#[derive(Debug, Clone)]
pub enum Parser {
    /// `ruff check --output-format=json`: a JSON array of findings.
    RuffJson,
    /// SARIF 2.1.0 (`runs[].results[]`).
    Sarif,
    /// Lines `path:line:col: severity: message [code]` (gcc, clang, mypy,
    /// shellcheck `-f gcc`); the column is optional.
    Gcc,
    /// A pattern applied to each line of the output, with the named groups `line`
    /// and `message`, and optionally `col`, `end_line`, `end_col`, `severity`,
    /// `code` and `file`.
    Regex(regex::Regex),
}

impl Parser {
    /// The parser's name as configured, without a pattern (`regex` for a pattern).
    pub fn kind(&self) -> &'static str {
        match self {
            Parser::RuffJson => "ruff-json",
            Parser::Sarif => "sarif",
            Parser::Gcc => "gcc",
            Parser::Regex(_) => "regex",
        }
    }
}

impl FromStr for Parser {
    type Err = LintError;

    /// Reads `ruff-json`, `sarif`, `gcc` or `regex:<pattern>`.
    ///
    /// # Errors
    /// [`LintError::UnknownParser`] for anything else; for a pattern,
    /// [`LintError::BadPattern`] when it does not compile and
    /// [`LintError::MissingGroup`] when it lacks the group `line` or `message`.
    fn from_str(s: &str) -> Result<Parser, LintError> {
        if let Some(pattern) = s.strip_prefix("regex:") {
            return regex_parser(pattern);
        }
        match s.trim() {
            "ruff-json" => Ok(Parser::RuffJson),
            "sarif" => Ok(Parser::Sarif),
            "gcc" => Ok(Parser::Gcc),
            _ => Err(LintError::UnknownParser {
                given: s.to_string(),
            }),
        }
    }
}

/// A `regex:` parser from its pattern, checked for its required groups.
fn regex_parser(pattern: &str) -> Result<Parser, LintError> {
    let regex = regex::Regex::new(pattern).map_err(|source| LintError::BadPattern {
        pattern: pattern.to_string(),
        source,
    })?;
    for group in REQUIRED_GROUPS {
        if !regex.capture_names().flatten().any(|name| name == group) {
            return Err(LintError::MissingGroup {
                pattern: pattern.to_string(),
                group,
            });
        }
    }
    Ok(Parser::Regex(regex))
}

impl fmt::Display for Parser {
    /// The parser as configured (`regex:<pattern>` for a pattern).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Parser::Regex(regex) => write!(f, "regex:{}", regex.as_str()),
            other => f.write_str(other.kind()),
        }
    }
}

impl<'de> Deserialize<'de> for Parser {
    /// Reads the same strings as [`Parser::from_str`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Parser, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A linter as configured.
#[derive(Debug, Clone)]
pub struct Linter {
    /// Shown as the [`Diagnostic`]'s source: the program's file name (`ruff`).
    pub name: String,
    /// The program and its arguments; `{path}` or `{file}` stands for the file.
    pub argv: Vec<String>,
    /// How its output is read.
    pub parser: Parser,
    /// How long it may run ([`DEFAULT_LINT_TIMEOUT`] by default).
    pub timeout: Duration,
}

impl Linter {
    /// A linter running `argv`, named after its program, with the default timeout.
    ///
    /// # Errors
    /// [`LintError::EmptyCommand`] when `argv` is empty or its program is blank.
    pub fn new(argv: Vec<String>, parser: Parser) -> Result<Linter, LintError> {
        if argv.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(LintError::EmptyCommand);
        }
        Ok(Linter {
            name: command::program_name(&argv),
            argv,
            parser,
            timeout: DEFAULT_LINT_TIMEOUT,
        })
    }
}

/// Why a linter's output could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The output is not JSON.
    #[error("it is not JSON")]
    Json(#[source] serde_json::Error),
    /// The output is JSON of another shape.
    #[error("it is not {expected}")]
    Shape {
        /// What was expected (`a JSON array`).
        expected: &'static str,
    },
    /// The output was longer than what is read.
    #[error("it is over {} and was cut", human_bytes(*max_bytes as u64))]
    TooLarge {
        /// The bound, in bytes.
        max_bytes: usize,
    },
    /// No line of the output has the parser's form.
    #[error("no line of it has the form {form}")]
    NoMatch {
        /// The form (`path:line:col: severity: message`).
        form: String,
    },
}

/// Why a linter could not be configured, run, or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LintError {
    /// The parser's name is none of the known ones.
    #[error(
        "unknown linter parser `{given}`: use \"ruff-json\", \"sarif\", \"gcc\" or \"regex:<pattern>\" (a pattern with the named groups `line` and `message`)"
    )]
    UnknownParser {
        /// What was configured.
        given: String,
    },
    /// A `regex:` parser's pattern does not compile.
    #[error(
        "the linter parser's pattern `{pattern}` is not a valid regular expression; fix it (Rust `regex` syntax)"
    )]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// Why it does not compile.
        #[source]
        source: regex::Error,
    },
    /// A `regex:` parser's pattern lacks a required named group.
    #[error(
        "the linter parser's pattern `{pattern}` has no named group `{group}`: add `(?P<{group}>...)`; `line` and `message` are required"
    )]
    MissingGroup {
        /// The pattern.
        pattern: String,
        /// The missing group.
        group: &'static str,
    },
    /// The command names no program.
    #[error(
        "the linter's command is empty: give the program and its arguments, e.g. [\"ruff\", \"check\", \"--output-format=json\", \"{{path}}\"]"
    )]
    EmptyCommand,
    /// The program is not on `PATH`.
    #[error("`{linter}` not found on PATH: install it, or fix the linter's command")]
    NotFound {
        /// The linter.
        linter: String,
    },
    /// The program exists but cannot be run.
    #[error("`{linter}` cannot be run ({detail}): make it executable, or fix the linter's command")]
    CannotExecute {
        /// The linter.
        linter: String,
        /// The shell's complaint.
        detail: String,
    },
    /// The command could not be started at all (a missing working directory).
    #[error("`{linter}` could not be started")]
    NotStarted {
        /// The linter.
        linter: String,
        /// Why.
        #[source]
        source: ExecError,
    },
    /// The linter ran past its timeout and was killed.
    #[error("`{linter}` timed out after {}; raise its timeout or make it faster", command::seconds(*timeout))]
    Timeout {
        /// The linter.
        linter: String,
        /// Its timeout.
        timeout: Duration,
    },
    /// The linter exited non-zero and its output could not be read.
    #[error("`{linter}` exited {code} and its output could not be read: {detail}")]
    Failed {
        /// The linter.
        linter: String,
        /// Its exit code.
        code: i32,
        /// The first line of its standard error, else of its standard output
        /// (or a word that it printed nothing).
        detail: String,
        /// Why the output could not be read.
        #[source]
        source: OutputError,
    },
    /// The output could not be read as the parser's format.
    #[error("`{linter}`'s output could not be read as {parser}; check the linter's `parser`")]
    Output {
        /// The linter.
        linter: String,
        /// The parser's kind.
        parser: &'static str,
        /// Why.
        #[source]
        source: OutputError,
    },
}

/// Runs `linter` on `file` (absolute), with `cwd` as its working directory, and
/// returns the problems of that file (shown as `shown`), at most [`MAX_PROBLEMS`].
///
/// Its exit code does not decide: its output is read whatever it is. Output that
/// cannot be read (JSON that is not, line-based output with no line of the
/// parser's form) is an error only when the exit code is not 0; with 0 it means
/// no problems (and is logged).
///
/// # Errors
/// [`LintError::NotFound`], [`LintError::CannotExecute`] or
/// [`LintError::NotStarted`] when it cannot start; [`LintError::Timeout`];
/// [`LintError::Failed`] when it exits non-zero and its output cannot be read;
/// [`LintError::Output`] when its JSON output was over [`MAX_OUTPUT_BYTES`]
/// (whatever its exit code).
///
/// # Security
/// Runs a configured program with the file's path as an argument (quoted, never
/// read by a shell), in a scrubbed environment ([`toolbelt_exec::EnvPolicy`]'s
/// default), outside any sandbox; its whole process tree is killed at the timeout.
pub async fn run(
    linter: &Linter,
    file: &Path,
    shown: &str,
    cwd: &Path,
) -> Result<Vec<Diagnostic>, LintError> {
    let ended = command::run(Invocation {
        argv: argv_for(&linter.argv, file),
        cwd: cwd.to_path_buf(),
        timeout: linter.timeout,
        stdin: None,
        max_output_bytes: MAX_OUTPUT_BYTES,
    })
    .await;
    let exit = exited(linter, ended)?;
    let target = parsers::Target {
        file,
        shown,
        cwd,
        source: &linter.name,
    };
    read_exit(linter, &exit, &target)
}

/// What a linter that ended by itself left.
struct Exit {
    code: i32,
    stdout: String,
    stdout_cut: bool,
    stderr: String,
}

/// The output of a linter that ended by itself, or why it did not run.
fn exited(linter: &Linter, ended: Ended) -> Result<Exit, LintError> {
    let name = linter.name.clone();
    match ended {
        Ended::Exited {
            code,
            stdout,
            stdout_cut,
            stderr,
        } => Ok(Exit {
            code,
            stdout,
            stdout_cut,
            stderr,
        }),
        Ended::NotFound => Err(LintError::NotFound { linter: name }),
        Ended::CannotExecute { detail } => Err(LintError::CannotExecute {
            linter: name,
            detail,
        }),
        Ended::NotStarted(source) => Err(LintError::NotStarted {
            linter: name,
            source,
        }),
        Ended::TimedOut => Err(LintError::Timeout {
            linter: name,
            timeout: linter.timeout,
        }),
    }
}

/// The problems of the target in what `linter` printed, judged with its exit
/// code: standard output for JSON parsers, both streams for line-based ones.
fn read_exit(
    linter: &Linter,
    exit: &Exit,
    target: &parsers::Target<'_>,
) -> Result<Vec<Diagnostic>, LintError> {
    let json = matches!(linter.parser, Parser::RuffJson | Parser::Sarif);
    if json && exit.stdout_cut {
        return Err(LintError::Output {
            linter: linter.name.clone(),
            parser: linter.parser.kind(),
            source: OutputError::TooLarge {
                max_bytes: MAX_OUTPUT_BYTES,
            },
        });
    }
    let text = if json {
        Cow::Borrowed(exit.stdout.as_str())
    } else {
        Cow::Owned(format!("{}\n{}", exit.stdout, exit.stderr))
    };
    let unreadable = match parsers::read(&linter.parser, &text, target) {
        Ok(read) if read.recognised > 0 || exit.code == 0 => return Ok(read.diagnostics),
        Ok(_) => OutputError::NoMatch {
            form: parsers::form(&linter.parser),
        },
        Err(e) if exit.code == 0 => {
            tracing::warn!(linter = %linter.name, error = %e, "a linter's output could not be read; it exited 0, so no problems are reported");
            return Ok(Vec::new());
        }
        Err(e) => e,
    };
    Err(LintError::Failed {
        linter: linter.name.clone(),
        code: exit.code,
        detail: command::first_line(&exit.stderr)
            .or_else(|| command::first_line(&exit.stdout))
            .unwrap_or_else(|| "it printed nothing".to_string()),
        source: unreadable,
    })
}

/// The linter's arguments for `file`: `{path}` and `{file}` replaced by its
/// absolute path, or the path appended when neither is there.
fn argv_for(argv: &[String], file: &Path) -> Vec<String> {
    let mut argv = argv.to_vec();
    let path = file.to_string_lossy();
    let pairs = PATH_PLACEHOLDERS.map(|p| (p, path.as_ref()));
    if !command::substitute(&mut argv, &pairs) {
        argv.push(path.into_owned());
    }
    argv
}

/// Reads a linter's `output` with `parser` and returns the problems of `file`
/// (absolute; shown as `shown`; paths in the output are taken relative to
/// `cwd`), with `source` as their source, at most [`MAX_PROBLEMS`]. Besides
/// comparing paths (canonicalised when they differ as written) it runs nothing.
///
/// # Errors
/// [`LintError::Output`] when JSON output (`ruff-json`, `sarif`) is not JSON or
/// not of the expected shape, or when no line of line-based output (`gcc`,
/// `regex:`) has the parser's form while the output has any line at all.
pub fn parse(
    parser: &Parser,
    output: &str,
    file: &Path,
    shown: &str,
    cwd: &Path,
    source: &str,
) -> Result<Vec<Diagnostic>, LintError> {
    let target = parsers::Target {
        file,
        shown,
        cwd,
        source,
    };
    let read = parsers::read(parser, output, &target);
    let read = match read {
        Ok(read) if read.recognised == 0 && output.lines().any(|l| !l.trim().is_empty()) => {
            Err(OutputError::NoMatch {
                form: parsers::form(parser),
            })
        }
        other => other,
    };
    read.map(|r| r.diagnostics).map_err(|e| LintError::Output {
        linter: source.to_string(),
        parser: parser.kind(),
        source: e,
    })
}

#[cfg(test)]
pub(crate) mod tests;
