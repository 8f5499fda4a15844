//! The calls of one step: run by the registry (concurrency-safe ones together),
//! in call order, under the guards against a model that repeats itself: the
//! same call step after step (`guard::Repeats`), a cycle of two or three calls
//! with the same results, a call that changes nothing again (`loops`).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::{BatchMode, CallOptions, Status, ToolCall};
use toolbelt_wire::calls::{ParsedCall, TextParseError, to_observation};

use super::{Agent, TurnState};
use crate::events::AgentEvent;
use crate::guard::{call_key, repeat_reminder, repeated_call_error};
use crate::loops::{LOOP_STOP_ROUNDS, NO_OP_AGAIN, StepCall, loop_reminder, loop_stopped};
use crate::options::Outcome;
use crate::summary::{call_summary, result_summary};

impl Agent {
    /// Runs the calls of one step (concurrency-safe ones together), in call order,
    /// with the repeated-call guard. `Some` ends the turn.
    pub(super) async fn run_calls(
        &mut self,
        calls: Vec<Result<ParsedCall, TextParseError>>,
        state: &mut TurnState,
        cancel: &CancellationToken,
    ) -> (Vec<CallResult>, Option<(Outcome, String)>) {
        let mut stop = None;
        // What each call becomes: run by the registry, or answered without running.
        enum Plan {
            Run(usize),
            /// The same as run `usize`, under its own call id.
            Same(usize, String),
            Answer(CallResult),
        }
        state.repeats.next_step();
        let mut step_keys: BTreeMap<String, usize> = BTreeMap::new();
        let mut plans = Vec::with_capacity(calls.len());
        let mut to_run: Vec<ToolCall> = Vec::new();
        let mut run_meta: Vec<Ran> = Vec::new();
        for call in calls {
            self.call_seq += 1;
            let call = match call {
                Ok(c) => c,
                Err(parse_error) => match parse_error.to_call() {
                    Some(c) => ParsedCall::new(c.name, c.arguments),
                    None => {
                        let id = format!("call_{}", self.call_seq);
                        let text = parse_error.to_observation();
                        state.tool_calls += 1;
                        plans.push(Plan::Answer(CallResult {
                            call_id: id,
                            tool: parse_error.tool.clone().unwrap_or_default(),
                            text: text.clone(),
                            observation: text,
                            is_error: true,
                        }));
                        continue;
                    }
                },
            };
            let id = call
                .call_id
                .clone()
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{}", self.call_seq));
            let tool = call.name.clone();
            let key = call_key(
                self.registry.resolve(&tool).unwrap_or(&tool),
                &call.arguments,
            );
            let streak = state.repeats.see(key.clone());
            state.tool_calls += 1;
            self.emit(AgentEvent::ToolCall {
                call_id: id.clone(),
                tool: tool.clone(),
                arguments: call.arguments.clone(),
                summary: call_summary(&tool, &call.arguments),
            });
            if streak >= self.options.repeat_stop || stop.is_some() {
                let message = format!(
                    "the model made the same call ({tool} with the same arguments) {streak} times in a row; the run was stopped"
                );
                let text = repeated_call_error(streak);
                self.emit(AgentEvent::ToolResult {
                    call_id: id.clone(),
                    tool: tool.clone(),
                    status: "error".into(),
                    error_code: Some("REPEATED_CALL".into()),
                    summary: "not run: repeated call".into(),
                    text: text.clone(),
                    data: Value::Null,
                    time_ms: 0,
                });
                if stop.is_none() {
                    stop = Some((Outcome::RepeatedCall, message));
                }
                plans.push(Plan::Answer(CallResult {
                    call_id: id,
                    tool,
                    observation: format!("Observation (error REPEATED_CALL): {text}"),
                    text,
                    is_error: true,
                }));
                continue;
            }
            // The same call twice in one step runs once; both get its result.
            if let Some(&first) = step_keys.get(&key) {
                plans.push(Plan::Same(first, id));
                continue;
            }
            step_keys.insert(key.clone(), to_run.len());
            plans.push(Plan::Run(to_run.len()));
            run_meta.push(Ran {
                id: id.clone(),
                label: call_summary(&tool, &call.arguments),
                tool,
                streak,
                key,
            });
            to_run.push(call.with_id(id).into_call());
        }
        let opts = CallOptions {
            cancel: Some(cancel.child_token()),
            origin: Some(self.origin()),
            ..CallOptions::default()
        };
        let envelopes = if to_run.is_empty() {
            Vec::new()
        } else {
            self.registry
                .execute_batch_with(
                    to_run,
                    BatchMode::Concurrent {
                        max: self.options.max_parallel.max(1),
                    },
                    &opts,
                )
                .await
        };
        let mut ran: Vec<CallResult> = Vec::with_capacity(envelopes.len());
        for (env, meta) in envelopes.iter().zip(&run_meta) {
            let Ran {
                id,
                tool,
                streak,
                key,
                ..
            } = meta;
            let streak = *streak;
            let mut text = env.text.clone();
            let mut observation = to_observation(env);
            if streak >= self.options.repeat_warn {
                let reminder = repeat_reminder(streak, self.options.repeat_stop);
                text.push_str(&reminder);
                observation.push_str(&reminder);
                self.notice(format!(
                    "{tool} was called {streak} times in a row with the same arguments; the model was reminded"
                ));
            } else if state.loops.no_op_again(key, env) {
                text.push_str(NO_OP_AGAIN);
                observation.push_str(NO_OP_AGAIN);
                self.notice(format!(
                    "{tool} changed nothing again; the model was reminded"
                ));
            }
            self.emit(AgentEvent::ToolResult {
                call_id: id.clone(),
                tool: tool.clone(),
                status: env.status.as_str().to_string(),
                error_code: env.error_code().map(|c| c.as_str().to_string()),
                summary: result_summary(env),
                text: env.text.clone(),
                data: env.data.clone(),
                time_ms: env.stats.time_ms,
            });
            self.record(&json!({"type": "envelope", "call_id": id, "envelope": env.to_value()}));
            ran.push(CallResult {
                call_id: id.clone(),
                tool: tool.clone(),
                text,
                observation,
                is_error: env.status == Status::Error,
            });
        }
        let step_calls: Vec<StepCall<'_>> = run_meta
            .iter()
            .zip(&envelopes)
            .map(|(meta, env)| StepCall {
                key: &meta.key,
                label: &meta.label,
                envelope: env,
            })
            .collect();
        if let Some(cycle) = state.loops.step(&step_calls)
            && let Some(last) = ran.last_mut()
        {
            let reminder = loop_reminder(&cycle);
            if cycle.rounds >= LOOP_STOP_ROUNDS {
                if stop.is_none() {
                    stop = Some((Outcome::RepeatedCall, loop_stopped(&cycle)));
                }
            } else {
                last.text.push_str(&reminder);
                last.observation.push_str(&reminder);
                self.notice(format!(
                    "the model went round the same {} calls twice ({}); it was reminded",
                    cycle.length,
                    cycle.path()
                ));
            }
        }
        let results = plans
            .into_iter()
            .filter_map(|p| match p {
                Plan::Answer(r) => Some(r),
                Plan::Run(i) => ran.get(i).cloned(),
                Plan::Same(i, call_id) => ran.get(i).map(|r| {
                    let mut same = r.clone();
                    self.emit(AgentEvent::ToolResult {
                        call_id: call_id.clone(),
                        tool: same.tool.clone(),
                        status: if same.is_error { "error" } else { "success" }.into(),
                        error_code: None,
                        summary: format!("the same call as {} in this step", same.call_id),
                        text: same.text.clone(),
                        data: Value::Null,
                        time_ms: 0,
                    });
                    same.call_id = call_id;
                    same
                }),
            })
            .collect();
        (results, stop)
    }
}

/// A call the registry runs in this step, as the guards see it.
struct Ran {
    id: String,
    tool: String,
    /// Steps in a row it has been made in.
    streak: usize,
    /// [`call_key`] of the call.
    key: String,
    /// Its one-line summary.
    label: String,
}

/// What one call gave, in both protocols' shapes.
#[derive(Debug, Clone)]
pub(super) struct CallResult {
    pub(super) call_id: String,
    pub(super) tool: String,
    /// For native function calling.
    pub(super) text: String,
    /// For the text protocol.
    pub(super) observation: String,
    pub(super) is_error: bool,
}
