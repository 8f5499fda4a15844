//! Keeping the history inside the context window: old large tool results shortened
//! first (their full text stays readable with `read_output`), then older turns
//! summarised, and as a last resort left out.
//!
//! [`Window`] measures how full the history makes the model's context window;
//! [`Compaction`] decides when to compact and does it, on the agent's history, its
//! journal and its provider (for the summary). The loop asks before each model
//! call ([`Compaction::fit`]), after the provider said the conversation is too long
//! ([`Compaction::after_overflow`]) and when the person asks
//! ([`Compaction::on_request`]). Before it compacts, the person's `pre_compact`
//! hooks are asked; what they add is kept in the summary's instructions.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_core::hooks::HookEvent;
use toolbelt_core::output::{OutputBudget, apply_budget, truncate_in_memory};
use toolbelt_core::{Origin, Registry, error_chain};

use crate::events::AgentEvent;
use crate::hooks;
use crate::journal::Journal;
use crate::message::{Message, Usage};
use crate::provider::{DEFAULT_MAX_TOKENS, ModelRequest, Provider, StreamEvent};
use crate::tool_names::{READ_OUTPUT, TODO_TOOLS};

/// The history is compacted when a call would fill this share of the budget...
const COMPACT_AT: f64 = 0.85;
/// ... down to this share.
const COMPACT_TO: f64 = 0.6;
/// After the provider refused the conversation as too long: down to this share.
const AFTER_OVERFLOW_TO: f64 = 0.4;
/// When the person asks (`/compact`): down to this share.
const ON_REQUEST_TO: f64 = 0.3;
/// The last messages (about three steps) are never shortened.
const KEEP_RECENT_MESSAGES: usize = 6;
/// The longest summary asked for.
const SUMMARY_MAX_TOKENS: u32 = 2_048;
/// Tokens per character until the provider's usage tells.
const DEFAULT_TOKENS_PER_CHAR: f64 = 1.0 / 3.5;
/// The smallest context window assumed, in tokens.
const MIN_CONTEXT_WINDOW: u64 = 1_024;
/// Tool results longer than this are shortened when the context fills.
const SHORTEN_OVER_CHARS: usize = 2_000;
/// What a shortened result keeps (head, tail and error lines within it).
const SHORTENED_BYTES: usize = 1_200;
/// Each message is cut to this in the text the summariser reads.
const SUMMARY_INPUT_MESSAGE_CHARS: usize = 3_000;
/// The summariser reads at most this much of the old conversation (its tail).
const SUMMARY_INPUT_CHARS: usize = 120_000;
/// A tool result that was shortened.
#[derive(Debug, Clone, Serialize)]
struct Shortened {
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
fn shorten_old_results(
    messages: &mut [Message],
    keep_from: usize,
    spill_dir: &Path,
    reader: Option<Arc<str>>,
) -> Vec<Shortened> {
    let budget = OutputBudget::with_max_bytes(SHORTENED_BYTES).with_reader(reader);
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
            "\n[This older result was shortened to save context; read it whole with {READ_OUTPUT} {{\"output_id\": \"{id}\"}}.]"
        ),
        None => "\n[This older result was shortened to save context.]".to_string(),
    };
    (format!("{}{note}", captured.text), captured.output_id)
}

/// Where to cut the history so that the messages from the cut on are about
/// `keep_chars` characters: never inside a step (the kept part starts with an
/// assistant or a user message, never with tool results), and never after `limit`.
/// `None` when no cut leaves anything to summarise.
fn cut_point(messages: &[Message], keep_chars: usize, limit: usize) -> Option<usize> {
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
fn render_for_summary(messages: &[Message]) -> String {
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
const SUMMARY_SYSTEM: &str = "You condense the earlier part of a conversation between a user and a \
coding agent so the agent can go on with its work without it. Write a concise summary: the user's \
requests, what the agent did and found (files read or changed with their paths, commands run and \
their outcomes, errors met and how they were solved), decisions taken, and what remains to be done. \
Keep exact names, paths, identifiers and error messages. Write plain text, no preamble.";

/// What the summary's instructions say above the `pre_compact` hooks' context.
const HOOK_NOTES_HEAD: &str = "The user's hooks ask that the summary keep the following in mind:";

/// How a compaction was started, as the `pre_compact` hooks are told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// The history grew too long for the window.
    Auto,
    /// The person asked (`/compact`).
    Manual,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
        }
    }
}

/// The text of the latest todo-list result in `messages`, found by `is_todo_tool`.
fn latest_todo_text(messages: &[Message], is_todo_tool: impl Fn(&str) -> bool) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        Message::Tool { results } => results
            .iter()
            .rev()
            .find(|r| !r.is_error && is_todo_tool(&r.name))
            .map(|r| r.content.clone()),
        _ => None,
    })
}

/// The model's context window, and how full a history makes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// The model's context window, in tokens.
    context_window: u64,
    /// Characters of the system prompt and the tools, sent with every call.
    fixed_chars: usize,
    /// Tokens per character, learnt from the provider's usage.
    tokens_per_char: Option<f64>,
}

impl Window {
    /// A window of `context_window` tokens, `fixed_chars` of which every call sends
    /// besides the history.
    pub(crate) fn new(context_window: u64, fixed_chars: usize) -> Window {
        Window {
            context_window,
            fixed_chars,
            tokens_per_char: None,
        }
    }

    /// Tokens the history may use: the window less room for the answer.
    pub(crate) fn budget_tokens(&self) -> u64 {
        let window = self.context_window.max(MIN_CONTEXT_WINDOW);
        let reserve = (window / 4).min(u64::from(DEFAULT_MAX_TOKENS));
        window - reserve
    }

    /// Characters of everything sent with a call.
    pub(crate) fn context_chars(&self, messages: &[Message]) -> usize {
        self.fixed_chars + messages.iter().map(Message::char_len).sum::<usize>()
    }

    /// The tokens a call with `messages` would send, estimated.
    pub(crate) fn estimate_tokens(&self, messages: &[Message]) -> u64 {
        (self.context_chars(messages) as f64 * self.ratio()).ceil() as u64
    }

    /// Learns the tokens per character from a call that sent `messages` and was
    /// counted as `input_tokens`.
    pub(crate) fn learn(&mut self, input_tokens: u64, messages: &[Message]) {
        if input_tokens == 0 {
            return;
        }
        let chars = self.context_chars(messages);
        if chars > 0 {
            let ratio = input_tokens as f64 / chars as f64;
            self.tokens_per_char = Some(ratio.clamp(0.1, 1.0));
        }
    }

    /// Forgets what was learnt (a new conversation).
    pub(crate) fn forget(&mut self) {
        self.tokens_per_char = None;
    }

    fn ratio(&self) -> f64 {
        self.tokens_per_char.unwrap_or(DEFAULT_TOKENS_PER_CHAR)
    }
}

/// One compaction of an agent's history, on the parts of the agent it needs.
pub(crate) struct Compaction<'a> {
    /// Where the run comes from, as the `pre_compact` hooks are told.
    pub(crate) origin: Origin,
    /// The history.
    pub(crate) messages: &'a mut Vec<Message>,
    /// Where the compaction is recorded and reported.
    pub(crate) journal: &'a mut Journal,
    /// The run's usage, which the summary's call adds to.
    pub(crate) usage: &'a mut Usage,
    /// The model that writes the summary.
    pub(crate) provider: &'a dyn Provider,
    /// The tools: their spill folder, and the todo tools' aliases.
    pub(crate) registry: &'a Registry,
    /// The context window.
    pub(crate) window: Window,
}

impl Compaction<'_> {
    /// Before a model call: when the call would fill more than [`COMPACT_AT`] of
    /// the budget, compacts down to [`COMPACT_TO`]. The turn's task is the message
    /// at `turn_start`.
    pub(crate) async fn fit(self, turn_start: usize, cancel: &CancellationToken) {
        let budget = self.window.budget_tokens();
        if (self.estimate_tokens() as f64) <= budget as f64 * COMPACT_AT {
            return;
        }
        let target = (budget as f64 * COMPACT_TO) as u64;
        self.down_to(target, turn_start, cancel, false, Trigger::Auto)
            .await;
    }

    /// After the provider refused the conversation as too long: compacts down to
    /// [`AFTER_OVERFLOW_TO`] of the budget, summarising older turns.
    pub(crate) async fn after_overflow(self, turn_start: usize, cancel: &CancellationToken) {
        let target = (self.window.budget_tokens() as f64 * AFTER_OVERFLOW_TO) as u64;
        self.down_to(target, turn_start, cancel, true, Trigger::Auto)
            .await;
    }

    /// When the person asks: compacts down to [`ON_REQUEST_TO`] of the budget,
    /// summarising older turns. The task kept is the person's latest message.
    pub(crate) async fn on_request(self, cancel: &CancellationToken) {
        let target = (self.window.budget_tokens() as f64 * ON_REQUEST_TO) as u64;
        let turn_start = self
            .messages
            .iter()
            .rposition(
                |m| matches!(m, Message::User { content } if !content.starts_with("Observation")),
            )
            .unwrap_or(0);
        self.down_to(target, turn_start, cancel, true, Trigger::Manual)
            .await;
    }

    fn estimate_tokens(&self) -> u64 {
        self.window.estimate_tokens(self.messages)
    }

    /// Makes the history fit `target` tokens: old large tool results shortened,
    /// then older turns summarised, then (if that is not enough) left out. The
    /// task of the turn (the message at `turn_start`), the latest todo list and the
    /// last steps stay intact. `force` summarises even when shortening was enough.
    async fn down_to(
        mut self,
        target: u64,
        turn_start: usize,
        cancel: &CancellationToken,
        force: bool,
        trigger: Trigger,
    ) {
        let notes = self.pre_compact(trigger).await;
        let before = self.estimate_tokens();
        // 1. Old large tool results, all but the last steps'.
        let keep_from = self.messages.len().saturating_sub(KEEP_RECENT_MESSAGES);
        let spill_dir = self.registry.session().spill_dir();
        let reader = self.registry.saved_output_reader();
        let shortened = shorten_old_results(self.messages, keep_from, &spill_dir, reader);
        if !shortened.is_empty() {
            let after = self.estimate_tokens();
            self.journal.record(&json!({
                "type": "compaction",
                "kind": "tool_results",
                "tokens_before": before,
                "tokens_after": after,
                "shortened": shortened,
            }));
            self.journal.emit(AgentEvent::Compacted {
                kind: "tool_results".into(),
                tokens_before: before,
                tokens_after: after,
            });
        }
        if self.estimate_tokens() <= target && !force {
            self.record_reset();
            return;
        }
        // 2. Older turns summarised by the model.
        self.summarise_older(target, turn_start, &notes, cancel)
            .await;
        // 3. Still too big: leave out the oldest steps, keeping the first message
        // (the summary or the task) and the last step.
        let budget = self.window.budget_tokens();
        let mut dropped = 0usize;
        let before_drop = self.estimate_tokens();
        while self.estimate_tokens() > budget && self.messages.len() > 3 {
            // Remove message 1 and any tool results that would start the rest.
            self.messages.remove(1);
            dropped += 1;
            while self.messages.len() > 2
                && matches!(self.messages.get(1), Some(Message::Tool { .. }))
            {
                self.messages.remove(1);
                dropped += 1;
            }
        }
        if dropped > 0 {
            let after = self.estimate_tokens();
            self.journal.record(&json!({
                "type": "compaction",
                "kind": "dropped",
                "messages_dropped": dropped,
                "tokens_before": before_drop,
                "tokens_after": after,
            }));
            self.journal.emit(AgentEvent::Compacted {
                kind: "dropped".into(),
                tokens_before: before_drop,
                tokens_after: after,
            });
        }
        self.record_reset();
    }

    /// Replaces the older turns by one message: their summary (or, when the model
    /// gives none, a note that they were left out), the turn's task when it was
    /// among them, and the todo list as it last stood.
    async fn summarise_older(
        &mut self,
        target: u64,
        turn_start: usize,
        notes: &[String],
        cancel: &CancellationToken,
    ) {
        let keep_chars = ((target as f64 * 0.5) / self.window.ratio()) as usize;
        let keep_chars = keep_chars.saturating_sub(self.window.fixed_chars.min(keep_chars / 2));
        let task = self.messages.get(turn_start).cloned();
        let before = self.estimate_tokens();
        let Some(cut) = cut_point(
            self.messages,
            keep_chars,
            self.messages.len().saturating_sub(1),
        ) else {
            return;
        };
        let old = self.messages[..cut].to_vec();
        let todo = latest_todo_text(&old, |name| {
            self.registry
                .resolve(name)
                .is_some_and(|canonical| TODO_TOOLS.contains(&canonical))
        });
        let summary = self.summarise(&old, notes, cancel).await;
        let mut head =
            String::from("[The earlier conversation was condensed to fit the context window.]\n\n");
        let kind = match &summary {
            Some(text) => {
                head.push_str("Summary of it:\n");
                head.push_str(text.trim());
                "summary"
            }
            None => {
                head.push_str("(It could not be summarised; its older part was left out.)");
                "dropped"
            }
        };
        if turn_start < cut
            && let Some(Message::User { content }) = &task
        {
            head.push_str("\n\nThe current task, as the user gave it:\n");
            head.push_str(content);
        }
        if let Some(todo) = todo {
            head.push_str("\n\nThe todo list as it last stood:\n");
            head.push_str(&todo);
        }
        let mut messages = vec![Message::user(head)];
        messages.extend(self.messages.drain(cut..));
        *self.messages = messages;
        let after = self.estimate_tokens();
        self.journal.record(&json!({
            "type": "compaction",
            "kind": kind,
            "messages_replaced": cut,
            "tokens_before": before,
            "tokens_after": after,
        }));
        self.journal.emit(AgentEvent::Compacted {
            kind: kind.into(),
            tokens_before: before,
            tokens_after: after,
        });
    }

    /// Writes the whole history to the transcript, so a resumed run starts from it.
    fn record_reset(&mut self) {
        let messages = self.messages.clone();
        self.journal
            .record(&json!({"type": "reset", "messages": messages}));
    }

    /// Asks the `pre_compact` hooks: what they add for the summary (each
    /// `[hook 'name'] text`). Their decisions are ignored: the history must fit.
    async fn pre_compact(&mut self, trigger: Trigger) -> Vec<String> {
        let Some((input, verdict)) =
            hooks::ask(self.registry, HookEvent::PreCompact, &self.origin, || {
                hooks::fields([("trigger", json!(trigger.as_str()))])
            })
            .await
        else {
            return Vec::new();
        };
        hooks::report(self.journal, HookEvent::PreCompact, &input, &verdict);
        hooks::context_blocks(self.registry, &verdict.context)
    }

    /// Asks the model for a summary of `old`, keeping `notes` (the
    /// `pre_compact` hooks' context) in its instructions; `None` when it cannot
    /// give one.
    async fn summarise(
        &mut self,
        old: &[Message],
        notes: &[String],
        cancel: &CancellationToken,
    ) -> Option<String> {
        let mut system = SUMMARY_SYSTEM.to_string();
        if !notes.is_empty() {
            system.push_str("\n\n");
            system.push_str(HOOK_NOTES_HEAD);
            for note in notes {
                system.push_str("\n\n");
                system.push_str(note);
            }
        }
        let request = ModelRequest {
            system,
            messages: vec![Message::user(format!(
                "The conversation so far:\n\n{}\n\nWrite the summary now.",
                render_for_summary(old)
            ))],
            tools: None,
            max_tokens: Some(SUMMARY_MAX_TOKENS),
            stop: Vec::new(),
            constraint: None,
        };
        let sink = |_: StreamEvent| {};
        match self.provider.complete(&request, &sink, cancel).await {
            Ok(r) if !r.content.trim().is_empty() => {
                self.usage.add(&r.usage);
                Some(r.content)
            }
            Ok(_) => None,
            Err(e) => {
                self.journal.notice(format!(
                    "the history could not be summarised: {}",
                    error_chain(&e)
                ));
                None
            }
        }
    }
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
        let done = shorten_old_results(&mut messages, 3, dir.path(), Some("read_output".into()));
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
