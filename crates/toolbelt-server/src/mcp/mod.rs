//! The registry served as an MCP server.
//!
//! [`McpServer`] implements rmcp's [`ServerHandler`](rmcp::ServerHandler) over a
//! [`Registry`]: the registry stays the one source of tools, validation, policy, limits and
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
//!
//! The modules: `server` holds [`McpServer`] and its protocol handler, `prompts`
//! the skills as prompts, `progress` the forwarding of progress reports, and
//! `lines` the line filter and the stdio transport.

mod lines;
mod progress;
mod prompts;
mod server;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::service::ServerInitializeError;
use toolbelt_core::Registry;

pub use lines::{serve, serve_lines, serve_stdio};
pub use server::McpServer;

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

/// Errors that stop an MCP server on a stream (standard input and output, or
/// the pipes given to [`serve_lines`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The client did not complete the MCP handshake.
    #[error("the MCP handshake failed")]
    Initialize(#[source] Box<ServerInitializeError>),
    /// The connection's task ended abnormally.
    #[error("the MCP connection task failed")]
    Join(#[from] tokio::task::JoinError),
    /// Reading from or writing to the client failed.
    #[error("cannot talk to the MCP client")]
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

#[cfg(test)]
#[path = "../mcp_tests.rs"]
mod tests;
