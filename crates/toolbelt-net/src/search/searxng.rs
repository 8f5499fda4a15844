//! A SearXNG instance's JSON API (`/search?format=json`, which the instance must
//! enable): results are `results[]` with `title`, `url`, `content` and
//! `publishedDate`.

use serde::Deserialize;
use url::Url;

use super::{Failure, SearchQuery, SearchResult, TimeRange, status_error};
use crate::fetch::{FetchOptions, Fetched};

/// The request for `query`.
pub(super) fn request(base: &Url, query: &SearchQuery) -> (Url, FetchOptions) {
    let mut url = base.clone();
    if !url.path().ends_with("/search") {
        let path = format!("{}/search", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    {
        let mut pairs = url.query_pairs_mut();
        pairs.append_pair("q", &query.with_site_operators());
        pairs.append_pair("format", "json");
        let range = match query.time_range {
            TimeRange::Day => Some("day"),
            TimeRange::Week => Some("week"),
            TimeRange::Month => Some("month"),
            TimeRange::Year => Some("year"),
            TimeRange::All => None,
        };
        if let Some(r) = range {
            pairs.append_pair("time_range", r);
        }
    }
    (url, FetchOptions::new().accept("application/json"))
}

#[derive(Deserialize)]
struct Answer {
    results: Option<Vec<Item>>,
}

#[derive(Deserialize)]
struct Item {
    title: Option<String>,
    url: Option<String>,
    content: Option<String>,
    #[serde(rename = "publishedDate")]
    published_date: Option<String>,
}

/// The results of an answer.
pub(super) fn parse(answer: &Fetched) -> Result<Vec<SearchResult>, Failure> {
    if answer.status == 403 {
        return Err(Failure::Status {
            status: 403,
            detail: "the instance refuses the JSON format; enable `json` under \
                     `search.formats` in its settings.yml"
                .to_string(),
        });
    }
    if let Some(err) = status_error(answer) {
        return Err(err);
    }
    let parsed: Answer = serde_json::from_slice(&answer.body)?;
    let items = parsed
        .results
        .ok_or_else(|| Failure::Changed("no \"results\" list".to_string()))?;
    Ok(items
        .into_iter()
        .filter_map(|item| {
            Some(SearchResult {
                title: item.title.unwrap_or_default().trim().to_string(),
                url: item.url?,
                snippet: item.content.unwrap_or_default().trim().to_string(),
                date: item.published_date.filter(|d| !d.is_empty()),
            })
        })
        .collect())
}
