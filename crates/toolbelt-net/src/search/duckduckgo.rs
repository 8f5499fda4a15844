//! DuckDuckGo's HTML endpoint (`html.duckduckgo.com/html/`): no key. Results are
//! `div.result` blocks (ads, `result--ad`, skipped) with the title link
//! `a.result__a` (its `href` a redirect carrying the target in `uddg`), and the
//! snippet `.result__snippet`. A page with neither results nor the "no results"
//! notice is a bot check (rate limit) or a changed page.

use scraper::{ElementRef, Html, Selector};
use url::Url;

use super::{Failure, SearchQuery, SearchResult, TimeRange, status_error};
use crate::fetch::{FetchOptions, Fetched};

/// The request for `query`.
pub(super) fn request(base: &Url, query: &SearchQuery) -> (Url, FetchOptions) {
    let mut url = base.clone();
    {
        let mut pairs = url.query_pairs_mut();
        pairs.append_pair("q", &query.with_site_operators());
        let df = match query.time_range {
            TimeRange::Day => Some("d"),
            TimeRange::Week => Some("w"),
            TimeRange::Month => Some("m"),
            TimeRange::Year => Some("y"),
            TimeRange::All => None,
        };
        if let Some(df) = df {
            pairs.append_pair("df", df);
        }
    }
    (url, FetchOptions::new().accept("text/html"))
}

/// The results of an answer.
pub(super) fn parse(answer: &Fetched) -> Result<Vec<SearchResult>, Failure> {
    if let Some(err) = status_error(answer) {
        return Err(err);
    }
    let html = Html::parse_document(&answer.text());
    let sel =
        |s: &str| Selector::parse(s).map_err(|e| Failure::Changed(format!("selector {s}: {e}")));
    let (result, title, snippet, no_results, bot_check) = (
        sel("div.result")?,
        sel("a.result__a")?,
        sel(".result__snippet")?,
        sel(".no-results")?,
        sel(".anomaly-modal, #challenge-form, form[action*='anomaly']")?,
    );
    let mut out = Vec::new();
    let mut blocks = 0;
    for block in html.select(&result) {
        blocks += 1;
        let ad = block
            .value()
            .classes()
            .any(|c| c == "result--ad" || c == "result--ad--small");
        if ad {
            continue;
        }
        let Some(link) = block.select(&title).next() else {
            continue;
        };
        let Some(url) = link.value().attr("href").and_then(target_url) else {
            continue;
        };
        out.push(SearchResult {
            title: text_of(link),
            url,
            snippet: block
                .select(&snippet)
                .next()
                .map(text_of)
                .unwrap_or_default(),
            date: None,
        });
    }
    if blocks > 0 || html.select(&no_results).next().is_some() {
        return Ok(out);
    }
    if answer.status == 202 || html.select(&bot_check).next().is_some() {
        return Err(Failure::RateLimited {
            status: answer.status,
        });
    }
    Err(Failure::Changed(
        "no result blocks (div.result) and no \"no results\" notice".to_string(),
    ))
}

/// The page a result link leads to: the `uddg` parameter of DuckDuckGo's
/// redirect (`//duckduckgo.com/l/?uddg=...`), or the link itself.
fn target_url(href: &str) -> Option<String> {
    let base = Url::parse("https://duckduckgo.com/").ok()?;
    let url = base.join(href).ok()?;
    let target = if url.path() == "/l/" {
        let uddg = url.query_pairs().find(|(k, _)| k == "uddg")?.1.into_owned();
        Url::parse(&uddg).ok()?
    } else {
        url
    };
    matches!(target.scheme(), "http" | "https").then(|| target.to_string())
}

/// The element's text, whitespace collapsed.
fn text_of(el: ElementRef<'_>) -> String {
    let text: String = el.text().collect();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
