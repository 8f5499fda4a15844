//! The person's hooks at the edges of a run: what the agent asks the registry's
//! [`CallHooks`](toolbelt_core::hooks::CallHooks) at `session_start`,
//! `user_prompt`, `stop`, `pre_compact`, `subagent_start`, `subagent_stop` and
//! `session_end` (the registry asks them around every call itself).
//!
//! Nothing here costs anything without hooks: [`ask`] returns at once when the
//! registry has none or none wants the event, before the input is built. What
//! the hooks said goes into the transcript as a `hook` line (the event, its
//! input, each hook's run, the decision), and the runs that failed or warned are
//! told to the person as notices; a verdict without runs leaves no trace.

use serde_json::{Map, Value, json};
use toolbelt_core::hooks::{HookContext, HookDecision, HookEvent, HookInput, HookVerdict};
use toolbelt_core::output::{OutputBudget, apply_budget, truncate_in_memory};
use toolbelt_core::{Origin, Registry};

use crate::journal::Journal;

/// Consecutive `stop` blocks one turn honours; the next one ends the run
/// ([`Outcome::StopHookLimit`](crate::Outcome::StopHookLimit)).
pub(crate) const MAX_STOP_BLOCKS: usize = 8;

/// Bytes of one hook's context the model reads; the whole text is saved for
/// `read_output`.
const MAX_CONTEXT_BYTES: usize = 4 * 1024;

/// The outcomes of a hook's run the person is told of.
const PROBLEMS: [&str; 4] = ["failed", "timeout", "warning", "untrusted"];

/// Asks the hooks of `event` with the input `extra` builds, when the registry
/// has hooks and one of them wants the event; `None` otherwise (and `extra` is
/// never called). `origin` is where the run comes from.
pub(crate) async fn ask(
    registry: &Registry,
    event: HookEvent,
    origin: &Origin,
    extra: impl FnOnce() -> Map<String, Value>,
) -> Option<(Map<String, Value>, HookVerdict)> {
    let hooks = registry.hooks().filter(|h| h.wants(event))?;
    let extra = extra();
    let mut input = HookInput::new(event, origin, registry.session().cwd());
    input.extra = Some(&extra);
    let verdict = hooks.run(input).await;
    Some((extra, verdict))
}

/// Records what the hooks of `event` said in `journal`'s transcript and tells
/// the person of the runs that failed or warned. Nothing when no hook matched.
pub(crate) fn report(
    journal: &mut Journal,
    event: HookEvent,
    input: &Map<String, Value>,
    verdict: &HookVerdict,
) {
    if verdict.runs.is_empty()
        && verdict.decision == HookDecision::Continue
        && verdict.context.is_empty()
    {
        return;
    }
    journal.record(&line(event, input, verdict));
    for problem in problems(event, verdict) {
        journal.notice(problem);
    }
}

/// The transcript's `hook` line.
fn line(event: HookEvent, input: &Map<String, Value>, verdict: &HookVerdict) -> Value {
    let mut line = json!({
        "type": "hook",
        "event": event.as_str(),
        "input": input,
        "runs": verdict.runs,
        "decision": decision_name(&verdict.decision),
    });
    if let Some((hook, reason)) = said_by(&verdict.decision) {
        line["hook"] = json!(hook);
        line["reason"] = json!(reason);
    }
    if !verdict.context.is_empty() {
        line["context"] = verdict
            .context
            .iter()
            .map(|c| json!({"hook": c.hook, "text": c.text}))
            .collect();
    }
    line
}

/// `continue`, `allow`, `ask`, `deny`, `block` or `revert`.
fn decision_name(decision: &HookDecision) -> &'static str {
    match decision {
        HookDecision::Continue => "continue",
        HookDecision::Allow => "allow",
        HookDecision::Ask { .. } => "ask",
        HookDecision::Deny { .. } => "deny",
        HookDecision::Block { .. } => "block",
        HookDecision::Revert { .. } => "revert",
    }
}

/// The hook behind a decision, and its reason (when it gave one).
fn said_by(decision: &HookDecision) -> Option<(&str, Option<&str>)> {
    match decision {
        HookDecision::Continue | HookDecision::Allow => None,
        HookDecision::Ask { hook, reason } => Some((hook, reason.as_deref())),
        HookDecision::Deny { hook, reason }
        | HookDecision::Block { hook, reason }
        | HookDecision::Revert { hook, reason } => Some((hook, Some(reason))),
    }
}

/// The hook and reason of a decision that refuses what the event is about: a
/// deny, a block or a revert (at `user_prompt` and `subagent_start`: the prompt
/// or the subagent is refused; at `stop`: the turn goes on).
pub(crate) fn refusal(decision: &HookDecision) -> Option<(&str, &str)> {
    match decision {
        HookDecision::Deny { hook, reason }
        | HookDecision::Block { hook, reason }
        | HookDecision::Revert { hook, reason } => Some((hook, reason)),
        HookDecision::Continue | HookDecision::Allow | HookDecision::Ask { .. } => None,
    }
}

/// What the person is told of the runs that failed, timed out, warned or were
/// not trusted: one line each.
pub(crate) fn problems(event: HookEvent, verdict: &HookVerdict) -> Vec<String> {
    verdict
        .runs
        .iter()
        .filter(|r| PROBLEMS.contains(&r.outcome.as_str()))
        .map(|r| {
            let what = match r.outcome.as_str() {
                "timeout" => "timed out",
                "warning" => "warns",
                "untrusted" => "was not run (not trusted)",
                _ => "failed",
            };
            match &r.message {
                Some(m) => format!("hook '{}' ({event}) {what}: {m}", r.name),
                None => format!("hook '{}' ({event}) {what}", r.name),
            }
        })
        .collect()
}

/// The hooks' context as the model reads it, one `[hook 'name'] text` block
/// each, cut to [`MAX_CONTEXT_BYTES`] (the whole saved for `read_output` when
/// the registry has it).
pub(crate) fn context_blocks(registry: &Registry, context: &[HookContext]) -> Vec<String> {
    context
        .iter()
        .filter(|c| !c.text.trim().is_empty())
        .map(|c| {
            let text = c.text.trim();
            let shown = if text.len() <= MAX_CONTEXT_BYTES {
                text.to_string()
            } else {
                let budget = OutputBudget::with_max_bytes(MAX_CONTEXT_BYTES)
                    .with_reader(registry.saved_output_reader());
                apply_budget(text, &budget, &registry.session().spill_dir())
                    .unwrap_or_else(|_| truncate_in_memory(text, &budget))
                    .text
            };
            format!("[hook '{}'] {shown}", c.hook)
        })
        .collect()
}

/// `text` with `before` above it and `after` below it, blank lines between.
pub(crate) fn with_notes(before: &[String], text: &str, after: &[String]) -> String {
    before
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(text))
        .chain(after.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// What the model is told when a stop hook keeps its turn going.
pub(crate) fn stop_block_prompt(hook: &str, reason: &str) -> String {
    format!(
        "A stop hook ('{hook}') says: {reason}\n\n[The turn is not over: act on this, then give your final answer again.]"
    )
}

/// The end of a run whose stop hook kept blocking.
pub(crate) fn stop_limit_message(hook: &str, reason: &str) -> String {
    format!(
        "the stop hook '{hook}' kept the turn from ending {} times in a row, so the run was stopped; its last reason: {reason}",
        MAX_STOP_BLOCKS + 1
    )
}

/// An input of these fields (`{"reason": "final_answer"}`).
pub(crate) fn fields(pairs: impl IntoIterator<Item = (&'static str, Value)>) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_core::hooks::HookRun;

    fn run(name: &str, outcome: &str, message: Option<&str>) -> HookRun {
        HookRun {
            name: name.into(),
            event: "stop".into(),
            outcome: outcome.into(),
            ms: 3,
            message: message.map(str::to_string),
        }
    }

    #[test]
    fn only_runs_that_went_wrong_are_told() {
        let verdict = HookVerdict {
            runs: vec![
                run("ok", "allowed", None),
                run("lint", "failed", Some("exit 1")),
                run("slow", "timeout", None),
                run("new", "untrusted", None),
            ],
            ..HookVerdict::default()
        };
        assert_eq!(
            problems(HookEvent::Stop, &verdict),
            vec![
                "hook 'lint' (stop) failed: exit 1".to_string(),
                "hook 'slow' (stop) timed out".to_string(),
                "hook 'new' (stop) was not run (not trusted)".to_string(),
            ]
        );
    }

    #[test]
    fn the_line_names_the_decision_and_its_hook() {
        let verdict = HookVerdict {
            runs: vec![run("tests", "blocked", Some("run the tests"))],
            decision: HookDecision::Block {
                hook: "tests".into(),
                reason: "run the tests".into(),
            },
            ..HookVerdict::default()
        };
        let input = fields([("stop_hook_active", json!(true))]);
        let line = line(HookEvent::Stop, &input, &verdict);
        assert_eq!(
            line,
            json!({
                "type": "hook",
                "event": "stop",
                "input": {"stop_hook_active": true},
                "runs": [{"name": "tests", "event": "stop", "outcome": "blocked", "ms": 3, "message": "run the tests"}],
                "decision": "block",
                "hook": "tests",
                "reason": "run the tests",
            })
        );
    }

    #[test]
    fn notes_surround_the_text() {
        assert_eq!(
            with_notes(&["a".into()], "prompt", &["b".into(), "c".into()]),
            "a\n\nprompt\n\nb\n\nc"
        );
        assert_eq!(with_notes(&[], "prompt", &[]), "prompt");
    }
}
