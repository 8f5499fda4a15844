//! What the web tools share: their settings, and the fetch errors they answer.

pub(crate) mod web_fetch;
pub(crate) mod web_search;

use toolbelt_net::error::FetchError;
use toolbelt_net::fetch::Fetcher;
use toolbelt_net::search::Backend;

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
