//! The web for toolbelt's `web_fetch` and `web_search` tools.
//!
//! - [`guard`]: the SSRF guard: which URLs and addresses may be reached, checked on
//!   every hop, with one resolution per name and connections only to checked
//!   addresses.
//! - [`fetch`]: fetching one URL behind the guard: redirects followed by hand,
//!   body and time limits, charsets decoded.
//! - [`extract`]: the main content of an HTML page, with its metadata, as markdown
//!   or text.
//! - [`search`]: web search backends (DuckDuckGo's HTML endpoint, Brave, SearXNG).
//! - [`tls`]: the TLS client configuration shared by every HTTP client.

mod address;
pub mod charset;
pub mod error;
pub mod extract;
pub mod fetch;
pub mod guard;
mod proxy;
pub mod search;
pub mod tls;
mod tool_error;
