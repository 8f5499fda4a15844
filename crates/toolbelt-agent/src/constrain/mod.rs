//! Constraints that hold a small model's reply to a call of one of the offered
//! tools, generated from the tools' specs ([`ToolSpec::input_schema`]):
//!
//! - [`action_grammar`]: a GBNF grammar (llama.cpp's `grammar`) for the text
//!   protocol: exactly one line `Action: tool_name[{...}]` whose arguments are a
//!   JSON object valid for that tool's schema, which
//!   [`parse_text_reply`](toolbelt_wire::calls::parse_text_reply) reads back as
//!   the same call;
//! - [`reply_schema`]: a JSON Schema for a whole reply `{"name": "<tool>",
//!   "arguments": {...}}` (`response_format`), the form
//!   [`calls_in_text`](toolbelt_wire::calls::calls_in_text) reads as a call.
//!
//! Both go to the server as a [`ReplyConstraint`](crate::provider::ReplyConstraint).
//!
//! ```
//! use serde_json::json;
//! use toolbelt_agent::constrain::{action_grammar, reply_schema};
//! use toolbelt_core::ToolSpec;
//!
//! let finish = ToolSpec::new(
//!     "finish",
//!     "Ends the task.",
//!     json!({"type": "object", "properties": {"answer": {"type": "string"}},
//!            "required": ["answer"]}),
//! );
//! let grammar = action_grammar(std::slice::from_ref(&finish));
//! assert!(grammar.starts_with("root ::= \"Action: \" call"));
//! let schema = reply_schema(&[finish]);
//! assert_eq!(schema["anyOf"][0]["properties"]["name"], json!({"const": "finish"}));
//! ```
//!
//! # What the schemas may say
//! Understood: `type` (one or a list), `properties` and `required` (only the listed
//! properties, in their declared order, each optional one may be left out),
//! `enum`, `const`, `items` with `minItems` / `maxItems`, `anyOf` / `oneOf`, a
//! one-element `allOf`, a `minimum` of 0 or 1 on integers, `minLength` on strings, local
//! `$ref`s into `$defs` / `definitions`. Anything else in the grammar allows any
//! JSON value there; the reply schema keeps every keyword as it is.

use toolbelt_core::ToolSpec;

mod grammar;
mod schema;

/// A GBNF grammar (llama.cpp syntax, start rule `root`) whose language is exactly
/// one line `Action: NAME[ARGS]`, optionally followed by one newline: `NAME` one of
/// `specs`' names, `ARGS` a JSON object valid for its `input_schema` (single
/// optional spaces around `:` and `,` and inside the braces and brackets, never
/// more). Nothing may come before `Action:`.
///
/// Tools whose names the text protocol cannot read (other than letters, digits,
/// `_`, `-`, `.`) are left out. With no tool left, any such name with any JSON
/// object is allowed.
///
/// llama.cpp refuses a grammar sent beside `tools`: use it with the text protocol.
pub fn action_grammar(specs: &[ToolSpec]) -> String {
    grammar::action_grammar(specs)
}

/// A JSON Schema (2020-12) for a whole reply `{"name": "<tool>", "arguments":
/// {...}}`: `anyOf` one branch per tool, `name` its `const`, `arguments` its
/// `input_schema`, both required, no other property. The tools' `$defs` (and
/// `definitions`) are moved up to the root's `$defs` as `<tool>:<name>`, their
/// `$ref`s rewritten to match.
pub fn reply_schema(specs: &[ToolSpec]) -> serde_json::Value {
    schema::reply_schema(specs)
}
