//! The tools of other MCP servers in toolbelt's registry.
//!
//! A server is configured under `[mcp_servers.NAME]` in `toolbelt.toml` (or in a
//! `.mcp.json`, the format Claude Code and Cursor read): a command to start over
//! stdio, or the URL of a streamable HTTP endpoint. [`Upstreams`] connects to them
//! and offers their tools to a [`Registry`](toolbelt_core::Registry) as a
//! [`ToolSource`](toolbelt_core::ToolSource), named `NAME__tool`: every call then
//! goes through the registry's pipeline like a built-in one (repair, validation,
//! permission rules, output budget, call log), and its result — text, images,
//! audio, embedded resources, links, structured content — becomes one envelope.
//!
//! A server that exits is started again on the next call after a backoff; until
//! then its calls fail with `UNAVAILABLE`, naming it. A server that says its tool
//! list changed is listed again.

mod config;
mod connection;
mod content;
mod resources;
mod source;

/// Set in the environment of every stdio server toolbelt starts (to the server's
/// name): a toolbelt that finds it starts no MCP servers of its own, so that a
/// configuration naming toolbelt itself cannot start toolbelts without end.
pub const NESTED_VAR: &str = "TOOLBELT_AS_MCP_SERVER_OF";

pub use config::{
    ConfigError, DEFAULT_SEPARATOR, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpJson,
    ServerConfig, ServerSpec, Startup, Transport,
};
pub use connection::PromptError;
pub use content::to_envelope;
pub use source::{ServerState, ServerStatus, Upstreams};
