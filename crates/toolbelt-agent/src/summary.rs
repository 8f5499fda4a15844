//! Calls and results in one line, as a person reads them: `grep "fn main"`,
//! `Think: "..."`, `12 matches`, `exit 1`.

use serde_json::Value;
use toolbelt_core::{Envelope, Status};

use crate::tool_names::{SPAWN, TASK, THINK};

/// The longest summary, in characters.
const MAX_SUMMARY_CHARS: usize = 100;

/// Arguments that say what a call is about, most telling first.
const KEY_ARGUMENTS: &[&str] = &[
    "command",
    "cmd",
    "pattern",
    "query",
    "url",
    "path",
    "file_path",
    "output_id",
    "shell_id",
    "title",
    "name",
    "content",
    "prompt",
];

/// A call in one line, by its key argument: `grep "fn main" in src`, `bash cargo
/// test`, `read_file src/main.rs`, `Think: "..."`: what the call does, not a JSON blob.
pub fn call_summary(tool: &str, arguments: &Value) -> String {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(one_line);
    let lower = tool.to_ascii_lowercase();
    if lower == THINK {
        let thought = text("thought").unwrap_or_default();
        return clip(&format!("Think: \"{thought}\""));
    }
    if lower == TASK || lower == SPAWN {
        let what = text("description")
            .or_else(|| text("label"))
            .or_else(|| text("task"))
            .unwrap_or_default();
        return clip(&format!("{tool} \"{what}\""));
    }
    let mut out = tool.to_string();
    if let Some(pattern) = text("pattern") {
        out.push_str(&format!(" \"{pattern}\""));
        if let Some(path) = text("path").filter(|p| !p.is_empty() && p != ".") {
            out.push_str(&format!(" in {path}"));
        }
        return clip(&out);
    }
    if let Some(query) = text("query") {
        return clip(&format!("{out} \"{query}\""));
    }
    for key in KEY_ARGUMENTS {
        if let Some(value) = text(key).filter(|v| !v.is_empty()) {
            return clip(&format!("{out} {value}"));
        }
    }
    for key in ["todos", "edits", "calls", "merge"] {
        if let Some(items) = arguments.get(key).and_then(Value::as_array) {
            return clip(&format!("{out} ({} {key})", items.len()));
        }
    }
    // Anything else: the first string argument.
    if let Some(first) = arguments
        .as_object()
        .and_then(|o| o.values().find_map(Value::as_str))
    {
        return clip(&format!("{out} {}", one_line(first)));
    }
    out
}

/// A result in a few words: the error code and message, or the tool's counters
/// (`12 matches`, `exit 1`, `3 files`), or the first line of its text.
pub fn result_summary(env: &Envelope) -> String {
    if env.status == Status::Error {
        let message = env
            .error
            .as_ref()
            .map(|e| e.message.as_str())
            .unwrap_or(env.text.as_str());
        let code = env
            .error_code()
            .map(|c| c.as_str().to_string())
            .unwrap_or_else(|| "error".into());
        return clip(&format!("{code}: {}", one_line(message)));
    }
    let counters = &env.stats.counters;
    let count = |key: &str| counters.get(key).and_then(Value::as_u64);
    let mut parts: Vec<String> = Vec::new();
    if let Some(code) = counters.get("exit_code").and_then(Value::as_i64) {
        parts.push(format!("exit {code}"));
    }
    for (key, one, many) in [
        ("matches", "match", "matches"),
        ("replacements", "replacement", "replacements"),
        ("edits", "edit", "edits"),
        ("files", "file", "files"),
        ("entries", "entry", "entries"),
        ("results", "result", "results"),
        ("lines", "line", "lines"),
        ("tool_calls", "tool call", "tool calls"),
    ] {
        if let Some(n) = count(key) {
            parts.push(format!("{n} {}", if n == 1 { one } else { many }));
            break;
        }
    }
    if let (Some(added), Some(removed)) = (count("added_lines"), count("removed_lines")) {
        parts.push(format!("+{added} -{removed}"));
    }
    if env.status == Status::Partial {
        parts.push("truncated".into());
    }
    if parts.is_empty() {
        let first = env
            .text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return clip(&one_line(first));
    }
    parts.join(", ")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_SUMMARY_CHARS {
        return s.to_string();
    }
    let cut: String = s.chars().take(MAX_SUMMARY_CHARS - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolbelt_core::ErrorCode;

    use super::*;

    #[test]
    fn calls_are_shown_by_their_key_argument() {
        assert_eq!(
            call_summary("grep", &json!({"pattern": "fn main", "path": "src"})),
            "grep \"fn main\" in src"
        );
        assert_eq!(
            call_summary("think", &json!({"thought": "the test\nfails"})),
            "Think: \"the test fails\""
        );
        assert_eq!(
            call_summary("bash", &json!({"command": "cargo test"})),
            "bash cargo test"
        );
        assert_eq!(
            call_summary("Read", &json!({"file_path": "a.rs"})),
            "Read a.rs"
        );
        assert_eq!(
            call_summary("set_todo_list", &json!({"todos": [{}, {}]})),
            "set_todo_list (2 todos)"
        );
        assert_eq!(
            call_summary(
                "task",
                &json!({"description": "find the config loader", "prompt": "..."})
            ),
            "task \"find the config loader\""
        );
        assert!(
            call_summary("bash", &json!({"command": "x".repeat(500)}))
                .chars()
                .count()
                <= 100
        );
    }

    #[test]
    fn results_are_shown_by_their_counters() {
        let env = Envelope::success(json!({}), "a\nb").with_stat("matches", 12);
        assert_eq!(result_summary(&env), "12 matches");
        let env = Envelope::success(json!({}), "ok").with_stat("exit_code", 1);
        assert_eq!(result_summary(&env), "exit 1");
        let env = Envelope::error(ErrorCode::NotFound, "no such file: a.rs", None);
        assert_eq!(result_summary(&env), "NOT_FOUND: no such file: a.rs");
        let env = Envelope::success(json!({}), "\n  first line\nsecond");
        assert_eq!(result_summary(&env), "first line");
    }
}
