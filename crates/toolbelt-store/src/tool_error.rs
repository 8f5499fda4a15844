//! [`StoreError`] as the tool layer's [`ToolError`]: code, message and hint for the
//! model, so that a tool writes `?`.

use toolbelt_core::{ErrorCode, ToolError, error_chain};

use crate::StoreError;

/// NOT_FOUND, INVALID_PARAMS and CONFLICT for bad requests, DEPENDENCY_MISSING when
/// the database cannot be opened, INTERNAL (logged) for a failed query.
impl From<StoreError> for ToolError {
    fn from(e: StoreError) -> ToolError {
        match e {
            StoreError::NotFound(m) => ToolError::new(ErrorCode::NotFound, m),
            StoreError::Invalid(m) => {
                ToolError::new(ErrorCode::InvalidParams, m).hint("fix the argument and call again")
            }
            StoreError::Conflict(m) => ToolError::new(ErrorCode::Conflict, m),
            e @ (StoreError::Open { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Foreign { .. }
            | StoreError::Newer { .. }) => {
                ToolError::new(ErrorCode::DependencyMissing, error_chain(&e)).hint(
                    "the store is unavailable; tell the user, who can fix the database or its URL",
                )
            }
            e => {
                let message = error_chain(&e);
                tracing::error!("store failure: {message}");
                ToolError::new(ErrorCode::Internal, message)
                    .hint("the store failed; try again, and tell the user if it keeps failing")
            }
        }
    }
}
