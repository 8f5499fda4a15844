//! Tests of the explicit proxy: tunnels go to checked IP addresses, the guard
//! runs before the proxy is contacted, and ambient proxy variables are ignored.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, header};
use axum::routing::get;
use pretty_assertions::assert_eq;
use toolbelt_net::error::FetchError;
use toolbelt_net::fetch::FetchOptions;
use toolbelt_net::guard::{AddressClass, StaticResolver};

use super::servers::{Canary, ConnectProxy, Recorder, builder_allowing, serve, within};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

async fn host_echo(headers: HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn proxy_is_asked_for_the_checked_ip_not_the_name() {
    within(async {
        let server = serve(Router::new().route("/", get(host_echo))).await;
        let proxy = ConnectProxy::start(None).await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder)
            .resolver(Arc::new(
                StaticResolver::new().with("app.test", [LOCALHOST]),
            ))
            .proxy(format!("http://{}", proxy.addr))
            .build()
            .unwrap();
        let url = format!("http://app.test:{}/", server.addr.port());
        let page = fetcher.fetch(&url, &FetchOptions::default()).await.unwrap();
        assert_eq!(page.text(), format!("app.test:{}", server.addr.port()));
        assert_eq!(proxy.targets(), vec![server.addr.to_string()]);
        assert_eq!(recorder.attempts(), vec![server.addr]);
    })
    .await;
}

#[tokio::test]
async fn proxy_does_not_bypass_the_guard() {
    within(async {
        let proxy = ConnectProxy::start(None).await;
        let canary = Canary::loopback().await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[], &recorder)
            .resolver(Arc::new(
                StaticResolver::new().with("internal.test", [LOCALHOST]),
            ))
            .proxy(format!("http://{}", proxy.addr))
            .build()
            .unwrap();
        for url in [
            format!("http://{}/", canary.addr),
            format!("http://internal.test:{}/", canary.addr.port()),
            "http://169.254.169.254/".to_owned(),
        ] {
            let err = fetcher
                .fetch(&url, &FetchOptions::default())
                .await
                .unwrap_err();
            assert!(matches!(err, FetchError::Blocked { .. }), "{url}: {err:?}");
        }
        assert_eq!(proxy.heads(), Vec::<String>::new());
        assert_eq!(recorder.attempts(), vec![]);
        assert_eq!(canary.accepts(), 0);
        let err = fetcher
            .fetch("http://[::ffff:10.0.0.1]/", &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                FetchError::Blocked {
                    class: AddressClass::Private,
                    ..
                }
            ),
            "{err:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn proxy_refusal_is_a_proxy_error_and_credentials_are_sent() {
    within(async {
        let server = serve(Router::new().route("/", get(|| async { "x" }))).await;
        let proxy =
            ConnectProxy::start(Some("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")).await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder)
            .proxy(format!("http://us%40er:p%3Ass@{}", proxy.addr))
            .build()
            .unwrap();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        match &err {
            FetchError::Proxy {
                proxy: name,
                source,
            } => {
                assert_eq!(name, &proxy.addr.to_string());
                assert!(source.to_string().contains("407"), "{source}");
            }
            other => panic!("{other:?}"),
        }
        let heads = proxy.heads();
        assert_eq!(heads.len(), 1);
        // "us@er:p:ss" in base64.
        assert!(
            heads[0].contains("Proxy-Authorization: Basic dXNAZXI6cDpzcw==\r\n"),
            "{}",
            heads[0]
        );
        assert!(
            !format!("{fetcher:?}").contains("dXNA"),
            "credentials stay out of Debug"
        );
    })
    .await;
}

#[test]
fn only_http_proxies_are_accepted() {
    for (proxy, want) in [
        (
            "socks5://127.0.0.1:1080",
            "invalid fetcher configuration: proxy: scheme \"socks5\" is not supported; \
             use an http:// proxy",
        ),
        (
            "https://proxy.example:443",
            "invalid fetcher configuration: proxy: scheme \"https\" is not supported; \
             use an http:// proxy",
        ),
        (
            "not a url",
            "invalid fetcher configuration: proxy: relative URL without a base",
        ),
    ] {
        let err = toolbelt_net::fetch::Fetcher::builder()
            .proxy(proxy)
            .build()
            .unwrap_err();
        assert!(matches!(err, FetchError::Config { .. }), "{proxy}: {err:?}");
        assert_eq!(toolbelt_core::error_chain(&err), want);
    }
}

const CHILD_MARKER: &str = "TOOLBELT_NET_TEST_AMBIENT_PROXY_SERVER";

/// Runs this test binary again with every proxy variable pointing at a canary;
/// the child fetches the parent's server directly, and the canary sees nothing.
/// The variables are set on the child only: this process's environment is not
/// touched.
#[tokio::test]
async fn ambient_proxy_variables_are_ignored() {
    if let Some(server) = std::env::var_os(CHILD_MARKER) {
        let server = server.to_str().unwrap().parse().unwrap();
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server], &recorder).build().unwrap();
        let page = within(fetcher.fetch(&format!("http://{server}/"), &FetchOptions::default()))
            .await
            .unwrap();
        assert_eq!(page.text(), "direct");
        assert_eq!(recorder.attempts(), vec![server]);
        return;
    }
    within(async {
        let server = serve(Router::new().route("/", get(|| async { "direct" }))).await;
        let canary = Canary::loopback().await;
        let proxy = format!("http://{}", canary.addr);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "--exact",
                "suite::proxy::ambient_proxy_variables_are_ignored",
            ])
            .env(CHILD_MARKER, server.addr.to_string());
        for var in [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            child.env(var, &proxy);
        }
        child.env("NO_PROXY", "").env("no_proxy", "");
        let output = tokio::task::spawn_blocking(move || child.output().unwrap())
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("1 passed"), "{stdout}");
        assert_eq!(canary.accepts(), 0);
    })
    .await;
}
