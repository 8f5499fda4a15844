//! The errors of this crate as the tool layer's [`ToolError`]: code and message for
//! the model (the messages say what to do next), so that a tool writes `?`.

use toolbelt_core::{ErrorCode, ToolError, error_chain};

use crate::SearchError;
use crate::tree::TreeError;

/// INVALID_PARAMS: a pattern, glob or file type that the model must fix.
impl From<SearchError> for ToolError {
    fn from(e: SearchError) -> ToolError {
        ToolError::new(ErrorCode::InvalidParams, error_chain(&e))
    }
}

/// INVALID_PARAMS for a bad pattern or a file where a directory was expected;
/// NOT_FOUND, ACCESS_DENIED or INTERNAL as the directory's read failed.
impl From<TreeError> for ToolError {
    fn from(e: TreeError) -> ToolError {
        match e {
            TreeError::Pattern { .. } | TreeError::NotADirectory { .. } => {
                ToolError::new(ErrorCode::InvalidParams, e.to_string())
            }
            TreeError::Io { ref source, .. } => {
                let code = match source.kind() {
                    std::io::ErrorKind::NotFound => ErrorCode::NotFound,
                    std::io::ErrorKind::PermissionDenied => ErrorCode::AccessDenied,
                    _ => ErrorCode::Internal,
                };
                ToolError::new(code, error_chain(&e))
            }
        }
    }
}
