//! The Brave Search API (`/res/v1/web/search`): the key goes in
//! `X-Subscription-Token`; results are `web.results[]` with `title`, `url`,
//! `description` and `age` / `page_age`.

use serde::Deserialize;
use url::Url;

use super::{Failure, MAX_LIMIT, SearchQuery, SearchResult, TimeRange, status_error};
use crate::fetch::{FetchOptions, Fetched};

/// The request for `query`.
pub(super) fn request(base: &Url, api_key: &str, query: &SearchQuery) -> (Url, FetchOptions) {
    let mut url = base.clone();
    {
        let mut pairs = url.query_pairs_mut();
        pairs.append_pair("q", &query.with_site_operators());
        // Ask for the most, as the domain filters may drop some.
        pairs.append_pair("count", &MAX_LIMIT.to_string());
        let freshness = match query.time_range {
            TimeRange::Day => Some("pd"),
            TimeRange::Week => Some("pw"),
            TimeRange::Month => Some("pm"),
            TimeRange::Year => Some("py"),
            TimeRange::All => None,
        };
        if let Some(f) = freshness {
            pairs.append_pair("freshness", f);
        }
    }
    let options = FetchOptions::new()
        .accept("application/json")
        .header("X-Subscription-Token", api_key);
    (url, options)
}

#[derive(Deserialize)]
struct Answer {
    web: Option<Web>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    title: Option<String>,
    url: Option<String>,
    description: Option<String>,
    age: Option<String>,
    page_age: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    code: Option<String>,
    detail: Option<String>,
}

/// The results of an answer.
pub(super) fn parse(answer: &Fetched) -> Result<Vec<SearchResult>, Failure> {
    let status = answer.status;
    if status >= 400
        && let Ok(ErrorAnswer { error }) = serde_json::from_slice::<ErrorAnswer>(&answer.body)
    {
        let code = error.code.unwrap_or_default();
        let detail = error.detail.unwrap_or_else(|| code.clone());
        if code == "RATE_LIMITED" || status == 429 {
            return Err(Failure::RateLimited { status });
        }
        if code.contains("TOKEN") || code.contains("AUTH") || matches!(status, 401 | 403) {
            return Err(Failure::Unauthorized { status, detail });
        }
        return Err(Failure::Status { status, detail });
    }
    if let Some(err) = status_error(answer) {
        return Err(err);
    }
    let parsed: Answer = serde_json::from_slice(&answer.body)?;
    let Some(web) = parsed.web else {
        // A search with no web results still says what it is.
        return match parsed.kind.as_deref() {
            Some("search") => Ok(Vec::new()),
            _ => Err(Failure::Changed("no \"web\" section".to_string())),
        };
    };
    Ok(web
        .results
        .into_iter()
        .filter_map(|item| {
            Some(SearchResult {
                title: strip_tags(&item.title.unwrap_or_default()),
                url: item.url?,
                snippet: strip_tags(&item.description.unwrap_or_default()),
                date: item.age.or(item.page_age),
            })
        })
        .collect())
}

/// Brave marks the words that matched with `<strong>` and escapes entities: the
/// text of the fragment.
fn strip_tags(text: &str) -> String {
    scraper::Html::parse_fragment(text)
        .root_element()
        .text()
        .collect()
}
