//! Web search backends: DuckDuckGo's HTML endpoint (no key; the default),
//! the Brave Search API (a key) and a SearXNG instance's JSON API (its URL).
//!
//! A [`Searcher`] joins a [`Backend`] and a [`Fetcher`]: requests go through the
//! same SSRF guard, limits and timeouts as every fetched page. Each backend's
//! answer is parsed into [`SearchResult`]s; a rate limit, a refused key or a
//! results page whose shape changed is a clear [`SearchError`], never an empty
//! list that looks like "no results".
//!
//! ```
//! use toolbelt_net::search::{SearchQuery, SearchResult, render_markdown};
//!
//! let results = vec![SearchResult {
//!     title: "The Rust Programming Language".into(),
//!     url: "https://www.rust-lang.org/".into(),
//!     snippet: "A language empowering everyone.".into(),
//!     date: None,
//! }];
//! let text = render_markdown(&SearchQuery::new("rust"), &results);
//! assert!(text.starts_with("# Search Results for: rust\n"));
//! ```

mod brave;
mod duckduckgo;
mod searxng;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::FetchError;
use crate::fetch::{FetchOptions, Fetched, Fetcher};

/// Results asked for when the query does not say.
pub const DEFAULT_LIMIT: usize = 5;
/// The most results one query returns.
pub const MAX_LIMIT: usize = 10;
/// Time limit of one search request.
pub const SEARCH_TIMEOUT: Duration = Duration::from_secs(20);
/// Body cap of one search answer.
const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;

/// DuckDuckGo's HTML endpoint.
pub const DUCKDUCKGO_URL: &str = "https://html.duckduckgo.com/html/";
/// Brave's web search API.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";

/// How recent results must be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeRange {
    /// The past day.
    Day,
    /// The past week.
    Week,
    /// The past month.
    Month,
    /// The past year.
    Year,
    /// Any time.
    #[default]
    All,
}

/// One query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// What to search for.
    pub query: String,
    /// Results wanted, 1 to [`MAX_LIMIT`].
    pub limit: usize,
    /// How recent results must be.
    pub time_range: TimeRange,
    /// Only results from these domains (and their subdomains), when not empty.
    pub allowed_domains: Vec<String>,
    /// No results from these domains (and their subdomains).
    pub blocked_domains: Vec<String>,
}

impl SearchQuery {
    /// `query` with [`DEFAULT_LIMIT`] results from any time and any domain.
    pub fn new(query: impl Into<String>) -> SearchQuery {
        SearchQuery {
            query: query.into(),
            limit: DEFAULT_LIMIT,
            time_range: TimeRange::All,
            allowed_domains: Vec::new(),
            blocked_domains: Vec::new(),
        }
    }

    /// The query with the domain filters as `site:` operators, for engines that
    /// understand them.
    fn with_site_operators(&self) -> String {
        let mut q = self.query.trim().to_string();
        match self.allowed_domains.as_slice() {
            [] => {}
            [one] => q.push_str(&format!(" site:{one}")),
            many => {
                let sites: Vec<String> = many.iter().map(|d| format!("site:{d}")).collect();
                q.push_str(&format!(" ({})", sites.join(" OR ")));
            }
        }
        for d in &self.blocked_domains {
            q.push_str(&format!(" -site:{d}"));
        }
        q
    }

    /// Whether `url` passes the domain filters.
    fn admits(&self, url: &str) -> bool {
        let Some(host) = Url::parse(url).ok().and_then(|u| {
            u.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        }) else {
            return false;
        };
        let under = |domain: &String| {
            let d = domain
                .trim()
                .trim_start_matches("*.")
                .trim_end_matches('.')
                .to_ascii_lowercase();
            !d.is_empty() && (host == d || host.ends_with(&format!(".{d}")))
        };
        if self.blocked_domains.iter().any(under) {
            return false;
        }
        self.allowed_domains.is_empty() || self.allowed_domains.iter().any(under)
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The page's title.
    pub title: String,
    /// The page's URL.
    pub url: String,
    /// What the engine shows of the page.
    pub snippet: String,
    /// When the page was published, as the engine says it (free form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// A search engine and where it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// DuckDuckGo's HTML endpoint: no key.
    DuckDuckGo {
        /// Default [`DUCKDUCKGO_URL`].
        base_url: Url,
    },
    /// The Brave Search API.
    Brave {
        /// Default [`BRAVE_URL`].
        base_url: Url,
        /// The subscription token (`BRAVE_API_KEY`).
        api_key: String,
    },
    /// A SearXNG instance with its JSON format enabled.
    Searxng {
        /// The instance, e.g. `http://localhost:8888/`.
        base_url: Url,
    },
}

impl Backend {
    /// DuckDuckGo at its public address.
    pub fn duckduckgo() -> Backend {
        Backend::DuckDuckGo {
            base_url: fixed_url(DUCKDUCKGO_URL),
        }
    }

    /// Brave at its public address with `api_key`.
    pub fn brave(api_key: impl Into<String>) -> Backend {
        Backend::Brave {
            base_url: fixed_url(BRAVE_URL),
            api_key: api_key.into(),
        }
    }

    /// The same engine at `url` (a mirror, a proxy, a test server).
    #[must_use]
    pub fn with_base_url(mut self, url: Url) -> Backend {
        match &mut self {
            Backend::DuckDuckGo { base_url }
            | Backend::Brave { base_url, .. }
            | Backend::Searxng { base_url } => *base_url = url,
        }
        self
    }

    /// Whether it answers at an address its operator chose rather than the
    /// engine's public one (every SearXNG instance does).
    pub fn is_self_hosted(&self) -> bool {
        match self {
            Backend::DuckDuckGo { base_url } => base_url.as_str() != DUCKDUCKGO_URL,
            Backend::Brave { base_url, .. } => base_url.as_str() != BRAVE_URL,
            Backend::Searxng { .. } => true,
        }
    }

    /// Its name: `duckduckgo`, `brave` or `searxng`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::DuckDuckGo { .. } => "duckduckgo",
            Backend::Brave { .. } => "brave",
            Backend::Searxng { .. } => "searxng",
        }
    }

    /// What its answers are, as an error that the answer is not one says.
    fn answer_kind(&self) -> &'static str {
        match self {
            Backend::DuckDuckGo { .. } => "DuckDuckGo's HTML results page",
            Backend::Brave { .. } => "the JSON of a web search",
            Backend::Searxng { .. } => "SearXNG's JSON",
        }
    }

    /// The URL it answers at.
    pub fn base_url(&self) -> &Url {
        match self {
            Backend::DuckDuckGo { base_url }
            | Backend::Brave { base_url, .. }
            | Backend::Searxng { base_url } => base_url,
        }
    }
}

/// A constant URL, parsed.
#[allow(
    clippy::expect_used,
    reason = "only called with the constants above, which are valid URLs (tested)"
)]
fn fixed_url(s: &str) -> Url {
    Url::parse(s).expect("a valid constant URL")
}

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The request could not be made or answered (network, guard, timeout).
    #[error("{engine}")]
    Fetch {
        /// The backend.
        engine: &'static str,
        /// What went wrong.
        #[source]
        source: FetchError,
    },
    /// The engine limits how often it may be asked.
    #[error("{engine} is limiting requests (HTTP {status}); wait a while or use another backend")]
    RateLimited {
        /// The backend.
        engine: &'static str,
        /// The HTTP status (429, or 202/403 for DuckDuckGo's bot check).
        status: u16,
    },
    /// The key was refused.
    #[error("{engine} refused the API key (HTTP {status}): {detail}")]
    Unauthorized {
        /// The backend.
        engine: &'static str,
        /// The HTTP status.
        status: u16,
        /// What the engine said.
        detail: String,
    },
    /// The engine answered with an error status.
    #[error("{engine} answered HTTP {status}: {detail}")]
    Status {
        /// The backend.
        engine: &'static str,
        /// The HTTP status.
        status: u16,
        /// What the engine said, shortened.
        detail: String,
    },
    /// The answer is not in the shape the backend knows: the service changed.
    #[error(
        "{engine} answered in a shape this version does not know ({detail}); the service may have changed"
    )]
    Changed {
        /// The backend.
        engine: &'static str,
        /// What was missing or wrong. Text, not a source: the model reads it inside
        /// the sentence, in parentheses, where a joined chain cannot go.
        detail: String,
    },
}

/// Runs queries against one backend.
#[derive(Debug, Clone)]
pub struct Searcher {
    backend: Backend,
    fetcher: Fetcher,
}

impl Searcher {
    /// Searches `backend` through `fetcher`.
    pub fn new(backend: Backend, fetcher: Fetcher) -> Searcher {
        Searcher { backend, fetcher }
    }

    /// The backend.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Runs `query`: at most `query.limit` results (1 to [`MAX_LIMIT`]), filtered
    /// by its domains, in the engine's order, without duplicate URLs.
    ///
    /// # Errors
    /// [`SearchError`]: the request failed, the engine is rate limiting, refused
    /// the key, answered an error, or answered in a shape that is not known.
    ///
    /// # Security
    /// The request goes through the fetcher's SSRF guard like any fetched page;
    /// an API key is sent to the backend's host only.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchResult>, SearchError> {
        let (url, options) = match &self.backend {
            Backend::DuckDuckGo { base_url } => duckduckgo::request(base_url, query),
            Backend::Brave { base_url, api_key } => brave::request(base_url, api_key, query),
            Backend::Searxng { base_url } => searxng::request(base_url, query),
        };
        let options = options
            .timeout(SEARCH_TIMEOUT)
            .max_body_bytes(MAX_ANSWER_BYTES)
            .same_host_redirects_only(true);
        let parsed = self
            .call(url, &options)
            .await
            .map_err(|failure| failure.of(&self.backend))?;
        let limit = query.limit.clamp(1, MAX_LIMIT);
        let mut seen = std::collections::HashSet::new();
        Ok(parsed
            .into_iter()
            .filter(|r| query.admits(&r.url) && seen.insert(r.url.clone()))
            .take(limit)
            .collect())
    }

    /// Asks the backend and parses its answer; the error does not name the
    /// engine yet.
    async fn call(&self, url: Url, options: &FetchOptions) -> Result<Vec<SearchResult>, Failure> {
        let answer = self.fetcher.fetch(url.as_str(), options).await?;
        match &self.backend {
            Backend::DuckDuckGo { .. } => duckduckgo::parse(&answer),
            Backend::Brave { .. } => brave::parse(&answer),
            Backend::Searxng { .. } => searxng::parse(&answer),
        }
    }
}

/// Why one call to a backend failed: a [`SearchError`] before the engine is
/// named, which [`Searcher::search`] does once.
#[derive(Debug)]
enum Failure {
    /// The request could not be made or answered.
    Fetch(FetchError),
    /// The engine limits how often it may be asked.
    RateLimited {
        /// The HTTP status.
        status: u16,
    },
    /// The key was refused.
    Unauthorized {
        /// The HTTP status.
        status: u16,
        /// What the engine said.
        detail: String,
    },
    /// The engine answered with an error status.
    Status {
        /// The HTTP status.
        status: u16,
        /// What the engine said, shortened.
        detail: String,
    },
    /// The answer is not JSON of the shape the backend reads.
    Json(serde_json::Error),
    /// The answer is not in the shape the backend knows.
    Changed(String),
}

impl From<FetchError> for Failure {
    fn from(e: FetchError) -> Self {
        Failure::Fetch(e)
    }
}

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Self {
        Failure::Json(e)
    }
}

impl Failure {
    /// The failure of `backend`.
    fn of(self, backend: &Backend) -> SearchError {
        let engine = backend.name();
        match self {
            Failure::Fetch(source) => SearchError::Fetch { engine, source },
            Failure::RateLimited { status } => SearchError::RateLimited { engine, status },
            Failure::Unauthorized { status, detail } => SearchError::Unauthorized {
                engine,
                status,
                detail,
            },
            Failure::Status { status, detail } => SearchError::Status {
                engine,
                status,
                detail,
            },
            Failure::Json(e) => SearchError::Changed {
                engine,
                detail: format!("not {}: {e}", backend.answer_kind()),
            },
            Failure::Changed(detail) => SearchError::Changed { engine, detail },
        }
    }
}

/// The error for an answer whose status is not a success, if it is not.
fn status_error(answer: &Fetched) -> Option<Failure> {
    let status = answer.status;
    if (200..300).contains(&status) {
        return None;
    }
    let detail = short(&answer.text());
    Some(match status {
        429 => Failure::RateLimited { status },
        401 | 403 => Failure::Unauthorized { status, detail },
        _ => Failure::Status { status, detail },
    })
}

/// At most 200 characters of `text`, on one line.
fn short(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &one_line[..i]),
        None => one_line,
    }
}

/// The results as markdown: `# Search Results for: <query>`, then each result as
/// `## <n>. <title>`, `**URL**: <url>`, `**Summary**: <snippet>` and a rule.
pub fn render_markdown(query: &SearchQuery, results: &[SearchResult]) -> String {
    let mut lines = vec![format!("# Search Results for: {}\n", query.query)];
    for (i, r) in results.iter().enumerate() {
        let title = if r.title.is_empty() {
            "No Title"
        } else {
            &r.title
        };
        lines.push(format!("## {}. {title}\n", i + 1));
        lines.push(format!("**URL**: {}\n", r.url));
        if let Some(date) = &r.date {
            lines.push(format!("**Date**: {date}\n"));
        }
        lines.push(format!("**Summary**: {}\n", r.snippet));
        lines.push("---\n".to_string());
    }
    lines.join("\n")
}
