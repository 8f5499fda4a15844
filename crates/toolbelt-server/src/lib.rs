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
mod questions_shared;
mod stdio;
#[cfg(test)]
mod test_support;
pub mod web;

pub use http::{ServeConfig, load_or_create_token, router, serve};
pub use mcp::{McpOptions, McpServeError, McpServer, StructuredContent, serve_stdio};
pub use questions::{ANSWER_POLL_MS, PendingQuestions, RunQuestions};

/// An id of this process among the replicas of a server sharing one store
/// (`<host>-<pid>-<random>`), which the runs and questions it keeps there carry.
pub fn replica_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    let random = random_hex(2).unwrap_or_else(|_| "0000".into());
    format!("{host}-{}-{random}", std::process::id())
}

/// `n` random bytes as lowercase hex: tokens, login codes, question ids.
///
/// # Errors
/// The system has no randomness source.
pub(crate) fn random_hex(n: usize) -> Result<String, getrandom::Error> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
