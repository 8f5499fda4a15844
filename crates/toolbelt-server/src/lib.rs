//! toolbelt's tools served to other programs: MCP over stdio and streamable HTTP
//! (through the official Rust SDK, `rmcp`, as an adapter over the registry), and a
//! small JSON API, and the web page for people ([`web`]). Nothing below this crate
//! knows about MCP.

mod conn;
pub mod http;
pub mod mcp;
mod stdio;
#[cfg(test)]
mod test_support;
pub mod web;

pub use http::{ServeConfig, load_or_create_token, router, serve};
pub use mcp::{McpOptions, McpServer, ServerError, StructuredContent, serve_stdio};
