//! The `*** Begin Patch` envelope: parsing, hunk application and planning.
//!
//! The format is the one GPT models are trained to write for `apply_patch`:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: src/new.rs
//! +pub fn hello() {}
//! *** Delete File: src/old.rs
//! *** Update File: src/lib.rs
//! *** Move to: src/core.rs
//! @@ fn main() {
//! -    let x = 1;
//! +    let x = 2;
//!      run(x);
//! *** End of File
//! *** End Patch
//! ```
//!
//! Three steps, all pure (no file system access):
//! - [`parse`] turns the text into a [`Patch`]; syntax errors name the patch line and
//!   say how to fix it. Common slips are forgiven: a heredoc wrapper
//!   (`apply_patch <<'EOF' ... EOF`), a code fence, blank lines around the envelope,
//!   CRLF line ends, padded markers, a first hunk without `@@`, git-style
//!   `@@ -12,7 +12,8 @@` headers.
//! - [`apply_hunks`] applies the hunks of one `*** Update File` section to a text:
//!   each hunk is found after its `@@` anchors and after the previous hunk, trying
//!   exact lines first, then ignoring trailing whitespace, then surrounding
//!   whitespace, then typographic punctuation. The text's line endings (CRLF stays
//!   CRLF) and its final-newline state are kept; unchanged lines keep their bytes.
//! - [`plan`] runs every section against the current files (read through a
//!   closure) and returns every resulting file before anything is written, so a
//!   caller can commit all files or none.
//!
//! ```
//! use std::path::{Path, PathBuf};
//! use toolbelt_fs::patch::{self, PathScope};
//!
//! let patch = patch::parse(
//!     "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n*** End Patch\n",
//! )?;
//! let scope = PathScope::new("/w", vec![PathBuf::from("/w")]);
//! let plan = patch::plan(&patch, &scope, |path: &Path| {
//!     Ok::<_, std::convert::Infallible>((path == Path::new("/w/a.txt")).then(|| "one\ntwo\n".to_string()))
//! })?;
//! assert_eq!(plan.files[0].after.as_deref(), Some("uno\ntwo\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Its files: `format` (the [`Patch`] and its sections), `parse` (the text read
//! into one), `error` ([`PatchError`] and how a hunk that does not fit is told),
//! `matching` (where a hunk goes in a text, and the closest region when it goes
//! nowhere), `apply` ([`apply_hunks`]: the hunks spliced into one text), `scope`
//! ([`PathScope`]: where paths live) and `plan` ([`plan`]: a whole patch against
//! the files).

mod apply;
mod error;
mod format;
mod matching;
mod parse;
mod plan;
mod scope;

pub use apply::{Applied, HunkMatch, apply_hunks};
pub use error::{FailureKind, HunkFailure, PatchError, Region};
pub use format::{FileOp, Hunk, HunkLine, Patch};
pub use matching::MatchTier;
pub use parse::{MAX_PATCH_BYTES, MAX_PATCH_FILES, parse};
pub use plan::{Action, FileEffect, OpResult, Plan, PlanError, plan};
pub use scope::{PathScope, ScopeError};

// The path types the tests reach through `use super::*`.
#[cfg(test)]
use std::path::{Path, PathBuf};

#[cfg(test)]
#[path = "../patch_tests.rs"]
mod tests;
