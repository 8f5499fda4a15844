//! What the web tools share: their settings, and the fetch errors they answer.

pub(crate) mod web_fetch;
pub(crate) mod web_search;

use toolbelt_core::{ErrorCode, ToolError};
use toolbelt_net::error::FetchError;
use toolbelt_net::fetch::Fetcher;
use toolbelt_net::search::{Backend, SearchError};

/// How `web_fetch` and `web_search` reach the web.
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// Let `web_fetch` reach loopback and private addresses (a local
    /// development server, say). Off by default: the SSRF guard refuses them.
    pub allow_private_network: bool,
    /// The `User-Agent` sent (default: toolbelt's own, honest one).
    pub user_agent: Option<String>,
    /// An HTTP proxy for every request (ambient `*_PROXY` variables are ignored).
    pub proxy: Option<String>,
    /// The search engine of `web_search`.
    pub search: Backend,
}

impl Default for WebOptions {
    fn default() -> WebOptions {
        WebOptions {
            allow_private_network: false,
            user_agent: None,
            proxy: None,
            search: Backend::duckduckgo(),
        }
    }
}

impl WebOptions {
    /// A fetcher with these settings; `private` opens loopback and private
    /// addresses whatever the options say.
    pub(crate) fn fetcher(&self, private: bool) -> Result<Fetcher, FetchError> {
        let mut builder =
            Fetcher::builder().allow_private_network(private || self.allow_private_network);
        if let Some(agent) = &self.user_agent {
            builder = builder.user_agent(agent.clone());
        }
        if let Some(proxy) = &self.proxy {
            builder = builder.proxy(proxy.clone());
        }
        builder.build()
    }
}

/// The error a model reads for a failed fetch.
pub(crate) fn fetch_error(e: &FetchError) -> ToolError {
    let message = e.to_string();
    match e {
        FetchError::Blocked { .. } => ToolError::new(ErrorCode::AccessDenied, message)
            .hint("private, loopback and metadata addresses are not fetched; use a public URL"),
        FetchError::InvalidUrl { .. }
        | FetchError::UnsupportedScheme { .. }
        | FetchError::Credentials { .. }
        | FetchError::MissingHost { .. } => ToolError::new(ErrorCode::InvalidParams, message)
            .hint("give a full http:// or https:// URL without user name or password"),
        FetchError::Timeout { .. } => ToolError::new(ErrorCode::Timeout, message)
            .hint("the server is slow or not answering; try again later or another source"),
        FetchError::TooManyRedirects { .. }
        | FetchError::RedirectLoop { .. }
        | FetchError::BadRedirect { .. } => ToolError::new(ErrorCode::Network, message),
        _ => ToolError::new(ErrorCode::Network, message)
            .hint("check the URL; the site may be down or unreachable from here"),
    }
}

/// The error a model reads for a failed search.
pub(crate) fn search_error(e: &SearchError) -> ToolError {
    let message = e.to_string();
    match e {
        SearchError::Fetch { source, .. } => fetch_error(source),
        SearchError::RateLimited { .. } => ToolError::new(ErrorCode::HttpStatus, message)
            .hint("wait a minute before searching again"),
        SearchError::Unauthorized { .. } => ToolError::new(ErrorCode::AccessDenied, message)
            .hint("the search API key is missing or wrong; the server's operator must set it"),
        _ => ToolError::new(ErrorCode::HttpStatus, message),
    }
}
