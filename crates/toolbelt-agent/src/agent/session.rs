//! The edges of a run, where the person's hooks are asked: the session's start
//! (`session_start`, whose context goes above the next prompt) and end
//! (`session_end`), the prompt (`user_prompt`: refused, or context below it) and
//! the final answer (`stop`: the turn may go on). A subagent's run meets none of
//! these; the subagent runtime asks `subagent_start` and `subagent_stop`.

use serde_json::{Map, Value, json};
use toolbelt_core::error_chain;
use toolbelt_core::hooks::{HookEvent, HookVerdict};

use super::{Agent, StopCheck, TurnState};
use crate::events::AgentEvent;
use crate::hooks::{self, MAX_STOP_BLOCKS};
use crate::message::Message;
use crate::options::Outcome;
use crate::transcript::Transcript;

impl Agent {
    /// Starts the session at its first turn (or compaction): the transcript,
    /// the `run_started` event, and the `session_start` hooks, whose context
    /// goes above the next prompt (the system prompt stays the same, so every
    /// request of the run begins alike).
    pub(super) async fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        if self.journal.transcript().is_none()
            && let Some(dir) = &self.options.transcript_dir
        {
            match Transcript::create(dir, &self.run_id) {
                Ok(t) => {
                    let sink = self.options.transcript_sink.clone();
                    self.journal.set_transcript(Some(t.with_sink(sink)));
                }
                Err(e) => tracing::warn!("no transcript for this run: {}", error_chain(&e)),
            }
            self.record(&json!({
                "type": "run",
                "run_id": self.run_id,
                "provider": self.provider.kind().as_str(),
                "model": self.provider.model(),
                "protocol": self.options.protocol.as_str(),
                "constraint": self.constraint_name(),
                "cwd": self.registry.session().cwd().display().to_string(),
                "system": self.system,
            }));
        }
        self.emit(AgentEvent::RunStarted {
            run_id: self.run_id.clone(),
            provider: self.provider.kind().as_str().to_string(),
            model: self.provider.model().to_string(),
            protocol: self.options.protocol.as_str().to_string(),
            constraint: self.constraint_name().to_string(),
            resumed: self.resumed,
        });
        if self.subagent {
            return;
        }
        let source = if self.resumed { "resume" } else { "startup" };
        let model = self.provider.model().to_string();
        if let Some(verdict) = self
            .ask_hooks(HookEvent::SessionStart, || {
                hooks::fields([("source", json!(source)), ("model", json!(model))])
            })
            .await
        {
            self.start_notes = hooks::context_blocks(&self.registry, &verdict.context);
        }
    }

    /// Ends the session for the person's hooks: asks the `session_end` hooks
    /// once, with `reason` (the last run's [`Outcome::as_str`], or what ended the
    /// session: `exit`, `clear`); later calls do nothing, as does a session that
    /// never started. Front ends call it when the person is done: `-p` after its
    /// run, the screen when it closes or before [`Agent::clear`]. What the hooks
    /// decide is ignored; their runs are recorded.
    pub async fn end(&mut self, reason: &str) {
        if !self.started || self.ended || self.subagent {
            return;
        }
        self.ended = true;
        self.ask_hooks(HookEvent::SessionEnd, || {
            hooks::fields([("reason", json!(reason))])
        })
        .await;
    }

    /// The prompt as the model reads it: the `session_start` hooks' context
    /// above it (at the session's first prompt), the `user_prompt` hooks' below.
    /// `Err` when a `user_prompt` hook refuses it.
    pub(super) async fn prompt_hooks(&mut self, prompt: &str) -> Result<String, (Outcome, String)> {
        let mut after = Vec::new();
        if !self.subagent
            && let Some(verdict) = self
                .ask_hooks(HookEvent::UserPrompt, || {
                    hooks::fields([("prompt", json!(prompt))])
                })
                .await
        {
            if let Some((hook, reason)) = hooks::refusal(&verdict.decision) {
                return Err((
                    Outcome::PromptDenied,
                    format!("hook '{hook}' refused the prompt: {reason}"),
                ));
            }
            after = hooks::context_blocks(&self.registry, &verdict.context);
        }
        let before = std::mem::take(&mut self.start_notes);
        Ok(hooks::with_notes(&before, prompt, &after))
    }

    /// After a final answer: the `stop` hooks may keep the turn going, their
    /// reason the model's next message, at most [`MAX_STOP_BLOCKS`] times in a
    /// row.
    pub(super) async fn stop_hooks(&mut self, answer: &str, state: &mut TurnState) -> StopCheck {
        if self.subagent {
            return StopCheck::End;
        }
        let active = state.stop_blocks > 0;
        let Some(verdict) = self
            .ask_hooks(HookEvent::Stop, || {
                hooks::fields([
                    ("stop_hook_active", json!(active)),
                    ("last_message", json!(answer)),
                ])
            })
            .await
        else {
            return StopCheck::End;
        };
        let Some((hook, reason)) = hooks::refusal(&verdict.decision) else {
            return StopCheck::End;
        };
        state.stop_blocks += 1;
        if state.stop_blocks > MAX_STOP_BLOCKS {
            return StopCheck::Limit(hooks::stop_limit_message(hook, reason));
        }
        self.notice(format!(
            "stop hook '{hook}' kept the turn going ({} of {MAX_STOP_BLOCKS}): {reason}",
            state.stop_blocks
        ));
        self.push(Message::user(hooks::stop_block_prompt(hook, reason)));
        StopCheck::GoOn
    }

    /// Asks the hooks of `event` (with the input `extra` builds), records what
    /// they said and tells the person of the runs that went wrong; `None` when
    /// no hook wants the event. The origin is the current turn's.
    pub(crate) async fn ask_hooks(
        &mut self,
        event: HookEvent,
        extra: impl FnOnce() -> Map<String, Value>,
    ) -> Option<HookVerdict> {
        let origin = self.origin();
        let (input, verdict) = hooks::ask(&self.registry, event, &origin, extra).await?;
        hooks::report(&mut self.journal, event, &input, &verdict);
        Some(verdict)
    }

    /// Makes this a subagent's run: its start and end are hook events of the
    /// subagent runtime, and its answers meet no `stop` hook.
    pub(crate) fn set_subagent(&mut self) {
        self.subagent = true;
    }
}
