//! The [`Registry`]: the one place tools are registered, looked up and executed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::calllog::{CallLog, CallRecord, args_digest};
use crate::context::{EventSink, MAX_TIMEOUT_MS, ProgressSink, Session, ToolContext};

/// Time a tool that enforces its own timeout gets beyond the maximum, to clean up.
const OWN_TIMEOUT_SLACK: Duration = Duration::from_secs(30);
use crate::ask::Asker;
use crate::authorize::{AllowAll, Authorizer, Decision, Request};
use crate::envelope::{Envelope, ErrorCode};
use crate::output::OutputBudget;
use crate::profile::{
    ParamCase, Profile, camel_case, camel_message, camel_schema, camel_violation, property_names,
    rename_args,
};
use crate::repair::repair_arguments;

/// The repair recorded when truncated arguments end inside a string.
const TRUNCATED_STRING_REPAIR: &str = "closed unterminated string";
use crate::spec::{Category, ToolSpec};
use crate::tool::{FnTool, Tool, ToolResult, Typed, TypedTool};
use crate::validate::{InvalidSchema, SchemaValidator, violations_message};

/// Longest tool name accepted (the OpenAI limit).
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Default bound on calls running side by side in a concurrent batch.
pub const DEFAULT_MAX_CONCURRENCY: usize = 8;

/// Registration failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool with this name is already registered.
    #[error("a tool named {0:?} is already registered")]
    Duplicate(String),
    /// The name is not 1-64 characters of `[A-Za-z0-9_-]`.
    #[error("invalid tool name {0:?}: use 1-64 characters of A-Z, a-z, 0-9, _ and -")]
    InvalidName(String),
    /// The input schema does not compile or is not an object schema.
    #[error("invalid input schema for {name:?}: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The permission rules given to the registry do not fit its tools.
    #[error("{0}")]
    Rules(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// One call to execute.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Tool name, canonical or as exposed by the active profile.
    pub name: String,
    /// Arguments (an object; a JSON string is repaired).
    pub arguments: Value,
    /// The caller's id for the call (OpenAI `tool_call_id`, Anthropic `tool_use.id`).
    pub call_id: Option<String>,
}

impl ToolCall {
    /// A call without an id.
    pub fn new(name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments,
            call_id: None,
        }
    }

    /// Sets the call id.
    pub fn with_id(mut self, id: impl Into<String>) -> ToolCall {
        self.call_id = Some(id.into());
        self
    }
}

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Cancels the call when triggered.
    pub cancel: Option<CancellationToken>,
    /// Overrides the session's default timeout (capped at [`MAX_TIMEOUT_MS`]).
    pub timeout: Option<Duration>,
    /// Receives progress.
    pub progress: Option<Arc<dyn ProgressSink>>,
    /// Overrides the session's output budget for this call: the text the
    /// caller's reader takes in one piece (an MCP client that cuts long
    /// results, say). Tools that page (read_file, read_output, bash) fit their
    /// pages to it, and longer texts are cut to it and spilled.
    pub budget: Option<OutputBudget>,
    /// Asks the person about a call under an `ask` rule, instead of the registry's
    /// approver (the MCP client that sent this call, say).
    pub approver: Option<Arc<dyn Approver>>,
    /// Puts the call's questions (`ask_user`) to the person, instead of the
    /// registry's asker.
    pub asker: Option<Arc<dyn Asker>>,
    /// Set (by this call's approver or asker) when the person answers in a later
    /// request and the call is sent again then: this one changed nothing and is
    /// not recorded in the call log.
    pub put_off: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl CallOptions {
    /// The options of one call of a batch run with these.
    fn for_one_call(&self) -> CallOptions {
        CallOptions {
            cancel: self.cancel.as_ref().map(CancellationToken::child_token),
            timeout: self.timeout,
            progress: self.progress.clone(),
            budget: self.budget.clone(),
            approver: self.approver.clone(),
            asker: self.asker.clone(),
            put_off: self.put_off.clone(),
        }
    }
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("has_progress", &self.progress.is_some())
            .field("has_approver", &self.approver.is_some())
            .field("has_asker", &self.asker.is_some())
            .finish_non_exhaustive()
    }
}

/// How [`Registry::execute_batch`] runs calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMode {
    /// One after another.
    Sequential,
    /// Runs of concurrency-safe calls side by side (at most `max` at once); any other
    /// call runs alone, after the calls before it and before the calls after it.
    Concurrent {
        /// Bound on calls running at once.
        max: usize,
    },
}

struct Entry {
    tool: Arc<dyn Tool>,
    /// Compiled on the first call: a short-lived process (one CLI call) pays only for
    /// the tool it runs. Registration already checked the schema.
    validator: OnceLock<Result<SchemaValidator, InvalidSchema>>,
    /// The parameter names of its input schema, at any depth: found on the first
    /// call under a profile that renames them.
    param_names: OnceLock<BTreeSet<String>>,
}

impl Entry {
    fn new(tool: Arc<dyn Tool>) -> Entry {
        Entry {
            tool,
            validator: OnceLock::new(),
            param_names: OnceLock::new(),
        }
    }

    fn validator(&self) -> Result<&SchemaValidator, &InvalidSchema> {
        self.validator
            .get_or_init(|| SchemaValidator::new(&self.tool.spec().input_schema))
            .as_ref()
    }

    fn param_names(&self) -> &BTreeSet<String> {
        self.param_names
            .get_or_init(|| property_names(&self.tool.spec().input_schema))
    }
}

/// When a tool's input schema is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SchemaCheck {
    /// At registration: a hand-written schema is reported there when it is invalid.
    Now,
    /// At the first call: the schema was derived from Rust types.
    OnFirstCall,
}

/// A call put to a person because a rule marked it `ask`.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    /// The tool, as the caller named it.
    pub tool: &'a str,
    /// What the rule looked at: the command of `bash`, the path of a file tool.
    pub subject: Option<&'a str>,
    /// The call's arguments (after repair and validation), to show what it does
    /// (the diff of an edit).
    pub arguments: &'a Value,
    /// The rule that asks, as written (`bash(git push:*)`), when one does.
    pub rule: Option<&'a str>,
}

/// A person's answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run the call.
    Approve,
    /// Don't; the reason, if the person gave one, goes back to the model.
    Decline {
        /// Why, in the person's words.
        reason: Option<String>,
    },
}

/// Asks a person whether a call that a rule marked `ask` may run.
pub trait Approver: Send + Sync {
    /// The person's answer.
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> crate::BoxFuture<'a, Approval>;
}

/// Tools that come and go while the registry is in use (the tools of another MCP
/// server, listed again when it says its list changed). The registry asks it on
/// every lookup, after its own tools: a name it holds itself wins.
pub trait ToolSource: Send + Sync + 'static {
    /// The tools offered now, in a stable order.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// The tool named `name` (as its spec names it), if offered now.
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>>;

    /// A number that changes whenever [`ToolSource::tools`] would give something
    /// new. Cheap to call.
    fn revision(&self) -> u64;
}

/// Holds the tools and executes calls: unknown-name suggestions, safe repair,
/// validation, custom rules, permission policy, timeout, cancellation, output budget.
pub struct Registry {
    session: Arc<Session>,
    tools: BTreeMap<String, Arc<Entry>>,
    /// Tools that come and go, asked after `tools`.
    sources: Vec<Arc<dyn ToolSource>>,
    /// The entries of the sources' tools, kept while the same tool is offered (its
    /// compiled schema is reused).
    source_entries: std::sync::Mutex<BTreeMap<String, Arc<Entry>>>,
    profile: Profile,
    authorizer: Arc<dyn Authorizer>,
    approver: Option<Arc<dyn Approver>>,
    asker: Option<Arc<dyn Asker>>,
    events: Option<Arc<dyn EventSink>>,
    call_log: Option<Arc<dyn CallLog>>,
    /// The canonical name of the tool that reads saved outputs, if one is registered.
    saved_output_reader: Option<Arc<str>>,
    /// How much of the descriptions [`Registry::definitions`] gives.
    descriptions: crate::Descriptions,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("profile", &self.profile.name())
            .finish_non_exhaustive()
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Registry {
    /// An empty registry over `session`, with the default profile and no permission
    /// rules (every call is allowed until [`Registry::set_authorizer`]).
    pub fn new(session: Session) -> Registry {
        Registry {
            session: Arc::new(session),
            tools: BTreeMap::new(),
            sources: Vec::new(),
            source_entries: std::sync::Mutex::default(),
            profile: Profile::default_profile(),
            authorizer: Arc::new(AllowAll),
            approver: None,
            asker: None,
            events: None,
            call_log: None,
            saved_output_reader: None,
            descriptions: crate::Descriptions::Full,
        }
    }

    /// Uses `profile` for exposed names.
    pub fn set_profile(&mut self, profile: Profile) {
        self.profile = profile;
    }

    /// How much of each description [`Registry::definitions`] gives (short ones
    /// for small models).
    pub fn set_descriptions(&mut self, descriptions: crate::Descriptions) {
        self.descriptions = descriptions;
    }

    /// How much of each description the definitions give.
    pub fn descriptions(&self) -> crate::Descriptions {
        self.descriptions
    }

    /// Asks `authorizer` before every call (its rules should already know the
    /// session's roots).
    pub fn set_authorizer(&mut self, authorizer: Arc<dyn Authorizer>) {
        self.authorizer = authorizer;
    }

    /// Asks `approver` when a rule says `ask` (without one, `ask` refuses).
    pub fn set_approver(&mut self, approver: Option<Arc<dyn Approver>>) {
        self.approver = approver;
    }

    /// Puts the questions of calls (`ask_user`) to `asker` (without one, a call's
    /// own, else none: `ask_user` then says nobody can answer).
    pub fn set_asker(&mut self, asker: Option<Arc<dyn Asker>>) {
        self.asker = asker;
    }

    /// Sends UI events of every call to `sink`.
    pub fn set_events(&mut self, sink: Option<Arc<dyn EventSink>>) {
        self.events = sink;
    }

    /// Hands a record of every executed call to `log` (none: calls are not logged).
    pub fn set_call_log(&mut self, log: Option<Arc<dyn CallLog>>) {
        self.call_log = log;
    }

    /// A registry with the same session, tools, profile, policy and call log, for
    /// another caller: its approver and event sink are its own (none at first).
    /// The tools themselves are shared (a background shell started through one is
    /// seen through the other).
    pub fn fork(&self) -> Registry {
        let tools = self
            .tools
            .iter()
            .map(|(name, e)| (name.clone(), Arc::new(Entry::new(Arc::clone(&e.tool)))))
            .collect();
        Registry {
            session: Arc::clone(&self.session),
            tools,
            sources: self.sources.clone(),
            source_entries: std::sync::Mutex::default(),
            profile: self.profile.clone(),
            authorizer: Arc::clone(&self.authorizer),
            approver: None,
            asker: None,
            events: None,
            call_log: self.call_log.clone(),
            saved_output_reader: self.saved_output_reader.clone(),
            descriptions: self.descriptions,
        }
    }

    /// The session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The approver asked when a rule says `ask`, if any.
    pub fn approver(&self) -> Option<&Arc<dyn Approver>> {
        self.approver.as_ref()
    }

    /// The sink of the calls' UI events, if any.
    pub fn events(&self) -> Option<&Arc<dyn EventSink>> {
        self.events.as_ref()
    }

    /// The active profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The tool that reads back saved outputs, under the name the model knows it
    /// by: truncated outputs name it. `None` without such a tool.
    pub fn saved_output_reader(&self) -> Option<Arc<str>> {
        let canonical = self.saved_output_reader.as_ref()?;
        if !self.tools.contains_key(&**canonical) {
            return None;
        }
        let exposed = self.profile.exposed(canonical);
        Some(if exposed == &**canonical {
            Arc::clone(canonical)
        } else {
            Arc::from(exposed)
        })
    }

    /// The authorizer asked before every call.
    pub fn authorizer(&self) -> &Arc<dyn Authorizer> {
        &self.authorizer
    }

    /// Registers a tool.
    ///
    /// # Errors
    /// The name is taken or invalid, or the input schema does not compile.
    pub fn register(&mut self, tool: impl Tool) -> Result<(), RegistryError> {
        self.register_arc(Arc::new(tool))
    }

    /// Registers a typed tool, deriving its schemas.
    ///
    /// # Errors
    /// As [`Registry::register`].
    pub fn register_typed<T: TypedTool>(&mut self, tool: T) -> Result<(), RegistryError> {
        // The schema is derived from Rust types, so it is well-formed; compiling it
        // waits for the first call (a one-call process pays for one tool only).
        self.insert(Arc::new(Typed::new(tool)), SchemaCheck::OnFirstCall)
    }

    /// Registers a plain async function with a given spec.
    ///
    /// # Errors
    /// As [`Registry::register`].
    pub fn register_fn<F, Fut>(&mut self, spec: ToolSpec, f: F) -> Result<(), RegistryError>
    where
        F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult<Value>> + Send + 'static,
    {
        self.register(FnTool::new(spec, f))
    }

    /// Registers a shared tool.
    ///
    /// # Errors
    /// As [`Registry::register`].
    pub fn register_arc(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        self.insert(tool, SchemaCheck::Now)
    }

    fn insert(&mut self, tool: Arc<dyn Tool>, check: SchemaCheck) -> Result<(), RegistryError> {
        let spec = tool.spec();
        let name = spec.name.clone();
        if !valid_name(&name) {
            return Err(RegistryError::InvalidName(name));
        }
        if self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(RegistryError::InvalidSchema {
                name,
                reason: "the input schema must have \"type\": \"object\"".into(),
            });
        }
        if spec.reads_saved_output {
            self.saved_output_reader = Some(Arc::from(name.as_str()));
        }
        let validator = OnceLock::new();
        if check == SchemaCheck::Now {
            let compiled = SchemaValidator::new(&spec.input_schema).map_err(|reason| {
                RegistryError::InvalidSchema {
                    name: name.clone(),
                    reason: reason.0,
                }
            })?;
            let _ = validator.set(Ok(compiled));
        }
        self.tools.insert(
            name,
            Arc::new(Entry {
                tool,
                validator,
                param_names: OnceLock::new(),
            }),
        );
        Ok(())
    }

    /// Adds tools that come and go (see [`ToolSource`]); the registry asks `source`
    /// after its own tools and after earlier sources.
    pub fn add_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
    }

    /// The tool `name` of the first source that offers it.
    fn source_tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.sources.iter().find_map(|s| s.get(name))
    }

    /// The tools of the sources that the registry's own names do not shadow.
    fn source_tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut seen = BTreeSet::new();
        let mut all = Vec::new();
        for source in &self.sources {
            for tool in source.tools() {
                let name = tool.spec().name.as_str();
                if !self.tools.contains_key(name) && seen.insert(name.to_string()) {
                    all.push(tool);
                }
            }
        }
        all
    }

    /// The entry of canonical name `name`: the registry's own, or a source's (its
    /// compiled schema kept while the source offers the same tool).
    fn entry(&self, name: &str) -> Option<Arc<Entry>> {
        if let Some(e) = self.tools.get(name) {
            return Some(Arc::clone(e));
        }
        let tool = self.source_tool(name)?;
        let mut cache = self
            .source_entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = cache.get(name)
            && Arc::ptr_eq(&e.tool, &tool)
        {
            return Some(Arc::clone(e));
        }
        let entry = Arc::new(Entry::new(tool));
        cache.insert(name.to_string(), Arc::clone(&entry));
        Some(entry)
    }

    /// Removes a tool (by canonical or exposed name); returns it if it was there.
    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let key = self.resolve(name)?.to_string();
        self.tools.remove(&key).map(|e| Arc::clone(&e.tool))
    }

    /// Keeps only the tools `selection` names (sets of `sets`, or tools by canonical
    /// or exposed name); the rest are unregistered.
    ///
    /// # Errors
    /// A name that is neither a set nor a tool; nothing is removed then.
    pub fn select(
        &mut self,
        selection: &crate::toolset::ToolSelection,
        sets: &[crate::toolset::Toolset],
    ) -> Result<(), crate::toolset::SelectionError> {
        if selection.is_all() {
            return Ok(());
        }
        let exposed = self.names();
        let exposed: Vec<&str> = exposed.iter().map(String::as_str).collect();
        let canonical = |name: &str| self.resolve(name).map(str::to_string);
        let keep = selection.resolve(sets, &canonical, &exposed)?;
        // `keep` holds canonical names; the listing of every tool holds exposed ones.
        let keep: std::collections::BTreeSet<String> = keep
            .into_iter()
            .map(|n| self.resolve(&n).map_or(n.clone(), str::to_string))
            .collect();
        self.tools.retain(|name, _| keep.contains(name));
        Ok(())
    }

    /// The canonical name for a canonical or exposed name, if registered.
    pub fn resolve<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if let Some(c) = self.profile.canonical(name)
            && self.tools.contains_key(c)
        {
            return Some(c);
        }
        if let Some((k, _)) = self.tools.get_key_value(name) {
            return Some(k.as_str());
        }
        self.source_tool(name).map(|_| name)
    }

    /// The tool with this canonical or exposed name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let key = self.resolve(name)?;
        match self.tools.get(key) {
            Some(e) => Some(Arc::clone(&e.tool)),
            None => self.source_tool(key),
        }
    }

    /// True if a tool has this canonical or exposed name.
    pub fn has(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }

    /// Exposed names, in a stable order (sorted by canonical name).
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tools
            .keys()
            .map(|k| self.profile.exposed(k).to_string())
            .collect();
        names.extend(self.source_tools().iter().map(|t| t.spec().name.clone()));
        names
    }

    /// The tools of a category, in the stable order.
    pub fn by_category(&self, category: Category) -> Vec<Arc<dyn Tool>> {
        self.tools
            .values()
            .map(|e| Arc::clone(&e.tool))
            .chain(self.source_tools())
            .filter(|t| t.spec().category == category)
            .collect()
    }

    /// Every spec, with exposed names, in the stable order: the input of
    /// `toolbelt_wire::export`.
    pub fn definitions(&self) -> Vec<ToolSpec> {
        let own = self.tools.values().map(|e| {
            let mut spec = e
                .tool
                .current_spec()
                .unwrap_or_else(|| e.tool.spec().clone());
            if self.profile.param_case(&spec.name) == ParamCase::Camel {
                camel_spec(&mut spec);
            }
            if self.profile.entries().len() > 0 {
                map_descriptions(&mut spec, &|text| exposed_mentions(text, &self.profile));
            }
            spec.name = self.profile.exposed(&spec.name).to_string();
            spec
        });
        let short = self.descriptions == crate::Descriptions::Short;
        // A source's tools keep their names: profiles rename built-in tools only.
        let sourced = self
            .source_tools()
            .into_iter()
            .map(|t| t.current_spec().unwrap_or_else(|| t.spec().clone()));
        own.chain(sourced)
            .map(|spec| if short { spec.shortened() } else { spec })
            .collect()
    }

    /// A number that changes when a tool's [current spec](Tool::current_spec)
    /// changes, or a source's tools do: a server that saw another value lists the
    /// tools again.
    pub fn revision(&self) -> u64 {
        let own = self.tools.values().fold(0u64, |acc, e| {
            acc.wrapping_mul(31).wrapping_add(e.tool.revision())
        });
        self.sources.iter().fold(own, |acc, s| {
            acc.wrapping_mul(31).wrapping_add(s.revision())
        })
    }

    /// Executes one call with default options.
    pub async fn execute(&self, name: &str, arguments: Value) -> Envelope {
        self.execute_call(ToolCall::new(name, arguments), CallOptions::default())
            .await
    }

    /// Executes one call. Never panics and never fails: every outcome is an envelope.
    pub async fn execute_call(&self, call: ToolCall, opts: CallOptions) -> Envelope {
        let started = Instant::now();
        let started_at_ms = unix_ms_now();
        let call_id = call.call_id.clone().unwrap_or_else(new_call_id);
        let params_input = call.arguments.clone();
        let put_off = opts.put_off.clone();
        let (mut env, canonical, repairs) = self
            .run(call.name.as_str(), call.arguments, &call_id, opts)
            .await;

        env.stats.time_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        env.context.tool = canonical.clone().unwrap_or_else(|| call.name.clone());
        env.context.call_id = call_id;
        env.context.cwd = self.session.cwd().display().to_string();
        env.context.params_input = params_input;
        env.context.repairs = repairs;
        if canonical.as_deref().is_some_and(|c| c != call.name) {
            env.context.exposed_name = Some(call.name.clone());
        }
        tracing::info!(
            target: "toolbelt::call",
            tool = %env.context.tool,
            call_id = %env.context.call_id,
            status = env.status.as_str(),
            code = env.error_code().map(|c| c.as_str()),
            time_ms = env.stats.time_ms,
        );
        let deferred = put_off.is_some_and(|p| p.load(std::sync::atomic::Ordering::Relaxed));
        if let Some(log) = self.call_log.as_ref().filter(|_| !deferred) {
            log.record(call_record(&env, started_at_ms));
        }
        env
    }

    async fn run(
        &self,
        name: &str,
        arguments: Value,
        call_id: &str,
        opts: CallOptions,
    ) -> (Envelope, Option<String>, Vec<crate::Repair>) {
        let Some(canonical) = self.resolve(name) else {
            return (self.unknown_tool(name), None, Vec::new());
        };
        let Some(entry) = self.entry(canonical) else {
            return (self.unknown_tool(name), None, Vec::new());
        };
        let tool = &entry.tool;
        let spec = tool.spec();
        let exposed = self.profile.exposed(canonical);
        // A profile that shows camelCase parameters: read them back as the tool's.
        let camel =
            (self.profile.param_case(canonical) == ParamCase::Camel).then(|| entry.param_names());
        let arguments = match &camel {
            Some(names) => rename_args(arguments, names, true),
            None => arguments,
        };

        // 1. Safe repair.
        let repaired = repair_arguments(&spec.input_schema, arguments);
        let repairs = repaired.repairs;
        let canonical_owned = Some(canonical.to_string());
        if let Some(e) = repaired.parse_error {
            let env = Envelope::error(
                ErrorCode::InvalidParams,
                format!("the arguments for {exposed} are not valid JSON: {e}"),
                Some(
                    "send the arguments as one JSON object matching the tool's input schema".into(),
                ),
            );
            return (env, canonical_owned, repairs);
        }
        let args = match &camel {
            // Arguments sent as a JSON string are objects only after the repair.
            Some(names) => rename_args(repaired.value, names, true),
            None => repaired.value,
        };
        // Arguments cut off by the model's output limit are repaired by closing the
        // open string; a tool that writes would then save the truncated text.
        let writes =
            spec.hints.destructive || spec.permissions.iter().any(|p| p.ends_with(":write"));
        if writes
            && repairs
                .iter()
                .any(|r| r.action.contains(TRUNCATED_STRING_REPAIR))
        {
            let env = Envelope::error(
                ErrorCode::InvalidParams,
                format!(
                    "the arguments for {exposed} were cut off in the middle of a string; running it would write truncated content"
                ),
                Some("send the complete arguments again; for long content, write it in parts (a write tool's append mode, say)".into()),
            );
            return (env, canonical_owned, repairs);
        }

        // 2. Schema validation, then the tool's own rules.
        let validator = match entry.validator() {
            Ok(v) => v,
            Err(reason) => {
                let env = Envelope::error(
                    ErrorCode::Internal,
                    format!("the input schema of {exposed} cannot be compiled: {reason}"),
                    None,
                );
                return (env, canonical_owned, repairs);
            }
        };
        let mut violations = validator.violations(&args);
        if violations.is_empty() {
            violations = tool.validate(&args);
        } else {
            violations = name_unknown_parameters(exposed, &spec.input_schema, &args, violations);
        }
        if let Some(names) = &camel {
            violations = violations
                .iter()
                .map(|v| camel_violation(v, names))
                .collect();
        }
        if !violations.is_empty() {
            let env = Envelope::error(
                ErrorCode::InvalidParams,
                violations_message(exposed, &violations),
                Some("fix the listed fields and call again; the input schema gives each field's type and allowed values".into()),
            )
            .with_stat("violations", violations.len());
            let mut env = env;
            env.data = serde_json::json!({
                "violations": violations.iter().map(|v| serde_json::json!({"path": v.path, "message": v.message})).collect::<Vec<_>>()
            });
            return (env, canonical_owned, repairs);
        }

        // 3. Permission policy.
        let subject = tool.permission_subject(&args);
        let eval = self.authorizer.evaluate(&Request {
            tool: canonical,
            alias: (exposed != canonical).then_some(exposed),
            subject: subject.as_deref(),
            permissions: &spec.permissions,
        });
        let rule = eval.rule.as_deref().map_or_else(
            || "the default policy".to_string(),
            |r| format!("the rule `{r}`"),
        );
        match eval.decision {
            Decision::Allow => {}
            Decision::Deny => {
                let what = subject
                    .as_deref()
                    .map(|s| format!(" on {s:?}"))
                    .unwrap_or_default();
                let env = Envelope::error(
                    ErrorCode::AccessDenied,
                    format!("{exposed}{what} is denied by {rule}"),
                    Some("do not retry this call; choose another way or ask the user to change the permission rules".into()),
                );
                return (env, canonical_owned, repairs);
            }
            Decision::Ask => {
                let approver = opts.approver.as_ref().or(self.approver.as_ref());
                let answer = match approver {
                    Some(a) => {
                        a.approve(ApprovalRequest {
                            tool: exposed,
                            subject: subject.as_deref(),
                            arguments: &args,
                            rule: eval.rule.as_deref(),
                        })
                        .await
                    }
                    None => Approval::Decline { reason: None },
                };
                if let Approval::Decline { reason } = answer {
                    let what = subject
                        .as_deref()
                        .map(|s| format!(" on {s:?}"))
                        .unwrap_or_default();
                    let hint = match (approver, reason) {
                        (Some(_), Some(reason)) => format!(
                            "the user declined this call, saying: {reason}; do not retry it unchanged"
                        ),
                        (Some(_), None) => {
                            "the user declined this call; do not retry it unchanged".to_string()
                        }
                        (None, _) => "this call needs approval, which is not available here; ask the user to add an allow rule".to_string(),
                    };
                    let env = Envelope::error(
                        ErrorCode::AccessDenied,
                        format!("{exposed}{what} needs approval under {rule} and was not approved"),
                        Some(hint),
                    );
                    return (env, canonical_owned, repairs);
                }
            }
        }

        // 4. The call: timeout, cancellation, panics contained.
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
            .with_authorizer(Some(Arc::clone(&self.authorizer)));
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

        // 5. Output budget.
        if env.text.len() > ctx.budget().max_bytes {
            self.enforce_budget(&mut env, ctx.budget());
        }
        (env, canonical_owned, repairs)
    }

    fn enforce_budget(&self, env: &mut Envelope, budget: &OutputBudget) {
        match crate::output::apply_budget(&env.text, budget, &self.session.spill_dir()) {
            Ok(captured) => captured.apply_to(env),
            Err(e) => {
                tracing::error!("could not spill output: {e}");
                crate::output::truncate_in_memory(&env.text, budget).apply_to(env);
            }
        }
    }

    fn unknown_tool(&self, name: &str) -> Envelope {
        let names = self.names();
        let ranked = closest_names(name, &names, 3);
        let strong: Vec<String> = ranked
            .iter()
            .filter(|(score, _)| *score >= STRONG_MATCH)
            .map(|(_, n)| n.clone())
            .collect();
        let suggestions: Vec<String> = if strong.is_empty() {
            ranked.into_iter().map(|(_, n)| n).collect()
        } else {
            strong.clone()
        };
        let message = if !strong.is_empty() {
            format!(
                "there is no tool named {name:?}; did you mean {}?",
                quote_list(&strong)
            )
        } else if !suggestions.is_empty() {
            format!(
                "there is no tool named {name:?}; the closest tools are {}",
                quote_list(&suggestions)
            )
        } else {
            format!("there is no tool named {name:?}, and no tools are registered")
        };
        let mut shown: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .take(MAX_NAMES_IN_HINT)
            .collect();
        if names.len() > MAX_NAMES_IN_HINT {
            shown.push("...");
        }
        let mut env = Envelope::error(
            ErrorCode::UnknownTool,
            message,
            Some(format!(
                "call one of the available tools: {}",
                shown.join(", ")
            )),
        );
        env.data = serde_json::json!({ "suggestions": suggestions, "available": names });
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

fn quote_list(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A similarity at which a name is offered as "did you mean".
const STRONG_MATCH: f64 = 0.8;
/// The same for a parameter name.
const PARAMETER_MATCH: f64 = 0.75;
/// How many tool names an unknown-tool hint lists.
const MAX_NAMES_IN_HINT: usize = 40;

/// The `n` names closest to `name` with their scores (case-insensitive, by
/// Jaro-Winkler similarity with a bonus for containment), best first.
fn closest_names(name: &str, names: &[String], n: usize) -> Vec<(f64, String)> {
    let want = normalize(name);
    let mut scored: Vec<(f64, &String)> = names
        .iter()
        .map(|cand| {
            let c = normalize(cand);
            let mut score = strsim::jaro_winkler(&want, &c);
            if !want.is_empty() && (c.contains(&want) || want.contains(&c)) {
                score += 0.2;
            }
            (score, cand)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(n)
        .map(|(s, c)| (s, c.clone()))
        .collect()
}

/// The validator's "Additional properties are not allowed ('x' was unexpected)" for
/// the arguments, as one violation per unknown parameter naming the closest real
/// one: `case_insensitive: not a parameter of grep; did you mean `case_sensitive`
/// (false)?`.
fn name_unknown_parameters(
    tool: &str,
    schema: &Value,
    args: &Value,
    violations: Vec<crate::Violation>,
) -> Vec<crate::Violation> {
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
    let mut out: Vec<crate::Violation> = violations
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
            match closest_names(key, &names, 1).first() {
                Some((score, name)) if *score >= PARAMETER_MATCH => {
                    format!("did you mean `{name}`?")
                }
                _ => format!("its parameters are: {}", names.join(", ")),
            }
        };
        out.push(crate::Violation::new(
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

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
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
fn call_record(env: &Envelope, at_ms: i64) -> CallRecord {
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

fn unix_ms_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `call_` and a UUIDv7: the time in milliseconds, then 74 random bits. The bits
/// come from keyed SipHash over a counter (the key drawn once per thread from the
/// OS), not from a system call per call: unique within the process, and unguessable
/// across processes.
fn new_call_id() -> String {
    use std::hash::{BuildHasher as _, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    thread_local!(static KEY: RandomState = RandomState::new());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let (hi, lo) = KEY.with(|k| (k.hash_one((n, 0u8)), k.hash_one((n, 1u8))));
    let mut random = [0u8; 10];
    random[..8].copy_from_slice(&hi.to_le_bytes());
    random[8..].copy_from_slice(&lo.to_le_bytes()[..2]);
    let ms = u64::try_from(unix_ms_now()).unwrap_or(0);
    let id = uuid::Builder::from_unix_timestamp_millis(ms, &random).into_uuid();
    format!("call_{}", id.simple())
}

/// Rewrites every description of `spec`: its own, its examples', and those inside
/// its input schema.
fn map_descriptions(spec: &mut ToolSpec, f: &dyn Fn(&str) -> String) {
    fn walk(v: &mut Value, f: &dyn Fn(&str) -> String) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    match v {
                        Value::String(text) if k == "description" => *text = f(text),
                        _ => walk(v, f),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, f)),
            _ => {}
        }
    }
    walk(&mut spec.input_schema, f);
    spec.description = f(&spec.description);
    for example in &mut spec.examples {
        example.description = f(&example.description);
    }
}

/// `spec` as a camelCase profile shows it: its schema, examples and argument names
/// in camelCase.
fn camel_spec(spec: &mut ToolSpec) {
    let names = property_names(&spec.input_schema);
    spec.input_schema = camel_schema(&spec.input_schema);
    for example in &mut spec.examples {
        example.input = rename_args(std::mem::take(&mut example.input), &names, false);
    }
    map_descriptions(spec, &|text| camel_message(text, &names));
    for arg in [&mut spec.key_argument, &mut spec.permission_argument]
        .into_iter()
        .flatten()
    {
        if names.contains(arg.as_str()) {
            *arg = camel_case(arg);
        }
    }
}

/// The tools a description names in backticks (`` `list_projects` ``), as the
/// profile exposes them (`` `listProjects` ``).
fn exposed_mentions(text: &str, profile: &Profile) -> String {
    if !text.contains('`') {
        return text.to_string();
    }
    let mut out = text.to_string();
    for (canonical, exposed) in profile.entries() {
        out = out.replace(&format!("`{canonical}`"), &format!("`{exposed}`"));
    }
    out
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
