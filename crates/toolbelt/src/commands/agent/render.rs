//! How a run looks in a terminal: tool lines (`● grep "fn main" — 12 matches`),
//! Think's `💭 Thinking: ...`, the todo list (☐ ◐ ☒), coloured diffs, the token
//! footer and what an approval shows. Pure functions from events to lines, so that
//! the interactive screen and the `-p` progress on standard error look alike.

use std::collections::HashMap;
use std::sync::Arc;

use crossterm::style::Stylize;
use serde_json::Value;
use toolbelt_agent::{AgentEvent, Usage};
use toolbelt_core::Registry;
use toolbelt_core::human::plural;
use toolbelt_core::output::group;

use super::event::{Ask, Preview, Shown};

/// Lines of a diff shown under an edit before the rest is left out.
pub const MAX_DIFF_LINES: usize = 40;
/// Lines of a file's new content shown in an approval.
const MAX_PREVIEW_LINES: usize = 30;

/// Whether lines are coloured (a terminal without `NO_COLOR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint {
    /// Emit colours and styles.
    pub color: bool,
}

impl Paint {
    /// Colours for a terminal on `stream` unless `NO_COLOR` is set.
    pub fn for_terminal(is_terminal: bool) -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Paint {
            color: is_terminal && !no_color,
        }
    }

    pub fn green(self, s: &str) -> String {
        self.styled(s, |s| s.green().to_string())
    }

    pub fn red(self, s: &str) -> String {
        self.styled(s, |s| s.red().to_string())
    }

    pub fn yellow(self, s: &str) -> String {
        self.styled(s, |s| s.yellow().to_string())
    }

    pub fn cyan(self, s: &str) -> String {
        self.styled(s, |s| s.cyan().to_string())
    }

    pub fn dim(self, s: &str) -> String {
        self.styled(s, |s| s.dim().to_string())
    }

    pub fn bold(self, s: &str) -> String {
        self.styled(s, |s| s.bold().to_string())
    }

    pub fn struck(self, s: &str) -> String {
        self.styled(s, |s| s.crossed_out().dim().to_string())
    }

    fn styled(self, s: &str, f: impl Fn(&str) -> String) -> String {
        if self.color && !s.is_empty() {
            f(s)
        } else {
            s.to_string()
        }
    }
}

/// One finished call: `● grep "fn main" — 12 matches`, the dot green for success,
/// yellow for partial, red for an error.
pub fn tool_line(p: Paint, call: &str, status: &str, result: &str) -> String {
    let dot = match status {
        "error" => p.red("●"),
        "partial" => p.yellow("●"),
        _ => p.green("●"),
    };
    if result.is_empty() {
        format!("{dot} {}", p.bold(call))
    } else {
        format!("{dot} {} {}", p.bold(call), p.dim(&format!("— {result}")))
    }
}

/// A thought (`think`'s event) as `💭 Thinking: ...` (the tool already says it
/// that way; a bare thought gets the prefix).
pub fn thought_line(p: Paint, message: &str) -> String {
    let message = message.trim();
    let text = if message.starts_with('💭') {
        message.to_string()
    } else {
        format!("💭 Thinking: {message}")
    };
    p.dim(&text)
}

/// The todo list of a todo tool's result (`data.todos`), drawn as checkboxes:
/// `☐ pending`, `◐ in progress` (bold), `☒ done` (struck through). `None` when the
/// data holds no list.
pub fn todo_lines(p: Paint, data: &Value) -> Option<Vec<String>> {
    let todos = data.get("todos")?.as_array()?;
    let mut out = Vec::with_capacity(todos.len());
    for todo in todos {
        let title = todo
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let status = todo
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.push(match status {
            "Done" => format!("  ☒ {}", p.struck(title)),
            "In Progress" => format!("  ◐ {}", p.bold(title)),
            _ => format!("  ☐ {title}"),
        });
    }
    Some(out)
}

/// The diff an edit's result carries (`data.diff`), coloured: additions green,
/// removals red, hunk headers cyan; at most `max` lines, then how many were left
/// out.
pub fn diff_lines(p: Paint, diff: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = diff.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(max)
        .map(|line| {
            let painted = if line.starts_with("+++") || line.starts_with("---") {
                p.bold(line)
            } else if line.starts_with('+') {
                p.green(line)
            } else if line.starts_with('-') {
                p.red(line)
            } else if line.starts_with("@@") {
                p.cyan(line)
            } else {
                p.dim(line)
            };
            format!("    {painted}")
        })
        .collect();
    if lines.len() > max {
        out.push(p.dim(&format!("    … {} more lines", lines.len() - max)));
    }
    out
}

/// The diff in a result's data, if any.
pub fn data_diff(data: &Value) -> Option<&str> {
    data.get("diff")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
}

/// Tokens of a run: `1,234 in (56 cached) · 78 out`.
pub fn tokens(usage: &Usage) -> String {
    let mut out = format!("{} in", group(usage.input_tokens));
    if usage.cached_tokens > 0 {
        out.push_str(&format!(" ({} cached)", group(usage.cached_tokens)));
    }
    out.push_str(&format!(" · {} out", group(usage.output_tokens)));
    out
}

/// The line after a run: `3 steps · 2 tool calls · tokens 1,234 in · 78 out`.
pub fn footer(steps: usize, tool_calls: usize, usage: &Usage) -> String {
    format!(
        "{} · {} · tokens {}",
        count(steps, "step"),
        count(tool_calls, "tool call"),
        tokens(usage)
    )
}

/// `n` and `what`, plural unless `n` is 1: `1 step`, `3 steps`.
pub fn count(n: usize, what: &str) -> String {
    format!("{n} {}", plural(n as u64, what))
}

/// What an approval shows of a call: the command of `bash`, the change of an edit
/// (old text red, new text green), the new content of a written file, the patch;
/// anything else as its arguments.
pub fn approval_lines(p: Paint, ask: &Ask) -> Vec<String> {
    let args = &ask.arguments;
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let path = text("path").or_else(|| text("file_path")).unwrap_or("");
    let mut out = Vec::new();
    let change = |old: &str, new: &str, out: &mut Vec<String>| {
        for line in old.lines() {
            out.push(format!("    {}", p.red(&format!("-{line}"))));
        }
        for line in new.lines() {
            out.push(format!("    {}", p.green(&format!("+{line}"))));
        }
    };
    match ask.preview {
        Preview::Command => {
            let command = text("command").or(ask.subject.as_deref()).unwrap_or("");
            for line in command.lines() {
                out.push(format!("    {}", p.bold(&format!("$ {line}"))));
            }
        }
        Preview::Edit => {
            out.push(format!("    {}", p.bold(path)));
            change(
                text("old_string").unwrap_or(""),
                text("new_string").unwrap_or(""),
                &mut out,
            );
        }
        Preview::Edits => {
            out.push(format!("    {}", p.bold(path)));
            for edit in args
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let field = |k: &str| edit.get(k).and_then(Value::as_str).unwrap_or("");
                change(field("old_string"), field("new_string"), &mut out);
            }
        }
        Preview::Write => {
            out.push(format!("    {}", p.bold(path)));
            let content = text("content").unwrap_or("");
            let lines: Vec<&str> = content.lines().collect();
            for line in lines.iter().take(MAX_PREVIEW_LINES) {
                out.push(format!("    {}", p.green(&format!("+{line}"))));
            }
            if lines.len() > MAX_PREVIEW_LINES {
                out.push(p.dim(&format!(
                    "    … {} more lines",
                    lines.len() - MAX_PREVIEW_LINES
                )));
            }
        }
        Preview::Patch => {
            out.extend(diff_lines(p, text("patch").unwrap_or(""), MAX_DIFF_LINES));
        }
        Preview::Arguments => {
            if let Some(subject) = &ask.subject {
                out.push(format!("    {}", p.bold(subject)));
            }
            let json = serde_json::to_string(args).unwrap_or_default();
            out.push(format!("    {}", p.dim(&clip(&json, 400))));
        }
    }
    out
}

/// Turns a run's tool events into lines, the same for the interactive screen and
/// the `-p` progress: one line per call when it ends, Think's thought, the todo
/// list, an edit's diff, retries, compactions and notices.
#[derive(Debug)]
pub struct EventLines {
    paint: Paint,
    registry: Arc<Registry>,
    /// The one-line summary of each running call, by call id.
    calls: HashMap<String, String>,
    /// Show diffs under edits.
    diffs: bool,
}

impl EventLines {
    /// Lines painted with `paint`; `registry`'s tools tell how their calls are shown.
    pub fn new(paint: Paint, registry: Arc<Registry>, diffs: bool) -> EventLines {
        EventLines {
            paint,
            registry,
            calls: HashMap::new(),
            diffs,
        }
    }

    /// How `tool` (as exposed or canonical) is shown: by its spec; an unknown
    /// tool as any call.
    fn shown(&self, tool: &str) -> Shown {
        self.registry
            .get(tool)
            .map_or(Shown::Call, |t| Shown::of(t.spec()))
    }

    /// The summary of a call still running, if any.
    pub fn still_running(&self) -> Option<&str> {
        self.calls.values().next().map(String::as_str)
    }

    /// The lines `event` adds (none for the events shown otherwise: text, steps,
    /// usage, the run's end, a running subagent's progress).
    pub fn event(&mut self, event: &AgentEvent) -> Vec<String> {
        let p = self.paint;
        match event {
            AgentEvent::ToolCall {
                call_id, summary, ..
            } => {
                self.calls.insert(call_id.clone(), summary.clone());
                Vec::new()
            }
            AgentEvent::ToolEvent { tool, message, .. } => {
                if self.shown(tool) == Shown::Thought || message.starts_with('💭') {
                    vec![thought_line(p, message)]
                } else {
                    Vec::new()
                }
            }
            AgentEvent::ToolResult {
                call_id,
                tool,
                status,
                summary,
                data,
                ..
            } => {
                let call = self.calls.remove(call_id).unwrap_or_else(|| tool.clone());
                // A thought was its line already.
                if self.shown(tool) == Shown::Thought && status != "error" {
                    return Vec::new();
                }
                let mut out = vec![tool_line(p, &call, status, summary)];
                if let Some(todos) = todo_lines(p, data) {
                    out.extend(todos);
                } else if self.diffs
                    && let Some(diff) = data_diff(data)
                {
                    out.extend(diff_lines(p, diff, MAX_DIFF_LINES));
                }
                out
            }
            AgentEvent::Retrying {
                attempt,
                wait_ms,
                reason,
            } => vec![p.yellow(&format!(
                "↻ retrying (attempt {attempt}) in {:.1}s: {reason}",
                *wait_ms as f64 / 1000.0
            ))],
            AgentEvent::Compacted {
                kind,
                tokens_before,
                tokens_after,
            } => vec![p.dim(&format!(
                "⋯ history compacted ({kind}): about {} → {} tokens",
                group(*tokens_before),
                group(*tokens_after)
            ))],
            AgentEvent::Notice { message } => vec![p.yellow(&format!("! {message}"))],
            // The server is still reading the prompt: a line after 10 s, then every 30 s.
            AgentEvent::Waiting {
                elapsed_ms,
                prompt_tokens,
            } => {
                let secs = elapsed_ms / 1000;
                let tick = (10..15).contains(&secs) || (secs >= 30 && secs % 30 < 5);
                if tick {
                    vec![p.dim(&format!(
                        "⋯ waiting for the model: {secs} s so far (it reads a prompt of about {} tokens first)",
                        group(*prompt_tokens)
                    ))]
                } else {
                    Vec::new()
                }
            }
            // A background subagent that ended: one line, as a finished call.
            AgentEvent::Subagent {
                task_id,
                label,
                background: true,
                state,
                tool_calls,
                ..
            } if matches!(state.as_str(), "done" | "failed" | "stopped") => {
                let status = match state.as_str() {
                    "done" => "success",
                    "failed" => "error",
                    _ => "partial",
                };
                vec![tool_line(
                    p,
                    &format!("spawn \"{label}\" ({task_id})"),
                    status,
                    &format!("{state}, {}", count(*tool_calls, "tool call")),
                )]
            }
            _ => Vec::new(),
        }
    }

    /// True when `tool`'s events are shown as something else (the todo list is
    /// drawn from the result's data).
    pub fn quiet_events(&self, tool: &str) -> bool {
        self.shown(tool) == Shown::Plan
    }
}

/// `text` cut to `max` characters with an ellipsis.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    const PLAIN: Paint = Paint { color: false };

    #[test]
    fn tool_lines_fold_the_result_to_its_summary() {
        assert_eq!(
            tool_line(PLAIN, "grep \"fn main\"", "success", "12 matches"),
            "● grep \"fn main\" — 12 matches"
        );
        assert_eq!(tool_line(PLAIN, "bash ls", "error", ""), "● bash ls");
        assert_eq!(
            thought_line(PLAIN, "💭 Thinking: first the tests"),
            "💭 Thinking: first the tests"
        );
        assert_eq!(
            thought_line(PLAIN, "first the tests"),
            "💭 Thinking: first the tests"
        );
    }

    #[test]
    fn todo_list_as_checkboxes() {
        let data = json!({"todos": [
            {"id": 1, "title": "Read the code", "status": "Done"},
            {"id": 2, "title": "Fix the bug", "status": "In Progress"},
            {"id": 3, "title": "Run the tests", "status": "Pending"},
        ]});
        assert_eq!(
            todo_lines(PLAIN, &data).unwrap(),
            vec!["  ☒ Read the code", "  ◐ Fix the bug", "  ☐ Run the tests"]
        );
        assert_eq!(todo_lines(PLAIN, &json!({"path": "x"})), None);
        let painted = todo_lines(Paint { color: true }, &data).unwrap();
        assert!(painted[0].contains("\u{1b}["), "{painted:?}");
    }

    #[test]
    fn diffs_are_cut_and_coloured() {
        let diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n";
        assert_eq!(
            diff_lines(PLAIN, diff, 4),
            vec![
                "    --- a/x",
                "    +++ b/x",
                "    @@ -1 +1 @@",
                "    -old",
                "    … 1 more lines"
            ]
        );
        let painted = diff_lines(Paint { color: true }, "+new", 10);
        assert_eq!(painted, vec![format!("    {}", "+new".green())]);
    }

    #[test]
    fn footer_counts_tokens() {
        let usage = Usage {
            input_tokens: 12_345,
            output_tokens: 78,
            cached_tokens: 1_000,
            cache_write_tokens: 0,
        };
        assert_eq!(
            footer(3, 1, &usage),
            "3 steps · 1 tool call · tokens 12,345 in (1,000 cached) · 78 out"
        );
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000_000), "1,000,000");
    }

    #[test]
    fn approvals_show_the_command_or_the_change() {
        let ask = Ask {
            tool: "bash".into(),
            preview: Preview::Command,
            subject: Some("git push".into()),
            arguments: json!({"command": "git push"}),
            rule: Some("bash(git push:*)".into()),
        };
        assert_eq!(approval_lines(PLAIN, &ask), vec!["    $ git push"]);
        let ask = Ask {
            tool: "Edit".into(),
            preview: Preview::Edit,
            subject: Some("src/a.rs".into()),
            arguments: json!({"path": "src/a.rs", "old_string": "a\nb", "new_string": "c"}),
            rule: None,
        };
        assert_eq!(
            approval_lines(PLAIN, &ask),
            vec!["    src/a.rs", "    -a", "    -b", "    +c"]
        );
    }
}
