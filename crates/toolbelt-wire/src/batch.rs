//! Batches of calls written as JSON, as planners' batch operations write them:
//! `[{"tool": "createProject", "params": {"name": "A"}}, ...]`. Read by
//! [`parse_calls`] and run by [`toolbelt_core::Registry::execute_batch`].

use serde_json::Value;

use toolbelt_core::ToolCall;

/// The most calls one batch may hold.
pub const MAX_BATCH_CALLS: usize = 1000;

/// Why a batch cannot be read; the message names the first problem and where it
/// is (`call 3 (index 2) has no "tool"`).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The text is not JSON. The parser's error is said inside the sentence, in
    /// parentheses, before how a batch looks: it is no source, so that a joined
    /// chain does not say it again.
    #[error(
        "the batch is not valid JSON ({0}); give an array of {{\"tool\": NAME, \"params\": {{...}}}} objects"
    )]
    NotJson(serde_json::Error),
    /// The JSON is not an array.
    #[error(
        "the batch is {kind}, not an array; give an array of {{\"tool\": NAME, \"params\": {{...}}}} objects"
    )]
    NotArray {
        /// What it is instead (`an object`).
        kind: &'static str,
    },
    /// More than [`MAX_BATCH_CALLS`] calls.
    #[error("the batch has {calls} calls; at most {MAX_BATCH_CALLS} run at once, split it")]
    TooManyCalls {
        /// How many it has.
        calls: usize,
    },
    /// A call is not a JSON object.
    #[error(
        "call {} (index {index}) is {kind}, not an object {{\"tool\": NAME, \"params\": {{...}}}}",
        .index + 1
    )]
    NotObject {
        /// The call's index in the array.
        index: usize,
        /// What it is instead.
        kind: &'static str,
    },
    /// A call's `tool` is not a tool name.
    #[error("call {} (index {index}): \"tool\" is {kind}, not a tool name", .index + 1)]
    ToolNotName {
        /// The call's index in the array.
        index: usize,
        /// What it is instead.
        kind: &'static str,
    },
    /// A call has no `tool`.
    #[error("call {} (index {index}) has no \"tool\"", .index + 1)]
    NoTool {
        /// The call's index in the array.
        index: usize,
    },
    /// A call has both `params` and `arguments`.
    #[error("call {} (index {index}) has both \"params\" and \"arguments\"; give one", .index + 1)]
    BothParams {
        /// The call's index in the array.
        index: usize,
    },
    /// A call's params are neither an object nor a string.
    #[error("call {} (index {index}) ({tool}): the params are {kind}, not an object", .index + 1)]
    ParamsNotObject {
        /// The call's index in the array.
        index: usize,
        /// The tool it names.
        tool: String,
        /// What the params are instead.
        kind: &'static str,
    },
    /// A call's `id` is not a string.
    #[error("call {} (index {index}): \"id\" is {kind}, not a string", .index + 1)]
    IdNotString {
        /// The call's index in the array.
        index: usize,
        /// What it is instead.
        kind: &'static str,
    },
    /// A call has a field other than `tool`, `params`, `arguments` and `id`.
    #[error(
        "call {} (index {index}) has an unknown field {key:?}; a call has \"tool\", \"params\" and an optional \"id\"",
        .index + 1
    )]
    UnknownField {
        /// The call's index in the array.
        index: usize,
        /// The field.
        key: String,
    },
}

impl From<serde_json::Error> for BatchError {
    fn from(e: serde_json::Error) -> BatchError {
        BatchError::NotJson(e)
    }
}

/// Reads a JSON array of calls, each `{"tool": NAME, "params": {...}}` (`arguments`
/// is accepted for `params`, which may be left out, and an `id` names the call).
///
/// # Errors
/// A [`BatchError`] naming the first problem and where it is
/// (`call 3 (index 2) has no "tool"`).
pub fn parse_calls(json: &[u8]) -> Result<Vec<ToolCall>, BatchError> {
    let value: Value = serde_json::from_slice(json)?;
    let Value::Array(items) = value else {
        return Err(BatchError::NotArray { kind: kind(&value) });
    };
    if items.len() > MAX_BATCH_CALLS {
        return Err(BatchError::TooManyCalls { calls: items.len() });
    }
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let Value::Object(mut fields) = item else {
                return Err(BatchError::NotObject {
                    index,
                    kind: kind(&item),
                });
            };
            let tool = match fields.remove("tool") {
                Some(Value::String(t)) if !t.trim().is_empty() => t,
                Some(other) => {
                    return Err(BatchError::ToolNotName {
                        index,
                        kind: kind(&other),
                    });
                }
                None => return Err(BatchError::NoTool { index }),
            };
            let params = match (fields.remove("params"), fields.remove("arguments")) {
                (Some(_), Some(_)) => return Err(BatchError::BothParams { index }),
                (Some(p), None) | (None, Some(p)) => p,
                (None, None) => Value::Object(serde_json::Map::new()),
            };
            // Stringified JSON is left to the registry, which repairs it as it
            // would for a model.
            if !(params.is_object() || params.is_string()) {
                return Err(BatchError::ParamsNotObject {
                    index,
                    tool,
                    kind: kind(&params),
                });
            }
            let call_id = match fields.remove("id") {
                None | Some(Value::Null) => None,
                Some(Value::String(id)) => Some(id),
                Some(other) => {
                    return Err(BatchError::IdNotString {
                        index,
                        kind: kind(&other),
                    });
                }
            };
            if let Some(key) = fields.keys().next() {
                return Err(BatchError::UnknownField {
                    index,
                    key: key.clone(),
                });
            }
            let mut call = ToolCall::new(tool, params);
            call.call_id = call_id;
            Ok(call)
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        match parse_calls(text.as_bytes()) {
            Ok(calls) => unreachable!("{text} parsed as {calls:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_seed_batch_is_read_in_order() {
        let calls = parse_calls(
            r#"[
                {"tool": "createProject", "params": {"name": "项目A"}},
                {"tool": "createTask", "arguments": {"title": "任务1", "projectId": "project-1"}, "id": "t1"},
                {"tool": "think"}
            ]"#
            .as_bytes(),
        )
        .unwrap();
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["createProject", "createTask", "think"]);
        assert_eq!(calls[1].arguments["projectId"], "project-1");
        assert_eq!(calls[1].call_id.as_deref(), Some("t1"));
        assert_eq!(calls[2].arguments, serde_json::json!({}));
        assert!(parse_calls(b"[]").unwrap().is_empty());
    }

    #[test]
    fn malformed_batches_name_the_first_problem() {
        assert!(error("[{").starts_with("the batch is not valid JSON"));
        assert!(error(r#"{"tool": "x"}"#).starts_with("the batch is an object, not an array"));
        assert_eq!(
            error(r#"[{"tool": "a"}, 5]"#),
            "call 2 (index 1) is a number, not an object {\"tool\": NAME, \"params\": {...}}"
        );
        assert_eq!(
            error(r#"[{"params": {}}]"#),
            "call 1 (index 0) has no \"tool\""
        );
        assert_eq!(
            error(r#"[{"tool": " "}]"#),
            "call 1 (index 0): \"tool\" is a string, not a tool name"
        );
        assert_eq!(
            error(r#"[{"tool": "a", "params": [1]}]"#),
            "call 1 (index 0) (a): the params are an array, not an object"
        );
        assert_eq!(
            error(r#"[{"tool": "a", "params": {}, "arguments": {}}]"#),
            "call 1 (index 0) has both \"params\" and \"arguments\"; give one"
        );
        assert_eq!(
            error(r#"[{"tool": "a", "parms": {}}]"#),
            "call 1 (index 0) has an unknown field \"parms\"; a call has \"tool\", \"params\" and an optional \"id\""
        );
        let many = format!(
            "[{}]",
            vec![r#"{"tool": "a"}"#; MAX_BATCH_CALLS + 1].join(",")
        );
        assert!(error(&many).contains("at most 1000 run at once"));
    }
}
