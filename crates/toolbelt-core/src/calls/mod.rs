//! Call parsing (skeleton).

use serde_json::Value;

/// Parses JSON leniently, repairing common breakage; returns the value and the repairs made.
///
/// # Errors
/// The text is not JSON even after repair.
pub fn parse_loose_json(s: &str) -> Result<(Value, Vec<String>), String> {
    serde_json::from_str(s)
        .map(|v| (v, Vec::new()))
        .map_err(|e| e.to_string())
}
