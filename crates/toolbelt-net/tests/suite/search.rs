//! Tests of `search`: each backend against a server on 127.0.0.1 answering with
//! fixtures in that service's own format.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use pretty_assertions::assert_eq;
use toolbelt_net::fetch::Fetcher;
use toolbelt_net::guard::Policy;
use toolbelt_net::search::{
    Backend, SearchError, SearchQuery, SearchResult, Searcher, TimeRange, render_markdown,
};
use url::Url;

use super::servers::{Server, serve, within};

const DDG: &str = include_str!("../fixtures/search/duckduckgo.html");
const DDG_NONE: &str = include_str!("../fixtures/search/duckduckgo-none.html");
const DDG_ANOMALY: &str = include_str!("../fixtures/search/duckduckgo-anomaly.html");
const BRAVE: &str = include_str!("../fixtures/search/brave.json");
const BRAVE_429: &str = include_str!("../fixtures/search/brave-rate-limited.json");
const BRAVE_422: &str = include_str!("../fixtures/search/brave-unauthorized.json");
const SEARXNG: &str = include_str!("../fixtures/search/searxng.json");

/// What the fake engine received: the path and query, and its headers.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, HeaderMap)>>>);

impl Seen {
    fn last(&self) -> (String, HeaderMap) {
        self.0.lock().unwrap().last().cloned().unwrap()
    }
}

/// An engine answering every request with `status`, `content_type` and `body`.
async fn engine(status: u16, content_type: &'static str, body: &'static str) -> (Server, Seen) {
    let seen = Seen::default();
    let app = axum::Router::new()
        .fallback(move |State(seen): State<Seen>, req: Request| async move {
            let uri = req.uri().to_string();
            seen.0.lock().unwrap().push((uri, req.headers().clone()));
            (
                StatusCode::from_u16(status).unwrap(),
                [(header::CONTENT_TYPE, content_type)],
                body,
            )
                .into_response()
        })
        .with_state(seen.clone());
    (serve(app).await, seen)
}

fn fetcher_for(addr: SocketAddr) -> Fetcher {
    Fetcher::builder()
        .policy(Policy::default().allow_socket_addr(addr))
        .build()
        .unwrap()
}

fn result(title: &str, url: &str, snippet: &str) -> SearchResult {
    SearchResult {
        title: title.into(),
        url: url.into(),
        snippet: snippet.into(),
        date: None,
    }
}

fn query_pairs(uri: &str) -> Vec<(String, String)> {
    Url::parse(&format!("http://x{uri}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

#[tokio::test]
async fn duckduckgo_results_skip_ads_and_duplicates_and_unwrap_redirects() {
    within(async {
        let (server, seen) = engine(200, "text/html; charset=UTF-8", DDG).await;
        let backend = Backend::DuckDuckGo {
            base_url: Url::parse(&server.url("/html/")).unwrap(),
        };
        let searcher = Searcher::new(backend, fetcher_for(server.addr));
        let mut query = SearchQuery::new("rust async runtime");
        query.limit = 10;
        query.time_range = TimeRange::Week;
        let results = searcher.search(&query).await.unwrap();
        assert_eq!(
            results,
            vec![
                result(
                    "Tokio - An asynchronous Rust runtime",
                    "https://tokio.rs/",
                    "Tokio is an event-driven, non-blocking I/O platform for writing asynchronous \
                     applications with the Rust programming language."
                ),
                result(
                    "Asynchronous Programming in Rust",
                    "https://rust-lang.github.io/async-book/",
                    "This book aims to be a thorough guide to asynchronous programming in Rust, \
                     from beginner to advanced."
                ),
                result(
                    "smol - Rust - Docs.rs",
                    "https://docs.rs/smol/latest/smol/",
                    "A small and fast async runtime. This crate simply re-exports other smaller \
                     async crates."
                ),
                result(
                    "Which async runtime should I use? : r/rust",
                    "https://www.reddit.com/r/rust/comments/abc123/which_async_runtime/",
                    "Most of the ecosystem builds on tokio; async-std is discontinued."
                ),
                result(
                    "GitHub - bytedance/monoio: Rust async runtime based on io-uring.",
                    "https://github.com/bytedance/monoio",
                    "Monoio is a pure io_uring/epoll/kqueue Rust async runtime."
                ),
            ]
        );
        let (uri, _) = seen.last();
        assert!(uri.starts_with("/html/?"), "{uri}");
        assert_eq!(
            query_pairs(&uri),
            vec![
                ("q".to_string(), "rust async runtime".to_string()),
                ("df".to_string(), "w".to_string()),
            ]
        );

        // The default limit, and the domain filters both as operators and applied.
        let mut query = SearchQuery::new("rust async runtime");
        query.allowed_domains = vec!["tokio.rs".into(), "github.com".into()];
        query.blocked_domains = vec!["reddit.com".into()];
        let results = searcher.search(&query).await.unwrap();
        let urls: Vec<&str> = results.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(
            urls,
            ["https://tokio.rs/", "https://github.com/bytedance/monoio"]
        );
        let (uri, _) = seen.last();
        assert_eq!(
            query_pairs(&uri)[0].1,
            "rust async runtime (site:tokio.rs OR site:github.com) -site:reddit.com"
        );

        let mut query = SearchQuery::new("rust async runtime");
        query.limit = 2;
        assert_eq!(searcher.search(&query).await.unwrap().len(), 2);
    })
    .await;
}

#[tokio::test]
async fn duckduckgo_no_results_bot_checks_and_changed_pages_are_told_apart() {
    within(async {
        let (server, _) = engine(200, "text/html", DDG_NONE).await;
        let searcher = Searcher::new(
            Backend::DuckDuckGo {
                base_url: Url::parse(&server.url("/html/")).unwrap(),
            },
            fetcher_for(server.addr),
        );
        assert_eq!(
            searcher.search(&SearchQuery::new("qwxzzyv")).await.unwrap(),
            vec![]
        );

        let (server, _) = engine(202, "text/html", DDG_ANOMALY).await;
        let searcher = Searcher::new(
            Backend::DuckDuckGo {
                base_url: Url::parse(&server.url("/html/")).unwrap(),
            },
            fetcher_for(server.addr),
        );
        let err = searcher.search(&SearchQuery::new("x")).await.unwrap_err();
        assert!(
            matches!(
                err,
                SearchError::RateLimited {
                    engine: "duckduckgo",
                    status: 202
                }
            ),
            "{err}"
        );

        let (server, _) = engine(
            200,
            "text/html",
            "<html><body><p>Welcome!</p></body></html>",
        )
        .await;
        let searcher = Searcher::new(
            Backend::DuckDuckGo {
                base_url: Url::parse(&server.url("/html/")).unwrap(),
            },
            fetcher_for(server.addr),
        );
        let err = searcher.search(&SearchQuery::new("x")).await.unwrap_err();
        assert!(matches!(err, SearchError::Changed { .. }), "{err}");
        assert!(err.to_string().contains("may have changed"), "{err}");
    })
    .await;
}

#[tokio::test]
async fn brave_sends_the_key_and_parses_its_answer() {
    within(async {
        let (server, seen) = engine(200, "application/json", BRAVE).await;
        let backend = Backend::Brave {
            base_url: Url::parse(&server.url("/res/v1/web/search")).unwrap(),
            api_key: "test-key-123".into(),
        };
        let searcher = Searcher::new(backend, fetcher_for(server.addr));
        let mut query = SearchQuery::new("rust async runtime");
        query.time_range = TimeRange::Month;
        let results = searcher.search(&query).await.unwrap();
        assert_eq!(
            results,
            vec![
                SearchResult {
                    date: Some("2025-10-02T11:04:12".into()),
                    ..result(
                        "Tokio - An asynchronous Rust runtime",
                        "https://tokio.rs/",
                        "Tokio is an event-driven, non-blocking I/O platform for writing \
                         asynchronous applications with the Rust programming language."
                    )
                },
                SearchResult {
                    date: Some("March 3, 2025".into()),
                    ..result(
                        "Asynchronous Programming in Rust",
                        "https://rust-lang.github.io/async-book/",
                        "This book aims to be a thorough guide to asynchronous programming in \
                         Rust, from beginner to advanced."
                    )
                },
                result(
                    "smol - Rust - Docs.rs",
                    "https://docs.rs/smol/latest/smol/",
                    "A small and fast async runtime. This crate simply re-exports other smaller \
                     async crates & traits."
                ),
            ]
        );
        let (uri, headers) = seen.last();
        assert!(uri.starts_with("/res/v1/web/search?"), "{uri}");
        assert_eq!(
            query_pairs(&uri),
            vec![
                ("q".to_string(), "rust async runtime".to_string()),
                ("count".to_string(), "10".to_string()),
                ("freshness".to_string(), "pm".to_string()),
            ]
        );
        assert_eq!(headers["x-subscription-token"], "test-key-123");
        assert_eq!(headers["accept"], "application/json");
    })
    .await;
}

#[tokio::test]
async fn brave_rate_limits_and_refused_keys_are_clear_errors() {
    within(async {
        for (status, body, want) in [
            (429, BRAVE_429, "limiting"),
            (422, BRAVE_422, "refused the API key"),
        ] {
            let (server, _) = engine(status, "application/json", body).await;
            let searcher = Searcher::new(
                Backend::Brave {
                    base_url: Url::parse(&server.url("/res/v1/web/search")).unwrap(),
                    api_key: "k".into(),
                },
                fetcher_for(server.addr),
            );
            let err = searcher.search(&SearchQuery::new("x")).await.unwrap_err();
            assert!(err.to_string().contains(want), "{status}: {err}");
        }
        let (server, _) = engine(200, "application/json", r#"{"results": []}"#).await;
        let searcher = Searcher::new(
            Backend::Brave {
                base_url: Url::parse(&server.url("/res/v1/web/search")).unwrap(),
                api_key: "k".into(),
            },
            fetcher_for(server.addr),
        );
        let err = searcher.search(&SearchQuery::new("x")).await.unwrap_err();
        assert!(matches!(err, SearchError::Changed { .. }), "{err}");
    })
    .await;
}

#[tokio::test]
async fn searxng_asks_for_json_and_parses_its_answer() {
    within(async {
        let (server, seen) = engine(200, "application/json", SEARXNG).await;
        let backend = Backend::Searxng {
            base_url: Url::parse(&server.url("/")).unwrap(),
        };
        let searcher = Searcher::new(backend, fetcher_for(server.addr));
        let mut query = SearchQuery::new("rust async runtime");
        query.time_range = TimeRange::Year;
        query.blocked_domains = vec!["docs.rs".into()];
        let results = searcher.search(&query).await.unwrap();
        assert_eq!(
            results,
            vec![
                result(
                    "Tokio - An asynchronous Rust runtime",
                    "https://tokio.rs/",
                    "Tokio is an event-driven, non-blocking I/O platform for writing asynchronous \
                     applications with the Rust programming language."
                ),
                SearchResult {
                    date: Some("2025-03-03T00:00:00".into()),
                    ..result(
                        "Asynchronous Programming in Rust",
                        "https://rust-lang.github.io/async-book/",
                        "This book aims to be a thorough guide to asynchronous programming in \
                         Rust, from beginner to advanced."
                    )
                },
            ]
        );
        let (uri, _) = seen.last();
        assert!(uri.starts_with("/search?"), "{uri}");
        assert_eq!(
            query_pairs(&uri),
            vec![
                (
                    "q".to_string(),
                    "rust async runtime -site:docs.rs".to_string()
                ),
                ("format".to_string(), "json".to_string()),
                ("time_range".to_string(), "year".to_string()),
            ]
        );

        let (server, _) = engine(403, "text/html", "<html>Forbidden</html>").await;
        let searcher = Searcher::new(
            Backend::Searxng {
                base_url: Url::parse(&server.url("/")).unwrap(),
            },
            fetcher_for(server.addr),
        );
        let err = searcher.search(&SearchQuery::new("x")).await.unwrap_err();
        assert!(err.to_string().contains("search.formats"), "{err}");
    })
    .await;
}

#[tokio::test]
async fn an_answer_that_is_not_json_names_the_engine_and_what_was_expected() {
    within(async {
        let (server, _) = engine(200, "text/html", "<html>not json</html>").await;
        let url = |path: &str| Url::parse(&server.url(path)).unwrap();
        for (backend, want) in [
            (
                Backend::Brave {
                    base_url: url("/res/v1/web/search"),
                    api_key: "k".into(),
                },
                "brave answered in a shape this version does not know \
                 (not the JSON of a web search: expected value at line 1 column 1); \
                 the service may have changed",
            ),
            (
                Backend::Searxng { base_url: url("/") },
                "searxng answered in a shape this version does not know \
                 (not SearXNG's JSON: expected value at line 1 column 1); \
                 the service may have changed",
            ),
        ] {
            let searcher = Searcher::new(backend, fetcher_for(server.addr));
            let err = searcher.search(&SearchQuery::new("x")).await.unwrap_err();
            assert!(matches!(err, SearchError::Changed { .. }), "{err:?}");
            assert_eq!(err.to_string(), want);
        }
    })
    .await;
}

#[tokio::test]
async fn the_engine_is_behind_the_guard_like_any_page() {
    within(async {
        // Not allowed: a search engine on the loopback address is refused before
        // any connection, as a fetched page would be.
        let (server, seen) = engine(200, "application/json", SEARXNG).await;
        let searcher = Searcher::new(
            Backend::Searxng {
                base_url: Url::parse(&server.url("/")).unwrap(),
            },
            Fetcher::builder().build().unwrap(),
        );
        let err = searcher.search(&SearchQuery::new("x")).await.unwrap_err();
        assert!(matches!(err, SearchError::Fetch { .. }), "{err}");
        assert!(seen.0.lock().unwrap().is_empty());
    })
    .await;
}

#[test]
fn the_markdown_has_the_shape_of_seed_000() {
    let query = SearchQuery::new("rust async runtime");
    let results = vec![
        result("Tokio", "https://tokio.rs/", "An async runtime."),
        SearchResult {
            date: Some("2025-03-03".into()),
            ..result("", "https://example.com/", "No title here.")
        },
    ];
    assert_eq!(
        render_markdown(&query, &results),
        "# Search Results for: rust async runtime\n\n\
         ## 1. Tokio\n\n**URL**: https://tokio.rs/\n\n**Summary**: An async runtime.\n\n---\n\n\
         ## 2. No Title\n\n**URL**: https://example.com/\n\n**Date**: 2025-03-03\n\n\
         **Summary**: No title here.\n\n---\n"
    );
}

#[test]
fn the_public_backends_have_their_public_addresses() {
    assert_eq!(
        Backend::duckduckgo().base_url().as_str(),
        "https://html.duckduckgo.com/html/"
    );
    let brave = Backend::brave("k");
    assert_eq!(brave.name(), "brave");
    assert_eq!(
        brave.base_url().as_str(),
        "https://api.search.brave.com/res/v1/web/search"
    );
}
