//! `/healthz`: 200 with the replica, its store and scheduler while it can take
//! calls; 503 when the store does not answer (within the bound) or the server
//! drains; never a token, never where the store is.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::{Registry, Session};
use toolbelt_store::{Location, StoreHandle};

use crate::http::{
    Health, STORE_CHECK_TIMEOUT_MS, SchedulerState, ServeConfig, bind, router, serve_listener,
};

const BIND: &str = "127.0.0.1:8750";

fn config(store: Option<StoreHandle>, health: &Health) -> ServeConfig {
    let mut config = ServeConfig::new(BIND.parse().expect("address"), "a-token-for-tests");
    config.store = store;
    config.health = health.clone();
    config
}

/// `GET /healthz` without a token: the status and the body.
async fn healthz(config: &ServeConfig) -> (StatusCode, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = Arc::new(Registry::new(Session::new(dir.path())));
    let request = Request::get("/healthz")
        .header(header::HOST, BIND)
        .body(Body::empty())
        .expect("request");
    let (status, _, bytes) = crate::test_support::respond(router(registry, config), request).await;
    (status, serde_json::from_slice(&bytes).expect("JSON"))
}

#[tokio::test]
async fn a_replica_without_a_store_says_who_it_is() {
    let health = Health::new("r1", "1.2.3");
    let (status, body) = healthz(&config(None, &health)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({ "status": "ok", "replica": "r1", "version": "1.2.3", "store": null, "scheduler": "off" })
    );
}

#[tokio::test]
async fn a_reachable_store_and_a_running_scheduler_are_200() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreHandle::lazy(Location::in_state_dir(dir.path()));
    let health = Health::new("r2", "1.2.3");
    health.set_scheduler(SchedulerState::Running);
    let (status, body) = healthz(&config(Some(store), &health)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "ok");
    assert_eq!(body["scheduler"], "running");
    assert_eq!(body["store"]["backend"], "sqlite");
    assert_eq!(body["store"]["reachable"], true);
    assert!(body["store"]["latency_ms"].is_u64(), "{body}");
}

#[tokio::test]
async fn a_store_that_does_not_answer_is_503_within_the_bound_and_not_named() {
    // Nothing listens on port 1 of the loopback address.
    let url = "postgres://someone:secret@127.0.0.1:1/nowhere";
    let store = StoreHandle::lazy(Location::Postgres(url.into()));
    let health = Health::new("r3", "1.2.3");
    let started = Instant::now();
    let (status, body) = healthz(&config(Some(store), &health)).await;
    let took = started.elapsed();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "unavailable");
    assert_eq!(
        body["store"]["backend"], "postgres",
        "the backend only: {body}"
    );
    assert_eq!(body["store"]["reachable"], false);
    let text = body.to_string();
    assert!(
        !text.contains("127.0.0.1") && !text.contains("secret") && !text.contains("nowhere"),
        "{text}"
    );
    assert!(
        took < Duration::from_millis(STORE_CHECK_TIMEOUT_MS + 2_000),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_draining_server_is_503() {
    let health = Health::new("r4", "1.2.3");
    health.set_scheduler(SchedulerState::Stopping);
    health.start_draining();
    let (status, body) = healthz(&config(None, &health)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["status"], "draining");
    assert_eq!(body["scheduler"], "stopping");
}

#[test]
fn each_server_is_a_replica_of_its_own_by_default() {
    let (a, b) = (Health::default(), Health::default());
    assert_ne!(a.replica(), b.replica());
    assert!(a.replica().contains(&format!("-{}-", std::process::id())));
    assert_eq!(a.version(), env!("CARGO_PKG_VERSION"));
}

/// Told to stop, the server drains: `/healthz` says so, a request under way is
/// answered, and no new connection is taken.
#[tokio::test]
async fn a_stopping_server_finishes_the_request_under_way_and_takes_no_new_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    let dir = tempfile::tempdir().expect("tempdir");
    let mut registry = Registry::new(Session::new(dir.path()));
    toolbelt_tools::register_builtins(&mut registry).expect("builtins register");
    let listener = bind("127.0.0.1:0".parse().expect("address"))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let health = Health::new("r5", "1.2.3");
    let mut config = config(None, &health);
    config.bind = addr;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_listener(
        listener,
        Arc::new(registry),
        config,
        async move {
            let _ = stopped.await;
        },
    ));
    // A call whose body is still on the way.
    let body = r#"{"thought": "under way"}"#;
    let mut busy = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /v1/tools/think HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer a-token-for-tests\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    busy.write_all(head.as_bytes()).await.expect("write");
    busy.write_all(&body.as_bytes()[..5]).await.expect("write");
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).expect("the server runs");
    let deadline = Instant::now() + crate::test_support::TEST_TIMEOUT;
    while !health.is_draining() {
        assert!(Instant::now() < deadline, "never drained");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "a new connection was taken while draining"
    );
    busy.write_all(&body.as_bytes()[5..]).await.expect("write");
    let mut answer = String::new();
    tokio::time::timeout(
        crate::test_support::TEST_TIMEOUT,
        busy.read_to_string(&mut answer),
    )
    .await
    .expect("answered")
    .expect("read");
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.contains(r#""status":"success""#), "{answer}");
    tokio::time::timeout(crate::test_support::TEST_TIMEOUT, server)
        .await
        .expect("the server stops")
        .expect("no panic")
        .expect("served");
}
