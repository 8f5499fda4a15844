//! What a command hook said: its exit code, standard error and the JSON on its
//! standard output, read the way Claude Code reads them, with toolbelt's own
//! spellings beside.

use serde_json::{Map, Value};

/// A decision a hook wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Said {
    Allow,
    Deny,
    Ask,
    Block,
    Revert,
}

/// A hook's answer, read from its output.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Reply {
    pub decision: Option<Said>,
    pub reason: Option<String>,
    pub updated_input: Option<Map<String, Value>>,
    pub context: Option<String>,
    /// `continue: false`: stop (Claude Code's), with its `stopReason`.
    pub stop: Option<String>,
    /// A message for the person (`systemMessage`).
    pub message: Option<String>,
}

/// Why an output could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// Not JSON: ignored, with a warning.
    NotJson,
    /// JSON with a field whose value means nothing: the hook failed.
    BadField { field: String, value: String },
}

/// Reads standard output `stdout` of a hook that exited 0.
pub(crate) fn parse(stdout: &str) -> Result<Option<Reply>, Unusable> {
    let text = stdout.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let Ok(Value::Object(top)) = serde_json::from_str::<Value>(text) else {
        return Err(Unusable::NotJson);
    };
    let mut reply = Reply::default();
    let specific = match top.get("hookSpecificOutput") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => return Err(bad("hookSpecificOutput", other)),
    };
    if let Some(v) = top.get("decision").filter(|v| !v.is_null()) {
        reply.decision = Some(match v.as_str() {
            Some("allow" | "approve") => Said::Allow,
            Some("deny") => Said::Deny,
            Some("ask") => Said::Ask,
            Some("block") => Said::Block,
            Some("revert") => Said::Revert,
            _ => return Err(bad("decision", v)),
        });
    }
    if let Some(v) = specific.get("permissionDecision").filter(|v| !v.is_null()) {
        let said = match v.as_str() {
            Some("allow") => Said::Allow,
            Some("deny") => Said::Deny,
            Some("ask") => Said::Ask,
            _ => return Err(bad("hookSpecificOutput.permissionDecision", v)),
        };
        reply.decision = Some(stricter(reply.decision, said));
    }
    // Claude Code's PermissionRequest: {"decision": {"behavior": "allow" | "deny"}}.
    if let Some(Value::Object(d)) = specific.get("decision") {
        let v = d.get("behavior").unwrap_or(&Value::Null);
        let said = match v.as_str() {
            Some("allow") => Said::Allow,
            Some("deny") => Said::Deny,
            _ => return Err(bad("hookSpecificOutput.decision.behavior", v)),
        };
        reply.decision = Some(stricter(reply.decision, said));
        reply.reason = string(d, "message", "hookSpecificOutput.decision.message")?;
        if let Some(u) = d.get("updatedInput") {
            reply.updated_input = Some(object(u, "hookSpecificOutput.decision.updatedInput")?);
        }
    }
    for (map, key, field) in [
        (
            &specific,
            "permissionDecisionReason",
            "hookSpecificOutput.permissionDecisionReason",
        ),
        (&top, "reason", "reason"),
    ] {
        if reply.reason.is_none() {
            reply.reason = string(map, key, field)?;
        }
    }
    for (map, key, field) in [
        (&specific, "updatedInput", "hookSpecificOutput.updatedInput"),
        (&top, "updatedInput", "updatedInput"),
        (&top, "updated_input", "updated_input"),
    ] {
        if reply.updated_input.is_none()
            && let Some(v) = map.get(key).filter(|v| !v.is_null())
        {
            reply.updated_input = Some(object(v, field)?);
        }
    }
    for (map, key, field) in [
        (
            &specific,
            "additionalContext",
            "hookSpecificOutput.additionalContext",
        ),
        (&top, "additionalContext", "additionalContext"),
        (&top, "context", "context"),
    ] {
        if reply.context.is_none() {
            reply.context = string(map, key, field)?;
        }
    }
    if let Some(v) = top.get("continue").filter(|v| !v.is_null()) {
        match v.as_bool() {
            Some(true) => {}
            Some(false) => {
                reply.stop = Some(string(&top, "stopReason", "stopReason")?.unwrap_or_default());
            }
            None => return Err(bad("continue", v)),
        }
    }
    reply.message = string(&top, "systemMessage", "systemMessage")?;
    Ok(Some(reply))
}

/// The stricter of two decisions: deny, then block, then ask, then allow.
fn stricter(a: Option<Said>, b: Said) -> Said {
    let rank = |s: Said| match s {
        Said::Deny => 4,
        Said::Revert => 3,
        Said::Block => 2,
        Said::Ask => 1,
        Said::Allow => 0,
    };
    match a {
        Some(a) if rank(a) >= rank(b) => a,
        _ => b,
    }
}

fn bad(field: &str, value: &Value) -> Unusable {
    let mut value = value.to_string();
    if value.len() > 60 {
        let mut end = 60;
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        value.truncate(end);
        value.push_str("...");
    }
    Unusable::BadField {
        field: field.to_string(),
        value,
    }
}

fn string(map: &Map<String, Value>, key: &str, field: &str) -> Result<Option<String>, Unusable> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(bad(field, other)),
    }
}

fn object(value: &Value, field: &str) -> Result<Map<String, Value>, Unusable> {
    match value {
        Value::Object(m) => Ok(m.clone()),
        other => Err(bad(field, other)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn claude_and_toolbelt_spellings_are_read() {
        let r = parse(r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(r.decision, Some(Said::Deny));
        assert_eq!(r.reason.as_deref(), Some("no"));
        let r = parse(r#"{"decision":"revert","reason":"run make gen"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(r.decision, Some(Said::Revert));
        let r = parse(r#"{"hookSpecificOutput":{"updatedInput":{"command":"echo rewritten"},"additionalContext":"note"}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(r.updated_input.unwrap()["command"], "echo rewritten");
        assert_eq!(r.context.as_deref(), Some("note"));
    }

    #[test]
    fn garbage_is_not_json_and_a_bad_value_names_its_field() {
        assert_eq!(parse("hello {"), Err(Unusable::NotJson));
        assert_eq!(parse(""), Ok(None));
        let e = parse(r#"{"hookSpecificOutput":{"permissionDecision":"maybe"}}"#).unwrap_err();
        assert_eq!(
            e,
            Unusable::BadField {
                field: "hookSpecificOutput.permissionDecision".into(),
                value: "\"maybe\"".into()
            }
        );
        assert!(matches!(
            parse(r#"{"updatedInput": 5}"#),
            Err(Unusable::BadField { .. })
        ));
    }
}
