//! The errors of this crate as the tool layer's [`ToolError`]: code, message and
//! hint for the model, so that a tool writes `?`.

use toolbelt_core::{ErrorCode, ToolError, error_chain};

use crate::FsError;
use crate::patch::{PatchError, PlanError};

/// The error code of [`FsError::code`], its message, and for refusals the model
/// can act on, what to do next.
impl From<FsError> for ToolError {
    fn from(err: FsError) -> ToolError {
        let hint = match &err {
            FsError::Outside { .. } | FsError::SymlinkEscape { .. } => {
                Some("only paths inside the workspace roots can be used")
            }
            FsError::NotFound { .. } => Some("list_dir or glob shows what exists"),
            FsError::IsADirectory { .. } => Some("list_dir lists a directory"),
            FsError::Busy { .. } => Some("another call is writing this file; retry in a moment"),
            _ => None,
        };
        let mut out = ToolError::new(err.code(), error_chain(&err));
        if let Some(h) = hint {
            out = out.hint(h);
        }
        out
    }
}

/// A patch that was refused before anything was written: TOO_LARGE, ACCESS_DENIED
/// (a path outside the workspace), CONFLICT, NOT_FOUND or INVALID_PARAMS, the
/// message saying that no file was changed.
impl From<PatchError> for ToolError {
    fn from(err: PatchError) -> ToolError {
        let code = match &err {
            PatchError::TooLarge { .. } | PatchError::TooManyFiles { .. } => ErrorCode::TooLarge,
            PatchError::BadPath { path, .. } | PatchError::PathRefused { path, .. }
                if !path.is_empty() =>
            {
                ErrorCode::AccessDenied
            }
            PatchError::AlreadyExists { .. } | PatchError::DestinationExists { .. } => {
                ErrorCode::Conflict
            }
            PatchError::Missing { .. } => ErrorCode::NotFound,
            _ => ErrorCode::InvalidParams,
        };
        let hint = match &err {
            PatchError::Syntax { .. } => Some(
                "the format is `*** Begin Patch`, then sections `*** Add File: <path>` (lines with '+'), `*** Delete File: <path>`, `*** Update File: <path>` (optional `*** Move to: <path>`, then `@@ <anchor>` and lines with ' ', '-', '+'), then `*** End Patch`",
            ),
            PatchError::Mismatch { .. } => {
                Some("read the file again, then send the whole patch again with the hunks fixed")
            }
            _ => None,
        };
        let mut out = ToolError::new(code, format!("{}\nNo file was changed.", error_chain(&err)));
        if let Some(hint) = hint {
            out = out.hint(hint);
        }
        out
    }
}

/// A failed plan: the patch's error, or the reader's as it converts.
impl<E> From<PlanError<E>> for ToolError
where
    ToolError: From<E>,
{
    fn from(err: PlanError<E>) -> ToolError {
        match err {
            PlanError::Patch(err) => err.into(),
            PlanError::Read(err) => err.into(),
        }
    }
}
