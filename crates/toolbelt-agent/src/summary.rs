//! One-line summaries of calls and results (in progress).

use serde_json::Value;
use toolbelt_core::Envelope;

/// A call in one line by its key argument.
pub fn call_summary(tool: &str, _arguments: &Value) -> String {
    tool.to_string()
}

/// A result in a few words.
pub fn result_summary(env: &Envelope) -> String {
    env.status.as_str().to_string()
}
