//! The registry served as an MCP server.
//!
//! [`McpServer`] implements rmcp's [`ServerHandler`] over a [`Registry`]: the
//! registry stays the one source of tools, validation, policy, limits and
//! logging; this module only translates. `tools/list` is built from the
//! registry's specs (names as the active profile exposes them) and built again
//! when [`Registry::revision`] changes (a skill added on disk changes `skill`'s
//! description); `tools/call` runs [`Registry::execute_call`] and answers with
//! the envelope. With [`McpServer::with_skills`], the skills are also served as
//! prompts. After the handshake, each connection checks both lists every
//! [`LIST_POLL_INTERVAL`] and tells the client when one changed
//! (`notifications/tools/list_changed`, `notifications/prompts/list_changed`).
//!
//! [`serve_stdio`] runs it over standard input and output, newline-delimited,
//! behind a line filter: a line that is not JSON, or is longer than
//! [`MAX_LINE_BYTES`], gets a JSON-RPC error answer and the server goes on.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, Prompt, PromptMessage,
    PromptsCapability, ProtocolVersion, ResultType, Role, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool, ToolsCapability,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleServer, ServerInitializeError,
    SubscriptionContext,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolbelt_core::output::OutputBudget;
use toolbelt_core::{CallOptions, Envelope, ErrorCode, ProgressSink, Registry, Status, ToolCall};
use toolbelt_tools::Skills;
use toolbelt_wire::export::{self, Format};

/// The name the server gives in `initialize`.
pub const SERVER_NAME: &str = "toolbelt";

/// The longest line accepted on stdio, in bytes; longer lines are discarded and
/// answered with an invalid-request error.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The deepest nesting of arrays and objects accepted in a message; deeper
/// messages are answered with an invalid-request error.
pub const MAX_JSON_DEPTH: usize = 100;

/// How often a connection checks whether its tools or prompts changed.
pub const LIST_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Capacity of the in-memory pipes between the line filter and the protocol
/// engine, in bytes.
const PIPE_BYTES: usize = 256 * 1024;

/// What `initialize` tells the client about this server.
const INSTRUCTIONS: &str = "toolbelt gives you typed, validated tools over the workspace \
roots: read, write and edit files, apply patches, list directories, glob and grep, plan with \
a todo list and think. Every result is a short text written for you; an error says what went \
wrong and what to do next. Paths are relative to the workspace root or absolute inside it. \
Large outputs are cut to a budget; the rest is saved and can be paged with read_output.";

/// Whether tool results carry the envelope as `structuredContent` (and
/// `tools/list` the tools' `outputSchema`), or only the text the model reads.
///
/// Agent clients differ in what they show the model: Claude Code and Codex give
/// it `structuredContent` serialised as JSON whenever a result has it, in place
/// of the text content, so the model would read the whole envelope (two to
/// eight times the text, newlines escaped) instead of the text written for it.
/// Clients that are programs or inspectors want the data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StructuredContent {
    /// Structured content for the clients known to use it as data rather than
    /// hand it to a model ([`client_wants_structured`]); the text alone for the rest.
    #[default]
    Auto,
    /// Structured content (and output schemas) for every client.
    Always,
    /// The text (and images) only, for every client.
    Never,
}

impl StructuredContent {
    /// The names accepted by [`StructuredContent::parse`].
    pub const NAMES: [&'static str; 3] = ["auto", "always", "never"];

    /// `auto`, `always` or `never`.
    pub fn parse(s: &str) -> Option<StructuredContent> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(StructuredContent::Auto),
            "always" => Some(StructuredContent::Always),
            "never" => Some(StructuredContent::Never),
            _ => None,
        }
    }

    /// Whether a client named `client` (its `clientInfo.name`; none when it gave
    /// none) gets structured content.
    pub fn for_client(self, client: Option<&str>) -> bool {
        match self {
            StructuredContent::Always => true,
            StructuredContent::Never => false,
            StructuredContent::Auto => client.is_some_and(client_wants_structured),
        }
    }
}

/// Clients that read `structuredContent` as data, by `clientInfo.name`: the MCP
/// Inspector (`inspector-cli`, `inspector-tui`, `mcp-inspector`) and the official
/// Python SDK's default name (programs, tests and agents that read the text
/// content). Every other client, the agent CLIs among
/// them, gets the text: for a client that shows the model `structuredContent`
/// when present, the text is only what the model reads when there is none.
pub fn client_wants_structured(client: &str) -> bool {
    let name = client.trim().to_ascii_lowercase();
    STRUCTURED_CLIENTS
        .iter()
        .any(|known| name == *known || name.starts_with(&format!("{known}-")))
}

/// How an MCP server shapes its results for its clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct McpOptions {
    /// Whether results carry `structuredContent` (see [`StructuredContent`]).
    pub structured_content: StructuredContent,
    /// The text of every result is held to this many bytes (none: the client's
    /// known cut, [`client_output_budget`], else the session's budget).
    pub output_budget: Option<usize>,
}

/// See [`client_wants_structured`].
const STRUCTURED_CLIENTS: [&str; 3] = ["mcp", "mcp-inspector", "inspector"];

/// The output budget of an MCP client that cuts long tool results, by
/// `clientInfo.name`, in bytes: under the client's own cut, so that what toolbelt
/// pages (read_file, read_output, bash) is never cut in the middle by the client
/// while toolbelt's footer says it was shown. `None`: the session's budget.
pub fn client_output_budget(client: &str) -> Option<usize> {
    let name = client.trim().to_ascii_lowercase();
    CLIENT_BUDGETS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|&(_, bytes)| bytes)
}

/// See [`client_output_budget`]. Codex keeps at most 12,000 bytes of a tool
/// result's text for a model it does not know (a local one, say; 10,000 bytes
/// and a fifth), cutting out the middle; 8,000 leaves room for its own header and
/// for a result's image.
const CLIENT_BUDGETS: [(&str, usize); 1] = [("codex", CODEX_OUTPUT_BYTES)];

/// The budget for Codex, below its 12,000-byte cut of a tool result.
pub const CODEX_OUTPUT_BYTES: usize = 8_000;

/// JSON-RPC's code for input that is not JSON.
const PARSE_ERROR_CODE: i64 = -32700;
/// JSON-RPC's code for a message that is not a valid request.
const INVALID_REQUEST_CODE: i64 = -32600;

/// Errors that stop an MCP server on a stream (standard input and output, or
/// the pipes given to [`serve_lines`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The client did not complete the MCP handshake.
    #[error("the MCP handshake failed: {0}")]
    Initialize(Box<ServerInitializeError>),
    /// The connection's task ended abnormally.
    #[error("the MCP connection task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// Reading from or writing to the client failed.
    #[error("cannot talk to the MCP client: {0}")]
    Io(#[from] std::io::Error),
}

impl From<ServerInitializeError> for McpServeError {
    fn from(e: ServerInitializeError) -> McpServeError {
        McpServeError::Initialize(Box::new(e))
    }
}

/// Why a registry could not be built for the roots a client announced: any
/// error (a `String` will do), for the log.
pub type RootsError = Box<dyn std::error::Error + Send + Sync>;

/// Builds a registry for the workspace roots a client announced.
pub type RegistryFactory = Arc<dyn Fn(Vec<PathBuf>) -> Result<Registry, RootsError> + Send + Sync>;

/// The registry as an MCP server. Cheap to clone: every clone shares the registry,
/// the skills and the prepared tool list.
#[derive(Clone)]
pub struct McpServer {
    served: Arc<RwLock<Served>>,
    listed: Arc<RwLock<Listed>>,
    rebuild: Option<RegistryFactory>,
    options: McpOptions,
    /// The calls the client's user allowed for the session (tool and subject).
    always: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// The other MCP servers, whose prompts are served beside the skills.
    upstreams: Option<Arc<toolbelt_upstream::Upstreams>>,
}

/// What answers now.
struct Served {
    registry: Arc<Registry>,
    /// The skills served as prompts, of the registry's roots.
    skills: Option<Skills>,
    /// Bumped whenever the registry is replaced.
    generation: u64,
}

/// The tools as `tools/list` shows them, and the generation and registry
/// revision they were built at.
struct Listed {
    at: (u64, u64),
    tools: Arc<Vec<Tool>>,
    /// The same tools without `outputSchema`, for clients that get no structured
    /// content (a declared output schema obliges the server to send it).
    plain: Arc<Vec<Tool>>,
}

impl Listed {
    fn new(at: (u64, u64), registry: &Registry) -> Listed {
        let tools = mcp_tools(registry);
        let plain = tools
            .iter()
            .cloned()
            .map(|mut tool| {
                tool.output_schema = None;
                tool
            })
            .collect();
        Listed {
            at,
            tools: Arc::new(tools),
            plain: Arc::new(plain),
        }
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let listed = self.listed.read().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("McpServer")
            .field("tools", &listed.tools.len())
            .field("follows_client_roots", &self.rebuild.is_some())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for every tool of `registry`, named as its profile exposes them.
    pub fn new(registry: Arc<Registry>) -> McpServer {
        let listed = Listed::new((0, registry.revision()), &registry);
        McpServer {
            served: Arc::new(RwLock::new(Served {
                registry,
                skills: None,
                generation: 0,
            })),
            listed: Arc::new(RwLock::new(listed)),
            rebuild: None,
            options: McpOptions::default(),
            always: Arc::default(),
            upstreams: None,
        }
    }

    /// Serves the prompts of the other MCP servers too (their tools come with the
    /// registry), named `SERVER__prompt`.
    pub fn with_upstreams(mut self, upstreams: Arc<toolbelt_upstream::Upstreams>) -> McpServer {
        self.upstreams = (!upstreams.is_empty()).then_some(upstreams);
        self
    }

    /// Shapes results as `options` say (default: structured content
    /// [`StructuredContent::Auto`], each client's known output budget).
    pub fn with_options(mut self, options: McpOptions) -> McpServer {
        self.options = options;
        self
    }

    /// Whether `client` (its `clientInfo.name`) gets structured content.
    fn structured_for(&self, client: Option<&str>) -> bool {
        self.options.structured_content.for_client(client)
    }

    /// The output budget of a call from `client`: the configured one, else the
    /// client's known cut, else none (the session's).
    fn budget_for(&self, client: Option<&str>) -> Option<OutputBudget> {
        let bytes = self
            .options
            .output_budget
            .or_else(|| client.and_then(client_output_budget))?;
        Some(OutputBudget::with_max_bytes(bytes))
    }

    /// Serves `skills` as MCP prompts too: `prompts/list` gives each skill (its
    /// name and description), `prompts/get` its instructions as one user message.
    /// When the registry follows the client's roots ([`McpServer::with_client_roots`]),
    /// the skills follow them too ([`Skills::for_roots`]).
    pub fn with_skills(self, skills: Skills) -> McpServer {
        self.served
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .skills = Some(skills);
        self
    }

    /// Makes the client's roots the workspace roots: after the handshake, and
    /// on every `notifications/roots/list_changed`, the server asks the client
    /// for its roots and replaces the registry with `rebuild(roots)`. Until
    /// then, and when the client has no usable `file://` root, the registry
    /// given to [`McpServer::new`] serves.
    pub fn with_client_roots<F>(mut self, rebuild: F) -> McpServer
    where
        F: Fn(Vec<PathBuf>) -> Result<Registry, RootsError> + Send + Sync + 'static,
    {
        self.rebuild = Some(Arc::new(rebuild));
        self
    }

    /// The registry that answers calls now.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.served().registry)
    }

    /// The skills served as prompts now, if any.
    pub fn skills(&self) -> Option<Skills> {
        self.served().skills.clone()
    }

    fn served(&self) -> std::sync::RwLockReadGuard<'_, Served> {
        self.served.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tools as `tools/list` shows them now: built again when the registry
    /// was replaced or its [revision](Registry::revision) changed.
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        self.listing(true)
    }

    /// The tools, with output schemas when `structured`, built again when needed.
    fn listing(&self, structured: bool) -> Arc<Vec<Tool>> {
        let pick = |listed: &Listed| {
            Arc::clone(if structured {
                &listed.tools
            } else {
                &listed.plain
            })
        };
        let (registry, generation) = {
            let served = self.served();
            (Arc::clone(&served.registry), served.generation)
        };
        let at = (generation, registry.revision());
        {
            let listed = self.listed.read().unwrap_or_else(PoisonError::into_inner);
            if listed.at == at {
                return pick(&listed);
            }
        }
        let listed = Listed::new(at, &registry);
        let tools = pick(&listed);
        *self.listed.write().unwrap_or_else(PoisonError::into_inner) = listed;
        tools
    }

    /// Serves `registry` from now on, the skills following its roots, and lists
    /// its tools.
    fn replace(&self, registry: Registry) {
        let registry = Arc::new(registry);
        let revision = registry.revision();
        let mut listed = Listed::new((0, revision), &registry);
        let mut served = self.served.write().unwrap_or_else(PoisonError::into_inner);
        served.skills = served
            .skills
            .as_ref()
            .map(|skills| skills.for_roots(registry.session().roots()));
        served.registry = registry;
        served.generation += 1;
        listed.at = (served.generation, revision);
        *self.listed.write().unwrap_or_else(PoisonError::into_inner) = listed;
    }

    /// What the tool list and the prompt list are made of now (the registry's
    /// generation and the revision of its tools, of the skills): a change means
    /// the list changed.
    fn list_states(&self) -> ((u64, u64), (u64, u64)) {
        let (registry, skills, generation) = {
            let served = self.served();
            (
                Arc::clone(&served.registry),
                served.skills.clone(),
                served.generation,
            )
        };
        let prompts = skills.map_or(0, |s| s.revision());
        ((generation, registry.revision()), (generation, prompts))
    }

    /// Checks, every [`LIST_POLL_INTERVAL`] until the connection ends, whether
    /// the tools or the prompts changed, and tells the client.
    fn watch_lists(&self, peer: Peer<RoleServer>) {
        let server = self.clone();
        let prompts_served = self.served().skills.is_some();
        // The tools as last listed (a client that listed them before now has seen
        // those), the prompts as they are now.
        let mut tools_seen = self
            .listed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .at;
        let (_, mut prompts_seen) = self.list_states();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(LIST_POLL_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick completes at once.
            tick.tick().await;
            loop {
                tick.tick().await;
                if peer.is_transport_closed() {
                    return;
                }
                let (tools_now, prompts_now) = server.list_states();
                if tools_now != tools_seen {
                    tools_seen = tools_now;
                    if let Err(e) = peer.notify_tool_list_changed().await {
                        tracing::debug!("cannot tell the client the tools changed: {e}");
                    }
                }
                if prompts_served && prompts_now != prompts_seen {
                    prompts_seen = prompts_now;
                    if let Err(e) = peer.notify_prompt_list_changed().await {
                        tracing::debug!("cannot tell the client the prompts changed: {e}");
                    }
                }
            }
        });
    }

    /// The skills as prompts.
    fn prompts(&self) -> Vec<Prompt> {
        let Some(skills) = self.skills() else {
            return Vec::new();
        };
        skills
            .scan()
            .skills
            .into_iter()
            .map(|skill| Prompt::new(skill.name, Some(skill.description), None))
            .collect()
    }

    /// One skill as a prompt: its instructions as a user message.
    fn prompt(&self, name: &str) -> Result<GetPromptResult, McpError> {
        let Some(skills) = self.skills() else {
            return Err(McpError::invalid_params(
                format!("there is no prompt named {name:?}: this server has no prompts"),
                None,
            ));
        };
        let skill = skills.get(name).map_err(|unknown| {
            // The prompts are the skills: the message names them so.
            McpError::invalid_params(
                unknown.to_string(),
                Some(json!({"prompt": name, "closest": unknown.closest, "available": unknown.available})),
            )
        })?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            skill.instructions(),
        )])
        .with_description(skill.description))
    }

    /// Asks the client for its roots and rebuilds the registry on them, in the
    /// background (the answer arrives through the same connection).
    #[allow(
        deprecated,
        reason = "roots are deprecated in the newest protocol revision but still what clients send"
    )]
    fn follow_roots(&self, peer: Peer<RoleServer>) {
        let Some(rebuild) = self.rebuild.clone() else {
            return;
        };
        let has_roots = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some());
        if !has_roots {
            return;
        }
        let server = self.clone();
        tokio::spawn(async move {
            let roots = match peer.list_roots().await {
                Ok(result) => result.roots,
                Err(e) => {
                    tracing::warn!("cannot list the client's roots: {e}");
                    return;
                }
            };
            let dirs: Vec<PathBuf> = roots
                .iter()
                .filter_map(|root| root_dir(&root.uri))
                .collect();
            if dirs.is_empty() {
                tracing::warn!(
                    "the client gave no local directory as a root; keeping the workspace"
                );
                return;
            }
            match rebuild(dirs) {
                Ok(registry) => server.replace(registry),
                Err(e) => tracing::warn!("cannot use the client's roots: {e}"),
            }
        });
    }

    /// Runs one `tools/call`.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if let Some(upstreams) = &self.upstreams {
            upstreams.started().await;
        }
        let registry = self.registry();
        if !registry.has(&name) {
            // The registry's answer names the closest tools.
            let env = registry
                .execute_call(
                    ToolCall::new(name.clone(), json!({})),
                    CallOptions::default(),
                )
                .await;
            let message = env.error.as_ref().map_or_else(
                || format!("there is no tool named {name:?}"),
                |e| e.message.clone(),
            );
            return Err(McpError::invalid_params(
                message,
                Some(json!({"tool": name})),
            ));
        }
        let arguments = request.arguments.map_or_else(|| json!({}), Value::Object);
        let client = client_name(&context);
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| ProgressForwarder::start(context.peer.clone(), token));
        // The client's user answers `ask` rules and `ask_user`, when the client
        // takes elicitation requests.
        let channel = crate::elicit::supports_elicitation(&context).then(|| {
            crate::elicit::Channel::for_call(
                &context,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
            )
        });
        let (approver, asker) = match &channel {
            Some(channel) => (
                Some(Arc::new(crate::elicit::ElicitApprover::new(
                    channel.clone(),
                    Arc::clone(&self.always),
                )) as Arc<dyn toolbelt_core::Approver>),
                Some(Arc::new(crate::elicit::ElicitAsker::new(channel.clone()))
                    as Arc<dyn toolbelt_core::Asker>),
            ),
            None => (None, None),
        };
        let opts = CallOptions {
            cancel: Some(context.ct.clone()),
            timeout: None,
            progress: progress
                .as_ref()
                .map(|p| Arc::clone(&p.sink) as Arc<dyn ProgressSink>),
            budget: self.budget_for(client.as_deref()),
            approver,
            asker,
            put_off: channel.as_ref().and_then(crate::elicit::Channel::put_off),
        };
        let structured = self.structured_for(client.as_deref());
        let env = registry
            .execute_call(ToolCall::new(name, arguments), opts)
            .await;
        if let Some(progress) = progress {
            progress.finish().await;
        }
        // The call stopped for the person's answer: the client asks them and calls
        // again (nothing ran yet: approval comes before the tool, and ask_user
        // changes nothing).
        if let Some(input) = channel
            .as_ref()
            .and_then(crate::elicit::Channel::input_required)
        {
            return Ok(CallToolResponse::from(input));
        }
        if env.error_code() == Some(ErrorCode::UnknownTool) {
            let message = env
                .error
                .as_ref()
                .map_or_else(String::new, |e| e.message.clone());
            return Err(McpError::invalid_params(message, None));
        }
        Ok(CallToolResponse::from(call_result(env, structured)))
    }
}

/// The envelope as an MCP tool result: its text as text content, an image as
/// image content, `isError` for errors and, when `structured`, the whole
/// envelope as `structuredContent` (valid against the tool's `outputSchema`, the
/// image's bytes included). The same shape as
/// [`toolbelt_wire::calls::to_mcp_call_result`], built without a round trip
/// through JSON values.
fn call_result(mut env: Envelope, structured: bool) -> CallToolResult {
    let structured_content = structured.then(|| env.to_value());
    let mut content = vec![ContentBlock::text(std::mem::take(&mut env.text))];
    if let Some((mime, data)) = toolbelt_wire::calls::image_of(&env) {
        content.push(ContentBlock::image(data.to_owned(), mime.to_owned()));
    }
    let mut result = if env.status == Status::Error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = structured_content;
    // Required from 2026-07-28 on; rmcp strips it again for older peers.
    result.result_type = Some(ResultType::COMPLETE);
    result
}

/// The client's `clientInfo.name`: from the request's `_meta` (2026-07-28, no
/// handshake), else from the handshake.
fn client_name(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .meta
        .client_info()
        .map(|info| info.name)
        .or_else(|| {
            context
                .peer
                .peer_info()
                .map(|info| info.client_info.name.clone())
        })
}

/// The local directory a `file://` root URI names, when it is one.
fn root_dir(uri: &str) -> Option<PathBuf> {
    let path = url::Url::parse(uri).ok()?.to_file_path().ok()?;
    if path.is_dir() {
        Some(path)
    } else {
        tracing::warn!("the client's root {uri} is not a local directory; left out");
        None
    }
}

/// The registry's specs as MCP tools, through the MCP export.
fn mcp_tools(registry: &Registry) -> Vec<Tool> {
    let specs = registry.definitions();
    let exported = match export::export(&specs, Format::Mcp) {
        Value::Array(tools) => tools,
        _ => Vec::new(),
    };
    exported
        .into_iter()
        .filter_map(|tool| match serde_json::from_value::<Tool>(tool) {
            Ok(tool) => Some(tool),
            Err(e) => {
                tracing::error!("a tool's MCP definition does not parse, left out: {e}");
                None
            }
        })
        .collect()
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(true);
        let mut capabilities = ServerCapabilities::default();
        capabilities.tools = Some(tools);
        if self.served().skills.is_some() || self.upstreams.is_some() {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
                    .with_title("toolbelt")
                    .with_description("Typed, validated, jailed tools for LLM agents."),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // The other servers' tools are known once they have started.
        if let Some(upstreams) = &self.upstreams {
            upstreams.started().await;
        }
        let structured = self.structured_for(client_name(&context).as_deref());
        Ok(ListToolsResult::with_all_items(
            self.listing(structured).to_vec(),
        ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut prompts = self.prompts();
        if let Some(upstreams) = &self.upstreams {
            prompts.extend(upstreams.prompts().await);
        }
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if let Some(upstreams) = &self.upstreams
            && upstreams.owns_prompt(&request.name)
        {
            return upstreams
                .get_prompt(&request.name, request.arguments)
                .await
                .map(GetPromptResponse::from)
                .map_err(|e| {
                    McpError::invalid_params(e.to_string(), Some(json!({"prompt": request.name})))
                });
        }
        self.prompt(&request.name).map(GetPromptResponse::from)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.watch_lists(context.peer.clone());
        self.follow_roots(context.peer);
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.follow_roots(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The lists this server tells about; rmcp keeps of them what the client
        // asked for and what `get_info` advertises (prompts only with skills).
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = Some(true);
        accepted.prompts_list_changed = Some(true);
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        // From 2026-07-28 on, list changes travel on the client's
        // `subscriptions/listen` stream: checked as often as for older clients.
        let sink = subscription.sink().clone();
        let (mut tools_seen, mut prompts_seen) = self.list_states();
        let mut tick = tokio::time::interval(LIST_POLL_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                _ = tick.tick() => {}
            }
            let (tools_now, prompts_now) = self.list_states();
            if tools_now != tools_seen {
                tools_seen = tools_now;
                if sink.accepted().tools_list_changed == Some(true)
                    && let Err(e) = sink.notify_tool_list_changed().await
                {
                    tracing::debug!("cannot tell the subscriber the tools changed: {e}");
                }
            }
            if prompts_now != prompts_seen {
                prompts_seen = prompts_now;
                if sink.accepted().prompts_list_changed == Some(true)
                    && let Err(e) = sink.notify_prompt_list_changed().await
                {
                    tracing::debug!("cannot tell the subscriber the prompts changed: {e}");
                }
            }
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Asked for input schemas, which never change while a registry serves: the
        // list as last built will do, without looking at the disk.
        let listed = self.listed.read().unwrap_or_else(PoisonError::into_inner);
        listed.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context).await
    }
}

/// One progress report on its way to the client.
type Report = (f64, Option<f64>, Option<String>);

/// A [`ProgressSink`] that queues reports for [`ProgressForwarder`].
struct ChannelSink {
    tx: mpsc::UnboundedSender<Report>,
}

impl ProgressSink for ChannelSink {
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        // A closed channel means the call already answered; late reports are dropped.
        let _ = self.tx.send((progress, total, message.map(str::to_owned)));
    }
}

/// Sends a call's progress reports, in order, as `notifications/progress`.
struct ProgressForwarder {
    sink: Arc<ChannelSink>,
    done: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressForwarder {
    fn start(peer: Peer<RoleServer>, token: ProgressToken) -> ProgressForwarder {
        let (tx, mut rx) = mpsc::unbounded_channel::<Report>();
        let done = CancellationToken::new();
        let finished = done.clone();
        let task = tokio::spawn(async move {
            let send = |(progress, total, message): Report| {
                let mut param = ProgressNotificationParam::new(token.clone(), progress);
                param.total = total;
                param.message = message;
                let peer = peer.clone();
                async move {
                    if let Err(e) = peer.notify_progress(param).await {
                        tracing::debug!("cannot send a progress notification: {e}");
                    }
                }
            };
            loop {
                tokio::select! {
                    biased;
                    report = rx.recv() => match report {
                        Some(report) => send(report).await,
                        None => return,
                    },
                    () = finished.cancelled() => break,
                }
            }
            // The call is over: send what is queued, so that every notification
            // precedes the result.
            rx.close();
            while let Some(report) = rx.recv().await {
                send(report).await;
            }
        });
        ProgressForwarder {
            sink: Arc::new(ChannelSink { tx }),
            done,
            task,
        }
    }

    /// Waits until every queued report is sent.
    async fn finish(self) {
        self.done.cancel();
        drop(self.sink);
        if let Err(e) = self.task.await {
            tracing::debug!("the progress task failed: {e}");
        }
    }
}

/// Serves `registry` over MCP on standard input and output until the client
/// closes standard input. Standard output carries MCP messages only.
///
/// # Errors
///
/// [`McpServeError`] when the handshake fails or the pipes break.
pub async fn serve_stdio(registry: Arc<Registry>) -> Result<(), McpServeError> {
    serve(McpServer::new(registry)).await
}

/// Serves `server` on standard input and output, as [`serve_stdio`].
///
/// # Errors
///
/// [`McpServeError`] when the handshake fails or the pipes break.
pub async fn serve(server: McpServer) -> Result<(), McpServeError> {
    serve_lines(server, crate::stdio::input(), crate::stdio::output()).await
}

/// Serves `server` over newline-delimited JSON-RPC on `input` and `output`.
///
/// Each line is checked before it reaches the protocol engine: a line that is
/// not JSON is answered with a parse error (-32700), a line longer than
/// [`MAX_LINE_BYTES`] with an invalid-request error (-32600); the server goes on.
///
/// # Errors
///
/// [`McpServeError`] when the handshake fails or the pipes break.
pub async fn serve_lines<R, W>(server: McpServer, input: R, output: W) -> Result<(), McpServeError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (engine_in, filter_out) = tokio::io::duplex(PIPE_BYTES);
    let (engine_out, writer_in) = tokio::io::duplex(PIPE_BYTES);
    let (errors_tx, errors_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let reader = tokio::spawn(filter_lines(input, filter_out, errors_tx));
    let writer = tokio::spawn(write_lines(writer_in, errors_rx, output));
    let (engine_read, engine_write) = tokio::io::split(engine_in);
    let (out_read, out_write) = tokio::io::split(engine_out);
    drop(out_read);
    drop(engine_write);
    let served = async {
        let running = server.serve((engine_read, out_write)).await?;
        running.waiting().await?;
        Ok::<(), McpServeError>(())
    }
    .await;
    reader.abort();
    let written = writer.await;
    served?;
    written??;
    Ok(())
}

/// Copies whole, well-formed lines from `input` to `engine`; answers the others
/// through `errors`.
async fn filter_lines<R, E>(
    input: R,
    mut engine: E,
    errors: mpsc::UnboundedSender<Vec<u8>>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    E: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line: Vec<u8> = Vec::new();
    let mut oversized = false;
    let mut handshake = Handshake::default();
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            break;
        }
        let (part, has_end) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        if !oversized {
            if line.len() + part.len() > MAX_LINE_BYTES {
                oversized = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(part);
            }
        }
        let used = part.len() + usize::from(has_end);
        input.consume(used);
        if !has_end {
            continue;
        }
        if oversized {
            let _ = errors.send(error_line(
                INVALID_REQUEST_CODE,
                &format!("the message is longer than {MAX_LINE_BYTES} bytes and was discarded"),
            ));
        } else {
            check_and_forward(&line, &mut engine, &errors, &mut handshake).await?;
        }
        oversized = false;
        line.clear();
    }
    if !oversized && !line.is_empty() {
        check_and_forward(&line, &mut engine, &errors, &mut handshake).await?;
    }
    engine.shutdown().await
}

async fn check_and_forward<E: AsyncWrite + Unpin>(
    line: &[u8],
    engine: &mut E,
    errors: &mpsc::UnboundedSender<Vec<u8>>,
    handshake: &mut Handshake,
) -> std::io::Result<()> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    if let Some(depth) = too_deep(line) {
        let _ = errors.send(error_line(
            INVALID_REQUEST_CODE,
            &format!(
                "the message is nested deeper than {MAX_JSON_DEPTH} levels (at least {depth})"
            ),
        ));
        return Ok(());
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        Ok(_) => match handshake.admit(line) {
            Admit::Forward => {
                engine.write_all(line).await?;
                engine.write_all(b"\n").await?;
                engine.flush().await
            }
            Admit::Drop => Ok(()),
            Admit::Answer(answer) => {
                let _ = errors.send(answer);
                Ok(())
            }
        },
        Err(e) => {
            let _ = errors.send(error_line(
                PARSE_ERROR_CODE,
                &format!("the message is not valid JSON: {e}"),
            ));
            Ok(())
        }
    }
}

/// Whether the protocol engine has chosen the session's lifecycle: an `initialize`
/// request (2025-11-25 and before), or a request carrying the protocol version and
/// client capabilities in its `_meta` (2026-07-28). Until then the engine ends the
/// session on any notification or response, so the filter holds those back.
#[derive(Default)]
struct Handshake {
    chosen: bool,
}

/// What becomes of a message before the lifecycle is chosen.
enum Admit {
    /// On to the engine.
    Forward,
    /// Dropped (logged).
    Drop,
    /// Answered by the filter with this line.
    Answer(Vec<u8>),
}

/// The parts of a JSON-RPC message that tell its kind.
#[derive(Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<Value>,
    result: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
    params: Option<PeekParams>,
}

#[derive(Deserialize)]
struct PeekParams {
    #[serde(rename = "_meta")]
    meta: Option<PeekMeta>,
}

#[derive(Deserialize)]
struct PeekMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<String>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: Option<serde::de::IgnoredAny>,
}

impl Handshake {
    /// What becomes of `line`, valid JSON; notes when it chooses the lifecycle.
    /// Messages that are not JSON-RPC go on: the engine answers them.
    fn admit(&mut self, line: &[u8]) -> Admit {
        if self.chosen {
            return Admit::Forward;
        }
        let Ok(peek) = serde_json::from_slice::<Peek>(line) else {
            return Admit::Forward;
        };
        match (&peek.method, &peek.id) {
            (Some(method), Some(id)) => {
                let meta = peek.params.and_then(|p| p.meta);
                let names_version = meta.as_ref().is_some_and(|m| m.version.is_some());
                let inline = meta.is_some_and(|m| {
                    m.capabilities.is_some()
                        && m.version.is_some_and(|v| {
                            ProtocolVersion::KNOWN_VERSIONS
                                .iter()
                                .any(|k| k.as_str() == v)
                        })
                });
                let bootstrap =
                    matches!(method.as_str(), "initialize" | "ping" | "server/discover");
                if method == "initialize" || (inline && !bootstrap) {
                    self.chosen = true;
                }
                if bootstrap || names_version {
                    // The engine answers what is missing from a 2026-07-28 request.
                    return Admit::Forward;
                }
                Admit::Answer(error_answer(
                    id,
                    INVALID_REQUEST_CODE,
                    &format!(
                        "{method:?} came before the session was initialized: send `initialize` \
                         first (protocol 2025-11-25 and earlier), or, on protocol 2026-07-28, \
                         put io.modelcontextprotocol/protocolVersion and \
                         io.modelcontextprotocol/clientCapabilities in the request's `_meta`"
                    ),
                ))
            }
            (Some(method), None) => {
                tracing::warn!("the notification {method:?} came before initialize; dropped");
                Admit::Drop
            }
            (None, Some(_)) if peek.result.is_some() || peek.error.is_some() => {
                tracing::warn!("a response came before initialize; dropped");
                Admit::Drop
            }
            _ => Admit::Forward,
        }
    }
}

/// The nesting depth reached when it exceeds [`MAX_JSON_DEPTH`], brackets
/// inside strings aside.
fn too_deep(line: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in line {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Some(depth);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A JSON-RPC error response to request `id`, as one line.
fn error_answer(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// A JSON-RPC error response without an id, as one line.
fn error_line(code: i64, message: &str) -> Vec<u8> {
    error_answer(&Value::Null, code, message)
}

/// Writes the engine's lines and the filter's error answers to `output`, one
/// whole line at a time.
async fn write_lines<R, W>(
    engine: R,
    mut errors: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut engine = BufReader::with_capacity(64 * 1024, engine);
    let mut line = Vec::new();
    let mut errors_open = true;
    loop {
        tokio::select! {
            read = engine.read_until(b'\n', &mut line) => {
                if read? == 0 {
                    break;
                }
                output.write_all(&line).await?;
                output.flush().await?;
                line.clear();
            }
            error = errors.recv(), if errors_open => match error {
                Some(error) => {
                    output.write_all(&error).await?;
                    output.flush().await?;
                }
                None => errors_open = false,
            },
        }
    }
    output.flush().await
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
