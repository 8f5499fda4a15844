//! [`PatchError`]: everything that can be wrong with a patch, and for hunks that
//! do not fit the file ([`PatchError::Mismatch`]), each [`HunkFailure`] told with
//! the lines expected and the closest region of the file.

use std::borrow::Cow;
use std::fmt::Write as _;
use toolbelt_core::human::plural;

use super::scope::ScopeError;

/// How many lines of a hunk or of the file an error message shows at most.
const MAX_SHOWN_LINES: usize = 12;
/// Lines longer than this are cut in error messages, in chars.
pub(super) const MAX_SHOWN_LINE_CHARS: usize = 200;

/// A region of a file shown as the nearest miss of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// 1-based first line.
    pub start_line: usize,
    /// The file's lines there.
    pub lines: Vec<String>,
    /// How many of the hunk's expected lines are equal (ignoring whitespace).
    pub equal: usize,
}

/// Why one hunk could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// An `@@` anchor line was not found.
    AnchorNotFound {
        /// The anchor text.
        anchor: String,
        /// The 1-based line the search started at.
        from_line: usize,
        /// The most similar line after `from_line`: (1-based line, text).
        closest: Option<(usize, String)>,
    },
    /// The hunk's context and removed lines were not found.
    LinesNotFound {
        /// The lines the hunk expects.
        expected: Vec<String>,
        /// The 1-based line the search started at.
        from_line: usize,
        /// They do occur, but before `from_line` (hunks out of order): 1-based line.
        earlier_at: Option<usize>,
        /// The nearest region of the file.
        closest: Option<Region>,
    },
}

/// One hunk that could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkFailure {
    /// 1-based hunk number within its file section.
    pub hunk: usize,
    /// 1-based patch line of the hunk.
    pub line: usize,
    /// What went wrong.
    pub kind: FailureKind,
}

/// Everything that can be wrong with a patch. Display is a message for the model
/// saying what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The patch text is over [`MAX_PATCH_BYTES`](crate::patch::MAX_PATCH_BYTES).
    #[error(
        "the patch is {bytes} bytes; the limit is {max_bytes} bytes. Split it into several smaller patches."
    )]
    TooLarge {
        /// Size of the patch.
        bytes: usize,
        /// The limit.
        max_bytes: usize,
    },
    /// The patch has more than [`MAX_PATCH_FILES`](crate::patch::MAX_PATCH_FILES) file sections.
    #[error(
        "the patch has {files} file sections; the limit is {max_files}. Split it into several patches."
    )]
    TooManyFiles {
        /// File sections in the patch.
        files: usize,
        /// The limit.
        max_files: usize,
    },
    /// The text is not a well-formed patch.
    #[error("patch line {line}: {message}")]
    Syntax {
        /// 1-based patch line.
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A section header names no path.
    #[error("patch line {line}: {reason}")]
    BadPath {
        /// The path as written.
        path: String,
        /// 1-based patch line.
        line: usize,
        /// Why it is refused.
        reason: String,
    },
    /// The [`PathScope`](crate::patch::PathScope) refuses a path: empty, holding a
    /// NUL byte, climbing out of the workspace or lying outside it.
    #[error("patch line {line}")]
    PathRefused {
        /// The path as written.
        path: String,
        /// 1-based patch line.
        line: usize,
        /// Why the scope refuses it.
        #[source]
        source: ScopeError,
    },
    /// `*** Add File` names a file that exists.
    #[error(
        "patch line {line}: {path} already exists. Change it with `*** Update File: {path}`, or delete it first in the same patch with `*** Delete File: {path}`."
    )]
    AlreadyExists {
        /// The path as written.
        path: String,
        /// 1-based patch line.
        line: usize,
    },
    /// `*** Move to` names a file that exists.
    #[error(
        "patch line {line}: cannot move to {path}: it already exists. Delete it first in the same patch with `*** Delete File: {path}`, or choose another name."
    )]
    DestinationExists {
        /// The destination as written.
        path: String,
        /// 1-based patch line.
        line: usize,
    },
    /// `*** Update File` or `*** Delete File` names a file that does not exist.
    #[error("patch line {line}: {path} does not exist. {hint}")]
    Missing {
        /// The path as written.
        path: String,
        /// 1-based patch line.
        line: usize,
        /// What to do instead.
        hint: &'static str,
    },
    /// Hunks of one file section do not fit the file.
    #[error("{}", render_mismatch(path, *hunks, failures))]
    Mismatch {
        /// The file, as written in the patch.
        path: String,
        /// How many hunks the section has.
        hunks: usize,
        /// Every hunk that failed.
        failures: Vec<HunkFailure>,
    },
}

/// Text shortened for an error message.
pub(super) fn shown(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(MAX_SHOWN_LINE_CHARS) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

fn render_mismatch(path: &str, hunks: usize, failures: &[HunkFailure]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{path}: {} of {hunks} {} did not match the file.",
        failures.len(),
        plural(hunks as u64, "hunk")
    );
    for failure in failures {
        let _ = write!(
            out,
            "\nhunk {} (patch line {}): ",
            failure.hunk, failure.line
        );
        match &failure.kind {
            FailureKind::AnchorNotFound {
                anchor,
                from_line,
                closest,
            } => {
                let _ = write!(
                    out,
                    "the anchor `@@ {}` is not a line of the file at or after line {from_line}.",
                    shown(anchor)
                );
                if let Some((line, text)) = closest {
                    let _ = write!(out, " Closest: line {line} `{}`.", shown(text));
                }
                out.push_str(
                    " Copy the anchor from a line of the file as it is now, or use a bare `@@`.",
                );
            }
            FailureKind::LinesNotFound {
                expected,
                from_line,
                earlier_at,
                closest,
            } => {
                if let Some(at) = earlier_at {
                    let _ = write!(
                        out,
                        "its lines are at line {at}, before the previous hunk or anchor (searched from line {from_line}). Hunks must be in file order: reorder them."
                    );
                    continue;
                }
                let _ = write!(
                    out,
                    "these {} {} were not found at or after line {from_line}:",
                    expected.len(),
                    plural(expected.len() as u64, "line")
                );
                push_lines(&mut out, expected.iter().map(|l| (None, l.as_str())));
                match closest {
                    Some(region) => {
                        let end = region.start_line + region.lines.len() - 1;
                        let _ = write!(
                            out,
                            "\n  closest: lines {}-{end} ({} of {} equal ignoring whitespace):",
                            region.start_line,
                            region.equal,
                            expected.len()
                        );
                        push_lines(
                            &mut out,
                            region
                                .lines
                                .iter()
                                .enumerate()
                                .map(|(i, l)| (Some(region.start_line + i), l.as_str())),
                        );
                    }
                    None => out.push_str("\n  nothing similar is in the file."),
                }
                out.push_str(
                    "\n  Read the file again and copy the unchanged (' ') and removed ('-') lines exactly as they are now.",
                );
            }
        }
    }
    out
}

fn push_lines<'a>(
    out: &mut String,
    lines: impl ExactSizeIterator<Item = (Option<usize>, &'a str)>,
) {
    let total = lines.len();
    for (i, (number, line)) in lines.enumerate() {
        if i == MAX_SHOWN_LINES {
            let _ = write!(out, "\n    … {} more", total - MAX_SHOWN_LINES);
            break;
        }
        let _ = match number {
            Some(n) => write!(out, "\n  {n:>5}| {}", shown(line)),
            None => write!(out, "\n       | {}", shown(line)),
        };
    }
}
