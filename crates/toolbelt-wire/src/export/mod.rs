//! One [`ToolSpec`], exported for every consumer.
//!
//! | [`Format`] | Shape |
//! |---|---|
//! | `openai` | Chat Completions `tools`: `[{"type": "function", "function": {name, description, parameters}}]` |
//! | `openai-strict` | the same with `"strict": true` and [`strict_schema`] parameters |
//! | `openai-responses` | Responses API tools: `[{"type": "function", name, description, parameters, "strict": false}]` |
//! | `anthropic` | Messages API tools: `[{name, description, input_schema}]` |
//! | `gemini` | `{"functionDeclarations": [{name, description, parameters}]}`, parameters in [`gemini_schema`]'s OpenAPI subset |
//! | `mcp` | `tools/list` entries with `title`, `inputSchema`, `outputSchema` and `annotations` |
//! | `text` | the text protocol's tool prompt ([`text_prompt`]) |
//!
//! Schemas lose their root `title` everywhere (the name is the tool's), and
//! `$schema` everywhere but in `mcp`, whose input schemas keep a dialect their
//! author declared (MCP reads JSON Schema 2020-12 unless told otherwise; the other
//! consumers imply their own dialect). Objects come out with
//! their keys sorted, so the output is byte-for-byte stable for prompt caching.
//!
//! ```
//! use serde_json::json;
//! use toolbelt_core::ToolSpec;
//! use toolbelt_wire::export::{Format, export};
//!
//! let spec = ToolSpec::new(
//!     "echo",
//!     "Repeats the text.",
//!     json!({"type": "object",
//!            "properties": {"text": {"type": "string"}, "times": {"type": "integer", "default": 1}},
//!            "required": ["text"]}),
//! );
//! let tools = export(&[spec], Format::OpenAiStrict);
//! assert_eq!(
//!     tools[0]["function"]["parameters"],
//!     json!({"type": "object",
//!            "properties": {"text": {"type": "string"},
//!                           "times": {"type": ["integer", "null"], "description": "Default: 1."}},
//!            "required": ["text", "times"],
//!            "additionalProperties": false})
//! );
//! ```

mod common;
mod gemini;
mod mcp;
mod strict;
mod text;

use std::fmt;

use serde_json::{Map, Value, json};

pub use gemini::{check_gemini, gemini_schema};

/// A schema a model API would refuse, with the JSON pointer of the offending
/// subschema (`/properties/inner: additionalProperties must be false`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaRejected(pub String);

impl From<String> for SchemaRejected {
    fn from(message: String) -> SchemaRejected {
        SchemaRejected(message)
    }
}
pub use mcp::envelope_schema;
pub use strict::{check_strict, strict_schema};
pub use text::{text_prompt, tool_sections};

use toolbelt_core::ToolSpec;
use toolbelt_core::schema::drop_foreign_formats;

/// A consumer of tool schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// OpenAI Chat Completions function tools.
    OpenAi,
    /// OpenAI Chat Completions function tools in strict mode (Structured Outputs).
    OpenAiStrict,
    /// OpenAI Responses API function tools.
    OpenAiResponses,
    /// Anthropic Messages API tools.
    Anthropic,
    /// Gemini function declarations.
    Gemini,
    /// MCP `tools/list` entries.
    Mcp,
    /// The text protocol's tool prompt (`Action: tool[{...}]`).
    Text,
}

impl Format {
    /// Every format, in display order.
    pub const ALL: [Format; 7] = [
        Format::OpenAi,
        Format::OpenAiStrict,
        Format::OpenAiResponses,
        Format::Anthropic,
        Format::Gemini,
        Format::Mcp,
        Format::Text,
    ];

    /// The name used by the CLI and in config files (`openai-strict`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::OpenAiStrict => "openai-strict",
            Format::OpenAiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::Gemini => "gemini",
            Format::Mcp => "mcp",
            Format::Text => "text",
        }
    }

    /// Parses a name as written by [`Format::as_str`].
    pub fn parse(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// All `specs` in `format`, in the order given: a JSON array of tools, Gemini's
/// `{"functionDeclarations": [...]}`, or for [`Format::Text`] the prompt as a
/// JSON string.
pub fn export(specs: &[ToolSpec], format: Format) -> Value {
    let mut out = match format {
        Format::Text => Value::String(text_prompt(specs)),
        Format::Gemini => json!({
            "functionDeclarations": specs.iter().map(gemini_declaration).collect::<Vec<_>>()
        }),
        _ => Value::Array(specs.iter().map(|s| export_tool(s, format)).collect()),
    };
    out.sort_all_objects();
    out
}

/// One tool in `format`: one element of [`export`]'s array (for Gemini, one
/// function declaration; for [`Format::Text`], the tool's section of the prompt
/// as a JSON string).
///
/// For [`Format::OpenAiStrict`], a schema that cannot be strict without changing
/// what the tool accepts (a map, a value of any type: see [`strict_schema`])
/// is exported as a non-strict tool (`"strict": false`, plain parameters), so the
/// API still takes it and the model can still send every argument.
pub fn export_tool(spec: &ToolSpec, format: Format) -> Value {
    // JSON Schema consumers get no `format` JSON Schema does not define; Gemini
    // maps formats to its own set.
    let mut parameters = input_schema(&spec.input_schema);
    drop_foreign_formats(&mut parameters);
    let mut out = match format {
        Format::OpenAi => json!({
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": parameters,
            }
        }),
        Format::OpenAiStrict => {
            let strict = strict_schema(&parameters);
            let (parameters, is_strict) = match check_strict(&strict) {
                Ok(()) => (strict, true),
                Err(_) => (parameters, false),
            };
            json!({
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": parameters,
                    "strict": is_strict,
                }
            })
        }
        Format::OpenAiResponses => json!({
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": parameters,
            "strict": false,
        }),
        Format::Anthropic => json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": parameters,
        }),
        Format::Gemini => gemini_declaration(spec),
        Format::Mcp => mcp::mcp_tool(spec, parameters),
        Format::Text => Value::String(text::tool_section(spec)),
    };
    out.sort_all_objects();
    out
}

/// A schema without `$schema` and root `title`.
fn clean_root(schema: &Value) -> Value {
    let mut out = schema.clone();
    if let Value::Object(root) = &mut out {
        root.remove("$schema");
        root.remove("title");
    }
    out
}

/// The input schema as every consumer wants it: cleaned, `type: object` at the
/// root, and an empty `properties` for a tool without arguments (several
/// consumers reject an object schema without it).
fn input_schema(schema: &Value) -> Value {
    let mut out = clean_root(schema);
    match &mut out {
        Value::Object(root) => {
            root.entry("type").or_insert_with(|| json!("object"));
            let takes_no_keys = !matches!(
                root.get("additionalProperties"),
                Some(Value::Object(_)) | Some(Value::Bool(true))
            );
            if root.get("type") == Some(&json!("object"))
                && !root.contains_key("properties")
                && takes_no_keys
            {
                root.insert("properties".to_owned(), json!({}));
            }
        }
        _ => out = json!({"type": "object", "properties": {}}),
    }
    out
}

fn gemini_declaration(spec: &ToolSpec) -> Value {
    let mut declaration = Map::new();
    declaration.insert("name".to_owned(), json!(spec.name));
    declaration.insert("description".to_owned(), json!(spec.description));
    let parameters = gemini_schema(&input_schema(&spec.input_schema));
    // Gemini rejects an object without properties: a tool without arguments (or
    // whose input is one free-form object) is declared without `parameters`.
    if parameters
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
    {
        declaration.insert("parameters".to_owned(), parameters);
    }
    let mut out = Value::Object(declaration);
    out.sort_all_objects();
    out
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
