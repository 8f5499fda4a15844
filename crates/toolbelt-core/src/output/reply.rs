//! Where a bounded output meets the tool layer: a [`Reply`] carrying it, and the
//! [`ToolError`] a failed read of a saved output becomes.

use serde_json::Value;

use super::budget::Captured;
use super::page::SpillError;
use crate::envelope::ErrorCode;
use crate::error::error_chain;
use crate::tool::{Reply, ToolError};

impl Captured {
    /// A reply carrying this result, for tools written as functions over JSON: `data`
    /// gets `truncated` and `output_id` when it is an object (else `context` does), the
    /// reply is partial when truncated, with the same counters as [`Captured::apply_to`].
    pub fn into_reply(self, data: Value) -> Reply<Value> {
        let mut reply = Reply::new(data, String::new()).partial(self.truncated);
        self.annotate(&mut reply.stats, &mut reply.data, &mut reply.context);
        reply.text = self.text;
        reply
    }
}

/// INVALID_PARAMS for an id of the wrong shape, NOT_FOUND for one that is gone,
/// INTERNAL when the saved file or the store cannot be read.
impl From<SpillError> for ToolError {
    fn from(e: SpillError) -> ToolError {
        let message = error_chain(&e);
        match e {
            SpillError::InvalidId(_) => ToolError::new(ErrorCode::InvalidParams, message),
            SpillError::NotFound(_) => ToolError::new(ErrorCode::NotFound, message).hint(
                "output ids come from truncated results of this session; run the original call again",
            ),
            SpillError::Io { .. } | SpillError::Store { .. } => {
                ToolError::new(ErrorCode::Internal, message)
            }
        }
    }
}
