//! How the [`Registry`] runs a call: a fixed sequence of stages.
//!
//! [`Registry::execute_call`] runs one call through these stages, in this order:
//!
//! 1. **lookup**: the tool, by canonical or exposed name (an unknown name ends the
//!    call with the closest names);
//! 2. **repair**: safe repairs of the arguments (a JSON string parsed, `"2"` read as
//!    2, a cut-off string closed); arguments that are not JSON, or cut off in a
//!    string for a tool that writes, end the call;
//! 3. **validate**: the input schema, then the tool's own rules;
//! 4. **authorize**: the permission rules (a denied call ends here), and the
//!    authorizer's guard (a call it holds asks even where the rules allow it);
//! 5. **approve**: a call a rule marks `ask`, or a guard holds, is put to the
//!    person (the guard goes with it: an approver of every call declines it, and
//!    a `permission_request` hook may deny it but not approve it);
//!    declined, the model is told why, and for a guarded call what it would have
//!    destroyed and the safer way;
//! 6. **checkpoint**: for a call that may change files, what is needed to undo it
//!    is kept (a call whose required checkpoint cannot be taken ends here);
//! 7. **execute**: the tool itself, under a timeout and the call's cancellation,
//!    a panic contained; from here on every outcome is an envelope that goes on;
//! 8. **changes**: the checkpoint is finished with what the call changed; the
//!    files a shell command changed are checked for problems when the post-edit
//!    pipeline says so (`after_bash`);
//! 9. **budget**: a text over the output budget is cut and the whole saved;
//! 10. **share**: a saved output is kept where the session keeps saved outputs
//!     beyond this process (a store replicas share), before the answer leaves;
//! 11. **record**: the envelope's context and time, the trace event and the call
//!     log's record (with the call's origin and checkpoint).
//!
//! Each stage before execute returns `Result<_, Box<Envelope>>`: an `Err` is the
//! envelope the call ends with, and the remaining stages up to **record** are
//! skipped. A new stage (checkpoints, hooks, diagnostics) is one more function and
//! one more line in `Registry::run`, which reads as the list of stages.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod hook_stages;
mod share_output;
mod shell_checks;

use futures::FutureExt;
use futures::stream::{self, StreamExt};
use serde_json::Value;

use self::hook_stages::PermissionAnswer;
use super::{
    Approval, ApprovalRequest, BatchMode, CallOptions, Entry, Registry, ToolCall, exposed_mentions,
    new_call_id, unix_ms_now,
};
use crate::authorize::{Decision, Evaluation, Guard, Request};
use crate::calllog::{CallRecord, args_digest};
use crate::checkpoint::{Changes, CheckpointCall, CheckpointNote, Origin, PendingCheckpoint};
use crate::closest::closest;
use crate::context::{MAX_TIMEOUT_MS, ToolContext};
use crate::envelope::{Envelope, ErrorCode, Repair};
use crate::error::error_chain;
use crate::output::{OutputBudget, apply_budget, truncate_in_memory};
use crate::profile::{ParamCase, camel_message, camel_violation, rename_args};
use crate::repair::repair_arguments;
use crate::spec::ToolSpec;
use crate::tool::{Tool, Violation};
use crate::validate::violations_message;

/// Time a tool that enforces its own timeout gets beyond the maximum, to clean up.
const OWN_TIMEOUT_SLACK: Duration = Duration::from_secs(30);
/// The repair recorded when truncated arguments end inside a string.
const TRUNCATED_STRING_REPAIR: &str = "closed unterminated string";
/// A similarity at which a parameter name is offered as "did you mean".
const PARAMETER_MATCH: f64 = 0.75;

/// The tool a call reached, as the stages after lookup see it.
struct Target<'a> {
    tool: &'a Arc<dyn Tool>,
    spec: &'a ToolSpec,
    canonical: &'a str,
    /// The name the model knows the tool by.
    exposed: &'a str,
    /// The tool's parameter names, when the profile shows them in camelCase: the
    /// arguments are read back as the tool's, and its messages shown as the model's.
    camel: Option<&'a BTreeSet<String>>,
}

/// What a stage before execute gives: its result, or the envelope the call ends
/// with (boxed: an envelope is large, and ending early the rarer path).
type Stage<T> = Result<T, Box<Envelope>>;

/// A call as it came in, for the record stage.
struct Incoming {
    /// The tool's name as the caller wrote it.
    name: String,
    call_id: String,
    /// The arguments as they came, before any repair.
    params_input: Value,
    started: Instant,
    started_at_ms: i64,
    /// Set when the call is put off (see [`CallOptions::put_off`]).
    put_off: Option<Arc<AtomicBool>>,
}

/// What the record stage needs to know of how far a call got.
#[derive(Default)]
struct Trace {
    /// The canonical name, once the tool was found.
    canonical: Option<String>,
    /// The repairs made to the arguments.
    repairs: Vec<Repair>,
    /// Where the call came from.
    origin: Origin,
    /// The person's hooks that ran, in order.
    hooks: Vec<crate::hooks::HookRun>,
}

/// What the rules said of a call that may go on.
enum Ruling {
    /// Run it.
    Allowed,
    /// Ask the person first.
    Ask {
        /// What the rule looked at.
        subject: Option<String>,
        /// The rule's evaluation.
        eval: Evaluation,
        /// A guard's hold on the call, which an approver of every call declines.
        guard: Option<Guard>,
    },
}

impl Registry {
    /// Executes one call with default options.
    pub async fn execute(&self, name: &str, arguments: Value) -> Envelope {
        self.execute_call(ToolCall::new(name, arguments), CallOptions::default())
            .await
    }

    /// Executes one call. Never panics and never fails: every outcome is an envelope.
    ///
    /// The call goes through these stages, in order: lookup (an unknown name ends
    /// it, with the closest names), repair, validate, authorize, approve (a call a
    /// rule marks `ask`), execute (timeout, cancellation, panics contained), budget
    /// (a long text cut and saved), share (a saved output kept in the session's
    /// [`SavedOutputs`](crate::output::SavedOutputs)) and record (context, trace
    /// event, call log). A stage before execute may end the call with its envelope;
    /// budget, share and record see every envelope that comes out of execute, and
    /// record sees every one.
    pub async fn execute_call(&self, call: ToolCall, opts: CallOptions) -> Envelope {
        let incoming = Incoming {
            started: Instant::now(),
            started_at_ms: unix_ms_now(),
            call_id: call.call_id.unwrap_or_else(new_call_id),
            params_input: call.arguments.clone(),
            put_off: opts.put_off.clone(),
            name: call.name,
        };
        let mut trace = Trace {
            origin: opts.origin.clone().unwrap_or_else(|| self.origin.clone()),
            ..Trace::default()
        };
        let env = match self
            .run(
                &incoming.name,
                call.arguments,
                &incoming.call_id,
                opts,
                &mut trace,
            )
            .await
        {
            Ok(env) => env,
            Err(env) => *env,
        };
        // What the call read or wrote is known to the other replicas before the
        // answer is (a no-op unless the stamps are shared).
        self.session.file_stamps().publish().await;
        self.record(env, incoming, trace)
    }

    /// The stages from lookup to share; an `Err` is the envelope the call ends with.
    async fn run(
        &self,
        name: &str,
        arguments: Value,
        call_id: &str,
        opts: CallOptions,
        trace: &mut Trace,
    ) -> Stage<Envelope> {
        let (canonical, entry) = self.lookup(name)?;
        trace.canonical = Some(canonical.to_string());
        let target = self.target(canonical, &entry);
        let args = repair(&target, arguments, &mut trace.repairs)?;
        validate(&target, &entry, &args)?;
        let ruling = self.authorize(&target, &args)?;
        let (args, ruling, pre) = self
            .pre_hooks(&target, &entry, args, ruling, call_id, trace)
            .await?;
        self.approve(&target, &args, ruling, &opts, call_id, trace)
            .await?;
        let pending = self
            .checkpoint(&target, &args, call_id, &trace.origin)
            .await?;
        let (env, ctx) = self
            .execute_tool(&target, args.clone(), call_id, opts)
            .await;
        let (env, note) = changes(pending, env).await;
        let env = self.shell_checks(&target, &args, env, &note).await;
        let env = self
            .post_hooks(&target, &args, env, &note, call_id, pre, trace)
            .await;
        let env = self.budget(env, ctx.budget());
        Ok(self.share_output(env).await)
    }

    /// Stage 6: for a call that may change files, the checkpointer keeps what is
    /// needed to undo it. A call whose required checkpoint cannot be taken ends here.
    async fn checkpoint(
        &self,
        target: &Target<'_>,
        args: &Value,
        call_id: &str,
        origin: &Origin,
    ) -> Stage<Option<Box<dyn PendingCheckpoint>>> {
        let Some(checkpointer) = &self.checkpointer else {
            return Ok(None);
        };
        let changes = target.tool.changes(args);
        if changes == Changes::Nothing {
            return Ok(None);
        }
        let call = CheckpointCall {
            tool: target.canonical,
            call_id,
            arguments: args,
            changes: &changes,
            origin,
            cwd: self.session.cwd(),
        };
        checkpointer.before(call).await.map_err(|refused| {
            Box::new(Envelope::error(
                ErrorCode::Unavailable,
                format!(
                    "{} was not run: {}",
                    target.exposed,
                    error_chain(&refused)
                ),
                Some("the files are unchanged; ask the user to free space for checkpoints or turn `[checkpoints] required` off".into()),
            ))
        })
    }

    /// Stage 1: the tool named `name`, canonical or exposed.
    fn lookup<'a>(&'a self, name: &'a str) -> Stage<(&'a str, Arc<Entry>)> {
        let found = self
            .resolve(name)
            .and_then(|canonical| Some((canonical, self.entry(canonical)?)));
        found.ok_or_else(|| Box::new(self.unknown_tool(name)))
    }

    /// The tool `entry` as the stages see it.
    fn target<'a>(&'a self, canonical: &'a str, entry: &'a Entry) -> Target<'a> {
        let camel =
            (self.profile.param_case(canonical) == ParamCase::Camel).then(|| entry.param_names());
        Target {
            tool: &entry.tool,
            spec: entry.tool.spec(),
            canonical,
            exposed: self.profile.exposed(canonical),
            camel,
        }
    }

    /// Stage 4: what the permission rules say of the call, and the authorizer's
    /// guard on one they do not deny (it asks, under the guard's name, where the
    /// rules allow); a denied call ends here.
    fn authorize(&self, target: &Target<'_>, args: &Value) -> Stage<Ruling> {
        let Target {
            tool,
            spec,
            canonical,
            exposed,
            ..
        } = *target;
        let subject = tool.permission_subject(args);
        let request = Request {
            tool: canonical,
            alias: (exposed != canonical).then_some(exposed),
            subject: subject.as_deref(),
            permissions: &spec.permissions,
        };
        let eval = self.authorizer.evaluate(&request);
        let guard = match eval.decision {
            Decision::Deny => None,
            Decision::Allow | Decision::Ask => self.authorizer.guard(&request),
        };
        match eval.decision {
            Decision::Allow => match guard {
                None => Ok(Ruling::Allowed),
                // A guard asks where no rule does, under its own name.
                Some(guard) => Ok(Ruling::Ask {
                    eval: Evaluation {
                        decision: Decision::Ask,
                        rule: Some(guard.rule.clone()),
                    },
                    subject,
                    guard: Some(guard),
                }),
            },
            Decision::Deny => {
                let what = subject_note(subject.as_deref());
                let rule = rule_named(&eval);
                Err(Box::new(Envelope::error(
                    ErrorCode::AccessDenied,
                    format!("{exposed}{what} is denied by {rule}"),
                    Some("do not retry this call; choose another way or ask the user to change the permission rules".into()),
                )))
            }
            Decision::Ask => Ok(Ruling::Ask {
                subject,
                eval,
                guard,
            }),
        }
    }

    /// Stage 5: a call a rule marks `ask` is put to the call's approver, else the
    /// registry's; without one, or when the person declines, the call ends here.
    async fn approve(
        &self,
        target: &Target<'_>,
        args: &Value,
        ruling: Ruling,
        opts: &CallOptions,
        call_id: &str,
        trace: &mut Trace,
    ) -> Stage<()> {
        let Ruling::Ask {
            subject,
            eval,
            guard,
        } = ruling
        else {
            return Ok(());
        };
        // A hook answers for the person, but not for a guarded call: what a guard
        // holds (a command that destroys what cannot be had back) is approved by
        // the person or by a rule naming it, never by a program; a hook may deny it.
        if let PermissionAnswer::Approved =
            self.permission_hooks(target, args, call_id, trace).await?
            && guard.is_none()
        {
            return Ok(());
        }
        let exposed = target.exposed;
        let approver = opts.approver.as_ref().or(self.approver.as_ref());
        let answer = match approver {
            Some(a) => {
                a.approve(ApprovalRequest {
                    tool: exposed,
                    subject: subject.as_deref(),
                    arguments: args,
                    rule: eval.rule.as_deref(),
                    guard: guard.as_ref(),
                })
                .await
            }
            None => Approval::Decline { reason: None },
        };
        let Approval::Decline { reason } = answer else {
            return Ok(());
        };
        let what = subject_note(subject.as_deref());
        if let Some(guard) = guard {
            return Err(Box::new(guarded_decline(exposed, &what, &guard, reason)));
        }
        let rule = rule_named(&eval);
        let hint = match (approver, reason) {
            (Some(_), Some(reason)) => format!(
                "the user declined this call, saying: {reason}; do not retry it unchanged"
            ),
            (Some(_), None) => "the user declined this call; do not retry it unchanged".to_string(),
            (None, _) => "this call needs approval, which is not available here; ask the user to add an allow rule".to_string(),
        };
        Err(Box::new(Envelope::error(
            ErrorCode::AccessDenied,
            format!("{exposed}{what} needs approval under {rule} and was not approved"),
            Some(hint),
        )))
    }

    /// Stage 6: the call itself, under a timeout and the call's cancellation, a
    /// panic contained. Every outcome is an envelope, and the stages after this one
    /// run on it; the context is returned for its budget.
    async fn execute_tool(
        &self,
        target: &Target<'_>,
        args: Value,
        call_id: &str,
        opts: CallOptions,
    ) -> (Envelope, ToolContext) {
        let Target {
            tool,
            spec,
            canonical,
            exposed,
            camel,
        } = *target;
        let cancel = opts.cancel.unwrap_or_default();
        let budget = opts
            .budget
            .unwrap_or_else(|| self.session.budget().clone())
            .with_reader(self.saved_output_reader());
        let ctx = ToolContext::new(Arc::clone(&self.session), canonical, call_id)
            .with_budget(Some(budget))
            .with_cancel(cancel.child_token())
            .with_progress(opts.progress)
            .with_events(self.events.clone())
            .with_asker(opts.asker.or_else(|| self.asker.clone()))
            .with_authorizer(Some(Arc::clone(&self.authorizer)))
            .with_after_write(self.after_write.clone());
        let timeout = match opts.timeout {
            Some(t) => t.min(Duration::from_millis(MAX_TIMEOUT_MS)),
            // The tool stops itself; the slack covers its clean-up.
            None if spec.own_timeout => Duration::from_millis(MAX_TIMEOUT_MS) + OWN_TIMEOUT_SLACK,
            None => self
                .session
                .timeout()
                .min(Duration::from_millis(MAX_TIMEOUT_MS)),
        };
        let fut = AssertUnwindSafe(tool.call(&ctx, args)).catch_unwind();
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Envelope::error(
                ErrorCode::Cancelled,
                format!("{exposed} was cancelled"),
                None,
            )),
            r = tokio::time::timeout(timeout, fut) => match r {
                Ok(Ok(env)) => Ok(env),
                Ok(Err(panic)) => {
                    let what = panic_message(panic.as_ref());
                    tracing::error!(tool = canonical, call_id, "tool panicked: {what}");
                    Err(Envelope::error(
                        ErrorCode::Internal,
                        format!("{exposed} failed inside toolbelt (panic: {what}); this is a bug, not a problem with the arguments"),
                        Some("try another way to reach the goal; the call had no reliable result".into()),
                    ))
                }
                Err(_) => Err(Envelope::error(
                    ErrorCode::Timeout,
                    format!("{exposed} did not finish within {} ms and was stopped", timeout.as_millis()),
                    Some("narrow the request (smaller range, fewer files) or split it into smaller calls".into()),
                )),
            },
        };
        ctx.cancel_token().cancel();
        let mut env = match outcome {
            Ok(env) | Err(env) => env,
        };
        if let Some(names) = camel
            && let Some(error) = env.error.as_mut()
            && error.code == ErrorCode::InvalidParams
        {
            // The tool names its parameters as it defines them (`due_date: ...`).
            let message = camel_message(&error.message, names);
            env.text = env.text.replace(&error.message, &message);
            error.message = message;
        }
        if self.profile.entries().len() > 0
            && let Some(error) = env.error.as_mut()
        {
            // A tool names the tools it points to by their canonical names, in
            // backticks; the model knows them by the profile's.
            for text in std::iter::once(&mut error.message).chain(error.hint.as_mut()) {
                let named = exposed_mentions(text, &self.profile);
                if named != *text {
                    env.text = env.text.replace(text.as_str(), &named);
                    *text = named;
                }
            }
        }
        (env, ctx)
    }

    /// Stage 7: a text over `budget` is cut to it, the whole saved for reading
    /// back (kept in memory only when it cannot be saved).
    fn budget(&self, mut env: Envelope, budget: &OutputBudget) -> Envelope {
        if env.text.len() <= budget.max_bytes {
            return env;
        }
        match apply_budget(&env.text, budget, &self.session.spill_dir()) {
            Ok(captured) => captured.apply_to(&mut env),
            Err(e) => {
                tracing::error!("could not spill output: {e}");
                truncate_in_memory(&env.text, budget).apply_to(&mut env);
            }
        }
        env
    }

    /// Stage 8: the envelope's context and time, the trace event, and the call
    /// log's record (unless the call was put off: it changed nothing).
    fn record(&self, mut env: Envelope, incoming: Incoming, trace: Trace) -> Envelope {
        let Incoming {
            name,
            call_id,
            params_input,
            started,
            started_at_ms,
            put_off,
        } = incoming;
        let Trace {
            canonical,
            repairs,
            origin,
            hooks,
        } = trace;
        env.stats.time_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        env.context.tool = canonical.clone().unwrap_or_else(|| name.clone());
        env.context.call_id = call_id;
        env.context.cwd = self.session.cwd().display().to_string();
        env.context.params_input = params_input;
        env.context.repairs = repairs;
        env.context.hooks = hooks;
        if canonical.as_deref().is_some_and(|c| c != name) {
            env.context.exposed_name = Some(name);
        }
        tracing::info!(
            target: "toolbelt::call",
            tool = %env.context.tool,
            call_id = %env.context.call_id,
            status = env.status.as_str(),
            code = env.error_code().map(|c| c.as_str()),
            time_ms = env.stats.time_ms,
        );
        let deferred = put_off.is_some_and(|p| p.load(Ordering::Relaxed));
        if let Some(log) = self.call_log.as_ref().filter(|_| !deferred) {
            log.record(call_record(&env, started_at_ms, origin));
        }
        env
    }

    /// Executes several calls; results come back in call order. See [`BatchMode`].
    pub async fn execute_batch(&self, calls: Vec<ToolCall>, mode: BatchMode) -> Vec<Envelope> {
        self.execute_batch_with(calls, mode, &CallOptions::default())
            .await
    }

    /// [`Registry::execute_batch`] with options for every call: each gets the
    /// timeout and the progress sink, and a child of the cancellation token (so
    /// cancelling it stops the batch).
    pub async fn execute_batch_with(
        &self,
        calls: Vec<ToolCall>,
        mode: BatchMode,
        opts: &CallOptions,
    ) -> Vec<Envelope> {
        let max = match mode {
            BatchMode::Sequential => 1,
            BatchMode::Concurrent { max } => max.max(1),
        };
        let mut results = Vec::with_capacity(calls.len());
        let mut run: Vec<ToolCall> = Vec::new();
        for call in calls {
            let safe = self
                .get(&call.name)
                .is_none_or(|t| t.spec().hints.concurrency_safe);
            if safe && max > 1 {
                run.push(call);
                continue;
            }
            results.extend(self.run_group(std::mem::take(&mut run), max, opts).await);
            results.push(self.execute_call(call, opts.for_one_call()).await);
        }
        results.extend(self.run_group(run, max, opts).await);
        results
    }

    async fn run_group(
        &self,
        calls: Vec<ToolCall>,
        max: usize,
        opts: &CallOptions,
    ) -> Vec<Envelope> {
        stream::iter(calls)
            .map(|c| self.execute_call(c, opts.for_one_call()))
            .buffered(max)
            .collect()
            .await
    }
}

/// Stage 8: the checkpoint taken before the call is finished with what the call
/// changed, and named in the envelope's context.
async fn changes(
    pending: Option<Box<dyn PendingCheckpoint>>,
    mut env: Envelope,
) -> (Envelope, CheckpointNote) {
    let Some(pending) = pending else {
        return (env, CheckpointNote::default());
    };
    let note = pending.after(&env).await;
    env.context.checkpoint.clone_from(&note.id);
    env.context.checkpoint_problem.clone_from(&note.problem);
    (env, note)
}

/// Stage 2: safe repair of `arguments` (the repairs go to `repairs`, kept in the
/// envelope whatever the outcome). Arguments that are not JSON end the call, and
/// so do arguments cut off inside a string for a tool that writes: it would save
/// the truncated text.
fn repair(target: &Target<'_>, arguments: Value, repairs: &mut Vec<Repair>) -> Stage<Value> {
    let Target {
        spec,
        exposed,
        camel,
        ..
    } = *target;
    // A profile that shows camelCase parameters: read them back as the tool's.
    let arguments = match camel {
        Some(names) => rename_args(arguments, names, true),
        None => arguments,
    };
    let repaired = repair_arguments(&spec.input_schema, arguments);
    *repairs = repaired.repairs;
    if let Some(e) = repaired.parse_error {
        return Err(Box::new(Envelope::error(
            ErrorCode::InvalidParams,
            format!(
                "the arguments for {exposed} are not valid JSON: {}",
                error_chain(&e)
            ),
            Some("send the arguments as one JSON object matching the tool's input schema".into()),
        )));
    }
    let args = match camel {
        // Arguments sent as a JSON string are objects only after the repair.
        Some(names) => rename_args(repaired.value, names, true),
        None => repaired.value,
    };
    let writes = spec.hints.destructive || spec.permissions.iter().any(|p| p.ends_with(":write"));
    if writes
        && repairs
            .iter()
            .any(|r| r.action.contains(TRUNCATED_STRING_REPAIR))
    {
        return Err(Box::new(Envelope::error(
            ErrorCode::InvalidParams,
            format!(
                "the arguments for {exposed} were cut off in the middle of a string; running it would write truncated content"
            ),
            Some("send the complete arguments again; for long content, write it in parts (a write tool's append mode, say)".into()),
        )));
    }
    Ok(args)
}

/// Stage 3: the input schema, then the tool's own rules; every violation is
/// listed in the envelope the call ends with.
fn validate(target: &Target<'_>, entry: &Entry, args: &Value) -> Stage<()> {
    let Target {
        tool,
        spec,
        exposed,
        camel,
        ..
    } = *target;
    let validator = entry.validator().map_err(|reason| {
        Box::new(Envelope::error(
            ErrorCode::Internal,
            format!(
                "the input schema of {exposed} cannot be compiled: {}",
                error_chain(reason)
            ),
            None,
        ))
    })?;
    let mut violations = validator.violations(args);
    if violations.is_empty() {
        violations = tool.validate(args);
    } else {
        violations = name_unknown_parameters(exposed, &spec.input_schema, args, violations);
    }
    if let Some(names) = camel {
        violations = violations
            .iter()
            .map(|v| camel_violation(v, names))
            .collect();
    }
    if violations.is_empty() {
        return Ok(());
    }
    let mut env = Envelope::error(
        ErrorCode::InvalidParams,
        violations_message(exposed, &violations),
        Some("fix the listed fields and call again; the input schema gives each field's type and allowed values".into()),
    )
    .with_stat("violations", violations.len());
    env.data = serde_json::json!({
        "violations": violations.iter().map(|v| serde_json::json!({"path": v.path, "message": v.message})).collect::<Vec<_>>()
    });
    Err(Box::new(env))
}

/// ` on "<subject>"` when the rule looked at something, else nothing.
fn subject_note(subject: Option<&str>) -> String {
    subject.map(|s| format!(" on {s:?}")).unwrap_or_default()
}

/// The envelope of a call a guard held that was not approved: what it would have
/// destroyed, why it did not run, and the safer way.
fn guarded_decline(exposed: &str, what: &str, guard: &Guard, reason: Option<String>) -> Envelope {
    let why = reason.map_or_else(String::new, |r| format!(" ({r})"));
    Envelope::error(
        ErrorCode::AccessDenied,
        format!(
            "{exposed}{what} was not run: {}, which cannot be undone, so it needs the user's approval, and it was not approved{why}",
            guard.danger
        ),
        Some(format!("{}; do not retry it unchanged", guard.instead)),
    )
}

/// The rule that decided, as the model reads it.
fn rule_named(eval: &Evaluation) -> String {
    eval.rule.as_deref().map_or_else(
        || "the default policy".to_string(),
        |r| format!("the rule `{r}`"),
    )
}

/// The validator's "Additional properties are not allowed ('x' was unexpected)" for
/// the arguments, as one violation per unknown parameter naming the closest real
/// one: `case_insensitive: not a parameter of grep; did you mean `case_sensitive`
/// (false)?`.
fn name_unknown_parameters(
    tool: &str,
    schema: &Value,
    args: &Value,
    violations: Vec<Violation>,
) -> Vec<Violation> {
    let (Some(props), Some(map)) = (
        schema.get("properties").and_then(Value::as_object),
        args.as_object(),
    ) else {
        return violations;
    };
    let unknown: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| !props.contains_key(*k))
        .collect();
    if unknown.is_empty() {
        return violations;
    }
    let names: Vec<String> = props.keys().cloned().collect();
    let mut out: Vec<Violation> = violations
        .into_iter()
        .filter(|v| !(v.path.is_empty() && v.message.contains("unexpected")))
        .collect();
    for (key, value) in unknown {
        let suggestion = if let Some(opposite) = names.iter().find(|n| negates(key, n)) {
            match value {
                Value::Bool(b) => format!("did you mean `{opposite}` ({})?", !b),
                _ => format!("did you mean `{opposite}`, with the opposite meaning?"),
            }
        } else {
            match closest(key, names.iter().map(String::as_str), 1).first() {
                Some(m) if m.score >= PARAMETER_MATCH => {
                    format!("did you mean `{}`?", m.name)
                }
                _ => format!("its parameters are: {}", names.join(", ")),
            }
        };
        out.push(Violation::new(
            key.clone(),
            format!("not a parameter of {tool}; {suggestion}"),
        ));
    }
    out
}

/// True when `name` is `known` with a negating prefix on one of its words
/// (`case_insensitive` for `case_sensitive`, `no_follow` for `follow`).
fn negates(name: &str, known: &str) -> bool {
    const NEGATIONS: [&str; 5] = ["in", "un", "non", "no_", "not_"];
    name.char_indices()
        .filter(|(i, _)| *i == 0 || name[..*i].ends_with('_'))
        .any(|(i, _)| {
            NEGATIONS.iter().any(|p| {
                name[i..].starts_with(p)
                    && format!("{}{}", &name[..i], &name[i + p.len()..]) == known
            })
        })
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// The call log's record of a final envelope.
fn call_record(env: &Envelope, at_ms: i64, origin: Origin) -> CallRecord {
    let data_len = json_len(&env.data);
    CallRecord {
        at_ms,
        tool: env.context.tool.clone(),
        call_id: env.context.call_id.clone(),
        args: args_digest(&env.context.params_input),
        status: env.status.as_str().to_string(),
        error_code: env.error_code().map(|c| c.as_str().to_string()),
        duration_ms: env.stats.time_ms,
        bytes_out: u64::try_from(env.text.len() + data_len).unwrap_or(u64::MAX),
        origin,
        checkpoint: env.context.checkpoint.clone(),
        hooks: env.context.hooks.clone(),
    }
}

/// The length of `value` as compact JSON, counted without building the text.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::{Reply, Session, ToolError};

    fn registry(names: &[&str]) -> Registry {
        let mut r = Registry::new(Session::new(std::env::temp_dir()));
        for name in names {
            let spec = ToolSpec::new(*name, "x", json!({"type": "object"}));
            r.register_fn(spec, |_c, v| async move {
                Ok::<_, ToolError>(Reply::new(v, ""))
            })
            .unwrap();
        }
        r
    }

    #[tokio::test]
    async fn the_unknown_tool_api_says_what_a_call_would() {
        let r = registry(&["read_file", "write_file", "grep"]);
        let called = r.execute("read_fil", json!({})).await;
        let built = r.unknown_tool("read_fil");
        assert_eq!(called.text, built.text);
        assert_eq!(called.data, built.data);
        assert_eq!(called.error, built.error);
        assert_eq!(
            r.unknown_tool_message("read_fil"),
            "there is no tool named \"read_fil\"; did you mean \"read_file\"?"
        );
        assert_eq!(
            registry(&[]).unknown_tool_message("x"),
            "there is no tool named \"x\", and no tools are registered"
        );
    }
}
