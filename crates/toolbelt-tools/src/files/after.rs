//! The post-edit pipeline around a write tool's write, when the session has one
//! ([`ToolContext::after_write`]): the staged text goes through the formatter and
//! the syntax check before the one write (on the write's blocking thread, holding
//! the file's lock, so nothing changes the file in between), and the file's
//! problems are collected after it, off the lock.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use toolbelt_core::diagnostics::{StageRequest, Written};
use toolbelt_core::{AfterWrite, DiagnosticsReport, ErrorCode, ToolContext, ToolError};

/// The pipeline of a call, if any.
pub(crate) type After = Option<Arc<dyn AfterWrite>>;

/// The pipeline of `ctx`'s call.
pub(crate) fn of(ctx: &ToolContext) -> After {
    ctx.after_write().cloned()
}

/// A write's text after the stage, and its notes.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    /// The text to write.
    pub text: String,
    /// Notes for the result (a formatter that failed).
    pub notes: Vec<String>,
}

/// Runs the stage on `new` (the content the tool computed for `file`): on a
/// blocking thread, which waits for it. With no pipeline, `new` as it is. A
/// rejected write (`reject = "syntax"`) is `INVALID_PARAMS` with the problems in
/// `data.diagnostics`.
pub(crate) fn stage(
    after: &After,
    file: &std::path::Path,
    shown: &str,
    old: Option<&str>,
    new: String,
) -> Result<Staged, ToolError> {
    let Some(after) = after else {
        return Ok(Staged {
            text: new,
            notes: Vec::new(),
        });
    };
    let request = StageRequest {
        file,
        shown,
        old,
        new: &new,
    };
    // Tools run on a runtime; this thread is one of its blocking threads.
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return Ok(Staged {
            text: new,
            notes: Vec::new(),
        });
    };
    let staged = handle.block_on(after.stage(request));
    if let Some(rejected) = staged.rejected {
        return Err(ToolError::new(ErrorCode::InvalidParams, rejected.message)
            .hint("fix the edit; the file is unchanged")
            .data(json!({
                "path": shown,
                "reason": "syntax",
                "diagnostics": rejected.diagnostics,
            })));
    }
    Ok(Staged {
        text: staged.text,
        notes: staged.notes,
    })
}

/// A file a call wrote, kept for collecting its problems after the write.
#[derive(Debug, Clone)]
pub(crate) struct Wrote {
    /// The absolute path.
    pub file: PathBuf,
    /// The path as shown.
    pub shown: String,
    /// The text before (None: created).
    pub old: Option<String>,
    /// The text written.
    pub new: String,
}

/// The problems of the files a call wrote, with the stage's notes; an empty report
/// with no pipeline, or when diagnostics after edits are off.
pub(crate) async fn collect(after: &After, wrote: &[Wrote], notes: &[String]) -> DiagnosticsReport {
    let mut report = DiagnosticsReport::default();
    for note in notes {
        report.note(note.clone());
    }
    let Some(after) = after else {
        return report;
    };
    for w in wrote {
        let written = Written {
            file: &w.file,
            shown: &w.shown,
            old: w.old.as_deref(),
            new: &w.new,
        };
        if let Some(found) = after.collect(written).await {
            report.merge(found);
        }
    }
    report
}
