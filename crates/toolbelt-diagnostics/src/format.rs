//! A formatter run on the staged text of a write, before the file is written.
//!
//! A person configures one per language, e.g.
//!
//! ```toml
//! [format.python]
//! command = ["ruff", "format", "{path}"]
//! scope = "changed-lines"   # the default; or "file"
//! ```
//!
//! [`run`] gives the formatter the text the edit tool computed:
//!
//! - **`{path}`** (or `{file}`) in the command: the text is written to a
//!   temporary file beside the real one, `.<stem>.fmt-<random>.<ext>` (same
//!   directory, so the formatter finds its configuration; same extension, which
//!   ruff and prettier choose the language by), the formatter rewrites it in
//!   place, and it is read back and removed (also on timeout or error). Where the
//!   file's directory does not exist yet (a new file in a new directory), its
//!   nearest existing ancestor is used.
//! - **no `{path}`**: the text goes to the formatter's standard input and its
//!   standard output is the formatted text. **`{name}`** (or `{stdin_path}`) is
//!   replaced by the real file's absolute path, for formatters that need a name
//!   for their input (`["ruff", "format", "--stdin-filename", "{name}", "-"]`,
//!   `["prettier", "--stdin-filepath", "{name}"]`); it may be used with `{path}`
//!   too.
//! - the formatter runs in that directory, in a scrubbed environment, with its
//!   whole process tree killed at its timeout ([`DEFAULT_FORMAT_TIMEOUT`]).
//! - with [`Scope::ChangedLines`] only the formatter's changes to the lines the
//!   edit changed are kept ([`keep_changed_lines`]); with [`Scope::File`] its
//!   whole output is.
//!
//! It never fails: a formatter that cannot start, exits non-zero, times out or
//! prints nothing (for a text that is not blank) leaves the text as it was, with
//! a one-line note naming it.
//!
//! ```
//! use toolbelt_diagnostics::format::keep_changed_lines;
//!
//! let old = "a=1\nb=2\n";
//! let staged = "a=1\nb=3\n";
//! let formatted = "a = 1\nb = 3\n";
//! // Only the edited line takes the formatter's change.
//! assert_eq!(keep_changed_lines(Some(old), staged, formatted), "a=1\nb = 3\n");
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolbelt_core::error_chain;
use toolbelt_core::human::human_bytes;
use toolbelt_exec::ExecError;

use crate::lint::command::{self, Ended, Invocation};

mod merge;
mod temp;

pub use merge::keep_changed_lines;

/// How long a formatter may run by default.
pub const DEFAULT_FORMAT_TIMEOUT: Duration = Duration::from_secs(5);
/// The least bound on a formatter's output, in bytes (twice the staged text
/// when that is more).
pub const MIN_MAX_FORMATTED_BYTES: usize = 8 * 1024 * 1024;
/// Bytes read of a formatter's standard error (for the note of a failure), and
/// of its standard output when it writes a file.
const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// The placeholders of the temporary file's path.
const PATH_PLACEHOLDERS: [&str; 2] = ["{path}", "{file}"];
/// The placeholders of the real file's path.
const NAME_PLACEHOLDERS: [&str; 2] = ["{name}", "{stdin_path}"];

/// Which of the formatter's changes are kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum Scope {
    /// Only its changes to the lines the edit changed (`changed-lines`).
    #[default]
    ChangedLines,
    /// The whole file as it leaves it (`file`).
    File,
}

/// A formatter scope that is neither `changed-lines` nor `file`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown formatter scope `{given}`: use \"changed-lines\" (the default: keep the formatter's changes to the edited lines only) or \"file\" (keep the whole formatted file)"
)]
pub struct UnknownScope {
    /// What was configured.
    pub given: String,
}

impl FromStr for Scope {
    type Err = UnknownScope;

    /// Reads `changed-lines` or `file`.
    ///
    /// # Errors
    /// [`UnknownScope`] for anything else.
    fn from_str(s: &str) -> Result<Scope, UnknownScope> {
        match s.trim() {
            "changed-lines" => Ok(Scope::ChangedLines),
            "file" => Ok(Scope::File),
            _ => Err(UnknownScope {
                given: s.to_string(),
            }),
        }
    }
}

impl TryFrom<String> for Scope {
    type Error = UnknownScope;

    fn try_from(s: String) -> Result<Scope, UnknownScope> {
        s.parse()
    }
}

impl fmt::Display for Scope {
    /// `changed-lines` or `file`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::ChangedLines => "changed-lines",
            Scope::File => "file",
        })
    }
}

/// A formatter as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formatter {
    /// Named in notes: the program's file name (`ruff`).
    pub name: String,
    /// The program and its arguments, with the placeholders of the [module](self).
    pub argv: Vec<String>,
    /// Which of its changes are kept.
    pub scope: Scope,
    /// How long it may run ([`DEFAULT_FORMAT_TIMEOUT`] by default).
    pub timeout: Duration,
}

impl Formatter {
    /// A formatter running `argv`, named after its program, with the default
    /// timeout. An empty `argv` is accepted; [`run`] then notes it.
    pub fn new(argv: Vec<String>, scope: Scope) -> Formatter {
        Formatter {
            name: command::program_name(&argv),
            argv,
            scope,
            timeout: DEFAULT_FORMAT_TIMEOUT,
        }
    }
}

/// The text to write after a formatter ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formatted {
    /// The formatted text, or the staged one when the formatter failed.
    pub text: String,
    /// One line naming the formatter and what went wrong, when something did.
    pub note: Option<String>,
}

/// Why a formatter's output is not used.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("has an empty command (give the program and its arguments)")]
    EmptyCommand,
    #[error("has no existing directory to run in")]
    NoDirectory,
    #[error("not found on PATH (install it, or fix its command)")]
    NotFound,
    #[error("cannot be run ({0})")]
    CannotExecute(String),
    #[error("could not be started ({})", error_chain(.0))]
    NotStarted(ExecError),
    #[error("timed out after {}", command::seconds(*.0))]
    TimedOut(Duration),
    #[error("exited {code}{}", .detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Exited { code: i32, detail: Option<String> },
    #[error("printed nothing")]
    Nothing,
    #[error("printed more than {}", human_bytes(*.0 as u64))]
    TooLarge(usize),
    #[error("wrote text that is not UTF-8")]
    NotUtf8,
    #[error("could not use its temporary file {} ({})", .0.display(), .1)]
    TempFile(PathBuf, std::io::Error),
}

/// Formats `staged` (the new content of `file`, absolute, whose content before
/// the edit was `old`; `None` for a new file).
///
/// Never fails: a formatter that cannot run, exits non-zero, times out, or prints
/// nothing leaves `staged` as it is, with a one-line note naming the formatter
/// (`formatter `ruff` timed out after 5 s; the content was written unformatted`).
///
/// # Security
/// Runs a configured program on a copy of the text (a temporary file of mode
/// 0600 beside `file`, or its standard input), in a scrubbed environment
/// ([`toolbelt_exec::EnvPolicy`]'s default), outside any sandbox; paths are passed
/// as quoted arguments, never read by a shell; its whole process tree is killed
/// at the timeout.
pub async fn run(formatter: &Formatter, file: &Path, old: Option<&str>, staged: &str) -> Formatted {
    match format_text(formatter, file, staged).await {
        Ok(formatted) => Formatted {
            text: match formatter.scope {
                Scope::File => formatted,
                Scope::ChangedLines => keep_changed_lines(old, staged, &formatted),
            },
            note: None,
        },
        Err(failure) => {
            tracing::debug!(formatter = %formatter.name, error = %failure, "formatter failed");
            Formatted {
                text: staged.to_string(),
                note: Some(format!(
                    "formatter `{}` {failure}; the content was written unformatted",
                    formatter.name
                )),
            }
        }
    }
}

/// The formatter's whole output for `staged`.
async fn format_text(formatter: &Formatter, file: &Path, staged: &str) -> Result<String, Failure> {
    if formatter.argv.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(Failure::EmptyCommand);
    }
    let dir = file
        .ancestors()
        .skip(1)
        .find(|d| d.is_dir())
        .ok_or(Failure::NoDirectory)?;
    let max_bytes = staged.len().saturating_mul(2).max(MIN_MAX_FORMATTED_BYTES);
    let formatted = if command::mentions(&formatter.argv, &PATH_PLACEHOLDERS) {
        in_temp_file(formatter, file, dir, staged, max_bytes).await?
    } else {
        through_stdio(formatter, file, dir, staged, max_bytes).await?
    };
    if formatted.is_empty() && !staged.trim().is_empty() {
        return Err(Failure::Nothing);
    }
    Ok(formatted)
}

/// Writes `staged` to a temporary file beside `file`, runs the formatter on it,
/// and reads it back; the file is removed in every case.
async fn in_temp_file(
    formatter: &Formatter,
    file: &Path,
    dir: &Path,
    staged: &str,
    max_bytes: usize,
) -> Result<String, Failure> {
    let temp = temp::TempFile::create(dir, file, staged)
        .await
        .map_err(|(path, e)| Failure::TempFile(path, e))?;
    let temp_path = temp.path().to_string_lossy().into_owned();
    let real_path = file.to_string_lossy();
    let argv = filled(&formatter.argv, &temp_path, &real_path);
    let ended = command::run(Invocation {
        argv,
        cwd: dir.to_path_buf(),
        timeout: formatter.timeout,
        stdin: None,
        max_output_bytes: MAX_MESSAGE_BYTES,
    })
    .await;
    succeeded(ended, formatter.timeout)?;
    let bytes = temp
        .read(max_bytes)
        .await
        .map_err(|(path, e)| Failure::TempFile(path, e))?
        .ok_or(Failure::TooLarge(max_bytes))?;
    String::from_utf8(bytes).map_err(|_| Failure::NotUtf8)
}

/// Gives `staged` on the formatter's standard input and takes its standard output.
async fn through_stdio(
    formatter: &Formatter,
    file: &Path,
    dir: &Path,
    staged: &str,
    max_bytes: usize,
) -> Result<String, Failure> {
    let real_path = file.to_string_lossy();
    let ended = command::run(Invocation {
        argv: filled(&formatter.argv, &real_path, &real_path),
        cwd: dir.to_path_buf(),
        timeout: formatter.timeout,
        stdin: Some(staged.as_bytes().to_vec()),
        max_output_bytes: max_bytes,
    })
    .await;
    let (stdout, cut) = succeeded(ended, formatter.timeout)?;
    if cut {
        return Err(Failure::TooLarge(max_bytes));
    }
    Ok(stdout)
}

/// `argv` with `{path}`/`{file}` replaced by `path` and `{name}`/`{stdin_path}`
/// by `name`.
fn filled(argv: &[String], path: &str, name: &str) -> Vec<String> {
    let mut argv = argv.to_vec();
    let pairs = [
        (PATH_PLACEHOLDERS[0], path),
        (PATH_PLACEHOLDERS[1], path),
        (NAME_PLACEHOLDERS[0], name),
        (NAME_PLACEHOLDERS[1], name),
    ];
    command::substitute(&mut argv, &pairs);
    argv
}

/// The standard output of a formatter that exited 0 (and whether it was cut), or
/// why it did not.
fn succeeded(ended: Ended, timeout: Duration) -> Result<(String, bool), Failure> {
    match ended {
        Ended::Exited {
            code: 0,
            stdout,
            stdout_cut,
            ..
        } => Ok((stdout, stdout_cut)),
        Ended::Exited { code, stderr, .. } => Err(Failure::Exited {
            code,
            detail: command::first_line(&stderr),
        }),
        Ended::NotFound => Err(Failure::NotFound),
        Ended::CannotExecute { detail } => Err(Failure::CannotExecute(detail)),
        Ended::NotStarted(e) => Err(Failure::NotStarted(e)),
        Ended::TimedOut => Err(Failure::TimedOut(timeout)),
    }
}

#[cfg(test)]
mod tests;
