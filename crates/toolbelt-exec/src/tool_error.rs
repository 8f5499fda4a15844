//! The errors of this crate as the tool layer's [`ToolError`]: code, message and
//! hint for the model, so that a tool writes `?`.

use toolbelt_core::{ErrorCode, ToolError, error_chain};

use crate::{ExecError, ShellError};

/// NOT_FOUND naming the shells there are, CONFLICT for too many shells or a
/// closed standard input, INTERNAL for a shell that cannot be started.
impl From<ShellError> for ToolError {
    fn from(e: ShellError) -> ToolError {
        let message = error_chain(&e);
        match e {
            ShellError::NotFound { known, .. } => {
                let hint = if known.is_empty() {
                    "no background shell is running; start one with bash and run_in_background: true"
                        .to_string()
                } else {
                    format!(
                        "known shells: {}; list_shells shows them all",
                        known.join(", ")
                    )
                };
                ToolError::new(ErrorCode::NotFound, message).hint(hint)
            }
            ShellError::TooMany { .. } => ToolError::new(ErrorCode::Conflict, message),
            ShellError::StdinClosed { .. } | ShellError::StdinFailed { .. } => {
                ToolError::new(ErrorCode::Conflict, message).hint(
                    "read what it printed with bash_output; start it again to send more input",
                )
            }
            _ => ToolError::new(ErrorCode::Internal, message),
        }
    }
}

/// A command that could not be started or whose output could not be saved:
/// INTERNAL, with the reason.
impl From<ExecError> for ToolError {
    fn from(e: ExecError) -> ToolError {
        ToolError::new(ErrorCode::Internal, error_chain(&e))
    }
}
