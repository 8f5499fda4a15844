//! Keeping the history inside the context window: old large tool results shortened
//! first (their full text stays readable with `read_output`), then older turns
//! summarised, and as a last resort left out.

use std::path::Path;

use serde::Serialize;
use toolbelt_core::output::{OutputBudget, apply_budget, truncate_in_memory};

use crate::message::Message;

/// Tool results longer than this are shortened when the context fills.
pub(crate) const SHORTEN_OVER_CHARS: usize = 2_000;
/// What a shortened result keeps (head, tail and error lines within it).
pub(crate) const SHORTENED_BYTES: usize = 1_200;
/// Each message is cut to this in the text the summariser reads.
const SUMMARY_INPUT_MESSAGE_CHARS: usize = 3_000;
/// The summariser reads at most this much of the old conversation (its tail).
const SUMMARY_INPUT_CHARS: usize = 120_000;

/// A tool result that was shortened.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Shortened {
    /// Its message's index.
    pub index: usize,
    /// The call it answers (empty for a text-protocol observation).
    pub call_id: String,
    /// Its length before and after.
    pub chars_before: usize,
    pub chars_after: usize,
    /// Where its full text can be read (`read_output`).
    pub output_id: Option<String>,
}

/// Shortens tool results (and text-protocol observations) in `messages[..keep_from]`
/// longer than [`SHORTEN_OVER_CHARS`] to their head, tail and error lines; the
/// full text goes to a spill file in `spill_dir` when it can.
pub(crate) fn shorten_old_results(
    messages: &mut [Message],
    keep_from: usize,
    spill_dir: &Path,
) -> Vec<Shortened> {
    let budget = OutputBudget::with_max_bytes(SHORTENED_BYTES);
    let mut done = Vec::new();
    let end = keep_from.min(messages.len());
    for (index, message) in messages[..end].iter_mut().enumerate() {
        match message {
            Message::Tool { results } => {
                for r in results.iter_mut() {
                    if r.content.len() > SHORTEN_OVER_CHARS {
                        let (text, output_id) = shorten(&r.content, &budget, spill_dir);
                        done.push(Shortened {
                            index,
                            call_id: r.call_id.clone(),
                            chars_before: r.content.len(),
                            chars_after: text.len(),
                            output_id,
                        });
                        r.content = text;
                    }
                }
            }
            Message::User { content }
                if content.starts_with("Observation") && content.len() > SHORTEN_OVER_CHARS =>
            {
                let (text, output_id) = shorten(content, &budget, spill_dir);
                done.push(Shortened {
                    index,
                    call_id: String::new(),
                    chars_before: content.len(),
                    chars_after: text.len(),
                    output_id,
                });
                *content = text;
            }
            _ => {}
        }
    }
    done
}

fn shorten(text: &str, budget: &OutputBudget, spill_dir: &Path) -> (String, Option<String>) {
    let captured = match apply_budget(text, budget, spill_dir) {
        Ok(c) => c,
        Err(_) => truncate_in_memory(text, budget),
    };
    let note = match &captured.output_id {
        Some(id) => format!(
            "\n[This older result was shortened to save context; read it whole with read_output {{\"output_id\": \"{id}\"}}.]"
        ),
        None => "\n[This older result was shortened to save context.]".to_string(),
    };
    (format!("{}{note}", captured.text), captured.output_id)
}

/// Where to cut the history so that the messages from the cut on are about
/// `keep_chars` characters: never inside a step (the kept part starts with an
/// assistant or a user message, never with tool results), and never after `limit`.
/// `None` when no cut leaves anything to summarise.
pub(crate) fn cut_point(messages: &[Message], keep_chars: usize, limit: usize) -> Option<usize> {
    let limit = limit.min(messages.len());
    let mut kept = 0usize;
    let mut cut = messages.len();
    for i in (0..messages.len()).rev() {
        kept += messages[i].char_len();
        if kept > keep_chars {
            break;
        }
        cut = i;
    }
    let mut cut = cut.min(limit);
    while cut > 0 && matches!(messages.get(cut), Some(Message::Tool { .. })) {
        cut -= 1;
    }
    (cut > 0).then_some(cut)
}

/// The old conversation as text for the summariser.
pub(crate) fn render_for_summary(messages: &[Message]) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(messages.len());
    for m in messages {
        let part = match m {
            Message::User { content } => format!("USER: {}", clip(content)),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut s = format!("ASSISTANT: {}", clip(content));
                for c in tool_calls {
                    s.push_str(&format!("\n  called {} {}", c.name, clip(&c.arguments)));
                }
                s
            }
            Message::Tool { results } => results
                .iter()
                .map(|r| {
                    format!(
                        "TOOL RESULT ({}{}): {}",
                        r.name,
                        if r.is_error { ", error" } else { "" },
                        clip(&r.content)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
        };
        parts.push(part);
    }
    let mut text = parts.join("\n\n");
    if text.len() > SUMMARY_INPUT_CHARS {
        let mut start = text.len() - SUMMARY_INPUT_CHARS;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text = format!("[... earlier part left out ...]\n{}", &text[start..]);
    }
    text
}

fn clip(text: &str) -> String {
    if text.len() <= SUMMARY_INPUT_MESSAGE_CHARS {
        return text.to_string();
    }
    let mut end = SUMMARY_INPUT_MESSAGE_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{} [... {} more characters]",
        &text[..end],
        text.len() - end
    )
}

/// The instructions of a summary request.
pub(crate) const SUMMARY_SYSTEM: &str = "You condense the earlier part of a conversation between a user and a \
coding agent so the agent can go on with its work without it. Write a concise summary: the user's \
requests, what the agent did and found (files read or changed with their paths, commands run and \
their outcomes, errors met and how they were solved), decisions taken, and what remains to be done. \
Keep exact names, paths, identifiers and error messages. Write plain text, no preamble.";

/// The text of the latest todo-list result in `messages`, found by `is_todo_tool`.
pub(crate) fn latest_todo_text(
    messages: &[Message],
    is_todo_tool: impl Fn(&str) -> bool,
) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        Message::Tool { results } => results
            .iter()
            .rev()
            .find(|r| !r.is_error && is_todo_tool(&r.name))
            .map(|r| r.content.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ModelCall, ToolOutput};

    fn step(i: usize, result_len: usize) -> Vec<Message> {
        vec![
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ModelCall {
                    id: format!("c{i}"),
                    name: "bash".into(),
                    arguments: "{}".into(),
                }],
            },
            Message::Tool {
                results: vec![ToolOutput {
                    call_id: format!("c{i}"),
                    name: "bash".into(),
                    content: "x".repeat(result_len),
                    is_error: false,
                }],
            },
        ]
    }

    #[test]
    fn the_cut_never_separates_calls_from_their_results() {
        let mut messages = vec![Message::user("task")];
        for i in 0..10 {
            messages.extend(step(i, 100));
        }
        for keep in 0..2_000 {
            if let Some(cut) = cut_point(&messages, keep, messages.len()) {
                assert!(
                    !matches!(messages.get(cut), Some(Message::Tool { .. })),
                    "keep {keep}"
                );
                assert!(cut > 0);
            }
        }
    }

    #[test]
    fn old_large_results_are_shortened_and_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let mut messages = vec![Message::user("task")];
        messages.extend(step(0, 50_000));
        messages.extend(step(1, 50_000));
        let done = shorten_old_results(&mut messages, 3, dir.path());
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].call_id, "c0");
        let Message::Tool { results } = &messages[2] else {
            panic!()
        };
        assert!(results[0].content.len() < 2_000);
        assert!(results[0].content.contains("read_output"));
        let Message::Tool { results } = &messages[4] else {
            panic!()
        };
        assert_eq!(results[0].content.len(), 50_000);
    }
}
