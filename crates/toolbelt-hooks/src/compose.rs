//! Composing the answers of the hooks of one event, in configuration order.

use serde_json::{Map, Value};
use toolbelt_core::hooks::{HookContext, HookDecision, HookEvent, HookRun, HookVerdict, Rewrite};

/// One hook's answer.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) decision: HookDecision,
    pub(crate) outcome: &'static str,
    pub(crate) rewrite: Option<Map<String, Value>>,
    pub(crate) context: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) ms: u64,
}

impl Answer {
    pub(crate) fn outcome(outcome: &'static str, message: Option<String>) -> Answer {
        Answer {
            outcome,
            message,
            ..Answer::default()
        }
    }

    pub(crate) fn decided(decision: HookDecision, outcome: &'static str) -> Answer {
        let message = match &decision {
            HookDecision::Deny { reason, .. }
            | HookDecision::Block { reason, .. }
            | HookDecision::Revert { reason, .. } => Some(reason.clone()),
            HookDecision::Ask { reason, .. } => reason.clone(),
            _ => None,
        };
        Answer {
            decision,
            outcome,
            message,
            ..Answer::default()
        }
    }
}

/// The answers of `hooks` (in configuration order) as one verdict: any deny
/// wins, then a revert, then a block, then ask, then allow; rewrites are merged
/// into the arguments in order.
pub(crate) fn compose(
    hooks: &[(String, HookEvent)],
    answers: Vec<Answer>,
    arguments: Option<&Value>,
) -> HookVerdict {
    let mut verdict = HookVerdict::default();
    let rank = |d: &HookDecision| match d {
        HookDecision::Deny { .. } => 5,
        HookDecision::Revert { .. } => 4,
        HookDecision::Block { .. } => 3,
        HookDecision::Ask { .. } => 2,
        HookDecision::Allow => 1,
        HookDecision::Continue => 0,
    };
    let mut args = arguments.cloned();
    for ((name, event), a) in hooks.iter().zip(answers) {
        verdict.runs.push(HookRun {
            name: name.clone(),
            event: event.as_str().to_string(),
            outcome: a.outcome.to_string(),
            ms: a.ms,
            message: a.message,
        });
        if rank(&a.decision) > rank(&verdict.decision) {
            verdict.decision = a.decision;
        }
        if let (Some(patch), Some(args)) = (a.rewrite, args.as_mut()) {
            merge_patch(args, Value::Object(patch));
            verdict.rewrite = Some(Rewrite {
                hook: name.clone(),
                arguments: args.clone(),
            });
        }
        if let Some(text) = a.context {
            verdict.context.push(HookContext {
                hook: name.clone(),
                text,
            });
        }
    }
    verdict
}

/// RFC 7396: `patch` merged into `target` (a null removes a key).
fn merge_patch(target: &mut Value, patch: Value) {
    let Value::Object(patch) = patch else {
        *target = patch;
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in patch {
            if v.is_null() {
                t.remove(&k);
            } else {
                merge_patch(t.entry(k).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
#[path = "compose_tests.rs"]
mod tests;
