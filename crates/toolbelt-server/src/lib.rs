//! toolbelt's tools served to other programs: MCP over stdio and streamable HTTP
//! (through the official Rust SDK, `rmcp`, as an adapter over the registry), and a
//! small JSON API, and the web page for people ([`web`]). Nothing below this crate
//! knows about MCP.
//!
//! Every refusal over HTTP (a failed check, a bad request, a store that cannot
//! answer) is one error type turned into a response in one place, with the same
//! JSON body, `{"error": {"code", "message"}}`. Serving fails with
//! [`http::HttpServeError`] (HTTP) or [`McpServeError`] (MCP on a stream).

mod conn;
mod elicit;
mod error;
pub mod http;
pub mod mcp;
pub mod questions;
mod stdio;
#[cfg(test)]
mod test_support;
pub mod web;

pub use http::{ServeConfig, load_or_create_token, router, serve};
pub use mcp::{McpOptions, McpServeError, McpServer, StructuredContent, serve_stdio};
pub use questions::{PendingQuestions, RunQuestions};

/// `n` random bytes as lowercase hex: tokens, login codes, question ids.
///
/// # Errors
/// The system has no randomness source.
pub(crate) fn random_hex(n: usize) -> Result<String, getrandom::Error> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
