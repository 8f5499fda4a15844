//! toolbelt's tools served to other programs: MCP over stdio and streamable HTTP
//! (through the official Rust SDK, `rmcp`, as an adapter over the registry), and a
//! small JSON API. Nothing below this crate knows about MCP.

pub mod mcp;

pub use mcp::{McpServer, ServerError, serve_stdio};
