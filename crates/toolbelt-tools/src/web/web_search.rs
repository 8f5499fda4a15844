//! `web_search`: searches the web (DuckDuckGo with no key, Brave or SearXNG),
//! through `toolbelt-net`'s backends.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_net::search::{
    DEFAULT_LIMIT, MAX_LIMIT, SearchQuery, SearchResult, Searcher, TimeRange, render_markdown,
};

use toolbelt_net::error::FetchError;

use crate::web::WebOptions;

/// How recent the results must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TimeRangeParam {
    /// The past day.
    Day,
    /// The past week.
    Week,
    /// The past month.
    Month,
    /// The past year.
    Year,
    /// Any time.
    All,
}

/// Arguments of `web_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchParams {
    /// What to search for.
    #[schemars(length(min = 1, max = 500))]
    pub query: String,
    /// How many results, 1 to 10; default 5.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub limit: Option<u64>,
    /// How recent the results must be; default all.
    #[serde(default)]
    pub time_range: Option<TimeRangeParam>,
    /// Only results from these domains, e.g. ["docs.rs", "github.com"].
    #[serde(default)]
    pub allowed_domains: Option<Vec<String>>,
    /// No results from these domains.
    #[serde(default)]
    pub blocked_domains: Option<Vec<String>>,
}

/// Result of `web_search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WebSearchOutput {
    /// The query as searched.
    pub query: String,
    /// The search engine: duckduckgo, brave or searxng.
    pub engine: String,
    /// The results, best first.
    pub results: Vec<WebSearchResult>,
}

/// One result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WebSearchResult {
    /// The page's title.
    pub title: String,
    /// The page's URL.
    pub url: String,
    /// What the engine shows of the page.
    pub snippet: String,
    /// When the page was published, as the engine says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

impl From<SearchResult> for WebSearchResult {
    fn from(r: SearchResult) -> WebSearchResult {
        WebSearchResult {
            title: r.title,
            url: r.url,
            snippet: r.snippet,
            date: r.date,
        }
    }
}

/// The `web_search` tool.
#[derive(Debug)]
pub struct WebSearch {
    searcher: Result<Searcher, FetchError>,
}

impl WebSearch {
    /// A `web_search` tool searching as `options` say. An engine at an address
    /// the operator chose is trusted to be where it is (a SearXNG instance on the
    /// local network, say), so its address is not refused as private; redirects
    /// away from its host are not followed.
    #[must_use]
    pub fn new(options: &WebOptions) -> WebSearch {
        let searcher = options
            .fetcher(options.search.is_self_hosted())
            .map(|fetcher| Searcher::new(options.search.clone(), fetcher));
        WebSearch { searcher }
    }
}

impl Default for WebSearch {
    fn default() -> WebSearch {
        WebSearch::new(&WebOptions::default())
    }
}

impl TypedTool for WebSearch {
    type Params = WebSearchParams;
    type Output = WebSearchOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("web_search", include_str!("web_search.md"))
            .title("Search the Web")
            .category(Category::Web)
            .permission("net:search")
            .hints(Hints::read_only().open_world())
            .key_argument("query")
            .example(
                "Find the documentation of a crate",
                json!({"query": "tokio select macro", "limit": 3, "allowed_domains": ["docs.rs"]}),
                json!({"query": "tokio select macro", "engine": "duckduckgo", "results": [
                    {"title": "select in tokio - Rust", "url": "https://docs.rs/tokio/latest/tokio/macro.select.html",
                     "snippet": "Waits on multiple concurrent branches, returning when the first branch completes."}
                ]}),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: WebSearchParams) -> ToolResult<WebSearchOutput> {
        let searcher = self.searcher.as_ref().map_err(|e| {
            ToolError::new(
                ErrorCode::Internal,
                format!(
                    "web search is not set up: {}",
                    toolbelt_core::error_chain(e)
                ),
            )
        })?;
        let query_text = p.query.trim().to_string();
        if query_text.is_empty() {
            return Err(
                ToolError::new(ErrorCode::InvalidParams, "the query is empty")
                    .hint("say what to search for"),
            );
        }
        let limit = p
            .limit
            .map_or(DEFAULT_LIMIT, |l| usize::try_from(l).unwrap_or(MAX_LIMIT))
            .clamp(1, MAX_LIMIT);
        let mut query = SearchQuery::new(query_text.clone());
        query.limit = limit;
        query.time_range = match p.time_range {
            Some(TimeRangeParam::Day) => TimeRange::Day,
            Some(TimeRangeParam::Week) => TimeRange::Week,
            Some(TimeRangeParam::Month) => TimeRange::Month,
            Some(TimeRangeParam::Year) => TimeRange::Year,
            Some(TimeRangeParam::All) | None => TimeRange::All,
        };
        query.allowed_domains = clean_domains(p.allowed_domains.unwrap_or_default());
        query.blocked_domains = clean_domains(p.blocked_domains.unwrap_or_default());
        let engine = searcher.backend().name();
        ctx.emit(&format!("Searching {engine} for: {query_text}"));
        let results = tokio::select! {
            r = searcher.search(&query) => r?,
            () = ctx.cancel_token().cancelled() => {
                return Err(ToolError::new(ErrorCode::Cancelled, "the search was cancelled"));
            }
        };
        let text = if results.is_empty() {
            format!("No results found for: {query_text}")
        } else {
            render_markdown(&query, &results)
        };
        let count = results.len();
        let out = WebSearchOutput {
            query: query_text,
            engine: engine.to_string(),
            results: results.into_iter().map(WebSearchResult::from).collect(),
        };
        Ok(Reply::new(out, text)
            .stat("results", count)
            .context("engine", engine))
    }
}

/// Domains as given, trimmed, without a scheme or path, empty ones dropped.
fn clean_domains(domains: Vec<String>) -> Vec<String> {
    domains
        .into_iter()
        .filter_map(|d| {
            let d = d.trim();
            let d = d.split_once("://").map_or(d, |(_, rest)| rest);
            let d = d
                .split('/')
                .next()
                .unwrap_or_default()
                .trim_end_matches('.');
            (!d.is_empty()).then(|| d.to_ascii_lowercase())
        })
        .collect()
}
