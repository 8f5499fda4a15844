//! JSON-Schema validation that reports every violation with a readable path.

use crate::human::plural;
use std::fmt;

use serde_json::Value;

use crate::tool::Violation;

/// A compiled JSON Schema (2020-12) that lists all violations of an instance.
pub struct SchemaValidator {
    inner: jsonschema::Validator,
    schema: Value,
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator").finish_non_exhaustive()
    }
}

/// A JSON Schema that cannot be used as a tool's input schema.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidSchema {
    /// The schema is not an object schema: a tool's arguments are an object.
    #[error("the input schema must have \"type\": \"object\"")]
    NotAnObject,
    /// The schema does not compile; the validator's message says where.
    #[error(transparent)]
    Compile(Box<jsonschema::ValidationError<'static>>),
}

impl From<jsonschema::ValidationError<'_>> for InvalidSchema {
    fn from(e: jsonschema::ValidationError<'_>) -> Self {
        InvalidSchema::Compile(Box::new(e.to_owned()))
    }
}

impl SchemaValidator {
    /// Compiles `schema`.
    ///
    /// # Errors
    /// The schema itself is invalid; the message says where.
    pub fn new(schema: &Value) -> Result<SchemaValidator, InvalidSchema> {
        let inner = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(schema)?;
        Ok(SchemaValidator {
            inner,
            schema: schema.clone(),
        })
    }

    /// True when `instance` is valid.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.inner.is_valid(instance)
    }

    /// Every violation of `instance`, each with its path (`todos[1].status`).
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        if self.inner.is_valid(instance) {
            return Vec::new();
        }
        let mut out: Vec<Violation> = Vec::new();
        for err in self.inner.iter_errors(instance) {
            let pointer = err.instance_path().to_string();
            let message = match err.kind() {
                jsonschema::error::ValidationErrorKind::AnyOf { .. }
                | jsonschema::error::ValidationErrorKind::OneOfNotValid { .. } => {
                    self.choice_message(&err.schema_path().to_string(), err.instance())
                }
                _ => None,
            }
            .unwrap_or_else(|| err.to_string());
            let v = Violation::new(pointer_to_path(&pointer), message);
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }
}

impl SchemaValidator {
    /// For an `anyOf`/`oneOf` whose branches are all constants (or `null`), a message
    /// listing the allowed values instead of "not valid under any of the schemas".
    fn choice_message(&self, schema_path: &str, instance: &Value) -> Option<String> {
        let branches = self.schema.pointer(schema_path)?.as_array()?;
        let mut allowed: Vec<String> = Vec::new();
        for b in branches {
            if let Some(c) = b.get("const") {
                allowed.push(c.to_string());
            } else if let Some(Value::Array(vals)) = b.get("enum") {
                allowed.extend(vals.iter().map(Value::to_string));
            } else if b.get("type").and_then(Value::as_str) == Some("null") {
                allowed.push("null".into());
            } else {
                return None;
            }
        }
        Some(format!("{instance} is not one of [{}]", allowed.join(", ")))
    }
}

/// `/todos/1/status` -> `todos[1].status`.
pub(crate) fn pointer_to_path(pointer: &str) -> String {
    let mut path = String::new();
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            path.push('[');
            path.push_str(&seg);
            path.push(']');
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&seg);
        }
    }
    path
}

/// A message naming every violation, one per line, for an INVALID_PARAMS envelope.
pub fn violations_message(tool: &str, violations: &[Violation]) -> String {
    let n = violations.len();
    let mut msg = format!(
        "invalid arguments for {tool} ({n} {}):",
        plural(n as u64, "problem")
    );
    for v in violations {
        msg.push_str("\n- ");
        msg.push_str(&v.to_string());
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointer_paths() {
        assert_eq!(pointer_to_path(""), "");
        assert_eq!(pointer_to_path("/todos/1/status"), "todos[1].status");
        assert_eq!(pointer_to_path("/a~1b/0"), "a/b[0]");
    }

    #[test]
    fn lists_every_violation() {
        let schema = json!({
            "type": "object",
            "properties": {
                "todos": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "minLength": 1},
                        "status": {"enum": ["Pending", "In Progress", "Done"]}
                    },
                    "required": ["title", "status"]
                }},
                "n": {"type": "integer", "minimum": 0, "maximum": 3}
            },
            "required": ["todos"],
            "additionalProperties": false
        });
        let v = SchemaValidator::new(&schema).unwrap();
        let errs = v.violations(&json!({
            "todos": [{"title": "", "status": "Started"}, {"status": "Done"}],
            "n": 9, "extra": true
        }));
        let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&"todos[0].title"), "{errs:?}");
        assert!(paths.contains(&"todos[0].status"), "{errs:?}");
        assert!(paths.contains(&"todos[1]"), "{errs:?}");
        assert!(paths.contains(&"n"), "{errs:?}");
        assert!(errs.iter().any(|e| e.message.contains("extra")), "{errs:?}");
        let msg = violations_message("t", &errs);
        assert!(
            msg.contains("todos[0].status: \"Started\" is not one of"),
            "{msg}"
        );
    }

    #[test]
    fn a_schema_that_does_not_compile_keeps_the_validator_s_error() {
        let err = SchemaValidator::new(&json!({"type": 5})).err().unwrap();
        assert!(matches!(err, InvalidSchema::Compile(_)));
        // Its message is the validator's, its own layer adding nothing.
        let InvalidSchema::Compile(inner) = &err else {
            unreachable!()
        };
        assert_eq!(err.to_string(), inner.to_string());
        fn crosses_threads<E: std::error::Error + Send + Sync + 'static>(_: &E) {}
        crosses_threads(&err);
    }
}
