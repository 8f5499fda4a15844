//! Tests of `fetch` against real servers on 127.0.0.1: content types, charsets,
//! compression and compression bombs, endless bodies, silent and trickling
//! servers, redirects, HTTP and network errors.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_compression::tokio::bufread::{BrotliEncoder, DeflateEncoder, GzipEncoder, ZlibEncoder};
use axum::Router;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use futures::StreamExt;
use pretty_assertions::assert_eq;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolbelt_net::charset::CharsetSource;
use toolbelt_net::error::{FetchError, TimeoutKind};
use toolbelt_net::fetch::{DEFAULT_MAX_BODY_BYTES, DEFAULT_USER_AGENT, FetchOptions, Fetcher};
use toolbelt_net::guard::StaticResolver;

use super::servers::{Recorder, Server, builder_allowing, raw, serve, serve_tls, within};

const HTML: &str =
    "<!doctype html><html><head><title>T</title></head><body><p>Hello</p></body></html>";
const MARKDOWN: &str = "# Title\n\nSome *text*.\n";
const JSON: &str = r#"{"a":[1,2,3],"b":"c"}"#;
const TEN_GIB: u64 = 10 * 1024 * 1024 * 1024;

fn typed(content_type: &'static str, body: impl Into<Body>) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body.into()).into_response()
}

fn encoded(encoding: &'static str, content_type: &'static str, body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_ENCODING, encoding),
        ],
        body,
    )
        .into_response()
}

async fn compress(reader: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut out = Vec::new();
    let mut reader = reader;
    reader.read_to_end(&mut out).await.unwrap();
    out
}

fn binary() -> Vec<u8> {
    (0..=255u8).cycle().take(4096).collect()
}

fn shift_jis(text: &str) -> Vec<u8> {
    let (bytes, _, unmappable) = encoding_rs::SHIFT_JIS.encode(text);
    assert!(!unmappable);
    bytes.into_owned()
}

fn utf16le_with_bom(text: &str) -> Vec<u8> {
    let mut out = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        out.extend_from_slice(&unit.to_le_bytes());
    }
    out
}

/// The application every fetch test talks to.
fn app() -> Router {
    Router::new()
        .route("/html", get(|| async { typed("text/html; charset=utf-8", HTML) }))
        .route("/plain", get(|| async { typed("text/plain", "just text\n") }))
        .route("/md", get(|| async { typed("text/markdown; charset=utf-8", MARKDOWN) }))
        .route("/json", get(|| async { typed("application/json", JSON) }))
        .route("/bin", get(|| async { typed("application/octet-stream", binary()) }))
        .route(
            "/sjis-meta",
            get(|| async {
                let page = "<html><head><meta charset=\"Shift_JIS\"><title>日本語</title></head><body>こんにちは</body></html>";
                typed("text/html", shift_jis(page))
            }),
        )
        .route(
            "/sjis-equiv",
            get(|| async {
                let page = "<html><head><META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=shift_jis\"></head><body>東京</body></html>";
                typed("text/html", shift_jis(page))
            }),
        )
        .route(
            "/utf16-bom",
            get(|| async { typed("text/plain; charset=iso-8859-1", utf16le_with_bom("héllo ✓")) }),
        )
        .route(
            "/latin1",
            get(|| async { typed("text/plain; charset=windows-1252", b"caf\xe9".to_vec()) }),
        )
        .route(
            "/gzip",
            get(|| async { encoded("gzip", "text/html", compress(GzipEncoder::new(HTML.as_bytes())).await) }),
        )
        .route(
            "/deflate",
            get(|| async { encoded("deflate", "text/html", compress(ZlibEncoder::new(HTML.as_bytes())).await) }),
        )
        .route(
            "/raw-deflate",
            get(|| async {
                encoded("deflate", "text/html", compress(DeflateEncoder::new(HTML.as_bytes())).await)
            }),
        )
        .route(
            "/empty-gzip",
            get(|| async { encoded("gzip", "text/plain", Vec::new()) }),
        )
        .route(
            "/br",
            get(|| async { encoded("br", "text/html", compress(BrotliEncoder::new(HTML.as_bytes())).await) }),
        )
        .route(
            "/unknown-encoding",
            get(|| async { encoded("zstd-ish", "text/plain", b"opaque".to_vec()) }),
        )
        .route(
            "/bad-gzip",
            get(|| async { encoded("gzip", "text/plain", b"this is not gzip at all".to_vec()) }),
        )
        .route("/bomb", get(gzip_bomb))
        .route("/endless", get(|| async { endless() }))
        .route("/sized/{n}", get(|Path(n): Path<usize>| async move { typed("text/plain", vec![b'x'; n]) }))
        .route("/status/{code}", get(|Path(code): Path<u16>| async move {
            (StatusCode::from_u16(code).unwrap(), format!("status {code}"))
        }))
        .route("/ua", get(|headers: HeaderMap| async move {
            headers.get(header::USER_AGENT).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
        }))
        .route("/accept", get(|headers: HeaderMap| async move {
            format!(
                "{}|{}",
                headers.get(header::ACCEPT).map(|v| v.to_str().unwrap()).unwrap_or(""),
                headers.get(header::ACCEPT_ENCODING).map(|v| v.to_str().unwrap()).unwrap_or(""),
            )
        }))
        .route("/loop/a", get(|| async { found("/loop/b") }))
        .route("/loop/b", get(|| async { found("/loop/a") }))
        .route("/self", get(|| async { found("/self#again") }))
        .route("/hop/{n}", get(|Path(n): Path<u32>| async move {
            if n == 0 {
                "arrived".into_response()
            } else {
                found(&format!("{}", n - 1))
            }
        }))
        .route("/deep/a/b", get(|| async { found("../../landing?x=1") }))
        .route("/landing", get(|| async { "landed" }))
        .route("/see-other", get(|| async {
            (StatusCode::SEE_OTHER, [(header::LOCATION, "/landing")]).into_response()
        }))
        .route("/no-location", get(|| async { (StatusCode::FOUND, "no location") }))
        .route("/not-modified", get(|| async { StatusCode::NOT_MODIFIED }))
        .route("/frag", get(|| async { found("/landing") }))
}

fn found(location: &str) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, location.to_owned())]).into_response()
}

/// 10 GiB of zeros as gzip: one gzip member holding 1 MiB of zeros (about 1 KB),
/// sent 10 240 times (gzip allows concatenated members). About 10 MB on the wire
/// if read to the end; neither side ever holds more than one member.
async fn gzip_bomb() -> Response {
    let member = Bytes::from(compress(GzipEncoder::new(&vec![0u8; 1 << 20][..])).await);
    let members = TEN_GIB >> 20;
    let stream =
        futures::stream::iter(0..members).map(move |_| Ok::<_, std::io::Error>(member.clone()));
    (
        [
            (header::CONTENT_TYPE, "text/plain"),
            (header::CONTENT_ENCODING, "gzip"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A chunked body that never ends.
fn endless() -> Response {
    let chunk = Bytes::from(vec![b'a'; 16 * 1024]);
    let stream = futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
    typed("text/plain", Body::from_stream(stream))
}

struct Fixture {
    server: Server,
    recorder: Recorder,
    fetcher: Fetcher,
}

async fn fixture() -> Fixture {
    let server = serve(app()).await;
    let recorder = Recorder::default();
    let fetcher = builder_allowing(&[server.addr], &recorder).build().unwrap();
    Fixture {
        server,
        recorder,
        fetcher,
    }
}

impl Fixture {
    async fn get(&self, path: &str) -> Result<toolbelt_net::fetch::Fetched, FetchError> {
        self.fetcher
            .fetch(&self.server.url(path), &FetchOptions::default())
            .await
    }
}

#[tokio::test]
async fn content_types_are_served_as_sent() {
    within(async {
        let f = fixture().await;
        let cases: [(&str, &str, &[u8]); 5] = [
            ("/html", "text/html", HTML.as_bytes()),
            ("/plain", "text/plain", b"just text\n"),
            ("/md", "text/markdown", MARKDOWN.as_bytes()),
            ("/json", "application/json", JSON.as_bytes()),
            ("/bin", "application/octet-stream", &binary()),
        ];
        for (path, mime, body) in cases {
            let page = f.get(path).await.unwrap();
            assert_eq!(page.status, 200, "{path}");
            assert!(page.is_success());
            assert_eq!(page.mime_type().as_deref(), Some(mime), "{path}");
            assert_eq!(&page.body[..], body, "{path}");
            assert_eq!(page.content_length, Some(body.len() as u64), "{path}");
            assert!(!page.truncated);
            assert!(page.redirects.is_empty());
            assert_eq!(page.final_url.as_str(), f.server.url(path));
        }
        let html = f.get("/html").await.unwrap();
        assert_eq!(html.charset.as_deref(), Some("utf-8"));
        assert_eq!(html.text(), HTML);
        assert_eq!(f.recorder.attempts().len(), 6);
    })
    .await;
}

#[tokio::test]
async fn honest_user_agent_by_default_and_configurable() {
    within(async {
        let f = fixture().await;
        let page = f.get("/ua").await.unwrap();
        assert_eq!(page.text(), DEFAULT_USER_AGENT);
        assert!(DEFAULT_USER_AGENT.starts_with("toolbelt/"));
        let recorder = Recorder::default();
        let custom = builder_allowing(&[f.server.addr], &recorder)
            .user_agent("my-bot/1.0 (+mailto:ops@example.com)")
            .build()
            .unwrap();
        let page = custom
            .fetch(&f.server.url("/ua"), &FetchOptions::default())
            .await
            .unwrap();
        assert_eq!(page.text(), "my-bot/1.0 (+mailto:ops@example.com)");
        let bad = Fetcher::builder()
            .user_agent("bad\nagent")
            .build()
            .unwrap_err();
        assert!(matches!(bad, FetchError::Config { .. }), "{bad:?}");
    })
    .await;
}

#[tokio::test]
async fn invalid_request_headers_are_named_in_the_error() {
    within(async {
        let fetcher = Fetcher::builder().build().unwrap();
        let with_header = |name: &str, value: &str| {
            let mut options = FetchOptions::default();
            options.headers.push((name.to_owned(), value.to_owned()));
            options
        };
        for (options, want) in [
            (
                FetchOptions::default().accept("text/html\n"),
                "invalid fetcher configuration: accept \"text/html\\n\": \
                 failed to parse header value",
            ),
            (
                with_header("bad name", "v"),
                "invalid fetcher configuration: header name \"bad name\": invalid HTTP header name",
            ),
            (
                with_header("X-Key", "a\nb"),
                "invalid fetcher configuration: header x-key: failed to parse header value",
            ),
        ] {
            let err = fetcher
                .fetch("http://example.com/", &options)
                .await
                .unwrap_err();
            assert_eq!(toolbelt_core::error_chain(&err), want);
        }
    })
    .await;
}

#[tokio::test]
async fn accept_headers_are_sent() {
    within(async {
        let f = fixture().await;
        let page = f.get("/accept").await.unwrap();
        assert!(page.text().starts_with("text/html"), "{}", page.text());
        assert!(
            page.text().ends_with("|gzip, deflate, br"),
            "{}",
            page.text()
        );
        let page = f
            .fetcher
            .fetch(
                &f.server.url("/accept"),
                &FetchOptions::new().accept("application/json"),
            )
            .await
            .unwrap();
        assert_eq!(page.text(), "application/json|gzip, deflate, br");
    })
    .await;
}

#[tokio::test]
async fn shift_jis_declared_in_meta_charset() {
    within(async {
        let f = fixture().await;
        let page = f.get("/sjis-meta").await.unwrap();
        let decoded = page.decode();
        assert_eq!(decoded.encoding, "Shift_JIS");
        assert_eq!(decoded.source, CharsetSource::Meta);
        assert!(
            decoded.text.contains("<title>日本語</title>"),
            "{}",
            decoded.text
        );
        assert!(decoded.text.contains("こんにちは"));
        assert!(!decoded.had_errors);
    })
    .await;
}

#[tokio::test]
async fn shift_jis_declared_in_meta_http_equiv() {
    within(async {
        let f = fixture().await;
        let decoded = f.get("/sjis-equiv").await.unwrap().decode();
        assert_eq!(
            (decoded.encoding, decoded.source),
            ("Shift_JIS", CharsetSource::Meta)
        );
        assert!(decoded.text.contains("東京"));
    })
    .await;
}

#[tokio::test]
async fn utf16_bom_wins_over_a_wrong_header() {
    within(async {
        let f = fixture().await;
        let page = f.get("/utf16-bom").await.unwrap();
        assert_eq!(page.charset.as_deref(), Some("iso-8859-1"));
        let decoded = page.decode();
        assert_eq!(
            (decoded.encoding, decoded.source),
            ("UTF-16LE", CharsetSource::Bom)
        );
        assert_eq!(decoded.text, "héllo ✓");
    })
    .await;
}

#[tokio::test]
async fn header_charset_is_used() {
    within(async {
        let f = fixture().await;
        let decoded = f.get("/latin1").await.unwrap().decode();
        assert_eq!(decoded.text, "café");
        assert_eq!(decoded.source, CharsetSource::Header);
    })
    .await;
}

#[tokio::test]
async fn gzip_deflate_and_brotli_are_decoded() {
    within(async {
        let f = fixture().await;
        for path in ["/gzip", "/deflate", "/raw-deflate", "/br"] {
            let page = f.get(path).await.unwrap();
            assert!(page.decompressed, "{path}");
            assert_eq!(page.text(), HTML, "{path}");
            assert!(!page.truncated);
            assert!(
                page.content_length.unwrap() < HTML.len() as u64 + 64,
                "{path}"
            );
        }
        let page = f.get("/empty-gzip").await.unwrap();
        assert_eq!((page.body.len(), page.decompressed), (0, false));
        let page = f.get("/unknown-encoding").await.unwrap();
        assert!(!page.decompressed);
        assert_eq!(page.content_encoding.as_deref(), Some("zstd-ish"));
        assert_eq!(&page.body[..], b"opaque");
    })
    .await;
}

#[tokio::test]
async fn corrupt_gzip_is_a_body_error() {
    within(async {
        let f = fixture().await;
        let err = f.get("/bad-gzip").await.unwrap_err();
        assert!(matches!(err, FetchError::Body { .. }), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn gzip_bomb_of_ten_gib_stops_at_the_cap() {
    within(async {
        let f = fixture().await;
        let started = Instant::now();
        let page = f.get("/bomb").await.unwrap();
        assert!(page.truncated);
        assert!(page.decompressed);
        assert_eq!(page.body.len(), DEFAULT_MAX_BODY_BYTES);
        assert!(page.body.iter().all(|&b| b == 0));
        // Reading 10 GiB would take minutes; the cap stops it after ~5 KB of input.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    })
    .await;
}

#[tokio::test]
async fn gzip_bomb_with_a_small_cap() {
    within(async {
        let f = fixture().await;
        let options = FetchOptions::new().max_body_bytes(1000);
        let page = f
            .fetcher
            .fetch(&f.server.url("/bomb"), &options)
            .await
            .unwrap();
        assert_eq!((page.body.len(), page.truncated), (1000, true));
    })
    .await;
}

#[tokio::test]
async fn endless_chunked_body_is_capped() {
    within(async {
        let f = fixture().await;
        let options = FetchOptions::new().max_body_bytes(1024 * 1024 + 7);
        let page = f
            .fetcher
            .fetch(&f.server.url("/endless"), &options)
            .await
            .unwrap();
        assert!(page.truncated);
        assert_eq!(page.content_length, None);
        assert_eq!(page.body.len(), 1024 * 1024 + 7);
        let page = f.get("/endless").await.unwrap();
        assert_eq!(
            (page.body.len(), page.truncated),
            (DEFAULT_MAX_BODY_BYTES, true)
        );
        // A call cannot raise the fetcher's cap.
        let options = FetchOptions::new().max_body_bytes(usize::MAX);
        let page = f
            .fetcher
            .fetch(&f.server.url("/endless"), &options)
            .await
            .unwrap();
        assert_eq!(
            (page.body.len(), page.truncated),
            (DEFAULT_MAX_BODY_BYTES, true)
        );
    })
    .await;
}

#[tokio::test]
async fn body_of_exactly_the_cap_is_not_truncated() {
    within(async {
        let f = fixture().await;
        let options = FetchOptions::new().max_body_bytes(5000);
        let exact = f
            .fetcher
            .fetch(&f.server.url("/sized/5000"), &options)
            .await
            .unwrap();
        assert_eq!((exact.body.len(), exact.truncated), (5000, false));
        let over = f
            .fetcher
            .fetch(&f.server.url("/sized/5001"), &options)
            .await
            .unwrap();
        assert_eq!((over.body.len(), over.truncated), (5000, true));
        assert_eq!(over.content_length, Some(5001));
    })
    .await;
}

#[tokio::test]
async fn http_errors_are_returned_as_data() {
    within(async {
        let f = fixture().await;
        for code in [404u16, 500, 403, 503] {
            let page = f.get(&format!("/status/{code}")).await.unwrap();
            assert_eq!(page.status, code);
            assert!(!page.is_success());
            assert_eq!(page.text(), format!("status {code}"));
        }
        let page = f.get("/no-such-route").await.unwrap();
        assert_eq!(page.status, 404);
        // A 3xx that is not a redirect is data too.
        assert_eq!(f.get("/no-location").await.unwrap().status, 302);
        assert_eq!(f.get("/not-modified").await.unwrap().status, 304);
    })
    .await;
}

#[tokio::test]
async fn redirects_are_followed_and_recorded() {
    within(async {
        let f = fixture().await;
        let page = f.get("/hop/5").await.unwrap();
        assert_eq!(page.text(), "arrived");
        assert_eq!(page.redirects.len(), 5);
        let chain: Vec<String> = page
            .redirects
            .iter()
            .map(|r| format!("{} {} -> {}", r.status, r.from.path(), r.to.path()))
            .collect();
        assert_eq!(
            chain,
            [
                "302 /hop/5 -> /hop/4",
                "302 /hop/4 -> /hop/3",
                "302 /hop/3 -> /hop/2",
                "302 /hop/2 -> /hop/1",
                "302 /hop/1 -> /hop/0",
            ]
        );
        assert_eq!(page.final_url.path(), "/hop/0");
        assert_eq!(page.url.path(), "/hop/5");
        assert_eq!(f.recorder.attempts(), vec![f.server.addr; 6]);
    })
    .await;
}

#[tokio::test]
async fn relative_and_see_other_locations_are_resolved() {
    within(async {
        let f = fixture().await;
        let page = f.get("/deep/a/b").await.unwrap();
        assert_eq!(page.text(), "landed");
        assert_eq!(page.final_url.as_str(), f.server.url("/landing?x=1"));
        let page = f.get("/see-other").await.unwrap();
        assert_eq!(
            (page.text().as_str(), page.redirects[0].status),
            ("landed", 303)
        );
        let page = f
            .fetcher
            .fetch(&f.server.url("/frag#section"), &FetchOptions::default())
            .await
            .unwrap();
        assert_eq!(page.final_url.fragment(), Some("section"));
    })
    .await;
}

#[tokio::test]
async fn too_many_redirects() {
    within(async {
        let f = fixture().await;
        let err = f.get("/hop/6").await.unwrap_err();
        match err {
            FetchError::TooManyRedirects { url, limit } => {
                assert_eq!(limit, 5);
                assert!(url.ends_with("/hop/0"), "{url}");
            }
            other => panic!("{other:?}"),
        }
        // Six connections: the first request and five redirects; the sixth redirect
        // is not followed.
        assert_eq!(f.recorder.attempts().len(), 6);
        let recorder = Recorder::default();
        let none = builder_allowing(&[f.server.addr], &recorder)
            .max_redirects(0)
            .build()
            .unwrap();
        let err = none
            .fetch(&f.server.url("/hop/1"), &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, FetchError::TooManyRedirects { limit: 0, .. }),
            "{err:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn redirect_loops_are_detected() {
    within(async {
        let f = fixture().await;
        match f.get("/loop/a").await.unwrap_err() {
            FetchError::RedirectLoop { url } => assert!(url.ends_with("/loop/a"), "{url}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(f.recorder.attempts().len(), 2);
        let err = f.get("/self").await.unwrap_err();
        assert!(matches!(err, FetchError::RedirectLoop { .. }), "{err:?}");
    })
    .await;
}

/// A server that reads the request and then says nothing, holding the socket.
async fn silent_server() -> Server {
    raw(|stream| async move {
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(stream);
    })
    .await
}

/// A server that sends a response head and then one body byte every `every`.
async fn trickling_server(every: Duration) -> Server {
    raw(move |mut stream| async move {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n";
        if stream.write_all(head).await.is_err() {
            return;
        }
        loop {
            tokio::time::sleep(every).await;
            if stream.write_all(b"x").await.is_err() {
                return;
            }
        }
    })
    .await
}

fn assert_timeout(err: &FetchError, want: TimeoutKind, host: &str) {
    match err {
        FetchError::Timeout { kind, host: h, .. } => {
            assert_eq!((*kind, h.as_str()), (want, host), "{err}");
        }
        other => panic!("expected a {want} timeout, got {other:?}"),
    }
}

fn quick(server: &Server, recorder: &Recorder, idle_ms: u64, total_ms: u64) -> Fetcher {
    builder_allowing(&[server.addr], recorder)
        .idle_timeout(Duration::from_millis(idle_ms))
        .total_timeout(Duration::from_millis(total_ms))
        .build()
        .unwrap()
}

#[tokio::test]
async fn server_that_never_answers_hits_the_idle_timeout() {
    within(async {
        let server = silent_server().await;
        let recorder = Recorder::default();
        let fetcher = quick(&server, &recorder, 700, 5000);
        let started = Instant::now();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert_timeout(&err, TimeoutKind::Idle, "127.0.0.1");
        assert!(
            took >= Duration::from_millis(650) && took < Duration::from_secs(3),
            "{took:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn server_that_never_answers_hits_the_total_timeout() {
    within(async {
        let server = silent_server().await;
        let recorder = Recorder::default();
        let fetcher = quick(&server, &recorder, 10_000, 10_000);
        let started = Instant::now();
        let options = FetchOptions::new().timeout(Duration::from_millis(800));
        let err = fetcher.fetch(&server.url("/"), &options).await.unwrap_err();
        let took = started.elapsed();
        assert_timeout(&err, TimeoutKind::Total, "127.0.0.1");
        assert!(
            took >= Duration::from_millis(750) && took < Duration::from_secs(3),
            "{took:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn trickle_slower_than_idle_timeout_is_stopped() {
    within(async {
        let server = trickling_server(Duration::from_secs(3)).await;
        let recorder = Recorder::default();
        let fetcher = quick(&server, &recorder, 1000, 10_000);
        let started = Instant::now();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        assert_timeout(&err, TimeoutKind::Idle, "127.0.0.1");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    })
    .await;
}

#[tokio::test]
async fn trickle_faster_than_idle_timeout_hits_the_total_timeout() {
    within(async {
        let server = trickling_server(Duration::from_millis(200)).await;
        let recorder = Recorder::default();
        let fetcher = quick(&server, &recorder, 1000, 1500);
        let started = Instant::now();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert_timeout(&err, TimeoutKind::Total, "127.0.0.1");
        assert!(
            took >= Duration::from_millis(1450) && took < Duration::from_secs(4),
            "{took:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn connection_refused_names_host_and_address() {
    within(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let recorder = Recorder::default();
        let resolver = StaticResolver::new().with("gone.test", [addr.ip()]);
        let fetcher = builder_allowing(&[addr], &recorder)
            .resolver(Arc::new(resolver))
            .build()
            .unwrap();
        let url = format!("http://gone.test:{}/", addr.port());
        match fetcher
            .fetch(&url, &FetchOptions::default())
            .await
            .unwrap_err()
        {
            FetchError::Connect {
                host,
                addr: a,
                source,
            } => {
                assert_eq!((host.as_str(), a), ("gone.test", addr));
                assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(recorder.attempts(), vec![addr]);
    })
    .await;
}

#[tokio::test]
async fn dns_failure_names_the_host() {
    within(async {
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[], &recorder)
            .resolver(Arc::new(StaticResolver::new()))
            .build()
            .unwrap();
        let err = fetcher
            .fetch("https://nowhere.test/", &FetchOptions::default())
            .await
            .unwrap_err();
        match &err {
            FetchError::Resolve { host, .. } => assert_eq!(host, "nowhere.test"),
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("nowhere.test"));
        let empty = builder_allowing(&[], &recorder)
            .resolver(Arc::new(StaticResolver::new().with("empty.test", [])))
            .build()
            .unwrap();
        let err = empty
            .fetch("http://empty.test/", &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::NoAddress { .. }), "{err:?}");
        assert_eq!(recorder.attempts(), Vec::<SocketAddr>::new());
    })
    .await;
}

#[tokio::test]
async fn tls_to_a_plain_http_server_is_a_tls_error() {
    within(async {
        let f = fixture().await;
        let url = format!("https://{}/html", f.server.addr);
        let err = f
            .fetcher
            .fetch(&url, &FetchOptions::default())
            .await
            .unwrap_err();
        match err {
            FetchError::Tls { host, .. } => assert_eq!(host, "127.0.0.1"),
            other => panic!("{other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn garbage_response_is_a_protocol_error() {
    within(async {
        let server = raw(|mut stream| async move {
            let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.6\r\n\r\n").await;
        })
        .await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder).build().unwrap();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Protocol { .. }), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn total_timeout_is_capped_at_two_minutes() {
    let fetcher = Fetcher::builder()
        .total_timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    assert!(
        format!("{fetcher:?}").contains("total_timeout: 120s"),
        "{fetcher:?}"
    );
}

fn tls_app() -> Router {
    Router::new()
        .route(
            "/",
            get(|headers: HeaderMap| async move {
                format!(
                    "secure {}",
                    headers
                        .get(header::HOST)
                        .and_then(|h| h.to_str().ok())
                        .unwrap_or("")
                )
            }),
        )
        .route(
            "/gz",
            get(|| async {
                encoded(
                    "gzip",
                    "text/html",
                    compress(GzipEncoder::new(HTML.as_bytes())).await,
                )
            }),
        )
}

#[tokio::test]
async fn https_by_name_and_by_ip_with_a_trusted_root() {
    within(async {
        let (server, root) = serve_tls(tls_app(), &["secure.test", "127.0.0.1"]).await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder)
            .resolver(Arc::new(
                StaticResolver::new().with("secure.test", [server.addr.ip()]),
            ))
            .add_root_certificate(root)
            .build()
            .unwrap();
        let port = server.addr.port();
        let page = fetcher
            .fetch(
                &format!("https://secure.test:{port}/"),
                &FetchOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(page.text(), format!("secure secure.test:{port}"));
        let page = fetcher
            .fetch(
                &format!("https://127.0.0.1:{port}/gz"),
                &FetchOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!((page.text().as_str(), page.decompressed), (HTML, true));
        assert_eq!(recorder.attempts(), vec![server.addr; 2]);
    })
    .await;
}

#[tokio::test]
async fn https_with_an_untrusted_or_mismatched_certificate_is_a_tls_error() {
    within(async {
        let (server, root) = serve_tls(tls_app(), &["secure.test"]).await;
        let port = server.addr.port();
        let resolver = StaticResolver::new()
            .with("secure.test", [server.addr.ip()])
            .with("other.test", [server.addr.ip()]);
        let recorder = Recorder::default();
        let untrusting = builder_allowing(&[server.addr], &recorder)
            .resolver(Arc::new(resolver.clone()))
            .build()
            .unwrap();
        let err = untrusting
            .fetch(
                &format!("https://secure.test:{port}/"),
                &FetchOptions::default(),
            )
            .await
            .unwrap_err();
        match &err {
            FetchError::Tls { host, .. } => assert_eq!(host, "secure.test"),
            other => panic!("{other:?}"),
        }
        let trusting = builder_allowing(&[server.addr], &recorder)
            .resolver(Arc::new(resolver))
            .add_root_certificate(root)
            .build()
            .unwrap();
        for url in [
            format!("https://other.test:{port}/"),
            format!("https://127.0.0.1:{port}/"),
        ] {
            let err = trusting
                .fetch(&url, &FetchOptions::default())
                .await
                .unwrap_err();
            assert!(matches!(err, FetchError::Tls { .. }), "{url}: {err:?}");
        }
        let bad_root = Fetcher::builder()
            .add_root_certificate(b"not DER".to_vec())
            .build();
        assert!(matches!(bad_root, Err(FetchError::Config { .. })));
    })
    .await;
}

#[tokio::test]
async fn body_cut_short_by_the_server_is_a_body_error() {
    within(async {
        let server = raw(|mut stream| async move {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
                .await;
        })
        .await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder).build().unwrap();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Body { .. }), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn endless_response_head_is_a_protocol_error() {
    within(async {
        let server = raw(|mut stream| async move {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n").await;
            let line = format!("X-Filler: {}\r\n", "y".repeat(1000));
            while stream.write_all(line.as_bytes()).await.is_ok() {}
        })
        .await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder).build().unwrap();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Protocol { .. }), "{err:?}");
    })
    .await;
}

const BOMB_CHILD_MARKER: &str = "TOOLBELT_NET_TEST_BOMB_SERVER";

#[cfg(target_os = "linux")]
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The bomb is fetched in a child process (this test binary again), so that its
/// peak memory is measured alone: with a 1 MiB cap, the peak may grow by a few
/// MiB at most, not by the 10 GiB the stream inflates to (nor by the ~10 MB it
/// weighs compressed).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn gzip_bomb_memory_stays_bounded() {
    if let Some(server) = std::env::var_os(BOMB_CHILD_MARKER) {
        let server: SocketAddr = server.to_str().unwrap().parse().unwrap();
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server], &recorder).build().unwrap();
        let before = peak_rss_kib();
        let options = FetchOptions::new().max_body_bytes(1024 * 1024);
        let page = within(fetcher.fetch(&format!("http://{server}/bomb"), &options))
            .await
            .unwrap();
        let after = peak_rss_kib();
        assert_eq!((page.body.len(), page.truncated), (1024 * 1024, true));
        println!("PEAK_GROWTH_KIB={}", after - before);
        return;
    }
    within(async {
        let server = serve(app()).await;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "--exact",
                "suite::fetch::gzip_bomb_memory_stays_bounded",
                "--nocapture",
            ])
            .env(BOMB_CHILD_MARKER, server.addr.to_string());
        let output = tokio::task::spawn_blocking(move || child.output().unwrap())
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let growth: u64 = stdout
            .lines()
            .find_map(|l| l.strip_prefix("PEAK_GROWTH_KIB="))
            .unwrap_or_else(|| panic!("no measurement in {stdout}"))
            .parse()
            .unwrap();
        assert!(growth < 12 * 1024, "peak memory grew by {growth} KiB");
    })
    .await;
}

#[tokio::test]
async fn cross_host_redirect_can_be_reported_instead_of_followed() {
    within(async {
        let f = fixture().await;
        let app = Router::new().route(
            "/away",
            get(|| async { found("https://elsewhere.example/page") }),
        );
        let server = serve(app).await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder).build().unwrap();
        let options = FetchOptions::new().same_host_redirects_only(true);
        let page = fetcher.fetch(&server.url("/away"), &options).await.unwrap();
        assert_eq!(page.status, 302);
        assert_eq!(
            page.redirect_not_followed.as_ref().map(|u| u.as_str()),
            Some("https://elsewhere.example/page")
        );
        assert_eq!(recorder.attempts(), vec![server.addr]);
        // Within one host, redirects are still followed.
        let page = f
            .fetcher
            .fetch(&f.server.url("/deep/a/b"), &options)
            .await
            .unwrap();
        assert_eq!(
            (page.text().as_str(), page.redirect_not_followed),
            ("landed", None)
        );
    })
    .await;
}

#[tokio::test]
async fn extra_headers_go_to_the_first_host_only() {
    within(async {
        let seen: Arc<std::sync::Mutex<Vec<Option<String>>>> = Arc::default();
        let log = Arc::clone(&seen);
        let other = serve(Router::new().route(
            "/landing",
            get(move |headers: HeaderMap| async move {
                log.lock().unwrap().push(
                    headers
                        .get("x-api-key")
                        .map(|v| v.to_str().unwrap().to_string()),
                );
                "landed"
            }),
        ))
        .await;
        // The same machine under another name: another host as far as headers go.
        let target = format!("http://localhost:{}/landing", other.addr.port());
        let log = Arc::clone(&seen);
        let first = serve(Router::new().route(
            "/start",
            get(move |headers: HeaderMap| {
                let log = Arc::clone(&log);
                let target = target.clone();
                async move {
                    log.lock().unwrap().push(
                        headers
                            .get("x-api-key")
                            .map(|v| v.to_str().unwrap().to_string()),
                    );
                    (StatusCode::FOUND, [(header::LOCATION, target)])
                }
            }),
        ))
        .await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[first.addr, other.addr], &recorder)
            .resolver(Arc::new(
                StaticResolver::new().with("localhost", [other.addr.ip()]),
            ))
            .build()
            .unwrap();
        let options = FetchOptions::new().header("X-Api-Key", "secret-key");
        let fetched = fetcher.fetch(&first.url("/start"), &options).await.unwrap();
        assert_eq!(fetched.status, 200);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![Some("secret-key".to_string()), None]
        );
    })
    .await;
}
