//! grep and glob for toolbelt, in process on ripgrep's crates (`grep-searcher`,
//! `grep-regex`, `ignore`), through the roots of a [`toolbelt_fs::Jail`], and the
//! directory tree of list_dir.
//!
//! - [`grep::Grep`]: a compiled search (pattern, filters, output mode, paging) run over
//!   a directory or file with a parallel walk; returns a [`grep::GrepReport`] with the
//!   rendered text (`path:line: text`) and the structured matches.
//! - [`glob::Glob`]: files (and optionally directories) whose path matches a `**`
//!   glob, sorted by modification time or path; returns a [`glob::GlobReport`].
//! - [`Opener`] opens the files found (kernel-checked beneath the root for a
//!   workspace), [`Budget`] bounds a run in time and lets it be cancelled.
//!
//! Both walks follow ripgrep's defaults: hidden entries skipped, `.gitignore`
//! (inside git repositories), `.ignore` and `.rgignore` honoured, symbolic links
//! never followed. Results are sorted, so the same tree gives the same answer.
//!
//! ```
//! use std::fs::File;
//! use std::path::Path;
//! use toolbelt_search::Budget;
//! use toolbelt_search::grep::{Grep, GrepOptions, OutputMode};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("main.rs"), "fn main() {\n    run();\n}\n")?;
//! let grep = Grep::new(GrepOptions {
//!     output_mode: OutputMode::Content,
//!     ..GrepOptions::new("run")
//! })?;
//! let open = |p: &Path| File::open(p);
//! let report = grep.run(dir.path(), dir.path(), &open, &Budget::unlimited());
//! assert_eq!(report.text, "main.rs:2:     run();\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod glob;
pub mod grep;
mod rules;
mod tool_error;
pub mod tree;
mod walk;

pub use walk::{
    Budget, MAX_REPORTED_ERRORS, MAX_THREADS, Opener, Stop, Withhold, display_path, file_type_names,
};

/// How globs are written, said after a glob that cannot be used.
const GLOB_HINT: &str = "Use `*` within a name, `**` across directories, `{a,b}` for \
                         alternatives and `[abc]` for character classes.";

/// Why a search could not start. Messages are written for the model.
///
/// A parser's error is said inside the sentence, before what to do: it is no
/// source, so that a joined chain does not say it again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The regular expression does not compile.
    #[error(
        "invalid regular expression {pattern:?}: {error}{}\nEscape special characters \
         (e.g. `\\(`, `\\.`) or set fixed_strings=true to search for the text literally.",
        if *line_break { " (set multiline=true to match across lines)" } else { "" }
    )]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// Why it does not compile.
        error: grep_regex::Error,
        /// The pattern holds a line break, which only a multiline search matches:
        /// the message says so.
        line_break: bool,
    },
    /// A glob that cannot be used: absolute, empty, or not one globset reads.
    #[error("invalid glob {glob:?}: {reason}\n{GLOB_HINT}")]
    Glob {
        /// The glob as given.
        glob: String,
        /// Why not.
        reason: String,
    },
    /// A glob that does not parse.
    #[error("invalid glob {glob:?}: {error}\n{GLOB_HINT}")]
    GlobSyntax {
        /// The glob (or the globs, space-separated) as given.
        glob: String,
        /// The parser's error.
        error: ignore::Error,
    },
    /// A file type name is not in ripgrep's table.
    #[error("unknown file type {name:?}; did you mean one of: {}? Or filter with a glob such as \"*.ext\" instead.", similar.join(", "))]
    UnknownFileType {
        /// The name as given.
        name: String,
        /// Known names close to it.
        similar: Vec<String>,
    },
    /// ripgrep's table cannot select the file types asked for.
    #[error("the file types {names:?} cannot be selected")]
    FileTypes {
        /// The names as given.
        names: Vec<String>,
        /// Why.
        #[source]
        source: ignore::Error,
    },
}
