//! Tests of `guard`: every spelling of an internal address, names resolving to
//! one, DNS rebinding, redirects into the internal network, refused schemes. Each
//! fetch records its connection attempts; none may go to a blocked address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use pretty_assertions::assert_eq;
use tokio::net::TcpListener;
use toolbelt_net::error::FetchError;
use toolbelt_net::fetch::{FetchOptions, Fetcher};
use toolbelt_net::guard::{
    AddressClass, Guard, Policy, StaticResolver, SystemResolver, check_url, classify, parse_url,
};

use super::servers::{
    Canary, CountingResolver, Recorder, builder_allowing, serve, serve_on, within,
};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Every spelling of a blocked address, with the class it must be blocked as.
const BLOCKED_LITERALS: &[(&str, AddressClass)] = &[
    // loopback, IPv4 spellings the WHATWG parser accepts
    ("http://127.0.0.1/", AddressClass::Loopback),
    ("http://127.0.0.1./", AddressClass::Loopback),
    ("http://2130706433/", AddressClass::Loopback),
    ("http://0177.0.0.1/", AddressClass::Loopback),
    ("http://0177.0000.0000.0001/", AddressClass::Loopback),
    ("http://017700000001/", AddressClass::Loopback),
    ("http://0x7f.1/", AddressClass::Loopback),
    ("http://0x7f000001/", AddressClass::Loopback),
    ("http://0x7F.0x0.0x0.0x1/", AddressClass::Loopback),
    ("http://127.1/", AddressClass::Loopback),
    ("http://127.0.1/", AddressClass::Loopback),
    ("http://127.255.255.254/", AddressClass::Loopback),
    ("HTTP://127.0.0.1:8080/x", AddressClass::Loopback),
    ("http://%31%32%37.0.0.1/", AddressClass::Loopback),
    // loopback, IPv6 spellings
    ("http://[::1]/", AddressClass::Loopback),
    ("http://[0:0:0:0:0:0:0:1]/", AddressClass::Loopback),
    ("http://[0000::0001]/", AddressClass::Loopback),
    ("http://[::ffff:127.0.0.1]/", AddressClass::Loopback),
    ("http://[::ffff:7f00:1]/", AddressClass::Loopback),
    ("http://[0:0:0:0:0:ffff:127.0.0.1]/", AddressClass::Loopback),
    ("http://[::ffff:0:127.0.0.1]/", AddressClass::Loopback),
    ("http://[::127.0.0.1]/", AddressClass::Loopback),
    ("http://[64:ff9b::127.0.0.1]/", AddressClass::Loopback),
    ("http://[64:ff9b::7f00:1]/", AddressClass::Loopback),
    ("http://[2002:7f00:1::]/", AddressClass::Loopback),
    // unspecified and "this network" (0.0.0.0 reaches the local host on Linux)
    ("http://0.0.0.0/", AddressClass::Unspecified),
    ("http://0/", AddressClass::Unspecified),
    ("http://0x0/", AddressClass::Unspecified),
    ("http://[::]/", AddressClass::Unspecified),
    ("http://[::ffff:0.0.0.0]/", AddressClass::Unspecified),
    ("http://0.1.2.3/", AddressClass::ThisNetwork),
    // private networks
    ("http://10.0.0.1/", AddressClass::Private),
    ("http://167772161/", AddressClass::Private),
    ("http://012.0.0.1/", AddressClass::Private),
    ("http://0xa.1/", AddressClass::Private),
    ("http://172.16.0.1/", AddressClass::Private),
    ("http://172.31.255.255/", AddressClass::Private),
    ("http://0xac100001/", AddressClass::Private),
    ("http://192.168.1.1/", AddressClass::Private),
    ("http://192.168.257/", AddressClass::Private),
    ("http://0300.0250.1.1/", AddressClass::Private),
    ("http://[::ffff:10.0.0.1]/", AddressClass::Private),
    ("http://[::ffff:c0a8:101]/", AddressClass::Private),
    ("http://[64:ff9b::192.168.1.1]/", AddressClass::Private),
    ("http://[64:ff9b:1::1]/", AddressClass::Private),
    ("http://[2002:c0a8:101::1]/", AddressClass::Private),
    ("http://[fec0::1]/", AddressClass::Private),
    // shared address space (CGNAT), where some clouds put metadata too
    ("http://100.64.0.1/", AddressClass::SharedAddressSpace),
    ("http://100.100.100.200/", AddressClass::SharedAddressSpace),
    // link-local
    ("http://169.254.0.1/", AddressClass::LinkLocal),
    ("http://[fe80::1]/", AddressClass::LinkLocal),
    ("http://[febf::1]/", AddressClass::LinkLocal),
    // cloud metadata, every spelling
    (
        "http://169.254.169.254/latest/meta-data/",
        AddressClass::Metadata,
    ),
    ("http://2852039166/", AddressClass::Metadata),
    ("http://0xa9fea9fe/", AddressClass::Metadata),
    ("http://0xa9.0xfe.0xa9.0xfe/", AddressClass::Metadata),
    ("http://0251.0376.0251.0376/", AddressClass::Metadata),
    ("http://169.254.43518/", AddressClass::Metadata),
    ("http://[::ffff:169.254.169.254]/", AddressClass::Metadata),
    ("http://[::ffff:a9fe:a9fe]/", AddressClass::Metadata),
    ("http://[64:ff9b::169.254.169.254]/", AddressClass::Metadata),
    ("http://[2002:a9fe:a9fe::]/", AddressClass::Metadata),
    ("http://[fd00:ec2::254]/", AddressClass::Metadata),
    // unique-local
    ("http://[fc00::1]/", AddressClass::UniqueLocal),
    ("http://[fd12:3456::1]/", AddressClass::UniqueLocal),
    // multicast, broadcast, documentation, benchmarking, reserved
    ("http://224.0.0.1/", AddressClass::Multicast),
    ("http://[ff02::1]/", AddressClass::Multicast),
    ("http://255.255.255.255/", AddressClass::Broadcast),
    ("http://4294967295/", AddressClass::Broadcast),
    ("http://192.0.2.1/", AddressClass::Documentation),
    ("http://[2001:db8::1]/", AddressClass::Documentation),
    ("http://198.18.0.1/", AddressClass::Benchmarking),
    ("http://240.0.0.1/", AddressClass::Reserved),
    ("http://[2001::1]/", AddressClass::Reserved),
    ("http://[100::1]/", AddressClass::Reserved),
];

#[tokio::test]
async fn literal_spellings_of_internal_addresses_are_blocked_without_resolving() {
    within(async {
        let resolver = CountingResolver::new(vec![]);
        let guard = Guard::with_resolver(Policy::new(), resolver.clone());
        for &(input, want) in BLOCKED_LITERALS {
            let url = parse_url(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            match guard.resolve(&url).await {
                Err(FetchError::Blocked { class, .. }) => assert_eq!(class, want, "{input}"),
                other => panic!("{input}: expected Blocked({want}), got {other:?}"),
            }
        }
        assert_eq!(resolver.calls(), 0, "IP literals are never resolved");
    })
    .await;
}

#[tokio::test]
async fn literal_spellings_are_blocked_by_the_fetcher_with_no_connection_attempt() {
    within(async {
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[], &recorder).build().unwrap();
        for &(input, want) in BLOCKED_LITERALS {
            match fetcher.fetch(input, &FetchOptions::default()).await {
                Err(FetchError::Blocked { class, .. }) => assert_eq!(class, want, "{input}"),
                other => panic!("{input}: expected Blocked({want}), got {other:?}"),
            }
        }
        assert_eq!(recorder.attempts(), vec![]);
    })
    .await;
}

#[tokio::test]
async fn blocked_error_names_the_host_address_and_class() {
    let guard = Guard::new(Policy::new());
    let url = parse_url("http://0x7f.1:8080/").unwrap();
    let err = guard.resolve(&url).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "127.0.0.1 is blocked: 127.0.0.1 is a loopback address; only public internet addresses can be fetched"
    );
}

#[tokio::test]
async fn public_literals_pass_without_resolving() {
    let resolver = CountingResolver::new(vec![]);
    let guard = Guard::with_resolver(Policy::new(), resolver.clone());
    for input in [
        "http://93.184.215.14/",
        "https://1.1.1.1/",
        "http://[2606:4700:4700::1111]/",
        "http://[::ffff:8.8.8.8]/",
        "http://[64:ff9b::8.8.8.8]/",
        "http://[2002:808:808::]/",
        "http://134744072/",
    ] {
        let url = parse_url(input).unwrap();
        let target = guard
            .resolve(&url)
            .await
            .unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(target.addrs().len(), 1, "{input}");
    }
    assert_eq!(resolver.calls(), 0);
}

#[test]
fn only_http_and_https_are_accepted() {
    for input in [
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "gopher://127.0.0.1:6379/_FLUSHALL",
        "data:text/plain,hello",
        "ftp://example.com/file",
        "javascript:alert(1)",
        "ws://example.com/",
        "dict://127.0.0.1:11211/",
        "ldap://example.com/",
        "mailto:a@example.com",
        "jar:http://example.com/x.jar!/",
    ] {
        match parse_url(input) {
            Err(FetchError::UnsupportedScheme { scheme, .. }) => {
                assert_eq!(Some(scheme.as_str()), input.split(':').next(), "{input}")
            }
            other => panic!("{input}: expected UnsupportedScheme, got {other:?}"),
        }
    }
    assert!(parse_url("https://example.com/").is_ok());
    assert!(parse_url("HTTP://EXAMPLE.COM/").is_ok());
    let err = parse_url("ftp://me:secret@example.com/f").unwrap_err();
    let text = toolbelt_core::error_chain(&err);
    assert!(!text.contains("secret"), "{text}");
}

#[test]
fn credentials_are_refused_and_not_echoed() {
    for input in [
        "http://user:secret@example.com/",
        "http://user@example.com/",
        "http://:secret@example.com/",
        "http://127.0.0.1:80@example.com/",
    ] {
        match parse_url(input) {
            Err(FetchError::Credentials { url }) => {
                assert!(!url.contains("secret"), "{url}");
                assert!(!url.contains('@'), "{url}");
            }
            other => panic!("{input}: expected Credentials, got {other:?}"),
        }
    }
}

#[test]
fn malformed_urls_are_invalid() {
    for input in [
        "",
        "http://",
        "not a url",
        "http://[::1/",
        "http://exa mple.com/",
    ] {
        assert!(
            matches!(parse_url(input), Err(FetchError::InvalidUrl { .. })),
            "{input}"
        );
    }
    // A URL object with an odd scheme is refused by `check_url` too.
    let url = url::Url::parse("gopher://example.com/").unwrap();
    assert!(matches!(
        check_url(&url),
        Err(FetchError::UnsupportedScheme { .. })
    ));
}

#[tokio::test]
async fn name_resolving_to_a_private_address_is_blocked() {
    within(async {
        let recorder = Recorder::default();
        let resolver = StaticResolver::new()
            .with("intranet.test", ["10.1.2.3".parse().unwrap()])
            .with("meta.test", ["169.254.169.254".parse().unwrap()])
            .with("mapped.test", ["::ffff:127.0.0.1".parse().unwrap()]);
        let fetcher = builder_allowing(&[], &recorder)
            .resolver(Arc::new(resolver))
            .build()
            .unwrap();
        for (url, class) in [
            ("http://intranet.test/", AddressClass::Private),
            ("http://META.test/", AddressClass::Metadata),
            ("https://mapped.test/", AddressClass::Loopback),
        ] {
            match fetcher.fetch(url, &FetchOptions::default()).await {
                Err(FetchError::Blocked { class: got, .. }) => assert_eq!(got, class, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        assert_eq!(recorder.attempts(), vec![]);
    })
    .await;
}

#[tokio::test]
async fn one_private_address_among_public_ones_blocks_the_name() {
    within(async {
        let recorder = Recorder::default();
        let resolver = CountingResolver::new(vec![vec![
            "8.8.8.8".parse().unwrap(),
            "2606:4700::1".parse().unwrap(),
            "192.168.0.10".parse().unwrap(),
            "1.1.1.1".parse().unwrap(),
        ]]);
        let fetcher = builder_allowing(&[], &recorder)
            .resolver(resolver.clone())
            .build()
            .unwrap();
        let err = fetcher
            .fetch("http://mixed.test/", &FetchOptions::default())
            .await
            .unwrap_err();
        match err {
            FetchError::Blocked { host, addr, class } => {
                assert_eq!(host, "mixed.test");
                assert_eq!(addr, "192.168.0.10".parse::<IpAddr>().unwrap());
                assert_eq!(class, AddressClass::Private);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(resolver.calls(), 1);
        // Not even the public addresses were tried.
        assert_eq!(recorder.attempts(), vec![]);
    })
    .await;
}

#[tokio::test]
async fn localhost_through_the_system_resolver_is_blocked() {
    within(async {
        let canary = Canary::loopback().await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[], &recorder)
            .resolver(Arc::new(SystemResolver))
            .build()
            .unwrap();
        let url = format!("http://localhost:{}/", canary.addr.port());
        let err = fetcher
            .fetch(&url, &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                FetchError::Blocked {
                    class: AddressClass::Loopback,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(recorder.attempts(), vec![]);
        assert_eq!(canary.accepts(), 0);
    })
    .await;
}

async fn host_echo(headers: HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// The DNS-rebinding attack: the first answer is the allowed server, any later
/// answer a loopback address where a canary listens. The name is resolved once
/// for the whole fetch (two hops), so the second answer is never asked for, and
/// every connection goes to the checked address.
#[tokio::test]
async fn dns_rebinding_second_answer_is_never_asked_for() {
    within(async {
        let app = Router::new()
            .route(
                "/start",
                get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/final")]) }),
            )
            .route("/final", get(host_echo));
        let server = serve(app).await;
        let port = server.addr.port();
        // The rebinding target: another loopback address, same port.
        let canary = Canary::bind(&format!("127.0.0.2:{port}")).await.unwrap();
        let resolver =
            CountingResolver::new(vec![vec![LOCALHOST], vec!["127.0.0.2".parse().unwrap()]]);
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder)
            .resolver(resolver.clone())
            .build()
            .unwrap();
        let page = fetcher
            .fetch(
                &format!("http://rebind.test:{port}/start"),
                &FetchOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(page.status, 200);
        assert_eq!(page.text(), format!("rebind.test:{port}"));
        assert_eq!(page.redirects.len(), 1);
        assert_eq!(resolver.calls(), 1, "one lookup per name per fetch");
        assert_eq!(recorder.attempts(), vec![server.addr, server.addr]);
        assert_eq!(canary.accepts(), 0);
    })
    .await;
}

/// The same attack across two fetches: the second fetch resolves again, gets the
/// loopback answer, and is blocked before any connection.
#[tokio::test]
async fn dns_rebinding_across_fetches_is_checked_again() {
    within(async {
        let server = serve(Router::new().route("/", get(|| async { "ok" }))).await;
        let port = server.addr.port();
        let canary = Canary::bind(&format!("127.0.0.2:{port}")).await.unwrap();
        let resolver =
            CountingResolver::new(vec![vec![LOCALHOST], vec!["127.0.0.2".parse().unwrap()]]);
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder)
            .resolver(resolver.clone())
            .build()
            .unwrap();
        let url = format!("http://rebind.test:{port}/");
        let first = fetcher.fetch(&url, &FetchOptions::default()).await.unwrap();
        assert_eq!(first.text(), "ok");
        let second = fetcher
            .fetch(&url, &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(
                second,
                FetchError::Blocked {
                    class: AddressClass::Loopback,
                    ..
                }
            ),
            "{second:?}"
        );
        assert_eq!(resolver.calls(), 2);
        assert_eq!(recorder.attempts(), vec![server.addr]);
        assert_eq!(canary.accepts(), 0);
    })
    .await;
}

#[tokio::test]
async fn connection_goes_to_the_checked_address_with_the_name_as_host() {
    within(async {
        let server = serve(Router::new().route("/", get(host_echo))).await;
        let recorder = Recorder::default();
        let resolver = StaticResolver::new().with("app.test", [LOCALHOST]);
        let fetcher = builder_allowing(&[server.addr], &recorder)
            .resolver(Arc::new(resolver))
            .build()
            .unwrap();
        let url = format!("http://app.test:{}/", server.addr.port());
        let page = fetcher.fetch(&url, &FetchOptions::default()).await.unwrap();
        assert_eq!(page.text(), format!("app.test:{}", server.addr.port()));
        assert_eq!(recorder.attempts(), vec![server.addr]);
    })
    .await;
}

/// A server on the allowed address that redirects every request to `location`.
async fn redirector(location: String) -> super::servers::Server {
    let app = Router::new().route(
        "/",
        get(move || {
            let location = location.clone();
            async move { (StatusCode::FOUND, [(header::LOCATION, location)]).into_response() }
        }),
    );
    serve(app).await
}

async fn assert_redirect_blocked(location: String, want: AddressClass, canary: Option<&Canary>) {
    let server = redirector(location.clone()).await;
    let recorder = Recorder::default();
    let resolver = StaticResolver::new().with("internal.test", ["10.0.0.7".parse().unwrap()]);
    let fetcher = builder_allowing(&[server.addr], &recorder)
        .resolver(Arc::new(resolver))
        .build()
        .unwrap();
    match fetcher
        .fetch(&server.url("/"), &FetchOptions::default())
        .await
    {
        Err(FetchError::Blocked { class, .. }) => assert_eq!(class, want, "{location}"),
        other => panic!("{location}: expected Blocked({want}), got {other:?}"),
    }
    assert_eq!(recorder.attempts(), vec![server.addr], "{location}");
    if let Some(canary) = canary {
        assert_eq!(canary.accepts(), 0, "{location}");
    }
}

#[tokio::test]
async fn redirect_to_loopback_canary() {
    within(async {
        let canary = Canary::loopback().await;
        let port = canary.addr.port();
        for location in [
            format!("http://127.0.0.1:{port}/"),
            format!("http://2130706433:{port}/"),
            format!("http://0x7f.1:{port}/"),
            format!("http://127.1:{port}/"),
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            format!("//127.0.0.1:{port}/scheme-relative"),
        ] {
            assert_redirect_blocked(location, AddressClass::Loopback, Some(&canary)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn redirect_to_metadata_ip() {
    within(async {
        for location in [
            "http://169.254.169.254/latest/meta-data/iam/",
            "http://0xa9fea9fe/",
            "http://[::ffff:169.254.169.254]/",
            "http://[fd00:ec2::254]/",
        ] {
            assert_redirect_blocked(location.to_owned(), AddressClass::Metadata, None).await;
        }
    })
    .await;
}

#[tokio::test]
async fn redirect_to_ipv6_loopback_canary() {
    within(async {
        // Hosts without IPv6 cannot bind [::1]; the refusal is still checked.
        let canary = Canary::bind("[::1]:0").await.ok();
        let port = canary.as_ref().map_or(9, |c| c.addr.port());
        for location in [
            format!("http://[::1]:{port}/"),
            format!("http://[0:0:0:0:0:0:0:1]:{port}/"),
        ] {
            assert_redirect_blocked(location, AddressClass::Loopback, canary.as_ref()).await;
        }
    })
    .await;
}

#[tokio::test]
async fn redirect_to_name_resolving_to_private_network() {
    within(async {
        assert_redirect_blocked(
            "http://internal.test/admin".to_owned(),
            AddressClass::Private,
            None,
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn redirect_to_other_schemes_is_refused() {
    within(async {
        for location in [
            "file:///etc/passwd",
            "gopher://127.0.0.1:6379/_x",
            "data:text/plain,x",
        ] {
            let server = redirector(location.to_owned()).await;
            let recorder = Recorder::default();
            let fetcher = builder_allowing(&[server.addr], &recorder).build().unwrap();
            let err = fetcher
                .fetch(&server.url("/"), &FetchOptions::default())
                .await
                .unwrap_err();
            assert!(
                matches!(err, FetchError::UnsupportedScheme { .. }),
                "{location}: {err:?}"
            );
            assert_eq!(recorder.attempts(), vec![server.addr]);
        }
    })
    .await;
}

#[tokio::test]
async fn redirect_with_credentials_is_refused() {
    within(async {
        let server = redirector("http://admin:pw@example.com/".to_owned()).await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder).build().unwrap();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Credentials { .. }), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn socket_allow_list_is_exact() {
    within(async {
        let server = serve(Router::new().route("/", get(|| async { "ok" }))).await;
        let canary = Canary::loopback().await;
        let recorder = Recorder::default();
        let fetcher = builder_allowing(&[server.addr], &recorder).build().unwrap();
        let ok = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap();
        assert_eq!(ok.text(), "ok");
        let err = fetcher
            .fetch(
                &format!("http://{}/", canary.addr),
                &FetchOptions::default(),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Blocked { .. }), "{err:?}");
        // Same port on another loopback address is not the allowed socket either.
        let other = format!("http://127.0.0.3:{}/", server.addr.port());
        let err = fetcher
            .fetch(&other, &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Blocked { .. }), "{err:?}");
        assert_eq!(recorder.attempts(), vec![server.addr]);
        assert_eq!(canary.accepts(), 0);
    })
    .await;
}

#[tokio::test]
async fn private_network_opt_in_opens_loopback_but_not_metadata() {
    within(async {
        let server = serve(Router::new().route("/", get(|| async { "local" }))).await;
        let recorder = Recorder::default();
        let fetcher = Fetcher::builder()
            .allow_private_network(true)
            .on_connect(recorder.observer())
            .build()
            .unwrap();
        let page = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap();
        assert_eq!(page.text(), "local");
        for (url, class) in [
            ("http://169.254.169.254/", AddressClass::Metadata),
            ("http://[fd00:ec2::254]/", AddressClass::Metadata),
            (
                &*format!("http://0.0.0.0:{}/", server.addr.port()),
                AddressClass::Unspecified,
            ),
            ("http://224.0.0.1/", AddressClass::Multicast),
        ] {
            match fetcher.fetch(url, &FetchOptions::default()).await {
                Err(FetchError::Blocked { class: got, .. }) => assert_eq!(got, class, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        assert_eq!(recorder.attempts(), vec![server.addr]);
    })
    .await;
}

#[tokio::test]
async fn default_policy_blocks_the_local_server() {
    within(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = serve_on(
            listener,
            Router::new().route("/", get(|| async { "secret" })),
        );
        let recorder = Recorder::default();
        let fetcher = Fetcher::builder()
            .on_connect(recorder.observer())
            .build()
            .unwrap();
        let err = fetcher
            .fetch(&server.url("/"), &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Blocked { .. }), "{err:?}");
        assert_eq!(recorder.attempts(), Vec::<SocketAddr>::new());
    })
    .await;
}

#[test]
fn policy_check_matches_mapped_form_of_allowed_socket() {
    let allowed: SocketAddr = "127.0.0.1:8080".parse().unwrap();
    let policy = Policy::new().allow_socket_addr(allowed);
    assert_eq!(policy.check(allowed), Ok(()));
    assert_eq!(
        policy.check("[::ffff:127.0.0.1]:8080".parse().unwrap()),
        Ok(())
    );
    assert_eq!(
        policy.check("127.0.0.1:8081".parse().unwrap()),
        Err(AddressClass::Loopback)
    );
    assert_eq!(policy.check("8.8.8.8:1".parse().unwrap()), Ok(()));
    assert!(!Policy::default().allows_private_network());
}

fn spell(value: u32, radix: u8) -> String {
    match radix {
        0 => format!("{value}"),
        1 => format!("0x{value:x}"),
        _ => format!("0{value:o}"),
    }
}

fn class_of_host(url: &url::Url) -> AddressClass {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => classify(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => classify(IpAddr::V6(ip)),
        other => panic!("{url}: not an address: {other:?}"),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

    /// Whatever the spelling (decimal, hex, octal, short forms, IPv4-mapped,
    /// NAT64, 6to4), an IPv4 address parses to itself and gets the same class.
    #[test]
    fn every_spelling_of_an_ipv4_address_gets_its_class(
        n: u32,
        radix in proptest::array::uniform4(0u8..3),
    ) {
        let ip = Ipv4Addr::from(n);
        let want = classify(IpAddr::V4(ip));
        let [a, b, c, d] = ip.octets();
        let v4_spellings = [
            format!("http://{}/", spell(n, radix[0])),
            format!(
                "http://{}.{}.{}.{}/",
                spell(a.into(), radix[0]),
                spell(b.into(), radix[1]),
                spell(c.into(), radix[2]),
                spell(d.into(), radix[3]),
            ),
            format!("http://{}.{}/", spell(a.into(), radix[1]), spell(n & 0xff_ffff, radix[2])),
            format!("http://{a}.{b}.{}:8080/x", spell(n & 0xffff, radix[3])),
        ];
        for text in &v4_spellings {
            let url = parse_url(text).unwrap();
            proptest::prop_assert_eq!(url.host(), Some(url::Host::Ipv4(ip)), "{}", text);
        }
        let hi = n >> 16;
        let lo = n & 0xffff;
        let v6_spellings = [
            format!("http://[::ffff:{ip}]/"),
            format!("http://[::ffff:{hi:x}:{lo:x}]/"),
            format!("http://[64:ff9b::{ip}]/"),
            format!("http://[2002:{hi:x}:{lo:x}::1]/"),
        ];
        for text in v4_spellings.iter().chain(&v6_spellings) {
            let url = parse_url(text).unwrap();
            proptest::prop_assert_eq!(class_of_host(&url), want, "{}", text);
        }
    }

    /// The default policy lets through exactly the public addresses.
    #[test]
    fn default_policy_allows_exactly_public_addresses(bits: u128, port: u16) {
        let policy = Policy::new();
        for ip in [
            IpAddr::V6(std::net::Ipv6Addr::from(bits)),
            IpAddr::V4(Ipv4Addr::from(bits as u32)),
        ] {
            let class = classify(ip);
            let verdict = policy.check(SocketAddr::new(ip, port));
            proptest::prop_assert_eq!(verdict.is_ok(), class == AddressClass::Public, "{}", ip);
        }
    }
}
