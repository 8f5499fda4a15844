//! Schema export (skeleton).
use crate::spec::ToolSpec;
use serde_json::Value;
/// Formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI
    OpenAi,
}
impl Format {
    /// All.
    pub const ALL: [Format; 1] = [Format::OpenAi];
    /// Name.
    pub fn as_str(self) -> &'static str {
        "openai"
    }
    /// Parse.
    pub fn parse(s: &str) -> Option<Format> {
        (s == "openai").then_some(Format::OpenAi)
    }
}
/// Export.
pub fn export(specs: &[ToolSpec], _f: Format) -> Value {
    Value::Array(specs.iter().map(|s| serde_json::json!({"type":"function","function":{"name":s.name,"description":s.description,"parameters":s.input_schema}})).collect())
}
