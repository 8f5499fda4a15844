//! [`McpServer`]: the registry behind rmcp's [`ServerHandler`], the tool list it
//! keeps, the client's roots it follows and the calls it runs.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use toolbelt_core::sync::{read, write};

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListToolsResult, PaginatedRequestParams,
    PromptsCapability, ResultType, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
    ToolsCapability,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use serde_json::{Value, json};
use toolbelt_core::output::OutputBudget;
use toolbelt_core::{CallOptions, Envelope, ErrorCode, ProgressSink, Registry, ToolCall};
use toolbelt_tools::Skills;
use toolbelt_wire::export::{self, Format};

use super::progress::ProgressForwarder;
use super::{
    LIST_POLL_INTERVAL, McpOptions, RegistryFactory, RootsError, SERVER_NAME, client_output_budget,
};

/// What `initialize` tells the client about this server.
const INSTRUCTIONS: &str = "toolbelt gives you typed, validated tools over the workspace \
roots: read, write and edit files, apply patches, list directories, glob and grep, plan with \
a todo list and think. Every result is a short text written for you; an error says what went \
wrong and what to do next. Paths are relative to the workspace root or absolute inside it. \
Large outputs are cut to a budget; the rest is saved and can be paged with read_output.";

/// The registry as an MCP server. Cheap to clone: every clone shares the registry,
/// the skills and the prepared tool list.
#[derive(Clone)]
pub struct McpServer {
    pub(super) served: Arc<RwLock<Served>>,
    listed: Arc<RwLock<Listed>>,
    rebuild: Option<RegistryFactory>,
    options: McpOptions,
    /// The calls the client's user allowed for the session (tool and subject).
    always: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// The other MCP servers, whose prompts are served beside the skills.
    upstreams: Option<Arc<toolbelt_upstream::Upstreams>>,
}

/// What answers now.
pub(super) struct Served {
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
        let listed = read(&self.listed);
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
    /// [`StructuredContent::Auto`](super::StructuredContent::Auto), each client's
    /// known output budget).
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
        write(&self.served).skills = Some(skills);
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
        read(&self.served)
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
            let listed = read(&self.listed);
            if listed.at == at {
                return pick(&listed);
            }
        }
        let listed = Listed::new(at, &registry);
        let tools = pick(&listed);
        *write(&self.listed) = listed;
        tools
    }

    /// Serves `registry` from now on, the skills following its roots, and lists
    /// its tools.
    fn replace(&self, registry: Registry) {
        let registry = Arc::new(registry);
        let revision = registry.revision();
        let mut listed = Listed::new((0, revision), &registry);
        let mut served = write(&self.served);
        served.skills = served
            .skills
            .as_ref()
            .map(|skills| skills.for_roots(registry.session().roots()));
        served.registry = registry;
        served.generation += 1;
        listed.at = (served.generation, revision);
        *write(&self.listed) = listed;
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
        let mut tools_seen = read(&self.listed).at;
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
                Err(e) => tracing::warn!(
                    "cannot use the client's roots: {}",
                    toolbelt_core::error_chain(&*e)
                ),
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
            // The registry's message names the closest tools.
            return Err(McpError::invalid_params(
                registry.unknown_tool_message(&name),
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
            origin: Some(call_origin(&context, registry.origin(), client.clone())),
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

/// The envelope as an MCP tool result, as the MCP export encodes it
/// ([`toolbelt_wire::calls::into_mcp_call_result`]): its text as text content, an
/// image as image content, `isError` for errors and, when `structured`, the whole
/// envelope as `structuredContent` (valid against the tool's `outputSchema`, the
/// image's bytes included).
pub(super) fn call_result(env: Envelope, structured: bool) -> CallToolResult {
    let encoded = toolbelt_wire::calls::into_mcp_call_result(env, structured);
    let mut result = match serde_json::from_value::<CallToolResult>(encoded) {
        Ok(result) => result,
        Err(e) => {
            // The encoder and rmcp's type describe the same shape; a mismatch is a
            // fault of ours, not the model's.
            tracing::error!("a tool result does not parse as an MCP result: {e}");
            CallToolResult::error(vec![ContentBlock::text(
                "the tool's result could not be encoded for MCP",
            )])
        }
    };
    // Required from 2026-07-28 on; rmcp strips it again for older peers.
    result.result_type = Some(ResultType::COMPLETE);
    result
}

/// Where a call comes from: `mcp-http` with its `Mcp-Session-Id` for a request
/// over HTTP (rmcp puts the request's parts in the context), else the registry's
/// origin (`mcp` when it names no front end); with the client's name.
fn call_origin(
    context: &RequestContext<RoleServer>,
    base: &toolbelt_core::Origin,
    client: Option<String>,
) -> toolbelt_core::Origin {
    let mut origin = toolbelt_core::Origin {
        client,
        ..base.clone()
    };
    if let Some(parts) = context.extensions.get::<axum::http::request::Parts>() {
        origin.front_end = "mcp-http".into();
        origin.session = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
    } else if origin.front_end.is_empty() {
        origin.front_end = "mcp".into();
    }
    origin
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
                    McpError::invalid_params(
                        toolbelt_core::error_chain(&e),
                        Some(json!({"prompt": request.name})),
                    )
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
        let listed = read(&self.listed);
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
