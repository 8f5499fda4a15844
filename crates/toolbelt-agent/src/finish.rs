//! The tool that ends a small model's run: `finish`, its answer the argument.
//!
//! A small model's prose is not taken as its answer: it ends the run only by
//! calling this tool, so that every reply can be held to a call by the server
//! (`tool_choice: "required"`, a grammar, a JSON schema). The loop answers the
//! call itself; the registry never sees it.

use serde_json::{Value, json};
use toolbelt_core::{Category, Registry, ToolSpec};

use crate::tool_names::READ_FILE;

/// The tool's name where the profile names tools in snake case.
pub(crate) const FINISH: &str = "finish";
/// ... and where it names them as Claude Code does (`Read`, `Edit`, `Bash`).
const FINISH_PASCAL: &str = "Finish";

/// The name the finish tool takes beside `registry`'s tools: `Finish` when the
/// profile names tools in Pascal case, else `finish`; never a name a tool of the
/// registry already has.
pub(crate) fn finish_name(registry: &Registry) -> String {
    let pascal = registry
        .profile()
        .exposed(READ_FILE)
        .chars()
        .next()
        .is_some_and(char::is_uppercase);
    let base = if pascal { FINISH_PASCAL } else { FINISH };
    let mut name = base.to_string();
    let mut n = 2;
    while registry.has(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

/// The finish tool's spec under `name`.
pub(crate) fn finish_spec(name: &str) -> ToolSpec {
    ToolSpec::new(
        name,
        "Ends the task: call it once the task is done (or cannot be done), with your \
         answer to the user: what you changed or found, in one or two sentences.",
        json!({
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "description": "Your final answer to the user."
                }
            },
            "required": ["answer"],
            "additionalProperties": false
        }),
    )
    .title("Finish")
    .category(Category::Agent)
    .key_argument("answer")
}

/// The answer a finish call gives: its `answer` argument (or, from a model that
/// named it otherwise, its only string argument, or the arguments as written).
pub(crate) fn finish_answer(arguments: &Value) -> String {
    if let Some(answer) = arguments.get("answer").and_then(Value::as_str) {
        return answer.trim().to_string();
    }
    let strings: Vec<&str> = arguments
        .as_object()
        .map(|m| m.values().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match strings.as_slice() {
        [only] => only.trim().to_string(),
        _ => arguments.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_read_from_what_the_model_wrote() {
        assert_eq!(finish_answer(&json!({"answer": " done "})), "done");
        assert_eq!(finish_answer(&json!({"result": "42"})), "42");
        assert_eq!(finish_answer(&json!({})), "{}");
    }
}
