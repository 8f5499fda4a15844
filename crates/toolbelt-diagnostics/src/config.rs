//! The configuration people write: `[diagnostics]` (what runs when, limits),
//! `[format.<lang>]`, `[lint.<lang>]` and `[lsp.<lang>]`, read from `toolbelt.toml`
//! and checked before anything runs.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toolbelt_core::Severity;

use crate::syntax::Lang;

/// Default wall-clock budget of the checks after one write.
pub const DEFAULT_BUDGET_MS: u64 = 3_000;
/// Default most problems shown per file.
pub const DEFAULT_MAX_PER_FILE: usize = 20;
/// Default most other files whose problems are shown.
pub const DEFAULT_OTHER_FILES: usize = 5;
/// Default time a formatter gets.
pub const DEFAULT_FORMAT_TIMEOUT_MS: u64 = 5_000;
/// Default time a linter gets (within the budget).
pub const DEFAULT_LINT_TIMEOUT_MS: u64 = 10_000;
/// Default time a language server gets to answer `initialize`.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 60_000;

/// `[diagnostics]`: what runs when, and how much is shown.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Check the files `write_file`, `edit_file`, `multi_edit` and `apply_patch`
    /// write (default true).
    pub after_edit: bool,
    /// Check the files a shell command changed (default false; needs checkpoints).
    pub after_bash: bool,
    /// The least severity reported: `error` (default), `warning`, `info` or `hint`.
    pub severity: SeverityFloor,
    /// Wall-clock budget of the checks after one write, in ms (default 3000).
    pub budget_ms: u64,
    /// Most problems shown per file (default 20).
    pub max_per_file: usize,
    /// Most other files shown (default 5).
    pub other_files: usize,
    /// The in-process syntax check (default true).
    pub syntax_check: bool,
    /// `none` (default) or `syntax`: refuse a write that adds a syntax error.
    pub reject: Reject,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            after_edit: true,
            after_bash: false,
            severity: SeverityFloor(Severity::Error),
            budget_ms: DEFAULT_BUDGET_MS,
            max_per_file: DEFAULT_MAX_PER_FILE,
            other_files: DEFAULT_OTHER_FILES,
            syntax_check: true,
            reject: Reject::None,
        }
    }
}

impl Settings {
    /// The budget as a duration.
    pub fn budget(&self) -> Duration {
        Duration::from_millis(self.budget_ms)
    }
}

/// The least severity reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeverityFloor(pub Severity);

impl<'de> Deserialize<'de> for SeverityFloor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Severity::parse(&s).map(SeverityFloor).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown severity `{s}`: expected error, warning, info or hint"
            ))
        })
    }
}

/// Whether a write that adds a syntax error is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reject {
    /// Written, and the error reported.
    #[default]
    None,
    /// Refused with the file unchanged.
    Syntax,
}

/// `[format.<lang>]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FormatSpec {
    /// The formatter, in exec form: `{path}` is a staged copy of the file, formatted
    /// in place; without it the text goes on stdin and comes back on stdout.
    pub command: Vec<String>,
    /// `changed-lines` (default: only the formatter's changes on the edited lines
    /// are kept) or `file`.
    #[serde(default)]
    pub scope: Option<String>,
    /// The extensions it formats (default: the language's own).
    #[serde(default)]
    pub extensions: Option<Vec<String>>,
    /// Time it gets, in ms (default 5000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `[lint.<lang>]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LintSpec {
    /// The linter, in exec form, `{path}` standing for the file.
    pub command: Vec<String>,
    /// How its output is read: `ruff-json`, `sarif`, `gcc` or `regex:<pattern>`.
    pub parser: String,
    /// The extensions it checks (default: the language's own).
    #[serde(default)]
    pub extensions: Option<Vec<String>>,
    /// Time it gets, in ms (default 10000, and never past the budget after a write).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `[lsp.<lang>]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LspSpec {
    /// The server, in exec form (speaking LSP on stdio).
    pub command: Vec<String>,
    /// The extensions it serves (default: the language's own).
    #[serde(default)]
    pub extensions: Option<Vec<String>>,
    /// Files that mark a project's root (`pyproject.toml`, `Cargo.toml`, `.git`).
    #[serde(default)]
    pub root_markers: Vec<String>,
    /// Time it gets to answer `initialize`, in ms (default 60000).
    #[serde(default)]
    pub startup_timeout_ms: Option<u64>,
    /// Sent as `initializationOptions`.
    #[serde(default)]
    pub initialization_options: Option<serde_json::Value>,
    /// What to tell a person whose server is missing (`pip install basedpyright`).
    #[serde(default)]
    pub install: Option<String>,
}

/// Everything the post-edit pipeline is configured by.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// `[diagnostics]`.
    pub settings: Settings,
    /// `[format.<lang>]`.
    pub format: BTreeMap<String, FormatSpec>,
    /// `[lint.<lang>]`.
    pub lint: BTreeMap<String, LintSpec>,
    /// `[lsp.<lang>]`.
    pub lsp: BTreeMap<String, LspSpec>,
}

/// A configuration that cannot be used, naming the table and field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A field that cannot be used.
    #[error("[{table}] {message}")]
    Invalid {
        /// `lint.python`.
        table: String,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// A formatter's `scope` that is not one.
    #[error("[{table}] scope")]
    Scope {
        /// `format.python`.
        table: String,
        /// Why.
        #[source]
        source: crate::format::UnknownScope,
    },
    /// A linter's `parser` that is not one.
    #[error("[{table}] parser")]
    Parser {
        /// `lint.python`.
        table: String,
        /// Why.
        #[source]
        source: Box<crate::lint::LintError>,
    },
}

impl ConfigError {
    fn new(table: String, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            table,
            message: message.into(),
        }
    }
}

/// The extensions of a `[<kind>.<lang>]` table: its own, else the language's
/// (lower case, with the dot).
pub fn extensions_of(
    kind: &str,
    lang: &str,
    given: Option<&[String]>,
) -> Result<Vec<String>, ConfigError> {
    let table = format!("{kind}.{lang}");
    let list: Vec<String> = match given {
        Some(list) if !list.is_empty() => list.to_vec(),
        Some(_) => return Err(ConfigError::new(table, "extensions is empty")),
        None => match Lang::by_name(lang) {
            Some(l) => l.extensions().iter().map(|e| (*e).to_owned()).collect(),
            None => {
                return Err(ConfigError::new(
                    table,
                    format!(
                        "needs `extensions` (e.g. [\".{lang}\"]): `{lang}` is not a language \
                         known by name (rust, python, javascript, typescript, go, json, toml, \
                         yaml, bash)"
                    ),
                ));
            }
        },
    };
    Ok(list
        .into_iter()
        .map(|e| {
            let e = e.trim().to_ascii_lowercase();
            if e.starts_with('.') {
                e
            } else {
                format!(".{e}")
            }
        })
        .collect())
}

/// Checks that a command is usable: not empty, the program not blank.
pub fn check_command(kind: &str, lang: &str, command: &[String]) -> Result<(), ConfigError> {
    match command.first() {
        Some(program) if !program.trim().is_empty() => Ok(()),
        _ => Err(ConfigError::new(
            format!("{kind}.{lang}"),
            "command is empty: give the program and its arguments, e.g. [\"ruff\", \"check\", \"{path}\"]",
        )),
    }
}

/// Whether `file`'s extension is one of `extensions` (lower case, with the dot).
pub fn has_extension(file: &std::path::Path, extensions: &[String]) -> bool {
    let Some(ext) = file.extension() else {
        return false;
    };
    let ext = format!(".{}", ext.to_string_lossy().to_ascii_lowercase());
    extensions.contains(&ext)
}
