//! The stages where the person's hooks are asked: `pre_tool_use` after the deny
//! rules, `permission_request` when a call would be put to the person, and
//! `post_tool_use` / `post_tool_failure` / `file_changed` after the call.

use serde_json::{Value, json};

use super::super::{Entry, Registry};
use super::{Ruling, Stage, Target, Trace};
use std::sync::OnceLock;

use crate::checkpoint::{Changes, CheckpointNote, Origin};
use crate::envelope::{Envelope, ErrorCode};
use crate::error::error_chain;
use crate::hooks::{HookCall, HookContext, HookDecision, HookEvent, HookInput, HookVerdict};
use crate::output::{OutputBudget, apply_budget, truncate_in_memory};

/// Bytes of one hook's context in the text; the rest is saved for the reader of saved outputs.
pub const MAX_HOOK_CONTEXT_BYTES: usize = 4 * 1024;

/// What the pre-call hooks leave for the stages after them.
#[derive(Default)]
pub(super) struct PreHooks {
    /// Text for the model, added to the result.
    context: Vec<HookContext>,
}

/// What the permission hooks said of a call that would be put to the person.
pub(super) enum PermissionAnswer {
    /// A hook approved it.
    Approved,
    /// Nobody decided: ask the person.
    AskPerson,
}

impl Registry {
    /// The input of a call's hooks.
    fn hook_call<'a>(
        target: &Target<'a>,
        args: &'a Value,
        call_id: &'a str,
        subject: Option<&'a str>,
        changes: &'a Changes,
    ) -> HookCall<'a> {
        HookCall {
            tool: target.canonical,
            exposed: target.exposed,
            call_id,
            arguments: args,
            subject,
            subject_is_command: target.spec.subject == Some(crate::spec::Subject::Command),
            changes,
            permissions: &target.spec.permissions,
        }
    }

    /// Runs the hooks of `event` for a call. `facts`: the call's subject and what
    /// it may change, worked out once for the events of one stage, and only when
    /// a hook is configured for one of them.
    #[allow(clippy::too_many_arguments)]
    async fn run_call_hooks(
        &self,
        event: HookEvent,
        target: &Target<'_>,
        args: &Value,
        facts: &OnceLock<(Option<String>, Changes)>,
        call_id: &str,
        origin: &Origin,
        after: Option<(&Envelope, &CheckpointNote)>,
    ) -> Option<HookVerdict> {
        let hooks = self.hooks.as_ref().filter(|h| h.wants(event))?;
        let (subject, changes) = facts.get_or_init(|| {
            (
                target.tool.permission_subject(args),
                target.tool.changes(args),
            )
        });
        let call = Registry::hook_call(target, args, call_id, subject.as_deref(), changes);
        let mut input = HookInput::new(event, origin, self.session.cwd());
        input.call = Some(call);
        if let Some((env, note)) = after {
            input.response = Some(env);
            input.changed = &note.changed;
            input.checkpoint = note.id.as_deref();
        }
        Some(hooks.run(input).await)
    }

    /// Stage 5 (`pre_tool_use`): the hooks may deny the call, put it to the person,
    /// rewrite its arguments (validated and checked by every rule again: a hook's
    /// allow never overrides a rule) or add context for the model.
    pub(super) async fn pre_hooks(
        &self,
        target: &Target<'_>,
        entry: &Entry,
        args: Value,
        ruling: Ruling,
        call_id: &str,
        trace: &mut Trace,
    ) -> Stage<(Value, Ruling, PreHooks)> {
        let Some(verdict) = self
            .run_call_hooks(
                HookEvent::PreToolUse,
                target,
                &args,
                &OnceLock::new(),
                call_id,
                &trace.origin,
                None,
            )
            .await
        else {
            return Ok((args, ruling, PreHooks::default()));
        };
        trace.hooks.extend(verdict.runs);
        let exposed = target.exposed;
        let ask = match verdict.decision {
            HookDecision::Deny { hook, reason }
            | HookDecision::Block { hook, reason }
            | HookDecision::Revert { hook, reason } => {
                return Err(Box::new(hook_denied(exposed, &hook, &reason)));
            }
            HookDecision::Ask { hook, reason } => Some((hook, reason)),
            HookDecision::Continue | HookDecision::Allow => None,
        };
        let (args, mut ruling) = match verdict.rewrite {
            None => (args, ruling),
            Some(rewrite) => {
                let hook = rewrite.hook;
                let args = rewrite.arguments;
                super::validate(target, entry, &args).map_err(|mut env| {
                    let message = format!(
                        "hook '{hook}' rewrote the arguments of {exposed} into invalid ones: {}",
                        env.error.as_ref().map_or("", |e| e.message.as_str())
                    );
                    if let Some(e) = env.error.as_mut() {
                        e.message = message;
                        e.hint = Some("the call did not run; this is the hook's doing, not the model's: ask the user to fix the hook".into());
                        env.text = crate::envelope::error_text(e.code, &e.message, e.hint.as_deref());
                    }
                    env.data["hook"] = json!(hook);
                    env
                })?;
                let ruling = self.authorize(target, &args).map_err(|mut env| {
                    env.data = json!({ "hook": hook });
                    env
                })?;
                (args, ruling)
            }
        };
        if let Some((hook, reason)) = ask
            && matches!(ruling, Ruling::Allowed)
        {
            ruling = Ruling::Ask {
                subject: target.tool.permission_subject(&args),
                eval: crate::authorize::Evaluation {
                    decision: crate::authorize::Decision::Ask,
                    rule: Some(match reason {
                        Some(r) => format!("hook '{hook}' ({r})"),
                        None => format!("hook '{hook}'"),
                    }),
                },
                guard: None,
            };
        }
        Ok((
            args,
            ruling,
            PreHooks {
                context: verdict.context,
            },
        ))
    }

    /// Part of stage 6: before a call is put to the person, the
    /// `permission_request` hooks may answer for them.
    pub(super) async fn permission_hooks(
        &self,
        target: &Target<'_>,
        args: &Value,
        call_id: &str,
        trace: &mut Trace,
    ) -> Stage<PermissionAnswer> {
        let Some(verdict) = self
            .run_call_hooks(
                HookEvent::PermissionRequest,
                target,
                args,
                &OnceLock::new(),
                call_id,
                &trace.origin,
                None,
            )
            .await
        else {
            return Ok(PermissionAnswer::AskPerson);
        };
        trace.hooks.extend(verdict.runs);
        match verdict.decision {
            HookDecision::Deny { hook, reason }
            | HookDecision::Block { hook, reason }
            | HookDecision::Revert { hook, reason } => {
                Err(Box::new(hook_denied(target.exposed, &hook, &reason)))
            }
            HookDecision::Allow => Ok(PermissionAnswer::Approved),
            HookDecision::Ask { .. } | HookDecision::Continue => Ok(PermissionAnswer::AskPerson),
        }
    }

    /// Stage 10 (`post_tool_use` or `post_tool_failure`, then `file_changed` when
    /// the call changed files): the hooks may add context, tell the model that
    /// something is wrong, or undo the call through its checkpoint.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn post_hooks(
        &self,
        target: &Target<'_>,
        args: &Value,
        mut env: Envelope,
        note: &CheckpointNote,
        call_id: &str,
        pre: PreHooks,
        trace: &mut Trace,
    ) -> Envelope {
        let mut context = pre.context;
        let event = if env.status == crate::envelope::Status::Error {
            HookEvent::PostToolFailure
        } else {
            HookEvent::PostToolUse
        };
        let changed = (!note.changed.is_empty()).then_some(HookEvent::FileChanged);
        let facts = OnceLock::new();
        let mut decision = HookDecision::Continue;
        for event in std::iter::once(event).chain(changed) {
            let after = Some((&env, note));
            let Some(v) = self
                .run_call_hooks(event, target, args, &facts, call_id, &trace.origin, after)
                .await
            else {
                continue;
            };
            trace.hooks.extend(v.runs);
            context.extend(v.context);
            decision = stronger(decision, v.decision);
        }
        match decision {
            HookDecision::Revert { hook, reason } => {
                env = self.revert(target, env, note, &hook, &reason, trace).await;
            }
            HookDecision::Deny { hook, reason } | HookDecision::Block { hook, reason } => {
                env.text
                    .push_str(&format!("\n\n[hook '{hook}' objects] {reason}"));
                env.data = with_hook(env.data, &hook);
            }
            _ => {}
        }
        self.add_context(&mut env, &context);
        env
    }

    /// A post hook asked for the call to be undone: its checkpoint is reverted and
    /// the result becomes an error that says why.
    async fn revert(
        &self,
        target: &Target<'_>,
        env: Envelope,
        note: &CheckpointNote,
        hook: &str,
        reason: &str,
        trace: &Trace,
    ) -> Envelope {
        let exposed = target.exposed;
        let undone = match (&self.checkpointer, &note.id) {
            (Some(cp), Some(id)) => cp
                .revert(id, &trace.origin)
                .await
                .map(|n| {
                    format!(
                        "its changes ({n} {}) were undone (checkpoint {id})",
                        crate::human::plural(n as u64, "path")
                    )
                })
                .map_err(Some),
            (_, None) if note.changed.is_empty() => Ok("it changed no file".to_string()),
            _ => Err(None),
        };
        let reverted = undone.is_ok();
        let mut out = match undone {
            Ok(done) => Envelope::error(
                ErrorCode::AccessDenied,
                format!("hook '{hook}' rejected the result of {exposed}: {reason}; {done}"),
                Some("do not repeat the call unchanged; follow the hook's reason".into()),
            ),
            Err(cause) => {
                let why = match cause {
                    Some(failed) => error_chain(&failed),
                    None => "no checkpoint was kept".to_string(),
                };
                Envelope::error(
                    ErrorCode::AccessDenied,
                    format!(
                        "hook '{hook}' rejected the result of {exposed}: {reason}; its changes could not be undone: {why}"
                    ),
                    Some("tell the user: the files may still hold the call's changes".into()),
                )
            }
        };
        out.data = json!({ "hook": hook, "reverted": reverted, "result": env.text });
        out.context = env.context;
        out.stats = env.stats;
        out
    }

    /// The hooks' context, each cut to [`MAX_HOOK_CONTEXT_BYTES`] (the whole saved
    /// for the reader of saved outputs), added to the text the model reads.
    fn add_context(&self, env: &mut Envelope, context: &[HookContext]) {
        for c in context {
            let text = c.text.trim();
            if text.is_empty() {
                continue;
            }
            let shown = if text.len() <= MAX_HOOK_CONTEXT_BYTES {
                text.to_string()
            } else {
                // Cut as any long result is: the markers name the reader of the whole.
                let budget = OutputBudget::with_max_bytes(MAX_HOOK_CONTEXT_BYTES)
                    .with_reader(self.saved_output_reader());
                apply_budget(text, &budget, &self.session.spill_dir())
                    .unwrap_or_else(|_| truncate_in_memory(text, &budget))
                    .text
            };
            env.text
                .push_str(&format!("\n\n[hook '{}'] {shown}", c.hook));
        }
    }
}

/// The envelope of a call a hook denied.
fn hook_denied(exposed: &str, hook: &str, reason: &str) -> Envelope {
    let mut env = Envelope::error(
        ErrorCode::AccessDenied,
        format!("{exposed} was denied by hook '{hook}': {reason}"),
        Some("do not retry this call unchanged; choose another way or ask the user".into()),
    );
    env.data = json!({ "hook": hook, "reason": reason });
    env
}

/// `data` with the hook named in it (an object keeps its fields).
fn with_hook(data: Value, hook: &str) -> Value {
    match data {
        Value::Object(mut map) => {
            map.insert("hook".into(), json!(hook));
            Value::Object(map)
        }
        Value::Null => json!({ "hook": hook }),
        other => other,
    }
}

/// The stronger of two decisions of the hooks after a call: revert, then deny or
/// block, then anything else.
fn stronger(a: HookDecision, b: HookDecision) -> HookDecision {
    fn rank(d: &HookDecision) -> u8 {
        match d {
            HookDecision::Revert { .. } => 3,
            HookDecision::Deny { .. } | HookDecision::Block { .. } => 2,
            HookDecision::Ask { .. } | HookDecision::Allow => 1,
            HookDecision::Continue => 0,
        }
    }
    if rank(&b) > rank(&a) { b } else { a }
}
