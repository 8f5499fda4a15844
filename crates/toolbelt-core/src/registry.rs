//! The [`Registry`]: the one place tools are registered and looked up, with the
//! tool sources whose tools come and go. How it runs a call, stage by stage, is
//! `dispatch`: [`Registry::execute_call`] lists the stages.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ask::Asker;
use crate::authorize::{AllowAll, Authorizer, Guard};
use crate::calllog::CallLog;
use crate::checkpoint::{Checkpointer, Origin};
use crate::closest::{STRONG_MATCH, closest};
use crate::context::{EventSink, ProgressSink, Session, ToolContext};
use crate::envelope::{Envelope, ErrorCode};
use crate::hooks::CallHooks;
use crate::output::OutputBudget;
use crate::profile::{
    ParamCase, Profile, camel_case, camel_message, camel_schema, property_names, rename_args,
};
use crate::spec::{Category, ToolSpec};
use crate::sync::lock;
use crate::tool::{FnTool, Tool, ToolResult, Typed, TypedTool};
use crate::validate::{InvalidSchema, SchemaValidator};

mod dispatch;

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
    #[error("invalid input schema for {name:?}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What is wrong.
        #[source]
        source: InvalidSchema,
    },
    /// The permission rules given to the registry do not fit its tools (the
    /// rules' own error, which says which rule and why).
    #[error(transparent)]
    Rules(Box<dyn std::error::Error + Send + Sync>),
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
    /// Overrides the session's default timeout (capped at [`MAX_TIMEOUT_MS`](crate::MAX_TIMEOUT_MS)).
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
    /// Where the call came from, instead of the registry's origin (see
    /// [`Registry::set_origin`]): an MCP session and its client, an API token.
    pub origin: Option<Origin>,
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
            origin: self.origin.clone(),
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
    /// The rule that asks, as written (`bash(git push:*)`), when one does; a
    /// guard's name when a guard asks.
    pub rule: Option<&'a str>,
    /// Set when a built-in guard holds the call ([`Authorizer::guard`]: a small
    /// model's destructive command): an approver that approves every call without
    /// asking anyone (`--yes`) must decline it; one that asks a person asks.
    pub guard: Option<&'a Guard>,
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
    source_entries: Mutex<BTreeMap<String, Arc<Entry>>>,
    profile: Profile,
    authorizer: Arc<dyn Authorizer>,
    approver: Option<Arc<dyn Approver>>,
    asker: Option<Arc<dyn Asker>>,
    events: Option<Arc<dyn EventSink>>,
    call_log: Option<Arc<dyn CallLog>>,
    /// Takes what is needed to undo each call that may change files.
    checkpointer: Option<Arc<dyn Checkpointer>>,
    /// The person's hooks, asked before and after every call.
    hooks: Option<Arc<dyn CallHooks>>,
    /// The post-edit pipeline the write tools run (and the shell's changes meet).
    after_write: Option<Arc<dyn crate::AfterWrite>>,
    /// Where calls come from unless their options say otherwise.
    origin: Origin,
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
            source_entries: Mutex::default(),
            profile: Profile::default_profile(),
            authorizer: Arc::new(AllowAll),
            approver: None,
            asker: None,
            events: None,
            call_log: None,
            checkpointer: None,
            hooks: None,
            after_write: None,
            origin: Origin::default(),
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

    /// Asks `checkpointer` before and after every call that may change files (none:
    /// calls are not checkpointed).
    pub fn set_checkpointer(&mut self, checkpointer: Option<Arc<dyn Checkpointer>>) {
        self.checkpointer = checkpointer;
    }

    /// The checkpointer, if any.
    pub fn checkpointer(&self) -> Option<&Arc<dyn Checkpointer>> {
        self.checkpointer.as_ref()
    }

    /// Where calls come from when their options do not say (`cli`, `agent` with its
    /// run): kept with their checkpoints and in the call log.
    pub fn set_origin(&mut self, origin: Origin) {
        self.origin = origin;
    }

    /// Where calls come from when their options do not say.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Asks `hooks` before and after every call (none: no hooks run). A fork keeps
    /// them: a subagent's calls meet the same hooks.
    pub fn set_hooks(&mut self, hooks: Option<Arc<dyn CallHooks>>) {
        self.hooks = hooks;
    }

    /// The hooks, if any (the agent asks them at the edges of a run).
    pub fn hooks(&self) -> Option<&Arc<dyn CallHooks>> {
        self.hooks.as_ref()
    }

    /// Gives the write tools `after` (formatter, syntax check, diagnostics), and
    /// checks the files a shell command changed when it says so. A fork keeps it.
    pub fn set_after_write(&mut self, after: Option<Arc<dyn crate::AfterWrite>>) {
        self.after_write = after;
    }

    /// The post-edit pipeline, if any.
    pub fn after_write(&self) -> Option<&Arc<dyn crate::AfterWrite>> {
        self.after_write.as_ref()
    }

    /// A registry with the same session, tools, profile, policy, call log,
    /// checkpointer, hooks, post-edit pipeline and origin, for
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
            source_entries: Mutex::default(),
            profile: self.profile.clone(),
            authorizer: Arc::clone(&self.authorizer),
            approver: None,
            asker: None,
            events: None,
            call_log: self.call_log.clone(),
            checkpointer: self.checkpointer.clone(),
            hooks: self.hooks.clone(),
            after_write: self.after_write.clone(),
            origin: self.origin.clone(),
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
                source: InvalidSchema::NotAnObject,
            });
        }
        if spec.reads_saved_output {
            self.saved_output_reader = Some(Arc::from(name.as_str()));
        }
        let validator = OnceLock::new();
        if check == SchemaCheck::Now {
            let compiled = SchemaValidator::new(&spec.input_schema).map_err(|source| {
                RegistryError::InvalidSchema {
                    name: name.clone(),
                    source,
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
        let mut cache = lock(&self.source_entries);
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
        let short = self.descriptions == crate::Descriptions::Short;
        let shorten = |spec: ToolSpec| if short { spec.shortened() } else { spec };
        let own = self.tools.values().map(|e| {
            // Shortened before a profile renames the arguments it keeps.
            let mut spec = shorten(
                e.tool
                    .current_spec()
                    .unwrap_or_else(|| e.tool.spec().clone()),
            );
            if self.profile.param_case(&spec.name) == ParamCase::Camel {
                camel_spec(&mut spec);
            }
            if self.profile.entries().len() > 0 {
                map_descriptions(&mut spec, &|text| exposed_mentions(text, &self.profile));
            }
            spec.name = self.profile.exposed(&spec.name).to_string();
            spec
        });
        // A source's tools keep their names: profiles rename built-in tools only.
        let sourced = self
            .source_tools()
            .into_iter()
            .map(|t| shorten(t.current_spec().unwrap_or_else(|| t.spec().clone())));
        own.chain(sourced).collect()
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

    /// The message for a call to `name`, a tool that is not registered: the
    /// closest names when some are close (`there is no tool named "gerp"; did you
    /// mean "grep"?`), else the three closest. The message of
    /// [`Registry::unknown_tool`]'s envelope.
    pub fn unknown_tool_message(&self, name: &str) -> String {
        self.did_you_mean(name, &self.names()).0
    }

    /// The envelope a call to `name`, a tool that is not registered, ends with:
    /// `UNKNOWN_TOOL`, [`Registry::unknown_tool_message`] as its message, the
    /// available tools in its hint, and `suggestions` and `available` in its data.
    pub fn unknown_tool(&self, name: &str) -> Envelope {
        let names = self.names();
        let (message, suggestions) = self.did_you_mean(name, &names);
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

    /// The unknown-tool message for `name` among `names`, and the names it offers.
    fn did_you_mean(&self, name: &str, names: &[String]) -> (String, Vec<String>) {
        let ranked = closest(name, names.iter().map(String::as_str), 3);
        let strong: Vec<String> = ranked
            .iter()
            .filter(|m| m.score >= STRONG_MATCH)
            .map(|m| m.name.to_string())
            .collect();
        let suggestions: Vec<String> = if strong.is_empty() {
            ranked.into_iter().map(|m| m.name.to_string()).collect()
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
        (message, suggestions)
    }
}

fn quote_list(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many tool names an unknown-tool hint lists.
const MAX_NAMES_IN_HINT: usize = 40;

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
