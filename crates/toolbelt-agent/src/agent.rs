//! The agent loop: ask the model, run the calls it asks for, give back the
//! results, until a final answer. What it leans on lives beside it: the history's
//! compaction in `compact`, its events and transcript in `journal`, the system
//! prompt in `prompt`, the guards against a small model's habits (repeated
//! calls, runaway replies, echoed results) and their nudge texts in `guard`;
//! the person's hooks at the edges of a run in `session` (beside this file),
//! their inputs and records in `hooks`; subagents reach it only through
//! [`Spawner`] (in `spawner`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use toolbelt_core::human::plural;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::{BatchMode, CallOptions, Origin, Registry, Status, ToolCall, error_chain};
use toolbelt_wire::calls::{
    ParsedCall, TextParseError, calls_in_text, parse_text_reply, to_observation,
};
use toolbelt_wire::export::{export, text_prompt};

use crate::compact::{Compaction, Window};
use crate::error::AgentError;
use crate::events::{AgentEvent, EventTx};
use crate::guard::{
    CONTINUE_AFTER_CUT, FINAL_ANSWER_NOT_TAKEN, MAX_TEXT_NUDGES, NOT_AN_ANSWER,
    OBSERVATION_IGNORED, RUNAWAY_NOTICE, Repeats, Runaway, TEXT_FORMAT_REMINDER, USE_THE_TOOLS,
    actions_dropped, call_key, is_observation_echo, repeat_reminder, repeated_call_error,
};
use crate::journal::Journal;
use crate::message::{Message, ModelCall, ToolOutput, Usage};
use crate::options::{AgentOptions, ModelSize, Outcome, Protocol, RunOutcome};
use crate::prompt::system_prompt;
use crate::provider::{
    ModelRequest, ModelResponse, Provider, ProviderError, StopReason, StreamEvent,
};
use crate::spawner::Spawner;
use crate::summary::{call_summary, result_summary};
use crate::transcript::{self, Transcript, new_run_id};

mod session;

/// Where a text-protocol reply must stop: the model would go on to write the
/// result of its own action.
const TEXT_STOP: &str = "\nObservation:";

/// A conversation with a model that can use the registry's tools.
///
/// ```no_run
/// # async fn demo(registry: std::sync::Arc<toolbelt_core::Registry>) {
/// use toolbelt_agent::{Agent, AgentOptions, ProviderConfig, ProviderKind, build_provider};
/// let provider = build_provider(ProviderConfig::new(ProviderKind::OpenAi, "gpt-4.1")).unwrap();
/// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let mut agent = Agent::new(registry, provider, AgentOptions::default(), tx);
/// let cancel = tokio_util::sync::CancellationToken::new();
/// let outcome = agent.run("What does src/main.rs do?", &cancel).await;
/// println!("{}", outcome.message);
/// # }
/// ```
#[derive(Debug)]
pub struct Agent {
    registry: Arc<Registry>,
    provider: Arc<dyn Provider>,
    options: AgentOptions,
    /// Its events and transcript.
    journal: Journal,
    run_id: String,
    system: String,
    tools: Option<Arc<Value>>,
    /// The context window, and how full the history makes it.
    window: Window,
    messages: Vec<Message>,
    usage: Usage,
    started: bool,
    resumed: bool,
    /// The `session_end` hooks were asked ([`Agent::end`]).
    ended: bool,
    /// A subagent's run: its start and end are the subagent runtime's hook
    /// events (`subagent_start`, `subagent_stop`), not the session's, and its
    /// final answers meet no `stop` hook.
    subagent: bool,
    /// What the `session_start` hooks added, for the next prompt.
    start_notes: Vec<String>,
    call_seq: u64,
    /// The turns started so far in this run (the current one's number once one
    /// has started: 1 is the run's first prompt).
    turn: u32,
    /// Where its calls come from (`agent`, `subagent` with its parent, `cron` with
    /// its job); each call's origin adds the run and the turn.
    origin: Origin,
    /// The subagents this agent starts: their reports come into the conversation.
    subagents: Option<Arc<dyn Spawner>>,
}

impl Agent {
    /// A new conversation.
    pub fn new(
        registry: Arc<Registry>,
        provider: Arc<dyn Provider>,
        options: AgentOptions,
        events: EventTx,
    ) -> Agent {
        let specs = registry.definitions();
        let (system, tools) = match options.protocol {
            Protocol::Native => {
                let tools = export(&specs, provider.kind().tool_format());
                (
                    system_prompt(&registry, &options, None),
                    Some(Arc::new(tools)),
                )
            }
            Protocol::Text => (
                system_prompt(&registry, &options, Some(&text_prompt(&specs))),
                None,
            ),
        };
        let fixed_chars = system.len() + tools.as_ref().map_or(0, |t| t.to_string().len());
        let window = Window::new(options.context_window, fixed_chars);
        Agent {
            registry,
            provider,
            options,
            journal: Journal::new(events),
            run_id: new_run_id(),
            system,
            tools,
            window,
            messages: Vec::new(),
            usage: Usage::default(),
            started: false,
            resumed: false,
            ended: false,
            subagent: false,
            start_notes: Vec::new(),
            call_seq: 0,
            turn: 0,
            origin: Origin::new("agent"),
            subagents: None,
        }
    }

    /// Says where this agent's calls come from (by default `agent`): a subagent's
    /// parent run, a scheduled job. Each call's origin is this one with the run's
    /// id and the turn filled in; its subagents' calls carry it too, as
    /// `subagent` with this run as their parent.
    pub fn set_origin(&mut self, origin: Origin) {
        self.origin = origin;
        self.bind_subagents();
    }

    /// Where the calls of the current turn come from.
    pub fn origin(&self) -> Origin {
        self.origin.clone().in_turn(&self.run_id, self.turn)
    }

    /// The turns started so far (the current one's number during a turn).
    pub fn turns(&self) -> u32 {
        self.turn
    }

    /// Hands the subagents this run's events, id and origin.
    fn bind_subagents(&self) {
        if let Some(s) = &self.subagents {
            let mut origin = self.origin.clone();
            origin.run_id = Some(self.run_id.clone());
            s.bind(self.journal.events().clone(), &self.run_id, &origin);
        }
    }

    /// Gives this agent the subagents its `task` and `spawn` tools start (the same
    /// [`Subagents`](crate::Subagents) whose tools are in its registry): their
    /// progress goes into this agent's events, and the reports of background ones
    /// into its conversation, before its next model call.
    pub fn set_subagents(&mut self, subagents: impl Spawner + 'static) {
        self.subagents = Some(Arc::new(subagents));
        self.bind_subagents();
    }

    /// Continues the conversation of the transcript at `path` (its later turns are
    /// appended to it).
    ///
    /// # Errors
    /// The transcript cannot be read.
    pub fn resume(
        registry: Arc<Registry>,
        provider: Arc<dyn Provider>,
        options: AgentOptions,
        events: EventTx,
        path: &Path,
    ) -> Result<Agent, AgentError> {
        let loaded = transcript::load(path)?;
        let mut agent = Agent::new(registry, provider, options, events);
        agent.run_id = loaded.run_id;
        agent.turn = loaded.turns;
        agent.messages = loaded.messages;
        agent.usage = loaded.usage;
        let sink = agent.options.transcript_sink.clone();
        agent
            .journal
            .set_transcript(Some(Transcript::append(path)?.with_sink(sink)));
        agent.resumed = true;
        Ok(agent)
    }

    /// The run's id (its transcript's file name without `.jsonl`).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The system prompt sent with every call.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }

    /// Tokens used so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The transcript's path, once the first turn has started.
    pub fn transcript_path(&self) -> Option<&Path> {
        self.journal.transcript().map(Transcript::path)
    }

    /// Forgets the conversation (`/clear`): the next turn starts afresh, in a new
    /// transcript (and a new session for the hooks: call [`Agent::end`] first).
    pub fn clear(&mut self) {
        self.messages.clear();
        self.usage = Usage::default();
        self.window.forget();
        self.journal.set_transcript(None);
        self.run_id = new_run_id();
        self.turn = 0;
        self.started = false;
        self.resumed = false;
        self.ended = false;
        self.start_notes.clear();
        self.bind_subagents();
    }

    /// Compacts the history now (`/compact`): old tool results shortened, older
    /// turns summarised.
    pub async fn compact_now(&mut self, cancel: &CancellationToken) {
        self.start().await;
        self.compaction().on_request(cancel).await;
    }

    /// Runs one turn: sends `prompt`, runs the tools the model asks for, and goes on
    /// until the model gives its final answer, the step limit is reached, the model
    /// repeats one call too often, the provider fails or `cancel` fires. The
    /// conversation is kept whatever happens, so the next turn goes on from it.
    ///
    /// With hooks, a `user_prompt` hook may refuse the prompt (the run ends
    /// [`Outcome::PromptDenied`] without calling the model) or add context to
    /// it, and a `stop` hook may keep the model going after its final answer.
    pub async fn run(&mut self, prompt: &str, cancel: &CancellationToken) -> RunOutcome {
        self.start().await;
        self.turn += 1;
        // Where the turn starts: a rewind to it forks the transcript here.
        self.record(&json!({"type": "turn", "turn": self.turn}));
        let mut state = TurnState {
            usage_at_start: self.usage,
            ..TurnState::default()
        };
        let outcome = match self.prompt_hooks(prompt).await {
            Ok(text) => {
                self.push(Message::user(text));
                let turn_start = self.messages.len() - 1;
                self.turn(turn_start, &mut state, cancel).await
            }
            Err(refused) => refused,
        };
        self.finish(outcome, &state)
    }

    /// Records and reports the end of a turn.
    fn finish(&mut self, outcome: (Outcome, String), state: &TurnState) -> RunOutcome {
        let run_outcome = RunOutcome {
            outcome: outcome.0,
            message: outcome.1,
            steps: state.steps,
            tool_calls: state.tool_calls,
        };
        self.record(&json!({
            "type": "end",
            "outcome": run_outcome.outcome.as_str(),
            "message": run_outcome.message,
            "steps": run_outcome.steps,
            "tool_calls": run_outcome.tool_calls,
            "usage": self.usage,
        }));
        self.emit(AgentEvent::RunEnded {
            outcome: run_outcome.outcome.as_str().to_string(),
            message: run_outcome.message.clone(),
            steps: run_outcome.steps,
            tool_calls: run_outcome.tool_calls,
            usage: self.usage,
        });
        run_outcome
    }

    async fn turn(
        &mut self,
        turn_start: usize,
        state: &mut TurnState,
        cancel: &CancellationToken,
    ) -> (Outcome, String) {
        let mut overflow_retried = false;
        loop {
            if cancel.is_cancelled() {
                return (Outcome::Cancelled, "cancelled".into());
            }
            if state.steps >= self.options.max_steps {
                return (
                    Outcome::MaxSteps,
                    format!(
                        "stopped after {} steps without a final answer (raise the limit with --max-steps or [agent] max_steps)",
                        self.options.max_steps
                    ),
                );
            }
            if let Some(budget) = self.options.token_budget {
                let used = self.usage.input_tokens + self.usage.output_tokens
                    - (state.usage_at_start.input_tokens + state.usage_at_start.output_tokens);
                if used > budget {
                    return (
                        Outcome::TokenBudget,
                        format!(
                            "stopped after using {used} tokens, more than its budget of {budget}"
                        ),
                    );
                }
            }
            self.deliver_reports().await;
            self.compaction().fit(turn_start, cancel).await;
            state.steps += 1;
            self.emit(AgentEvent::StepStarted { step: state.steps });
            let started = Instant::now();
            let response = match self.ask_model(cancel).await {
                Ok(r) => r,
                Err(ProviderError::Cancelled) => return (Outcome::Cancelled, "cancelled".into()),
                Err(e) if e.is_context_overflow() && !overflow_retried => {
                    overflow_retried = true;
                    state.steps -= 1;
                    self.notice(format!(
                        "the provider says the conversation is too long for the model ({}); compacting it",
                        error_chain(&e)
                    ));
                    self.compaction().after_overflow(turn_start, cancel).await;
                    continue;
                }
                Err(e) => return (Outcome::Error, error_chain(&e)),
            };
            overflow_retried = false;
            self.account(&response, started.elapsed());
            let outcome = match self.options.protocol {
                Protocol::Native => self.native_step(response, state, cancel).await,
                Protocol::Text => self.text_step(response, state, cancel).await,
            };
            if let Some(end) = outcome {
                if end.0 == Outcome::FinalAnswer {
                    if self.wait_for_background(cancel).await {
                        continue;
                    }
                    match self.stop_hooks(&end.1, state).await {
                        StopCheck::End => {}
                        StopCheck::GoOn => continue,
                        StopCheck::Limit(message) => return (Outcome::StopHookLimit, message),
                    }
                }
                return end;
            }
        }
    }

    /// Puts the reports of background subagents that ended into the conversation.
    async fn deliver_reports(&mut self) {
        let Some(subagents) = self.subagents.clone() else {
            return;
        };
        for report in subagents.take_reports().await {
            self.push(Message::user(report));
        }
    }

    /// After a final answer: when the options say so and background subagents of
    /// this agent are still running, waits until one ends (true: the turn goes on
    /// with its report).
    async fn wait_for_background(&mut self, cancel: &CancellationToken) -> bool {
        let Some(subagents) = self.subagents.clone() else {
            return false;
        };
        if !self.options.wait_for_background {
            return false;
        }
        let running = subagents.running();
        if running == 0 && !subagents.has_reports() {
            return false;
        }
        if running > 0 {
            self.notice(format!(
                "waiting for {running} background {} to report",
                plural(running as u64, "subagent")
            ));
            subagents.wait_any(cancel).await;
        }
        !cancel.is_cancelled()
    }

    /// One step of native function calling; `Some` ends the turn.
    async fn native_step(
        &mut self,
        response: ModelResponse,
        state: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<(Outcome, String)> {
        let ModelResponse {
            content,
            tool_calls,
            stop_reason,
            ..
        } = response;
        let (content, tool_calls) = if tool_calls.is_empty() {
            self.written_calls(content)
        } else {
            (content, tool_calls)
        };
        self.emit(AgentEvent::AssistantMessage {
            text: content.clone(),
            tool_calls: tool_calls.len(),
        });
        self.push(Message::Assistant {
            content: content.clone(),
            tool_calls: tool_calls.clone(),
        });
        if tool_calls.is_empty() {
            if stop_reason == StopReason::MaxTokens {
                self.notice(
                    "the answer was cut off by the output limit; asking the model to go on".into(),
                );
                self.push(Message::user(CONTINUE_AFTER_CUT));
                return None;
            }
            let empty = content.trim().is_empty();
            if (empty || is_observation_echo(&content)) && state.nudges < MAX_TEXT_NUDGES {
                // Nothing, or template debris (`<tool_response>...`: a tool's result
                // written by the model): never its answer.
                state.nudges += 1;
                self.notice(if empty {
                    "the reply was empty; reminding the model".into()
                } else {
                    "the reply repeated a tool result instead of a call or an answer; reminding the model".into()
                });
                self.push(Message::user(NOT_AN_ANSWER));
                return None;
            }
            if self.options.model_size == ModelSize::Small
                && state.tool_calls == 0
                && !state.prose_reminded
            {
                state.prose_reminded = true;
                self.notice(
                    "the model answered without calling a tool; reminding it to use the tools"
                        .into(),
                );
                self.push(Message::user(USE_THE_TOOLS));
                return None;
            }
            return Some((Outcome::FinalAnswer, content));
        }
        let calls = tool_calls
            .iter()
            .map(|c| ParsedCall::from_arguments_text(&c.name, &c.arguments).with_id(&c.id))
            .map(Ok)
            .collect();
        let (results, stop) = self.run_calls(calls, state, cancel).await;
        let outputs = results
            .into_iter()
            .map(|r| ToolOutput {
                call_id: r.call_id,
                name: r.tool,
                content: r.text,
                is_error: r.is_error,
            })
            .collect();
        self.push(Message::Tool { results: outputs });
        if cancel.is_cancelled() {
            return Some((Outcome::Cancelled, "cancelled".into()));
        }
        stop
    }

    /// One step of the text protocol; `Some` ends the turn.
    async fn text_step(
        &mut self,
        response: ModelResponse,
        state: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<(Outcome, String)> {
        let content = response.content;
        let mut reply = parse_text_reply(&content);
        // One action per reply: the model decides the next one on its observation.
        let dropped_actions = reply.actions.len().saturating_sub(1);
        reply.actions.truncate(1);
        self.emit(AgentEvent::AssistantMessage {
            text: content.clone(),
            tool_calls: reply.actions.len(),
        });
        self.push(Message::assistant(content.clone()));
        if reply.actions.is_empty() {
            let echoed = reply
                .final_answer
                .as_deref()
                .map_or_else(|| is_observation_echo(&content), is_observation_echo);
            if echoed {
                // The model wrote an observation (an error, most often) itself: that is
                // never its answer.
                if state.nudges >= MAX_TEXT_NUDGES {
                    return Some((
                        Outcome::NoAnswer,
                        "the model kept writing observations and errors itself instead of an action or a final answer"
                            .into(),
                    ));
                }
                state.nudges += 1;
                self.notice(
                    "the reply repeated an observation instead of an action or an answer; reminding the model of the format"
                        .into(),
                );
                self.push(Message::user(TEXT_FORMAT_REMINDER));
                return None;
            }
            if let Some(answer) = reply.final_answer {
                return Some((Outcome::FinalAnswer, answer));
            }
            if response.stop_reason == StopReason::MaxTokens {
                self.notice(
                    "the answer was cut off by the output limit; asking the model to go on".into(),
                );
                self.push(Message::user(CONTINUE_AFTER_CUT));
                return None;
            }
            if state.nudges >= MAX_TEXT_NUDGES {
                return Some((Outcome::FinalAnswer, content.trim().to_string()));
            }
            state.nudges += 1;
            self.notice(
                "the reply had no Action and no Final Answer; reminding the model of the format"
                    .into(),
            );
            self.push(Message::user(TEXT_FORMAT_REMINDER));
            return None;
        }
        let ignored_final = reply.final_answer.is_some();
        let (results, stop) = self.run_calls(reply.actions, state, cancel).await;
        let mut observation = results
            .iter()
            .map(|r| r.observation.clone())
            .collect::<Vec<_>>()
            .join("\n\n");
        if ignored_final {
            observation.push_str(FINAL_ANSWER_NOT_TAKEN);
        }
        if dropped_actions > 0 {
            observation.push_str(&actions_dropped(dropped_actions));
        }
        if reply.ignored_after_observation.is_some() {
            observation.push_str(OBSERVATION_IGNORED);
        }
        self.push(Message::user(observation));
        if cancel.is_cancelled() {
            return Some((Outcome::Cancelled, "cancelled".into()));
        }
        stop
    }

    /// Runs the calls of one step (concurrency-safe ones together), in call order,
    /// with the repeated-call guard. `Some` ends the turn.
    async fn run_calls(
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
        let mut run_meta: Vec<(String, String, usize)> = Vec::new(); // (id, tool, streak)
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
            step_keys.insert(key, to_run.len());
            plans.push(Plan::Run(to_run.len()));
            run_meta.push((id.clone(), tool, streak));
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
        for (env, (id, tool, streak)) in envelopes.into_iter().zip(run_meta) {
            let mut text = env.text.clone();
            let mut observation = to_observation(&env);
            if streak >= self.options.repeat_warn {
                let reminder = repeat_reminder(streak, self.options.repeat_stop);
                text.push_str(&reminder);
                observation.push_str(&reminder);
                self.notice(format!(
                    "{tool} was called {streak} times in a row with the same arguments; the model was reminded"
                ));
            }
            self.emit(AgentEvent::ToolResult {
                call_id: id.clone(),
                tool: tool.clone(),
                status: env.status.as_str().to_string(),
                error_code: env.error_code().map(|c| c.as_str().to_string()),
                summary: result_summary(&env),
                text: env.text.clone(),
                data: env.data.clone(),
                time_ms: env.stats.time_ms,
            });
            self.record(&json!({"type": "envelope", "call_id": id, "envelope": env.to_value()}));
            ran.push(CallResult {
                call_id: id,
                tool,
                text,
                observation,
                is_error: env.status == Status::Error,
            });
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

    /// Calls the model with the conversation, forwarding what streams in.
    async fn ask_model(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ProviderError> {
        let request = ModelRequest {
            system: self.system.clone(),
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            max_tokens: None,
            stop: match self.options.protocol {
                Protocol::Native => Vec::new(),
                Protocol::Text => vec![TEXT_STOP.to_string()],
            },
        };
        let prompt_tokens = self.window.estimate_tokens(&self.messages);
        let events = self.journal.events().clone();
        let runaway = Runaway::default();
        let stop_runaway = cancel.child_token();
        let sink = |event: StreamEvent| {
            let _ = events.send(match event {
                StreamEvent::TextDelta { text } => {
                    if runaway.push(&text) {
                        stop_runaway.cancel();
                    }
                    AgentEvent::TextDelta { text }
                }
                StreamEvent::Waiting { elapsed_ms } => AgentEvent::Waiting {
                    elapsed_ms,
                    prompt_tokens,
                },
                StreamEvent::ReasoningDelta { text } => AgentEvent::ReasoningDelta { text },
                StreamEvent::ToolCallStarted { .. } => return,
                StreamEvent::Retrying {
                    attempt,
                    wait_ms,
                    reason,
                } => AgentEvent::Retrying {
                    attempt,
                    wait_ms,
                    reason,
                },
            });
        };
        match self.provider.complete(&request, &sink, &stop_runaway).await {
            Err(ProviderError::Cancelled) if !cancel.is_cancelled() => {
                // The model went round in circles: what it wrote up to the repetition
                // is its reply.
                let content = runaway.kept();
                self.journal.notice(RUNAWAY_NOTICE.into());
                Ok(ModelResponse {
                    content,
                    reasoning: String::new(),
                    tool_calls: Vec::new(),
                    stop_reason: StopReason::Other("repetition".into()),
                    usage: Usage::default(),
                })
            }
            Ok(mut response) if runaway.repeating() => {
                response.content = runaway.kept();
                self.journal.notice(RUNAWAY_NOTICE.into());
                Ok(response)
            }
            other => other,
        }
    }

    /// A native reply without `tool_calls` whose text holds calls of known tools
    /// (`<tool_call>` tags, a JSON block, an `Action:` line): the calls, made
    /// native, and the rest of the text. Small models served with a template
    /// that does not teach them function calling answer so.
    fn written_calls(&mut self, content: String) -> (String, Vec<ModelCall>) {
        let registry = Arc::clone(&self.registry);
        let known = |name: &str| registry.resolve(name).is_some();
        let Some(found) = calls_in_text(&content, &known) else {
            return (content, Vec::new());
        };
        let calls: Vec<ModelCall> = found
            .calls
            .iter()
            .map(|c| {
                self.call_seq += 1;
                ModelCall {
                    id: format!("call_text_{}", self.call_seq),
                    name: c.name.clone(),
                    arguments: c
                        .raw_arguments
                        .clone()
                        .unwrap_or_else(|| c.arguments.to_string()),
                }
            })
            .collect();
        let names = calls
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        self.record(&json!({
            "type": "repair",
            "repair": "tool calls written in the text",
            "form": found.form,
            "calls": names,
        }));
        self.notice(format!(
            "the model wrote its call ({names}) as text ({}) instead of a function call; it was run as one",
            found.form
        ));
        (found.rest, calls)
    }

    /// Adds a model call's usage and learns the tokens per character.
    fn account(&mut self, response: &ModelResponse, elapsed: std::time::Duration) {
        let step = response.usage;
        self.usage.add(&step);
        self.window.learn(step.input_tokens, &self.messages);
        self.record(&json!({
            "type": "usage",
            "usage": step,
            "total": self.usage,
            "stop_reason": response.stop_reason,
            "time_ms": elapsed.as_millis() as u64,
        }));
        self.emit(AgentEvent::Usage {
            step,
            total: self.usage,
        });
    }

    /// The parts of this agent a compaction of its history works on.
    fn compaction(&mut self) -> Compaction<'_> {
        let origin = self.origin();
        Compaction {
            origin,
            messages: &mut self.messages,
            journal: &mut self.journal,
            usage: &mut self.usage,
            provider: &*self.provider,
            registry: &self.registry,
            window: self.window,
        }
    }

    fn push(&mut self, message: Message) {
        self.record(&json!({"type": "message", "message": message}));
        self.messages.push(message);
    }

    fn record(&mut self, line: &Value) {
        self.journal.record(line);
    }

    fn emit(&self, event: AgentEvent) {
        self.journal.emit(event);
    }

    fn notice(&mut self, message: String) {
        self.journal.notice(message);
    }
}

/// What one call gave, in both protocols' shapes.
#[derive(Debug, Clone)]
struct CallResult {
    call_id: String,
    tool: String,
    /// For native function calling.
    text: String,
    /// For the text protocol.
    observation: String,
    is_error: bool,
}

/// What one turn keeps track of.
#[derive(Debug, Default)]
struct TurnState {
    usage_at_start: Usage,
    steps: usize,
    tool_calls: usize,
    nudges: usize,
    /// A small model was reminded to use the tools.
    prose_reminded: bool,
    repeats: Repeats,
    /// The times a `stop` hook kept this turn going.
    stop_blocks: usize,
}

/// What the `stop` hooks make of a final answer.
enum StopCheck {
    /// The turn ends with it.
    End,
    /// The turn goes on (the hook's reason was sent to the model).
    GoOn,
    /// The hook blocked once too often: the run ends, saying so.
    Limit(String),
}
