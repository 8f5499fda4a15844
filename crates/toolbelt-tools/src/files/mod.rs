//! The file toolset: reading, writing, editing, patching and listing files in the
//! workspace ([`crate::workspace`]); and what its tools share: the hints of a tool
//! that changes files, the size limit of a file changed in memory, and the edit
//! flow of `edit_file` and `multi_edit` ([`edits`]).

pub(crate) mod after;
pub(crate) mod apply_patch;
pub(crate) mod diagnostics;
pub(crate) mod edit_file;
pub(crate) mod edits;
pub(crate) mod list_dir;
pub(crate) mod multi_edit;
pub(crate) mod read_file;
pub(crate) mod write_file;

use std::path::PathBuf;

use serde_json::Value;
use toolbelt_core::{Changes, Hints};

/// The hints of every tool that changes files: it may overwrite data, and two
/// calls must not run at once.
pub(crate) const WRITE_HINTS: Hints = Hints::writes().destructive();

/// The largest file a tool reads whole into memory to change it.
pub(crate) const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

/// What a call of a tool that changes the one file its `path` argument names may
/// change: that path as given (the checkpointer resolves it against the session's
/// directory), or nothing for a `dry_run`. `None` (the default, every file) when
/// there is no such argument.
pub(crate) fn path_changes(args: &Value) -> Option<Changes> {
    if dry_run(args) {
        return Some(Changes::Nothing);
    }
    let path = args.get("path")?.as_str()?;
    Some(Changes::Paths(vec![PathBuf::from(path)]))
}

/// Whether the arguments ask for a dry run, which writes nothing.
pub(crate) fn dry_run(args: &Value) -> bool {
    args.get("dry_run").and_then(Value::as_bool) == Some(true)
}
