//! Subagents: agents an agent starts for one task, each with a fresh conversation,
//! its type's system prompt and tools, under the parent's roots, rules, sandbox and
//! cancellation.
//!
//! - `task` runs one and returns its final answer as the tool result.
//! - `spawn` starts one in the background and returns its id at once; its report
//!   comes into the parent's conversation before the parent's next model call, and
//!   is kept in the store (`task_output` reads it, also after a restart).
//! - `task_output`, `task_stop` and `task_list` look after background ones.
//!
//! Limits: subagents get neither `task` nor `spawn` unless
//! [`SubagentLimits::max_depth`] allows deeper levels; at most
//! [`SubagentLimits::max_running`] run at once (the others wait for a slot); each
//! has a step limit, a time limit and a token budget. A subagent's failure is a
//! tool error for its parent, never the parent's end.
//!
//! Hooks: the person's `subagent_start` hooks are asked before a subagent starts
//! (a deny refuses it: the `task` or `spawn` call fails, naming the hook; their
//! context goes below its prompt), and its `subagent_stop` hooks when it ended
//! (their context goes below its result). A subagent's own run meets no
//! `session_start`, `user_prompt`, `stop` or `session_end` hook; its calls meet
//! every call hook, as the registry asks them of every call.
//!
//! ```no_run
//! # fn demo(mut registry: toolbelt_core::Registry, provider: std::sync::Arc<dyn toolbelt_agent::Provider>) {
//! use std::sync::Arc;
//! use toolbelt_agent::{Agent, AgentOptions, AgentTypes, SubagentModel, SubagentSettings, Subagents};
//! let subagents = Subagents::new(SubagentSettings::new(AgentTypes::builtin()));
//! subagents.configure(SubagentModel::new(Arc::clone(&provider)));
//! subagents.register(&mut registry).unwrap();
//! subagents.attach(&registry);
//! let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
//! let mut agent = Agent::new(Arc::new(registry), provider, AgentOptions::default(), tx);
//! agent.set_subagents(subagents);
//! # }
//! ```

mod tools;
mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore, watch};
use tokio_util::sync::CancellationToken;
use toolbelt_core::hooks::{HookEvent, HookRun};
use toolbelt_core::sync::lock;
use toolbelt_core::{ErrorCode, Origin, Registry, RegistryError, ToolError, error_chain};
use toolbelt_store::{StoreHandle, SubagentProgress, SubagentTask};

pub use crate::tool_names::{EXPLORE_TOOLS, SUBAGENT_TOOLS};
pub use types::{AgentType, AgentTypes, DEFAULT_TYPE, TypeProblem};

use crate::agent::Agent;
use crate::error::SubagentError;
use crate::events::{AgentEvent, EventTx};
use crate::hooks;
use crate::message::Usage;
use crate::options::{AgentOptions, Outcome};
use crate::prompt::environment;
use crate::provider::{Provider, ProviderConfig, build_provider};
use crate::spawner::Spawner;
use crate::tool_names::{SPAWN, TASK};

/// The deepest nesting allowed: a subagent's subagent's subagent.
pub const MAX_DEPTH: usize = 3;

/// How far subagents may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentLimits {
    /// Levels of subagents: 1 (the default) lets the agent start subagents that
    /// cannot start their own; at most [`MAX_DEPTH`].
    pub max_depth: usize,
    /// Subagents running at once, in the foreground and the background together;
    /// more wait for a free slot.
    pub max_running: usize,
    /// Model calls one subagent may make.
    pub max_steps: usize,
    /// How long a `task` subagent may run (at most the registry's ceiling of ten
    /// minutes).
    pub timeout: Duration,
    /// How long a background subagent may run.
    pub background_timeout: Duration,
    /// Tokens (input and output) one subagent may use.
    pub token_budget: Option<u64>,
}

impl Default for SubagentLimits {
    fn default() -> SubagentLimits {
        SubagentLimits {
            max_depth: 1,
            max_running: 4,
            max_steps: 50,
            timeout: Duration::from_secs(600),
            background_timeout: Duration::from_secs(1_800),
            token_budget: Some(2_000_000),
        }
    }
}

/// The model subagents talk to, set once it is known
/// ([`Subagents::configure`]).
#[derive(Clone)]
pub struct SubagentModel {
    /// The provider (the parent's).
    pub provider: Arc<dyn Provider>,
    /// The provider's configuration, for agent types that name another model;
    /// without it they use the parent's.
    pub provider_config: Option<ProviderConfig>,
    /// The options subagents start from (protocol, context window, project
    /// instructions, transcripts); their system prompt, limits and transcript
    /// folder (`subagents/` under the parent's) are set per subagent.
    pub options: AgentOptions,
}

impl fmt::Debug for SubagentModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubagentModel")
            .field("model", &self.provider.model())
            .finish_non_exhaustive()
    }
}

impl SubagentModel {
    /// Subagents on `provider` with the default options.
    pub fn new(provider: Arc<dyn Provider>) -> SubagentModel {
        SubagentModel {
            provider,
            provider_config: None,
            options: AgentOptions::default(),
        }
    }
}

/// What subagents run with.
#[derive(Clone)]
pub struct SubagentSettings {
    /// The limits.
    pub limits: SubagentLimits,
    /// The agent types.
    pub types: AgentTypes,
    /// Where background subagents and their reports are kept.
    pub store: Option<StoreHandle>,
}

impl fmt::Debug for SubagentSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubagentSettings")
            .field("limits", &self.limits)
            .field("types", &self.types.names())
            .finish_non_exhaustive()
    }
}

impl SubagentSettings {
    /// Subagents of `types`, with the default limits and no store.
    pub fn new(types: AgentTypes) -> SubagentSettings {
        SubagentSettings {
            limits: SubagentLimits::default(),
            types,
            store: None,
        }
    }
}

/// The subagents of one agent: its `task`, `spawn`, `task_output`, `task_stop` and
/// `task_list` tools, and the background subagents they started. Cheap to clone.
#[derive(Clone)]
pub struct Subagents {
    shared: Arc<Shared>,
    level: Arc<Level>,
}

impl fmt::Debug for Subagents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subagents")
            .field("depth", &self.level.depth)
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

/// What every level shares.
struct Shared {
    settings: SubagentSettings,
    model: OnceLock<SubagentModel>,
    slots: Arc<Semaphore>,
    /// The parent's tools, without the subagent tools.
    base: OnceLock<Arc<Registry>>,
    /// Ends every background subagent (the process is stopping).
    shutdown: CancellationToken,
    /// This process, as recorded in the store.
    owner: String,
    seq: AtomicU64,
    /// Every background subagent of this process.
    background: Mutex<BTreeMap<String, Background>>,
}

/// One agent's side: where its events go, its run, the reports waiting for it.
struct Level {
    /// 0 for the top agent, 1 for its subagents, ...
    depth: usize,
    events: Mutex<Option<EventTx>>,
    run_id: Mutex<Option<String>>,
    /// Where its calls come from (with its run): its subagents' calls say so too.
    origin: Mutex<Origin>,
    /// Reports of its background subagents not yet in its conversation: (id, text).
    reports: Mutex<Vec<(String, String)>>,
    /// Its background subagents still running.
    running: Mutex<BTreeSet<String>>,
    changed: Notify,
    /// Ends its background subagents.
    cancel: CancellationToken,
}

impl Level {
    fn new(depth: usize, cancel: CancellationToken) -> Level {
        Level {
            depth,
            events: Mutex::new(None),
            run_id: Mutex::new(None),
            origin: Mutex::new(Origin::new("agent")),
            reports: Mutex::new(Vec::new()),
            running: Mutex::new(BTreeSet::new()),
            changed: Notify::new(),
            cancel,
        }
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(tx) = lock(&self.events).as_ref() {
            let _ = tx.send(event);
        }
    }
}

/// A background subagent as this process knows it.
#[derive(Clone)]
struct Background {
    label: String,
    agent_type: String,
    cancel: CancellationToken,
    snapshot: Arc<Mutex<Snapshot>>,
    done: watch::Receiver<bool>,
    level: Arc<Level>,
}

/// Where a subagent is.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    pub(crate) state: String,
    pub(crate) steps: usize,
    pub(crate) tool_calls: usize,
    pub(crate) last: Option<String>,
    pub(crate) result: Option<String>,
    pub(crate) usage: Usage,
    pub(crate) run_id: Option<String>,
}

/// How a subagent's run ended.
#[derive(Debug, Clone)]
pub(crate) struct ChildEnd {
    pub(crate) outcome: Outcome,
    pub(crate) message: String,
    pub(crate) timed_out: bool,
    pub(crate) steps: usize,
    pub(crate) tool_calls: usize,
    pub(crate) usage: Usage,
    pub(crate) run_id: String,
    /// The last text the subagent wrote, for a run that ended without an answer.
    pub(crate) last_text: String,
    /// The `subagent_stop` hooks that ran.
    pub(crate) hooks: Vec<HookRun>,
}

/// One subagent to run.
pub(crate) struct ChildSpec {
    pub(crate) id: String,
    pub(crate) label: String,
    pub(crate) agent_type: AgentType,
    pub(crate) prompt: String,
    pub(crate) call_id: Option<String>,
    pub(crate) timeout: Duration,
    /// What the `subagent_start` hooks added, below the prompt.
    pub(crate) notes: Vec<String>,
}

impl ChildSpec {
    /// What the hooks of the subagent's events are told of it.
    fn hook_fields(&self) -> serde_json::Map<String, Value> {
        hooks::fields([
            ("agent_type", json!(self.agent_type.name)),
            ("task_id", json!(self.id)),
            ("label", json!(self.label)),
            ("background", json!(self.call_id.is_none())),
        ])
    }
}

/// What a subagent is told beyond its type's prompt.
const SUBAGENT_RULES: &str = "\
# Working as a subagent
- Your final answer is all the agent that started you will see of your work: make it \
complete and self-contained (what you did, what you found, file paths with line numbers), \
and say plainly what you could not do.
- Stay on the task you were given; do not ask questions back, decide and note your \
assumptions.";

impl Subagents {
    /// The subagents of a top-level agent. Give them a registry's tools with
    /// [`Subagents::attach`] and put their tools into it with
    /// [`Subagents::register`].
    pub fn new(settings: SubagentSettings) -> Subagents {
        let mut settings = settings;
        settings.limits.max_depth = settings.limits.max_depth.clamp(1, MAX_DEPTH);
        settings.limits.max_running = settings.limits.max_running.max(1);
        settings.limits.max_steps = settings.limits.max_steps.max(1);
        settings.limits.timeout = settings
            .limits
            .timeout
            .min(Duration::from_millis(toolbelt_core::MAX_TIMEOUT_MS));
        let shutdown = CancellationToken::new();
        let level = Arc::new(Level::new(0, shutdown.child_token()));
        let owner = uuid::Uuid::new_v4().simple().to_string();
        Subagents {
            shared: Arc::new(Shared {
                slots: Arc::new(Semaphore::new(settings.limits.max_running)),
                settings,
                model: OnceLock::new(),
                base: OnceLock::new(),
                shutdown,
                owner,
                seq: AtomicU64::new(0),
                background: Mutex::new(BTreeMap::new()),
            }),
            level,
        }
    }

    /// Registers `task`, `spawn`, `task_output`, `task_stop` and `task_list`.
    ///
    /// # Errors
    /// A tool of that name is already registered.
    pub fn register(&self, registry: &mut Registry) -> Result<(), RegistryError> {
        registry.register_typed(tools::TaskTool::new(self.clone()))?;
        registry.register_typed(tools::SpawnTool::new(self.clone()))?;
        registry.register_typed(tools::TaskOutputTool::new(self.clone()))?;
        registry.register_typed(tools::TaskStopTool::new(self.clone()))?;
        registry.register_typed(tools::TaskListTool::new(self.clone()))?;
        Ok(())
    }

    /// Sets the model subagents talk to. Once; later calls are ignored (false).
    /// Until then their tools answer that no model is configured.
    pub fn configure(&self, model: SubagentModel) -> bool {
        self.shared.model.set(model).is_ok()
    }

    /// True once [`Subagents::configure`] was called.
    pub fn is_configured(&self) -> bool {
        self.shared.model.get().is_some()
    }

    /// Gives subagents the tools of `parent` (a fork of it, without the subagent
    /// tools, asking its approver). Once; later calls are ignored.
    pub fn attach(&self, parent: &Registry) {
        let mut base = parent.fork();
        base.set_approver(parent.approver().cloned());
        for name in SUBAGENT_TOOLS {
            base.unregister(name);
        }
        let _ = self.shared.base.set(Arc::new(base));
    }

    /// The agent types.
    pub fn types(&self) -> &AgentTypes {
        &self.shared.settings.types
    }

    /// The limits.
    pub fn limits(&self) -> &SubagentLimits {
        &self.shared.settings.limits
    }

    /// The agent type files that were left out, and types that name tools the
    /// registry does not have.
    pub fn problems(&self) -> Vec<TypeProblem> {
        let mut problems = self.types().problems().to_vec();
        if let Some(base) = self.shared.base.get() {
            for t in self.types().all() {
                let Some(tools) = &t.tools else { continue };
                let unknown: Vec<&str> = tools
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !base.has(n) && !SUBAGENT_TOOLS.contains(n))
                    .collect();
                if !unknown.is_empty() {
                    problems.push(TypeProblem {
                        path: t.source.clone().unwrap_or_default(),
                        message: format!(
                            "the agent type {:?} names tools that are not available, left out: {}",
                            t.name,
                            unknown.join(", ")
                        ),
                    });
                }
            }
        }
        problems
    }

    /// Stops every background subagent of this process and waits up to `grace`
    /// for them to end (their commands are stopped with them, their outcome
    /// recorded). For a process that is about to exit.
    pub async fn shutdown(&self, grace: Duration) {
        self.shared.shutdown.cancel();
        let waiting: Vec<watch::Receiver<bool>> = lock(&self.shared.background)
            .values()
            .map(|b| b.done.clone())
            .collect();
        let all = async {
            for mut done in waiting {
                let _ = done.wait_for(|d| *d).await;
            }
        };
        let _ = tokio::time::timeout(grace, all).await;
    }

    fn next_id(&self) -> String {
        let n = self.shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let random = uuid::Uuid::new_v4().simple().to_string();
        format!("sa_{}{n}", &random[..6])
    }

    fn agent_type(&self, name: Option<&str>) -> Result<AgentType, toolbelt_core::ToolError> {
        let name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or(DEFAULT_TYPE);
        if let Some(t) = self.types().get(name) {
            return Ok(t.clone());
        }
        let names = self.types().names();
        let mut close: Vec<(&str, f64)> = names
            .iter()
            .map(|n| {
                (
                    *n,
                    strsim::jaro_winkler(&n.to_lowercase(), &name.to_lowercase()),
                )
            })
            .filter(|(_, s)| *s > 0.75)
            .collect();
        close.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut message = format!("there is no agent type {name:?}");
        if let Some((best, _)) = close.first() {
            message.push_str(&format!("; did you mean {best:?}?"));
        }
        Err(
            toolbelt_core::ToolError::new(toolbelt_core::ErrorCode::InvalidParams, message)
                .hint(format!("Agent types: {}.", names.join(", "))),
        )
    }

    /// Asks the `subagent_start` hooks of `spec`, as the agent that starts it:
    /// the runs, and what their context adds below its prompt (in
    /// `spec.notes`).
    ///
    /// # Errors
    /// A hook refused the subagent: the error names it and says why.
    pub(crate) async fn start_hooks(
        &self,
        spec: &mut ChildSpec,
    ) -> Result<Vec<HookRun>, ToolError> {
        let Some(base) = self.shared.base.get() else {
            return Ok(Vec::new());
        };
        let origin = lock(&self.level.origin).clone();
        let Some((_, verdict)) = hooks::ask(base, HookEvent::SubagentStart, &origin, || {
            let mut fields = spec.hook_fields();
            fields.insert("prompt".into(), json!(spec.prompt));
            fields
        })
        .await
        else {
            return Ok(Vec::new());
        };
        for message in hooks::problems(HookEvent::SubagentStart, &verdict) {
            self.level.emit(AgentEvent::Notice { message });
        }
        if let Some((hook, reason)) = hooks::refusal(&verdict.decision) {
            return Err(ToolError::new(
                ErrorCode::AccessDenied,
                format!("hook '{hook}' refused to start the subagent: {reason}"),
            )
            .hint("the subagent did not start; do the work another way, or ask the user")
            .data(json!({"hook": hook, "reason": reason, "hooks": verdict.runs})));
        }
        spec.notes = hooks::context_blocks(base, &verdict.context);
        Ok(verdict.runs)
    }

    /// Runs one subagent to its end: a fresh conversation on the type's tools,
    /// stopped by `cancel`, its time limit, its step limit or its token budget.
    /// Progress goes to `on_progress`.
    pub(crate) async fn run_child(
        &self,
        spec: &ChildSpec,
        cancel: CancellationToken,
        snapshot: &Mutex<Snapshot>,
        on_progress: &(dyn Fn(&Snapshot) + Send + Sync),
    ) -> Result<ChildEnd, SubagentError> {
        let Some(base) = self.shared.base.get() else {
            return Err(SubagentError::Detached);
        };
        let Some(model) = self.shared.model.get() else {
            return Err(SubagentError::NoModel);
        };
        let settings = &self.shared.settings;
        let mut registry = base.fork();
        registry.set_approver(base.approver().cloned());
        if let Some(keep) = &spec.agent_type.tools {
            let keep: BTreeSet<String> = keep
                .iter()
                .filter_map(|n| registry.resolve(n).map(str::to_string))
                .collect();
            for name in registry.names() {
                let canonical = registry.resolve(&name).map(str::to_string);
                if canonical.is_some_and(|c| !keep.contains(&c)) {
                    registry.unregister(&name);
                }
            }
        }
        let child_depth = self.level.depth + 1;
        let nested = (child_depth < settings.limits.max_depth).then(|| Subagents {
            shared: Arc::clone(&self.shared),
            level: Arc::new(Level::new(child_depth, cancel.child_token())),
        });
        if let Some(nested) = &nested {
            let allowed = |n: &str| {
                spec.agent_type
                    .tools
                    .as_ref()
                    .is_none_or(|t| t.iter().any(|x| x == n))
            };
            if allowed(TASK) || allowed(SPAWN) {
                nested.register(&mut registry)?;
            }
        }
        let provider = match (&spec.agent_type.model, &model.provider_config) {
            (Some(name), Some(config)) if name != model.provider.model() => {
                let mut config = config.clone();
                config.model = name.clone();
                build_provider(config).map_err(|source| SubagentError::Model {
                    name: name.clone(),
                    agent_type: spec.agent_type.name.clone(),
                    source,
                })?
            }
            _ => Arc::clone(&model.provider),
        };
        let mut options = model.options.clone();
        options.system_prompt = Some(format!(
            "{}\n\n{}\n\n{SUBAGENT_RULES}",
            spec.agent_type.prompt.trim_end(),
            environment(registry.session()),
        ));
        options.max_steps = settings.limits.max_steps;
        options.token_budget = settings.limits.token_budget;
        options.wait_for_background = true;
        options.transcript_dir = options.transcript_dir.map(|d| d.join("subagents"));
        // Only top-level runs are listed; a subagent's transcript stays a file.
        options.transcript_sink = None;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut agent = Agent::new(Arc::new(registry), provider, options, tx);
        agent.set_subagent();
        // The parent's origin (its job, its MCP session...), as a subagent of its run.
        agent.set_origin(Origin {
            front_end: "subagent".into(),
            run_id: None,
            turn: None,
            parent_run_id: lock(&self.level.run_id).clone(),
            ..lock(&self.level.origin).clone()
        });
        if let Some(nested) = nested {
            agent.set_subagents(nested);
        }
        let mut timed_out = false;
        let mut last_text = String::new();
        let prompt = hooks::with_notes(&[], &spec.prompt, &spec.notes);
        let ended = {
            let run = agent.run(&prompt, &cancel);
            tokio::pin!(run);
            let deadline = tokio::time::sleep(spec.timeout);
            tokio::pin!(deadline);
            let mut on_event = |event: AgentEvent| {
                let mut s = lock(snapshot);
                let changed = match event {
                    AgentEvent::StepStarted { step } => {
                        s.steps = step;
                        true
                    }
                    AgentEvent::ToolCall { summary, .. } => {
                        s.tool_calls += 1;
                        s.last = Some(summary);
                        true
                    }
                    AgentEvent::AssistantMessage { text, .. } => {
                        if !text.trim().is_empty() {
                            last_text = text;
                        }
                        false
                    }
                    AgentEvent::Usage { total, .. } => {
                        s.usage = total;
                        false
                    }
                    AgentEvent::RunStarted { run_id, .. } => {
                        s.run_id = Some(run_id);
                        false
                    }
                    _ => false,
                };
                if changed {
                    let copy = s.clone();
                    drop(s);
                    on_progress(&copy);
                }
            };
            loop {
                tokio::select! {
                    out = &mut run => break out,
                    Some(event) = rx.recv() => on_event(event),
                    () = &mut deadline, if !timed_out => {
                        timed_out = true;
                        cancel.cancel();
                    }
                }
            }
        };
        let mut message = ended.message;
        let mut stop_runs = Vec::new();
        if let Some(verdict) = agent
            .ask_hooks(HookEvent::SubagentStop, || {
                let mut fields = spec.hook_fields();
                fields.insert("outcome".into(), json!(ended.outcome.as_str()));
                fields.insert("result".into(), json!(message));
                fields
            })
            .await
        {
            for problem in hooks::problems(HookEvent::SubagentStop, &verdict) {
                self.level.emit(AgentEvent::Notice { message: problem });
            }
            let notes = hooks::context_blocks(base, &verdict.context);
            message = hooks::with_notes(&[], &message, &notes);
            stop_runs = verdict.runs;
        }
        while let Ok(event) = rx.try_recv() {
            if let AgentEvent::Usage { total, .. } = event {
                lock(snapshot).usage = total;
            }
        }
        Ok(ChildEnd {
            outcome: ended.outcome,
            message,
            hooks: stop_runs,
            timed_out,
            steps: ended.steps,
            tool_calls: ended.tool_calls,
            usage: agent.usage(),
            run_id: agent.run_id().to_string(),
            last_text,
        })
    }

    /// The parent's event for a subagent's progress.
    pub(crate) fn emit_progress(&self, spec: &ChildSpec, background: bool, snapshot: &Snapshot) {
        self.level.emit(AgentEvent::Subagent {
            task_id: spec.id.clone(),
            call_id: spec.call_id.clone(),
            label: spec.label.clone(),
            agent_type: spec.agent_type.name.clone(),
            background,
            state: snapshot.state.clone(),
            steps: snapshot.steps,
            tool_calls: snapshot.tool_calls,
            last: snapshot.last.clone(),
            result: snapshot.result.clone(),
        });
    }

    async fn store(&self) -> Option<&toolbelt_store::Store> {
        let handle = self.shared.settings.store.as_ref()?;
        match handle.store().await {
            Ok(store) => Some(store),
            Err(e) => {
                tracing::warn!("background subagents are not kept: {}", error_chain(&e));
                None
            }
        }
    }

    async fn record_new(&self, spec: &ChildSpec) -> bool {
        let Some(store) = self.store().await else {
            return false;
        };
        let row = SubagentTask {
            id: spec.id.clone(),
            label: spec.label.clone(),
            agent_type: spec.agent_type.name.clone(),
            prompt: spec.prompt.clone(),
            parent_run_id: lock(&self.level.run_id).clone(),
            owner: self.shared.owner.clone(),
            status: "queued".into(),
            result: None,
            steps: 0,
            tool_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            run_id: None,
            created_at: toolbelt_store::now_ms(),
            started_at: None,
            finished_at: None,
            delivered_at: None,
        };
        match toolbelt_store::insert_subagent_task(store, &row).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(
                    "background subagent {} is not kept: {}",
                    spec.id,
                    error_chain(&e)
                );
                false
            }
        }
    }

    async fn record_progress(&self, id: &str, s: &Snapshot) {
        let Some(store) = self.store().await else {
            return;
        };
        let progress = SubagentProgress {
            status: s.state.clone(),
            result: s.result.clone(),
            steps: s.steps as i64,
            tool_calls: s.tool_calls as i64,
            input_tokens: s.usage.input_tokens as i64,
            output_tokens: s.usage.output_tokens as i64,
            run_id: s.run_id.clone(),
        };
        if let Err(e) =
            toolbelt_store::update_subagent_task(store, id, &progress, toolbelt_store::now_ms())
                .await
        {
            tracing::warn!(
                "background subagent {id}: its progress is not kept: {}",
                error_chain(&e)
            );
        }
    }

    async fn mark_delivered(&self, id: &str) {
        if let Some(store) = self.store().await
            && let Err(e) =
                toolbelt_store::mark_subagent_delivered(store, id, toolbelt_store::now_ms()).await
        {
            tracing::warn!(
                "background subagent {id}: delivery not recorded: {}",
                error_chain(&e)
            );
        }
    }

    /// Starts `spec` in the background; returns at once.
    pub(crate) async fn start_background(&self, spec: ChildSpec) -> (bool, bool) {
        let kept = self.record_new(&spec).await;
        let cancel = self.level.cancel.child_token();
        let snapshot = Arc::new(Mutex::new(Snapshot {
            state: "queued".into(),
            ..Snapshot::default()
        }));
        let (done_tx, done_rx) = watch::channel(false);
        lock(&self.shared.background).insert(
            spec.id.clone(),
            Background {
                label: spec.label.clone(),
                agent_type: spec.agent_type.name.clone(),
                cancel: cancel.clone(),
                snapshot: Arc::clone(&snapshot),
                done: done_rx,
                level: Arc::clone(&self.level),
            },
        );
        lock(&self.level.running).insert(spec.id.clone());
        let queued = self.shared.slots.available_permits() == 0;
        let this = self.clone();
        tokio::spawn(async move {
            this.run_background(spec, cancel, snapshot).await;
            let _ = done_tx.send(true);
        });
        (kept, queued)
    }

    async fn run_background(
        &self,
        spec: ChildSpec,
        cancel: CancellationToken,
        snapshot: Arc<Mutex<Snapshot>>,
    ) {
        let first = lock(&snapshot).clone();
        self.emit_progress(&spec, true, &first);
        let permit = tokio::select! {
            permit = Arc::clone(&self.shared.slots).acquire_owned() => permit.ok(),
            () = cancel.cancelled() => None,
        };
        let end = match permit {
            None => Err(SubagentError::NotStarted),
            Some(_permit) => {
                let now = {
                    let mut s = lock(&snapshot);
                    s.state = "running".into();
                    s.clone()
                };
                self.record_progress(&spec.id, &now).await;
                self.emit_progress(&spec, true, &now);
                let progress = |s: &Snapshot| self.emit_progress(&spec, true, s);
                self.run_child(&spec, cancel.clone(), &snapshot, &progress)
                    .await
            }
        };
        let (state, result) = finish_state(&end, &cancel, self.limits());
        {
            let mut s = lock(&snapshot);
            s.state = state.clone();
            s.result = Some(result.clone());
            if let Ok(end) = &end {
                s.steps = end.steps;
                s.tool_calls = end.tool_calls;
                s.usage = end.usage;
                s.run_id = Some(end.run_id.clone());
            }
        }
        let final_snapshot = lock(&snapshot).clone();
        self.record_progress(&spec.id, &final_snapshot).await;
        let report = format!(
            "[Background subagent {} (\"{}\") {}, after {} steps and {} tool calls. Its report:]\n\n{}",
            spec.id,
            spec.label,
            match state.as_str() {
                "done" => "finished",
                "stopped" => "was stopped",
                _ => "failed",
            },
            final_snapshot.steps,
            final_snapshot.tool_calls,
            result
        );
        // Delivered to the agent that started it, if one listens and the process is
        // not stopping; otherwise it stays for task_output (and in the store).
        let bound = lock(&self.level.events).is_some();
        if bound && !self.shared.shutdown.is_cancelled() {
            lock(&self.level.reports).push((spec.id.clone(), report));
        }
        lock(&self.level.running).remove(&spec.id);
        self.emit_progress(&spec, true, &final_snapshot);
        self.level.changed.notify_waiters();
    }

    /// A background subagent of this process.
    fn background(&self, id: &str) -> Option<Background> {
        lock(&self.shared.background).get(id).cloned()
    }

    /// Takes the report of `id` out of the waiting ones (it was read another way).
    async fn claim_report(&self, id: &str, level: &Level) {
        lock(&level.reports).retain(|(r, _)| r != id);
        self.mark_delivered(id).await;
    }
}

/// The loop's side of the subagents: one level, the agent that started them.
impl Spawner for Subagents {
    fn bind(&self, events: EventTx, run_id: &str, origin: &Origin) {
        *lock(&self.level.events) = Some(events);
        *lock(&self.level.run_id) = Some(run_id.to_string());
        *lock(&self.level.origin) = origin.clone();
    }

    fn take_reports(&self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async move {
            let taken: Vec<(String, String)> = std::mem::take(&mut *lock(&self.level.reports));
            for (id, _) in &taken {
                self.mark_delivered(id).await;
            }
            taken.into_iter().map(|(_, text)| text).collect()
        })
    }

    fn has_reports(&self) -> bool {
        !lock(&self.level.reports).is_empty()
    }

    fn running(&self) -> usize {
        lock(&self.level.running).len()
    }

    fn wait_any<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            loop {
                let notified = self.level.changed.notified();
                if self.has_reports() || self.running() == 0 {
                    return;
                }
                tokio::select! {
                    () = notified => {}
                    () = cancel.cancelled() => return,
                }
            }
        })
    }
}

/// The status and the result text of a subagent that ended.
pub(crate) fn finish_state(
    end: &Result<ChildEnd, SubagentError>,
    cancel: &CancellationToken,
    limits: &SubagentLimits,
) -> (String, String) {
    match end {
        // The result is kept in the subagent's snapshot, which the store records:
        // the cause is joined into it.
        Err(e) => {
            let state = if cancel.is_cancelled() {
                "stopped"
            } else {
                "failed"
            };
            (state.into(), error_chain(e))
        }
        Ok(end) if end.outcome == Outcome::FinalAnswer => ("done".into(), end.message.clone()),
        Ok(end) => {
            let why = if end.timed_out {
                format!(
                    "stopped at its time limit of {} s",
                    limits.background_timeout.as_secs()
                )
            } else {
                end.message.clone()
            };
            let state = if end.outcome == Outcome::Cancelled && !end.timed_out {
                "stopped"
            } else {
                "failed"
            };
            let mut text = format!("It ended without a final answer: {why}.");
            if !end.last_text.trim().is_empty() {
                text.push_str("\n\nIts last message:\n");
                text.push_str(end.last_text.trim());
            }
            (state.into(), text)
        }
    }
}
