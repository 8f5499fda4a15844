//! The agent loop: ask the model, run the calls it asks for, give back the
//! results, until a final answer. What it leans on lives beside it: the history's
//! compaction in `compact`, its events and transcript in `journal`, the system
//! prompt in `prompt`, the guards against a small model's habits (repeated
//! calls, runaway replies, echoed results) and their nudge texts in `guard`;
//! the person's hooks at the edges of a run in `session` (beside this file),
//! their inputs and records in `hooks`; subagents reach it only through
//! [`Spawner`] (in `spawner`).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use toolbelt_core::human::plural;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::{Origin, Registry, error_chain};
use toolbelt_wire::calls::calls_in_text;
use toolbelt_wire::export::export;

use crate::compact::{Compaction, Window};
use crate::constrain::{action_grammar, reply_schema};
use crate::error::AgentError;
use crate::events::{AgentEvent, EventTx};
use crate::finish::{finish_name, finish_spec};
use crate::guard::{MAX_TEXT_NUDGES, RUNAWAY_NOTICE, Repeats, Runaway, malformed_call_reminder};
use crate::journal::Journal;
use crate::loops::Loops;
use crate::message::{Message, ModelCall, Usage};
use crate::options::{AgentOptions, Constraint, ModelSize, Outcome, Protocol, RunOutcome};
use crate::prompt::{system_prompt, tools_prompt};
use crate::provider::{
    ModelRequest, ModelResponse, Provider, ProviderError, ReplyConstraint, StopReason, StreamEvent,
};
use crate::spawner::Spawner;
use crate::transcript::{self, Transcript, new_run_id};

mod calls;
mod session;
mod steps;

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
    /// The finish tool's name, when the run ends only through it (a small model).
    finish: Option<String>,
    /// What every request asks the server to hold the reply to.
    constraint: Option<ReplyConstraint>,
    /// Text-protocol replies are JSON objects (held by a JSON schema).
    reply_json: bool,
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
        let mut specs = registry.definitions();
        let finish = (options.model_size == ModelSize::Small).then(|| finish_name(&registry));
        if let Some(name) = &finish {
            specs.push(finish_spec(name));
        }
        // A server holds the replies to calls only where the run can end by one.
        let constraint = match finish {
            Some(_) if options.constraint.protocol() == Some(options.protocol) => {
                options.constraint
            }
            _ => Constraint::None,
        };
        let reply_json = constraint == Constraint::JsonSchema;
        let (system, tools) = match options.protocol {
            Protocol::Native => {
                let tools = export(&specs, provider.kind().tool_format());
                (
                    system_prompt(&registry, &options, finish.as_deref(), None),
                    Some(Arc::new(tools)),
                )
            }
            Protocol::Text => {
                let tools = tools_prompt(&specs, finish.as_deref(), reply_json);
                (
                    system_prompt(&registry, &options, finish.as_deref(), Some(&tools)),
                    None,
                )
            }
        };
        let constraint = match constraint {
            Constraint::None => None,
            Constraint::ToolChoice => Some(ReplyConstraint::ToolRequired),
            Constraint::Grammar => Some(ReplyConstraint::Grammar(action_grammar(&specs).into())),
            Constraint::JsonSchema => {
                Some(ReplyConstraint::JsonSchema(Arc::new(reply_schema(&specs))))
            }
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
            finish,
            constraint,
            reply_json,
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
                Err(e) if e.is_malformed_call() && state.format_errors < MAX_TEXT_NUDGES => {
                    // The server could not read the call the model wrote: the model is
                    // told what was wrong, not asked the same again.
                    state.format_errors += 1;
                    self.notice(format!(
                        "the server could not read the model's call ({}); telling the model",
                        error_chain(&e)
                    ));
                    let reminder = malformed_call_reminder(&e.to_string(), self.example_call());
                    self.push(Message::user(reminder));
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
                Protocol::Text if !self.reply_json => vec![TEXT_STOP.to_string()],
                _ => Vec::new(),
            },
            constraint: self.constraint.clone(),
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

    /// How the server holds each reply: `none`, `tool_choice`, `grammar` or
    /// `json_schema`.
    pub fn constraint_name(&self) -> &'static str {
        match &self.constraint {
            None => Constraint::None.as_str(),
            Some(ReplyConstraint::ToolRequired) => Constraint::ToolChoice.as_str(),
            Some(ReplyConstraint::Grammar(_)) => Constraint::Grammar.as_str(),
            Some(ReplyConstraint::JsonSchema(_)) => Constraint::JsonSchema.as_str(),
        }
    }

    /// One valid call as the model writes it in this run's protocol, for a
    /// format error: `read_file` (or the first tool) with example arguments.
    fn example_call(&self) -> String {
        let read = crate::tool_names::READ_FILE;
        let (name, arguments) = if self.registry.has(read) {
            (
                self.registry.profile().exposed(read).to_string(),
                r#"{"path": "src/main.py"}"#.to_string(),
            )
        } else {
            match self.finish.as_deref() {
                Some(finish) => (finish.to_string(), r#"{"answer": "..."}"#.to_string()),
                None => return String::new(),
            }
        };
        match (self.options.protocol, self.reply_json) {
            (Protocol::Native, _) => format!("{name} with the arguments {arguments}"),
            (Protocol::Text, false) => format!("Action: {name}[{arguments}]"),
            (Protocol::Text, true) => format!(r#"{{"name": "{name}", "arguments": {arguments}}}"#),
        }
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

/// What one turn keeps track of.
#[derive(Debug, Default)]
struct TurnState {
    usage_at_start: Usage,
    steps: usize,
    tool_calls: usize,
    nudges: usize,
    /// Replies the server could not read as calls, told to the model.
    format_errors: usize,
    /// Cycles of calls across steps, and calls that changed nothing.
    loops: Loops,
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
