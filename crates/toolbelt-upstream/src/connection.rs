//! One server: starting it, listing its tools, noticing when it stops, and
//! starting it again after a backoff.

mod remote;

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use toolbelt_core::sync::{lock, read, write};
use toolbelt_core::{ErrorCode, Tool as _, ToolError, error_chain};

use crate::config::{ServerSpec, Startup, Transport};
use remote::RemoteTool;

/// Lines of a stdio server's stderr kept for messages.
const STDERR_TAIL_LINES: usize = 20;

/// How long the last lines of a server that ended at start are waited for.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// The first wait before a stopped server is started again; it doubles with each
/// failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait before a stopped server is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Not started yet (a lazy server before its first call).
    NotStarted,
    /// Starting.
    Starting,
    /// Running, with this many tools offered.
    Running {
        /// Tools offered (after `tools` and `disable`).
        tools: usize,
    },
    /// Stopped or failed to start; started again on a call after `retry_in`.
    Failed {
        /// What happened.
        reason: String,
        /// How long until the next start may be tried.
        retry_in: Duration,
    },
}

/// A server's name, how it is reached, and where it is.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// How it is reached (`stdio: npx -y ...` or `http: https://...`).
    pub transport: String,
    /// Where it was configured.
    pub origin: String,
    /// Where it is.
    pub state: ServerState,
}

/// A running connection.
pub(crate) struct Live {
    peer: Peer<RoleClient>,
    /// Ends the connection when dropped.
    _stop: tokio_util::sync::DropGuard,
    /// The process group of a stdio server (it leads it): asked to stop when the
    /// connection is dropped, so that what it started (`npx` starts `node`) stops too.
    group: Option<nix::unistd::Pid>,
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
        }
    }
}

enum State {
    Idle,
    Live(Arc<Live>),
    Failed {
        reason: String,
        until: Instant,
        failures: u32,
    },
}

/// One configured server and its tools.
pub(crate) struct Server {
    pub(crate) spec: ServerSpec,
    /// `NAME` and the separator: what its tools' names start with.
    prefix: String,
    cache: Option<PathBuf>,
    /// Connecting is one at a time.
    state: tokio::sync::Mutex<State>,
    /// What [`Server::status`] reports without waiting on `state`.
    shown: Mutex<ServerState>,
    /// The tools offered, by their registry names.
    tools: RwLock<Arc<BTreeMap<String, Arc<RemoteTool>>>>,
    revision: AtomicU64,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Itself, for the tools and the notification handler.
    me: Weak<Server>,
}

impl Server {
    pub(crate) fn new(spec: ServerSpec, separator: &str, cache: Option<PathBuf>) -> Arc<Server> {
        Arc::new_cyclic(|me| Server {
            prefix: format!("{}{separator}", spec.name),
            spec,
            cache,
            state: tokio::sync::Mutex::new(State::Idle),
            shown: Mutex::new(ServerState::NotStarted),
            tools: RwLock::new(Arc::new(BTreeMap::new())),
            revision: AtomicU64::new(0),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            me: me.clone(),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    pub(crate) fn tools(&self) -> Arc<BTreeMap<String, Arc<RemoteTool>>> {
        Arc::clone(&read(&self.tools))
    }

    pub(crate) fn revision(&self) -> u64 {
        self.revision.load(Ordering::Relaxed)
    }

    pub(crate) fn status(&self) -> ServerStatus {
        ServerStatus {
            name: self.spec.name.clone(),
            transport: self.spec.transport.describe(),
            origin: self.spec.origin.clone(),
            state: lock(&self.shown).clone(),
        }
    }

    fn show(&self, state: ServerState) {
        *lock(&self.shown) = state;
    }

    /// At start: an eager server is connected (within its startup timeout); a lazy
    /// one offers the tools listed when it last ran, or is connected when there is
    /// no such list.
    pub(crate) async fn start(&self) {
        if self.spec.startup == Startup::Lazy && self.load_cache() {
            return;
        }
        if let Err(e) = self.live().await {
            tracing::warn!(target: "toolbelt::upstream", "{}", e.message);
        }
    }

    /// The running connection: started now when there is none (and the backoff of
    /// an earlier failure has passed).
    ///
    /// # Errors
    /// `UNAVAILABLE`, naming the server and why.
    pub(crate) async fn live(&self) -> Result<Arc<Live>, ToolError> {
        let mut state = self.state.lock().await;
        let failures = match &*state {
            State::Live(live) if !live.peer.is_transport_closed() => return Ok(Arc::clone(live)),
            State::Live(_) | State::Idle => 0,
            State::Failed {
                reason,
                until,
                failures,
            } => {
                let now = Instant::now();
                if now < *until {
                    let wait = until.duration_since(now);
                    return Err(unavailable(
                        &self.spec.name,
                        &format!(
                            "{reason}; it is started again in {} s",
                            wait.as_secs().max(1)
                        ),
                    ));
                }
                *failures
            }
        };
        self.show(ServerState::Starting);
        match tokio::time::timeout(self.spec.startup_timeout, self.connect()).await {
            Ok(Ok(live)) => {
                *state = State::Live(Arc::clone(&live));
                Ok(live)
            }
            Ok(Err(reason)) => Err(self.fail(&mut state, failures, error_chain(&reason))),
            Err(_) => {
                let reason = format!(
                    "it did not start within {} s (startup_timeout)",
                    self.spec.startup_timeout.as_secs_f64()
                );
                Err(self.fail(&mut state, failures, reason))
            }
        }
    }

    fn fail(&self, state: &mut State, failures: u32, reason: String) -> ToolError {
        let failures = failures.saturating_add(1);
        let backoff = backoff(failures);
        let reason = self.with_stderr(reason);
        self.show(ServerState::Failed {
            reason: reason.clone(),
            retry_in: backoff,
        });
        let error = unavailable(&self.spec.name, &reason);
        *state = State::Failed {
            reason,
            until: Instant::now() + backoff,
            failures,
        };
        error
    }

    /// The connection stopped under a call: it is started again on a later call.
    pub(crate) async fn lost(&self, live: &Arc<Live>, what: &str) -> ToolError {
        let mut state = self.state.lock().await;
        if matches!(&*state, State::Live(current) if Arc::ptr_eq(current, live)) {
            return self.fail(&mut state, 0, what.to_string());
        }
        unavailable(&self.spec.name, &self.with_stderr(what.to_string()))
    }

    /// `reason`, with the last lines the server wrote to stderr.
    fn with_stderr(&self, reason: String) -> String {
        let tail = lock(&self.stderr);
        if tail.is_empty() {
            return reason;
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("{reason}; its stderr ends with:\n{}", lines.join("\n"))
    }

    async fn connect(&self) -> Result<Arc<Live>, StartError> {
        let stop = tokio_util::sync::CancellationToken::new();
        let handler = Handler {
            server: self.me.clone(),
        };
        let mut group = None;
        let service: RunningService<RoleClient, Handler> = match &self.spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args);
                // A toolbelt started as a server here starts no servers of its own:
                // a configuration that names itself would start toolbelts forever.
                cmd.env(crate::NESTED_VAR, &self.spec.name);
                for (key, value) in env {
                    cmd.env(key, value.expose());
                }
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
                wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
                wrap.wrap(process_wrap::tokio::KillOnDrop);
                let (child, stderr) = TokioChildProcess::builder(wrap)
                    .stderr(Stdio::piped())
                    .spawn()?;
                group = child
                    .id()
                    .and_then(|pid| i32::try_from(pid).ok())
                    .map(nix::unistd::Pid::from_raw);
                lock(&self.stderr).clear();
                let reader = stderr.map(|stderr| {
                    tokio::spawn(keep_stderr(
                        self.spec.name.clone(),
                        stderr,
                        Arc::clone(&self.stderr),
                    ))
                });
                match handler.serve_with_ct(child, stop.clone()).await {
                    Ok(service) => service,
                    Err(e) => {
                        if let Some(group) = group {
                            let _ =
                                nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
                        }
                        // What it wrote before it went says why: wait for its last lines.
                        let ended = match reader {
                            Some(reader) => {
                                tokio::time::timeout(STDERR_GRACE, reader).await.is_ok()
                            }
                            None => false,
                        };
                        return Err(if ended {
                            StartError::Ended
                        } else {
                            StartError::Handshake(Box::new(e))
                        });
                    }
                }
            }
            Transport::Http { url, headers } => {
                let mut custom = std::collections::HashMap::new();
                for (key, value) in headers {
                    // The configuration checked them: these cannot fail.
                    let name = reqwest::header::HeaderName::from_bytes(key.as_bytes())?;
                    let mut value = reqwest::header::HeaderValue::from_str(value.expose())?;
                    value.set_sensitive(true);
                    custom.insert(name, value);
                }
                let tls = toolbelt_net::tls::client_config(&[], toolbelt_net::tls::ALPN_NONE)?;
                let client = reqwest::Client::builder()
                    .tls_backend_preconfigured(tls)
                    .build()?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::with_client(client, config);
                handler
                    .serve_with_ct(transport, stop.clone())
                    .await
                    .map_err(Box::new)?
            }
        };
        let peer = service.peer().clone();
        let listed = peer.list_all_tools().await?;
        self.offer(&listed);
        self.save_cache(&listed);
        let name = self.spec.name.clone();
        let me = self.me.clone();
        tokio::spawn(async move {
            match service.waiting().await {
                Ok(reason) => tracing::debug!(
                    target: "toolbelt::upstream",
                    server = %name,
                    "the connection ended: {reason:?}"
                ),
                Err(e) => tracing::debug!(
                    target: "toolbelt::upstream",
                    server = %name,
                    "the connection ended: {}",
                    error_chain(&e)
                ),
            }
            if let Some(server) = me.upgrade() {
                server.closed().await;
            }
        });
        Ok(Arc::new(Live {
            peer,
            _stop: stop.drop_guard(),
            group,
        }))
    }

    /// The connection ended by itself (the process exited, the server hung up).
    async fn closed(&self) {
        let mut state = self.state.lock().await;
        if let State::Live(live) = &*state
            && live.peer.is_transport_closed()
        {
            tracing::warn!(target: "toolbelt::upstream", "MCP server {} stopped; it is started again on the next call", self.spec.name);
            self.fail(&mut state, 0, "it stopped".to_string());
        }
    }

    /// Lists the tools again (after `notifications/tools/list_changed`).
    async fn relist(&self) {
        let live = {
            let state = self.state.lock().await;
            match &*state {
                State::Live(live) => Arc::clone(live),
                _ => return,
            }
        };
        match live.peer.list_all_tools().await {
            Ok(listed) => {
                self.offer(&listed);
                self.save_cache(&listed);
            }
            Err(e) => tracing::warn!(
                target: "toolbelt::upstream",
                "MCP server {} said its tools changed, but they cannot be listed: {e}",
                self.spec.name
            ),
        }
    }

    /// Its prompts, renamed with its prefix; none when it offers none or fails.
    pub(crate) async fn prompts(&self) -> Vec<rmcp::model::Prompt> {
        let live = match self.live().await {
            Ok(live) => live,
            Err(e) => {
                tracing::warn!(target: "toolbelt::upstream", "{}", e.into_envelope().text);
                return Vec::new();
            }
        };
        let offers = live
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        if !offers {
            return Vec::new();
        }
        match live.peer.list_all_prompts().await {
            Ok(prompts) => prompts
                .into_iter()
                .map(|mut p| {
                    p.name = format!("{}{}", self.prefix(), p.name);
                    p
                })
                .collect(),
            Err(e) => {
                tracing::warn!(
                    target: "toolbelt::upstream",
                    "the prompts of MCP server {} cannot be listed: {e}",
                    self.spec.name
                );
                Vec::new()
            }
        }
    }

    /// Its prompt `name` (its own name) with `arguments`.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<rmcp::model::GetPromptResult, PromptError> {
        let live = self.live().await?;
        let mut params = rmcp::model::GetPromptRequestParams::new(name);
        params.arguments = arguments;
        live.peer
            .get_prompt(params)
            .await
            .map_err(|source| PromptError::Refused {
                server: self.spec.name.clone(),
                prompt: name.to_string(),
                source,
            })
    }

    /// Offers `listed` (those the configuration lets through).
    fn offer(&self, listed: &[rmcp::model::Tool]) {
        let prefix = self.prefix();
        let mut tools = BTreeMap::new();
        for tool in listed {
            if !self.spec.offers(&tool.name) {
                continue;
            }
            match RemoteTool::new(self.me.clone(), &self.spec, prefix, tool) {
                Ok(remote) => {
                    tools.insert(remote.spec().name.clone(), Arc::new(remote));
                }
                Err(why) => tracing::warn!(
                    target: "toolbelt::upstream",
                    "tool {:?} of MCP server {} is left out: {why}",
                    tool.name,
                    self.spec.name
                ),
            }
        }
        let count = tools.len();
        *write(&self.tools) = Arc::new(tools);
        self.revision.fetch_add(1, Ordering::Relaxed);
        self.show(ServerState::Running { tools: count });
    }

    fn load_cache(&self) -> bool {
        let Some(path) = &self.cache else {
            return false;
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            return false;
        };
        let Ok(cached) = serde_json::from_str::<Cached>(&text) else {
            return false;
        };
        if cached.transport != self.spec.transport.describe() {
            return false;
        }
        self.offer(&cached.tools);
        self.show(ServerState::NotStarted);
        true
    }

    fn save_cache(&self, listed: &[rmcp::model::Tool]) {
        let Some(path) = &self.cache else {
            return;
        };
        let cached = Cached {
            transport: self.spec.transport.describe(),
            tools: listed.to_vec(),
        };
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                let text = serde_json::to_vec(&cached).map_err(std::io::Error::other)?;
                std::fs::write(path, text)
            });
        if let Err(e) = written {
            tracing::debug!(target: "toolbelt::upstream", "the tool list of {} is not kept: {e}", self.spec.name);
        }
    }
}

impl Live {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }
}

/// Why a prompt of another server cannot be given.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// No configured server has the prompt's prefix.
    #[error("there is no prompt named {0:?}")]
    Unknown(String),
    /// The server is not running now.
    #[error("{}", .0.message)]
    Unavailable(ToolError),
    /// The server refused.
    #[error("MCP server {server} did not give the prompt {prompt:?}")]
    Refused {
        /// The server.
        server: String,
        /// The prompt, as the server names it.
        prompt: String,
        /// Its answer.
        source: rmcp::service::ServiceError,
    },
}

/// The server's unavailability is the whole answer, not a cause: its message is
/// shown as it is.
impl From<ToolError> for PromptError {
    fn from(e: ToolError) -> PromptError {
        PromptError::Unavailable(e)
    }
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
enum StartError {
    /// Its program did not start.
    #[error("its command cannot be started")]
    Spawn(#[from] std::io::Error),
    /// It exited before the handshake.
    #[error("it exited before completing the MCP handshake")]
    Ended,
    /// The handshake failed.
    #[error("it did not complete the MCP handshake")]
    Handshake(#[from] Box<rmcp::service::ClientInitializeError>),
    /// Its tools could not be listed.
    #[error("its tools cannot be listed")]
    List(#[from] rmcp::service::ServiceError),
    /// A header of the configuration (checked before) is not valid.
    #[error("a header is not valid")]
    HeaderName(#[from] reqwest::header::InvalidHeaderName),
    /// A header value of the configuration (checked before) is not valid.
    #[error("a header value is not valid")]
    HeaderValue(#[from] reqwest::header::InvalidHeaderValue),
    /// TLS cannot be set up.
    #[error("TLS cannot be set up")]
    Tls(#[from] toolbelt_net::tls::TlsError),
    /// The HTTP client cannot be built.
    #[error("the HTTP client cannot be built")]
    Client(#[from] reqwest::Error),
}

/// The tool list kept for a lazy server.
#[derive(serde::Serialize, serde::Deserialize)]
struct Cached {
    transport: String,
    tools: Vec<rmcp::model::Tool>,
}

/// What toolbelt says to a server as its client.
#[derive(Clone)]
struct Handler {
    server: Weak<Server>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            // Listing waits on the connection that delivers this notification.
            tokio::spawn(async move { server.relist().await });
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolbelt", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Keeps the last lines of a stdio server's stderr, and logs them (debug level):
/// never on the terminal.
async fn keep_stderr(
    name: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "toolbelt::upstream", server = %name, "stderr: {line}");
        let mut tail = lock(&tail);
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line.chars().take(500).collect());
    }
}

/// The wait after `failures` failures in a row.
fn backoff(failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

/// `UNAVAILABLE` for server `name`.
pub(crate) fn unavailable(name: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::Unavailable,
        format!("MCP server {name} is unavailable: {why}"),
    )
    .hint("try again later, or do without this server's tools; `toolbelt doctor` shows its status")
}
