//! The agent loop.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::{BatchMode, CallOptions, Registry, Status, ToolCall};
use toolbelt_wire::calls::{ParsedCall, TextParseError, parse_text_reply, to_observation};
use toolbelt_wire::export::{export, text_prompt};

use crate::compact;
use crate::events::{AgentEvent, EventTx};
use crate::message::{Message, ToolOutput, Usage};
use crate::provider::{
    ModelRequest, ModelResponse, Provider, ProviderError, StopReason, StreamEvent,
};
use crate::summary::{call_summary, result_summary};
use crate::transcript::{self, Transcript};

/// How the model asks for tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The provider's function calling (`tools` in the request).
    #[default]
    Native,
    /// The text protocol: the tools described in the system prompt, `Action:
    /// tool[{...}]` read from the reply, `Observation: ...` sent back.
    Text,
}

impl Protocol {
    /// `native` or `text`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Native => "native",
            Protocol::Text => "text",
        }
    }

    /// Parses `native` or `text`.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s.trim().to_ascii_lowercase().as_str() {
            "native" => Some(Protocol::Native),
            "text" => Some(Protocol::Text),
            _ => None,
        }
    }
}

/// The default of [`AgentOptions::max_steps`].
pub const DEFAULT_MAX_STEPS: usize = 100;
/// The default of [`AgentOptions::repeat_warn`].
pub const DEFAULT_REPEAT_WARN: usize = 3;
/// The default of [`AgentOptions::repeat_stop`].
pub const DEFAULT_REPEAT_STOP: usize = 8;
/// The default of [`AgentOptions::context_window`], in tokens.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// How an [`Agent`] works.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Native function calling or the text protocol.
    pub protocol: Protocol,
    /// Model calls one run may make.
    pub max_steps: usize,
    /// The same call with the same arguments this many times in a row is answered
    /// with a reminder.
    pub repeat_warn: usize,
    /// ... and this many times in a row ends the run.
    pub repeat_stop: usize,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Calls of one turn run at most this many at once (concurrency-safe ones only).
    pub max_parallel: usize,
    /// Replaces the built-in system prompt.
    pub system_prompt: Option<String>,
    /// Project instructions (`AGENTS.md`, `CLAUDE.md`): (file name, text).
    pub instructions: Vec<(String, String)>,
    /// Where transcripts go (`<state>/agent/runs`); none: no transcript.
    pub transcript_dir: Option<PathBuf>,
    /// Tokens (input and output) one turn may use; the turn stops once it has used
    /// more. None: no limit.
    pub token_budget: Option<u64>,
    /// When the model answers while subagents it started in the background are
    /// still running: wait for their reports and let the model go on with them
    /// (true; for runs nobody watches, such as `-p`), or end the turn (false; the
    /// reports arrive at the next turn).
    pub wait_for_background: bool,
}

impl Default for AgentOptions {
    fn default() -> AgentOptions {
        AgentOptions {
            protocol: Protocol::Native,
            max_steps: DEFAULT_MAX_STEPS,
            repeat_warn: DEFAULT_REPEAT_WARN,
            repeat_stop: DEFAULT_REPEAT_STOP,
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_parallel: toolbelt_core::DEFAULT_MAX_CONCURRENCY,
            system_prompt: None,
            instructions: Vec::new(),
            transcript_dir: None,
            token_budget: None,
            wait_for_background: false,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model gave its final answer.
    FinalAnswer,
    /// The run reached `max_steps`.
    MaxSteps,
    /// The model repeated one call `repeat_stop` times.
    RepeatedCall,
    /// The run was cancelled (Ctrl-C).
    Cancelled,
    /// The turn used more tokens than its budget.
    TokenBudget,
    /// The provider failed (after its retries).
    Error,
}

impl Outcome {
    /// The name used in events and transcripts.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::FinalAnswer => "final_answer",
            Outcome::MaxSteps => "max_steps",
            Outcome::RepeatedCall => "repeated_call",
            Outcome::Cancelled => "cancelled",
            Outcome::TokenBudget => "token_budget",
            Outcome::Error => "error",
        }
    }
}

/// What a run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// How it ended.
    pub outcome: Outcome,
    /// The final answer, or what ended the run.
    pub message: String,
    /// Model calls made.
    pub steps: usize,
    /// Tool calls made.
    pub tool_calls: usize,
}

/// An agent could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A transcript could not be read or written.
    #[error("transcript {path}: {message}")]
    Transcript {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The history is compacted when a call would fill this share of the budget...
const COMPACT_AT: f64 = 0.85;
/// ... down to this share.
const COMPACT_TO: f64 = 0.6;
/// The last messages (about three steps) are never shortened.
const KEEP_RECENT_MESSAGES: usize = 6;
/// The longest summary asked for.
const SUMMARY_MAX_TOKENS: u32 = 2_048;

/// Asks the model to go on after an answer cut by the output limit.
const CONTINUE_AFTER_CUT: &str =
    "(Your last answer was cut off by the output limit. Continue exactly where it stopped.)";

/// Replies without an action and without a final answer that the text protocol
/// sends back before it takes such a reply as the final answer.
const MAX_TEXT_NUDGES: usize = 2;

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
    events: EventTx,
    run_id: String,
    system: String,
    tools: Option<Arc<Value>>,
    /// Characters of the system prompt and the tools, for token estimates.
    fixed_chars: usize,
    messages: Vec<Message>,
    usage: Usage,
    /// Tokens per character, learnt from the provider's usage.
    tokens_per_char: Option<f64>,
    transcript: Option<Transcript>,
    started: bool,
    resumed: bool,
    call_seq: u64,
    /// The subagents this agent starts (`task`, `spawn`): their reports come into
    /// the conversation.
    subagents: Option<crate::subagent::Subagents>,
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
        Agent {
            registry,
            provider,
            options,
            events,
            run_id: new_run_id(),
            system,
            tools,
            fixed_chars,
            messages: Vec::new(),
            usage: Usage::default(),
            tokens_per_char: None,
            transcript: None,
            started: false,
            resumed: false,
            call_seq: 0,
            subagents: None,
        }
    }

    /// Gives this agent the subagents its `task` and `spawn` tools start (the same
    /// [`Subagents`](crate::Subagents) whose tools are in its registry): their
    /// progress goes into this agent's events, and the reports of background ones
    /// into its conversation, before its next model call.
    pub fn set_subagents(&mut self, subagents: crate::subagent::Subagents) {
        subagents.bind(self.events.clone(), &self.run_id);
        self.subagents = Some(subagents);
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
        if let Some(s) = &agent.subagents {
            s.bind(agent.events.clone(), &agent.run_id);
        }
        agent.messages = loaded.messages;
        agent.usage = loaded.usage;
        agent.transcript = Some(Transcript::append(path)?);
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
        self.transcript.as_ref().map(Transcript::path)
    }

    /// Forgets the conversation (`/clear`): the next turn starts afresh, in a new
    /// transcript.
    pub fn clear(&mut self) {
        self.messages.clear();
        self.usage = Usage::default();
        self.tokens_per_char = None;
        self.transcript = None;
        self.run_id = new_run_id();
        self.started = false;
        self.resumed = false;
        if let Some(s) = &self.subagents {
            s.bind(self.events.clone(), &self.run_id);
        }
    }

    /// Compacts the history now (`/compact`): old tool results shortened, older
    /// turns summarised.
    pub async fn compact_now(&mut self, cancel: &CancellationToken) {
        self.ensure_started();
        let target = (self.budget_tokens() as f64 * 0.3) as u64;
        self.compact_to(target, cancel, true).await;
    }

    /// Runs one turn: sends `prompt`, runs the tools the model asks for, and goes on
    /// until the model gives its final answer, the step limit is reached, the model
    /// repeats one call too often, the provider fails or `cancel` fires. The
    /// conversation is kept whatever happens, so the next turn goes on from it.
    pub async fn run(&mut self, prompt: &str, cancel: &CancellationToken) -> RunOutcome {
        self.ensure_started();
        self.push(Message::user(prompt));
        let turn_start = self.messages.len() - 1;
        let mut state = TurnState {
            usage_at_start: self.usage,
            ..TurnState::default()
        };
        let outcome = self.turn(turn_start, &mut state, cancel).await;
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
            self.fit_context(turn_start, cancel).await;
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
                        "the provider says the conversation is too long for the model ({e}); compacting it"
                    ));
                    let target = (self.budget_tokens() as f64 * 0.4) as u64;
                    self.compact_to_keeping(target, turn_start, cancel, true)
                        .await;
                    continue;
                }
                Err(e) => return (Outcome::Error, e.to_string()),
            };
            overflow_retried = false;
            self.account(&response, started.elapsed());
            let outcome = match self.options.protocol {
                Protocol::Native => self.native_step(response, state, cancel).await,
                Protocol::Text => self.text_step(response, state, cancel).await,
            };
            if let Some(end) = outcome {
                if end.0 == Outcome::FinalAnswer && self.wait_for_background(cancel).await {
                    continue;
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
        let running = subagents.running_here();
        if running == 0 && !subagents.has_reports() {
            return false;
        }
        if running > 0 {
            self.notice(format!(
                "waiting for {running} background subagent{} to report",
                if running == 1 { "" } else { "s" }
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
        let reply = parse_text_reply(&content);
        self.emit(AgentEvent::AssistantMessage {
            text: content.clone(),
            tool_calls: reply.actions.len(),
        });
        self.push(Message::assistant(content.clone()));
        if reply.actions.is_empty() {
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
            self.push(Message::user(
                "Observation (error): your reply had neither an `Action: tool_name[{...}]` line nor a final answer. \
                 Call a tool with one Action line, or give your answer as `Final Answer: ...`.",
            ));
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
            observation.push_str(
                "\n\n(Your reply also gave a final answer before seeing these observations; it was not taken. Give it again if it still holds.)",
            );
        }
        if reply.ignored_after_observation.is_some() {
            observation.push_str(
                "\n\n(The text you wrote after your action, from `Observation:` on, was ignored: observations come from the tools.)",
            );
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
            let key = format!(
                "{}\u{0}{}",
                self.registry.resolve(&tool).unwrap_or(&tool),
                canonical_json(&call.arguments)
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
                let text = format!(
                    "ERROR [REPEATED_CALL]: this exact call was made {streak} times in a row and was not run again; the run stops here."
                );
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
                let reminder = format!(
                    "\n\n[Reminder: you have made this exact call {streak} times in a row. Its result will not change; do something different or give your final answer. At {} repeats the run stops.]",
                    self.options.repeat_stop
                );
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
    async fn ask_model(&self, cancel: &CancellationToken) -> Result<ModelResponse, ProviderError> {
        let request = ModelRequest {
            system: self.system.clone(),
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            max_tokens: None,
        };
        let events = self.events.clone();
        let sink = move |event: StreamEvent| {
            let _ = events.send(match event {
                StreamEvent::TextDelta { text } => AgentEvent::TextDelta { text },
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
        self.provider.complete(&request, &sink, cancel).await
    }

    /// Adds a model call's usage and learns the tokens per character.
    fn account(&mut self, response: &ModelResponse, elapsed: std::time::Duration) {
        let step = response.usage;
        self.usage.add(&step);
        if step.input_tokens > 0 {
            let chars = self.context_chars();
            if chars > 0 {
                let ratio = step.input_tokens as f64 / chars as f64;
                self.tokens_per_char = Some(ratio.clamp(0.1, 1.0));
            }
        }
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

    /// Tokens the history may use: the window less room for the answer.
    fn budget_tokens(&self) -> u64 {
        let window = self.options.context_window.max(1_024);
        let reserve = (window / 4).min(u64::from(crate::provider::DEFAULT_MAX_TOKENS));
        window - reserve
    }

    /// Characters of everything sent with a call.
    fn context_chars(&self) -> usize {
        self.fixed_chars + self.messages.iter().map(Message::char_len).sum::<usize>()
    }

    /// The tokens the next call would send, estimated.
    fn estimate_tokens(&self) -> u64 {
        let ratio = self.tokens_per_char.unwrap_or(1.0 / 3.5);
        (self.context_chars() as f64 * ratio).ceil() as u64
    }

    /// Compacts the history when the next call would fill more than
    /// [`COMPACT_AT`] of the budget.
    async fn fit_context(&mut self, turn_start: usize, cancel: &CancellationToken) {
        let budget = self.budget_tokens();
        if (self.estimate_tokens() as f64) <= budget as f64 * COMPACT_AT {
            return;
        }
        let target = (budget as f64 * COMPACT_TO) as u64;
        self.compact_to_keeping(target, turn_start, cancel, false)
            .await;
    }

    async fn compact_to(&mut self, target: u64, cancel: &CancellationToken, force: bool) {
        let turn_start = self
            .messages
            .iter()
            .rposition(
                |m| matches!(m, Message::User { content } if !content.starts_with("Observation")),
            )
            .unwrap_or(0);
        self.compact_to_keeping(target, turn_start, cancel, force)
            .await;
    }

    /// Makes the history fit `target` tokens: old large tool results shortened,
    /// then older turns summarised, then (if that is not enough) left out. The
    /// task of the turn (the message at `turn_start`), the latest todo list and the
    /// last steps stay intact. `force` summarises even when shortening was enough.
    async fn compact_to_keeping(
        &mut self,
        target: u64,
        turn_start: usize,
        cancel: &CancellationToken,
        force: bool,
    ) {
        let before = self.estimate_tokens();
        // 1. Old large tool results, all but the last steps'.
        let keep_from = self.messages.len().saturating_sub(KEEP_RECENT_MESSAGES);
        let spill_dir = self.registry.session().spill_dir();
        let shortened = compact::shorten_old_results(&mut self.messages, keep_from, &spill_dir);
        if !shortened.is_empty() {
            let after = self.estimate_tokens();
            self.record(&json!({
                "type": "compaction",
                "kind": "tool_results",
                "tokens_before": before,
                "tokens_after": after,
                "shortened": shortened,
            }));
            self.emit(AgentEvent::Compacted {
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
        let ratio = self.tokens_per_char.unwrap_or(1.0 / 3.5);
        let keep_chars = ((target as f64 * 0.5) / ratio) as usize;
        let keep_chars = keep_chars.saturating_sub(self.fixed_chars.min(keep_chars / 2));
        let task = self.messages.get(turn_start).cloned();
        let before_summary = self.estimate_tokens();
        if let Some(cut) = compact::cut_point(
            &self.messages,
            keep_chars,
            self.messages.len().saturating_sub(1),
        ) {
            let old = self.messages[..cut].to_vec();
            let todo = compact::latest_todo_text(&old, |name| {
                matches!(
                    self.registry.resolve(name),
                    Some("set_todo_list" | "update_todos")
                )
            });
            let summary = self.summarise(&old, cancel).await;
            let mut head = String::from(
                "[The earlier conversation was condensed to fit the context window.]\n\n",
            );
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
            self.messages = messages;
            let after = self.estimate_tokens();
            self.record(&json!({
                "type": "compaction",
                "kind": kind,
                "messages_replaced": cut,
                "tokens_before": before_summary,
                "tokens_after": after,
            }));
            self.emit(AgentEvent::Compacted {
                kind: kind.into(),
                tokens_before: before_summary,
                tokens_after: after,
            });
        }
        // 3. Still too big: leave out the oldest steps, keeping the first message
        // (the summary or the task) and the last step.
        let budget = self.budget_tokens();
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
            self.record(&json!({
                "type": "compaction",
                "kind": "dropped",
                "messages_dropped": dropped,
                "tokens_before": before_drop,
                "tokens_after": after,
            }));
            self.emit(AgentEvent::Compacted {
                kind: "dropped".into(),
                tokens_before: before_drop,
                tokens_after: after,
            });
        }
        self.record_reset();
    }

    /// Writes the whole history to the transcript, so a resumed run starts from it.
    fn record_reset(&mut self) {
        let messages = self.messages.clone();
        self.record(&json!({"type": "reset", "messages": messages}));
    }

    /// Asks the model for a summary of `old`; `None` when it cannot give one.
    async fn summarise(&mut self, old: &[Message], cancel: &CancellationToken) -> Option<String> {
        let request = ModelRequest {
            system: compact::SUMMARY_SYSTEM.to_string(),
            messages: vec![Message::user(format!(
                "The conversation so far:\n\n{}\n\nWrite the summary now.",
                compact::render_for_summary(old)
            ))],
            tools: None,
            max_tokens: Some(SUMMARY_MAX_TOKENS),
        };
        let sink = |_: StreamEvent| {};
        match self.provider.complete(&request, &sink, cancel).await {
            Ok(r) if !r.content.trim().is_empty() => {
                self.usage.add(&r.usage);
                Some(r.content)
            }
            Ok(_) => None,
            Err(e) => {
                self.notice(format!("the history could not be summarised: {e}"));
                None
            }
        }
    }

    fn ensure_started(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        if self.transcript.is_none()
            && let Some(dir) = &self.options.transcript_dir
        {
            match Transcript::create(dir, &self.run_id) {
                Ok(t) => self.transcript = Some(t),
                Err(e) => tracing::warn!("no transcript for this run: {e}"),
            }
            self.record(&json!({
                "type": "run",
                "run_id": self.run_id,
                "provider": self.provider.kind().as_str(),
                "model": self.provider.model(),
                "protocol": self.options.protocol.as_str(),
                "cwd": self.registry.session().cwd().display().to_string(),
                "system": self.system,
            }));
        }
        self.emit(AgentEvent::RunStarted {
            run_id: self.run_id.clone(),
            provider: self.provider.kind().as_str().to_string(),
            model: self.provider.model().to_string(),
            protocol: self.options.protocol.as_str().to_string(),
            resumed: self.resumed,
        });
    }

    fn push(&mut self, message: Message) {
        self.record(&json!({"type": "message", "message": message}));
        self.messages.push(message);
    }

    fn record(&mut self, line: &Value) {
        if let Some(t) = &mut self.transcript
            && let Err(e) = t.write(line)
        {
            tracing::warn!("the transcript cannot be written: {e}");
        }
    }

    fn emit(&self, event: AgentEvent) {
        let _ = self.events.send(event);
    }

    fn notice(&mut self, message: String) {
        self.record(&json!({"type": "notice", "message": message}));
        self.emit(AgentEvent::Notice { message });
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
    repeats: Repeats,
}

/// Counts the same call made again and again.
#[derive(Debug, Default)]
struct Repeats {
    last: Option<String>,
    streak: usize,
}

impl Repeats {
    /// Records a call; returns how many times in a row it has now been made.
    fn see(&mut self, key: String) -> usize {
        if self.last.as_ref() == Some(&key) {
            self.streak += 1;
        } else {
            self.last = Some(key);
            self.streak = 1;
        }
        self.streak
    }
}

/// JSON with object keys sorted, so that equal arguments compare equal.
fn canonical_json(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let sorted: BTreeMap<&String, Value> =
                    map.iter().map(|(k, v)| (k, sort(v))).collect();
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}

/// A new run id: the time and four random hex digits (`20261124-221503-3f9a`), so
/// that ids sort by time.
fn new_run_id() -> String {
    let now = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{now}-{}", &random[..4])
}

/// The system prompt: who the agent is and where it works, the project's
/// instructions, and (text protocol) the tools.
fn system_prompt(registry: &Registry, options: &AgentOptions, tools: Option<&str>) -> String {
    let session = registry.session();
    let mut out = match &options.system_prompt {
        Some(custom) => custom.trim_end().to_string(),
        None => format!("{BASE_PROMPT}\n\n{}", environment(session)),
    };
    for (name, text) in &options.instructions {
        let text = text.trim();
        if !text.is_empty() {
            out.push_str(&format!("\n\n# Project instructions ({name})\n\n{text}"));
        }
    }
    if let Some(tools) = tools {
        out.push_str("\n\n");
        out.push_str(tools.trim_end());
        out.push_str(
            "\n\nWrite one or more Action lines and stop; the observations come back in the next message. \
             When the task is done, write `Final Answer: ` followed by your answer.",
        );
    }
    out
}

/// The `# Environment` section of a system prompt: where the agent works.
pub(crate) fn environment(session: &toolbelt_core::Session) -> String {
    let roots = session
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "# Environment\n- Working directory: {}\n- Workspace roots: {roots}\n- Platform: {}\n- Today: {}",
        session.cwd().display(),
        std::env::consts::OS,
        chrono::Local::now().format("%Y-%m-%d"),
    )
}

/// The built-in system prompt.
const BASE_PROMPT: &str = "\
You are toolbelt, an agent that works on the user's machine through tools: files, search, \
the shell, the web, a todo list. Do the task the user gives you, then answer briefly with \
what you did and what you found.

- Look before you act: list, search and read the files a change touches before you edit them.
- Keep changes small and focused; follow the project's style.
- After a change, run what checks it (the tests, a build) when the project has it, and read \
the result.
- For a task of several steps, keep a todo list and update it as you go.
- When a tool answers with an error, read its message and hint and fix the call; do not \
repeat a call that failed unchanged.
- Large outputs are cut to their head, tail and error lines; read the rest with read_output \
when you need it.";
