//! Each channel against a loopback server speaking its API; retries, Retry-After,
//! refusals; secrets kept out of errors; the outbox surviving a dead deliverer.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_sched::{
    ChannelConfig, ChannelKind, Clock, LEASE_MS, ManualClock, Messaging, NewMessage, SchedError,
};
use toolbelt_store::{OutboxMessage, OutboxStatus, claim_message, get_message, testing};

use super::server::{Answer, Server};
use super::{TEST_TIMEOUT, messaging, system_messaging};

fn webhook(kind: ChannelKind, url: &str) -> ChannelConfig {
    ChannelConfig {
        kind: Some(kind),
        url: Some(url.to_string()),
        ..ChannelConfig::default()
    }
}

fn text(channel: &str, chat: Option<&str>, content: &str) -> NewMessage {
    NewMessage {
        channel: channel.into(),
        chat_id: chat.map(str::to_string),
        content: content.into(),
        ..NewMessage::default()
    }
}

/// Accepts `message` and delivers it, waiting up to `wait_ms`: its id and outcome.
async fn send(m: &Messaging, message: NewMessage, wait_ms: i64) -> (String, OutboxMessage) {
    let id = m.outbox().enqueue(message).await.unwrap();
    let done = tokio::time::timeout(TEST_TIMEOUT, m.outbox().deliver(&id, wait_ms))
        .await
        .unwrap()
        .unwrap();
    (id, done)
}

/// Messaging with one webhook channel, `ops`, posting to `url`.
fn ops(location: &toolbelt_store::Location, url: &str) -> Messaging {
    system_messaging(
        location,
        &[("ops", webhook(ChannelKind::Webhook, url))],
        &[],
        tempfile::tempdir().unwrap().path(),
    )
}

#[tokio::test]
async fn webhook_posts_the_message_with_its_id_as_idempotency_key() {
    let t = testing::sqlite().await.unwrap();
    let server = Server::start(vec![Answer::new(200, "")]).await;
    let m = ops(&t.location, &format!("{}/hooks/abc", server.url));
    let message = NewMessage {
        reply_to: Some("41".into()),
        ..text("ops", Some("room-1"), "deploy done")
    };
    let (id, sent) = send(&m, message, 5_000).await;
    assert_eq!(sent.status, OutboxStatus::Sent);
    let got = server.received();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].method.as_str(), got[0].path.as_str()),
        ("POST", "/hooks/abc")
    );
    assert_eq!(got[0].header("idempotency-key"), Some(id.as_str()));
    assert_eq!(got[0].header("content-type"), Some("application/json"));
    assert_eq!(
        got[0].json(),
        json!({"channel": "ops", "chat_id": "room-1", "content": "deploy done", "id": id, "reply_to": "41"})
    );
}

#[tokio::test]
async fn telegram_send_message_is_the_bot_api_and_its_errors_are_its_description() {
    let t = testing::sqlite().await.unwrap();
    let server = Server::start(vec![
        Answer::json(
            200,
            json!({"ok": true, "result": {"message_id": 7, "chat": {"id": -100123}, "text": "hi"}}),
        ),
        Answer::json(
            400,
            json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}),
        ),
    ])
    .await;
    let config = ChannelConfig {
        kind: Some(ChannelKind::Telegram),
        token_env: Some("TG_TOKEN".into()),
        base_url: Some(server.url.clone()),
        ..ChannelConfig::default()
    };
    let m = system_messaging(
        &t.location,
        &[("tg", config)],
        &[("TG_TOKEN", "123456:SECRET-token")],
        tempfile::tempdir().unwrap().path(),
    );
    // No chat: refused before it is accepted.
    let no_chat = m
        .outbox()
        .enqueue(text("tg", None, "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(&no_chat, SchedError::Request(m) if m.contains("needs a chat_id")),
        "{no_chat}"
    );

    let (_, sent) = send(&m, text("tg", Some("-100123"), "hi"), 5_000).await;
    assert_eq!(sent.status, OutboxStatus::Sent);
    let got = server.received();
    assert_eq!(got[0].path, "/bot123456:SECRET-token/sendMessage");
    assert_eq!(got[0].json(), json!({"chat_id": "-100123", "text": "hi"}));

    let (_, failed) = send(&m, text("tg", Some("999"), "hello?"), 5_000).await;
    assert_eq!(failed.status, OutboxStatus::Failed);
    assert_eq!(failed.attempts, 1, "a 400 is not retried");
    let error = failed.last_error.unwrap();
    assert!(
        error.contains("400") && error.contains("Bad Request: chat not found"),
        "{error}"
    );
    assert!(!error.contains("SECRET"), "{error}");
}

#[tokio::test]
async fn slack_and_discord_webhooks_get_their_own_bodies() {
    let t = testing::sqlite().await.unwrap();
    let slack = Server::start(vec![
        Answer::new(200, "ok"),
        Answer::new(400, "invalid_payload"),
    ])
    .await;
    let discord = Server::start(vec![Answer::new(204, "")]).await;
    let m = system_messaging(
        &t.location,
        &[
            (
                "team",
                webhook(
                    ChannelKind::Slack,
                    &format!("{}/services/T0/B0/xyz", slack.url),
                ),
            ),
            (
                "guild",
                webhook(
                    ChannelKind::Discord,
                    &format!("{}/api/webhooks/1/tok", discord.url),
                ),
            ),
        ],
        &[],
        tempfile::tempdir().unwrap().path(),
    );
    let (_, a) = send(&m, text("team", None, "*build* passed"), 5_000).await;
    let (b, b_sent) = send(&m, text("guild", None, "build passed"), 5_000).await;
    assert_eq!(
        (a.status, b_sent.status),
        (OutboxStatus::Sent, OutboxStatus::Sent)
    );
    assert_eq!(
        slack.received()[0].json(),
        json!({"text": "*build* passed"})
    );
    assert_eq!(slack.received()[0].path, "/services/T0/B0/xyz");
    assert_eq!(
        discord.received()[0].json(),
        json!({"content": "build passed"})
    );
    assert_eq!(
        discord.received()[0].header("idempotency-key"),
        Some(b.as_str())
    );

    let (_, refused) = send(&m, text("team", None, "again"), 5_000).await;
    assert_eq!(refused.status, OutboxStatus::Failed);
    assert!(refused.last_error.unwrap().contains("invalid_payload"));
    // Discord takes 2000 characters; attachments go nowhere on Slack.
    let long = m
        .outbox()
        .enqueue(text("guild", None, &"x".repeat(2_001)))
        .await
        .unwrap_err();
    assert!(long.to_string().contains("at most 2000"), "{long}");
}

/// 500 twice then 200 is one delivery with one key; a 5xx forever stops after five
/// attempts, with the same key each time.
#[tokio::test]
async fn server_errors_are_retried_with_one_key_up_to_five_attempts() {
    let t = testing::sqlite().await.unwrap();
    for (answers, status, attempts) in [
        (
            vec![
                Answer::new(500, "boom"),
                Answer::new(503, "busy"),
                Answer::new(200, ""),
            ],
            OutboxStatus::Sent,
            3,
        ),
        (
            vec![Answer::new(502, "bad gateway")],
            OutboxStatus::Failed,
            5,
        ),
    ] {
        let server = Server::start(answers).await;
        let m = ops(&t.location, &server.url);
        let (id, done) = send(&m, text("ops", None, "x"), 10_000).await;
        assert_eq!((done.status, done.attempts), (status, attempts));
        if status == OutboxStatus::Failed {
            let error = done.last_error.unwrap();
            assert!(error.contains("gave up after 5 attempts"), "{error}");
        }
        let got = server.received();
        let keys: Vec<_> = got
            .iter()
            .map(|r| r.header("idempotency-key").unwrap().to_string())
            .collect();
        assert_eq!(keys, vec![id.clone(); attempts as usize]);
        assert!(got.iter().all(|r| r.json()["id"] == json!(id)));
    }
}

#[tokio::test]
async fn a_429_with_retry_after_waits_that_long() {
    let t = testing::sqlite().await.unwrap();
    let server = Server::start(vec![
        Answer::new(429, "slow down").header("Retry-After", "1"),
        Answer::new(200, ""),
    ])
    .await;
    let m = ops(&t.location, &server.url);
    let (_, sent) = send(&m, text("ops", None, "x"), 10_000).await;
    assert_eq!(sent.status, OutboxStatus::Sent);
    let got = server.received();
    assert_eq!(got.len(), 2);
    let waited = got[1].at - got[0].at;
    assert!(waited >= Duration::from_millis(1_000), "waited {waited:?}");
    assert!(waited < Duration::from_millis(3_000), "waited {waited:?}");
}

#[tokio::test]
async fn unreachable_channel_errors_carry_no_url_or_token() {
    let t = testing::sqlite().await.unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let m = system_messaging(
        &t.location,
        &[
            (
                "tg",
                ChannelConfig {
                    kind: Some(ChannelKind::Telegram),
                    base_url: Some(base.clone()),
                    chat_id: Some("1".into()),
                    ..ChannelConfig::default()
                },
            ),
            (
                "hook",
                webhook(ChannelKind::Webhook, &format!("{base}/secret-path-XYZ")),
            ),
        ],
        &[("TELEGRAM_BOT_TOKEN", "999:TOPSECRET")],
        tempfile::tempdir().unwrap().path(),
    );
    for channel in ["tg", "hook"] {
        let id = m.outbox().enqueue(text(channel, None, "x")).await.unwrap();
        let pending = m.outbox().deliver(&id, 0).await.unwrap();
        assert_eq!(pending.status, OutboxStatus::Pending);
        let error = pending.last_error.unwrap();
        assert!(
            error.contains("cannot connect") || error.contains("request failed"),
            "{error}"
        );
        assert!(
            !error.contains("TOPSECRET") && !error.contains("secret-path-XYZ"),
            "{error}"
        );
    }
    // Nor does the channel's Debug form.
    let shown = format!("{:?}", m.channels());
    assert!(
        !shown.contains("TOPSECRET") && !shown.contains("secret-path-XYZ"),
        "{shown}"
    );
}

#[tokio::test]
async fn unknown_channels_are_refused_naming_the_configured_ones() {
    let t = testing::sqlite().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = ChannelConfig {
        kind: Some(ChannelKind::File),
        ..ChannelConfig::default()
    };
    let m = system_messaging(
        &t.location,
        &[("local", file.clone()), ("log", file)],
        &[],
        dir.path(),
    );
    let e = m
        .outbox()
        .enqueue(text("slack", None, "x"))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "channel \"slack\" is not configured; the configured channels are: local, log"
    );
}

#[tokio::test]
async fn a_message_left_by_a_dead_deliverer_is_delivered_once_after_its_lease() {
    for t in testing::both().await.unwrap() {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(vec![Answer::new(200, "")]).await;
        let clock = ManualClock::new(1_700_000_000_000);
        let config = [("ops", webhook(ChannelKind::Webhook, &server.url))];
        let first = messaging(&t.location, &config, &[], dir.path(), clock.clone());
        let id = first
            .outbox()
            .enqueue(text("ops", None, "survives"))
            .await
            .unwrap();
        // The first deliverer takes the lease and dies before sending.
        let store = first.store().store().await.unwrap();
        let now = clock.now_ms();
        assert!(
            claim_message(store, &id, now, now + LEASE_MS)
                .await
                .unwrap()
                .is_some()
        );
        drop(first);

        // A restarted server: nothing to do while the lease holds, then one delivery.
        let second = messaging(&t.location, &config, &[], dir.path(), clock.clone());
        assert_eq!(second.outbox().drain().await.unwrap(), 0);
        clock.advance(LEASE_MS);
        assert_eq!(second.outbox().drain().await.unwrap(), 1);
        assert_eq!(second.outbox().drain().await.unwrap(), 0);
        let m = get_message(second.store().store().await.unwrap(), &id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((m.status, m.attempts), (OutboxStatus::Sent, 2));
        let got = server.received();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].header("idempotency-key"), Some(id.as_str()));
    }
}

#[tokio::test]
async fn a_stopping_outbox_gives_back_the_lease_of_a_send_it_cuts_off() {
    for t in testing::both().await.unwrap() {
        // A channel that takes the request and never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                open.push(sock);
            }
        });
        let m = ops(&t.location, &url);
        let id = m
            .outbox()
            .enqueue(text("ops", None, "cut off"))
            .await
            .unwrap();
        let store = m.store().store().await.unwrap();
        let cancel = tokio_util::sync::CancellationToken::new();
        let running = tokio::spawn({
            let m = m.clone();
            let cancel = cancel.clone();
            async move { m.run(cancel).await }
        });
        let deadline = tokio::time::Instant::now() + TEST_TIMEOUT;
        while get_message(store, &id).await.unwrap().unwrap().status != OutboxStatus::Sending {
            assert!(tokio::time::Instant::now() < deadline, "never leased");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let stopped_at = std::time::Instant::now();
        cancel.cancel();
        tokio::time::timeout(TEST_TIMEOUT, running)
            .await
            .unwrap()
            .unwrap();
        let took = stopped_at.elapsed();
        assert!(
            took < Duration::from_millis(toolbelt_sched::STOP_SEND_GRACE_MS + 1_500),
            "stopping took {took:?}"
        );
        let back = get_message(store, &id).await.unwrap().unwrap();
        assert_eq!(
            (back.status, back.lease_until, back.attempts),
            (OutboxStatus::Pending, None, 0)
        );
        // Due now, for the next deliverer, not after the lease.
        assert!(back.next_attempt_at <= toolbelt_store::now_ms());
        held.abort();
    }
}

#[tokio::test]
async fn the_file_channel_appends_json_lines() {
    let t = testing::sqlite().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = system_messaging(
        &t.location,
        &[(
            "local",
            ChannelConfig {
                kind: Some(ChannelKind::File),
                path: Some("out/msgs.jsonl".into()),
                ..ChannelConfig::default()
            },
        )],
        &[],
        dir.path(),
    );
    let a = m
        .outbox()
        .enqueue(text("local", Some("me"), "one"))
        .await
        .unwrap();
    let b = m
        .outbox()
        .enqueue(text("local", None, "two\nlines"))
        .await
        .unwrap();
    m.outbox().drain().await.unwrap();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(dir.path().join("out/msgs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let mut got: Vec<_> = lines
        .iter()
        .map(|l| {
            (
                l["id"].as_str().unwrap().to_string(),
                l["content"].clone(),
                l["chat_id"].clone(),
            )
        })
        .collect();
    got.sort_by_key(|g| g.0.clone());
    let mut want = vec![
        (a, json!("one"), json!("me")),
        (b, json!("two\nlines"), json!(null)),
    ];
    want.sort_by_key(|g| g.0.clone());
    assert_eq!(got, want);
}

#[tokio::test]
async fn attachments_go_as_telegram_documents_and_in_the_webhook_body() {
    let t = testing::sqlite().await.unwrap();
    let tg = Server::start(vec![Answer::json(
        200,
        json!({"ok": true, "result": {"message_id": 1}}),
    )])
    .await;
    let hook = Server::start(vec![Answer::new(200, "")]).await;
    let config = ChannelConfig {
        kind: Some(ChannelKind::Telegram),
        base_url: Some(tg.url.clone()),
        chat_id: Some("42".into()),
        ..ChannelConfig::default()
    };
    let m = system_messaging(
        &t.location,
        &[
            ("tg", config),
            ("ops", webhook(ChannelKind::Webhook, &hook.url)),
        ],
        &[("TELEGRAM_BOT_TOKEN", "1:T")],
        tempfile::tempdir().unwrap().path(),
    );
    let media = vec![toolbelt_sched::Attachment {
        name: "report.txt".into(),
        content_type: "text/plain".into(),
        data: "cmVwb3J0IGJvZHk=".into(),
    }];
    for channel in ["tg", "ops"] {
        let message = NewMessage {
            media: media.clone(),
            ..text(channel, None, "see attached")
        };
        assert_eq!(send(&m, message, 5_000).await.1.status, OutboxStatus::Sent);
    }
    let got = tg.received();
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0].json(),
        json!({"chat_id": "42", "text": "see attached"})
    );
    assert_eq!(got[1].path, "/bot1:T/sendDocument");
    assert!(
        got[1]
            .header("content-type")
            .unwrap()
            .starts_with("multipart/form-data; boundary=")
    );
    let body = String::from_utf8_lossy(&got[1].body);
    assert!(body.contains("name=\"chat_id\"\r\n\r\n42\r\n"), "{body}");
    assert!(
        body.contains("name=\"document\"; filename=\"report.txt\""),
        "{body}"
    );
    assert!(body.contains("report body"), "{body}");
    let key = got[1].header("idempotency-key").unwrap().to_string();
    assert_eq!(
        key,
        format!("{}-1", got[0].header("idempotency-key").unwrap())
    );
    assert_eq!(
        hook.received()[0].json()["media"],
        json!([{"name": "report.txt", "content_type": "text/plain", "data_base64": "cmVwb3J0IGJvZHk="}])
    );
}

/// A Telegram message whose second attachment fails once: the next attempt sends
/// only that attachment, not the text and the first one again.
#[tokio::test]
async fn a_telegram_attempt_goes_on_from_the_part_that_failed() {
    let t = testing::sqlite().await.unwrap();
    let ok = || Answer::json(200, json!({"ok": true, "result": {"message_id": 1}}));
    let tg = Server::start(vec![
        ok(),
        ok(),
        Answer::json(
            500,
            json!({"ok": false, "description": "Internal Server Error"}),
        ),
        ok(),
    ])
    .await;
    let config = ChannelConfig {
        kind: Some(ChannelKind::Telegram),
        base_url: Some(tg.url.clone()),
        chat_id: Some("42".into()),
        ..ChannelConfig::default()
    };
    let m = system_messaging(
        &t.location,
        &[("tg", config)],
        &[("TELEGRAM_BOT_TOKEN", "1:T")],
        tempfile::tempdir().unwrap().path(),
    );
    let attachment = |name: &str| toolbelt_sched::Attachment {
        name: name.into(),
        content_type: "text/plain".into(),
        data: "cmVwb3J0IGJvZHk=".into(),
    };
    let message = NewMessage {
        media: vec![attachment("one.txt"), attachment("two.txt")],
        ..text("tg", None, "two reports")
    };
    let (id, done) = send(&m, message, 5_000).await;
    assert_eq!(done.status, OutboxStatus::Sent, "{done:?}");
    assert_eq!(done.attempts, 2);
    assert_eq!(done.parts_sent, 3, "the text and both attachments");
    let got: Vec<(String, String)> = tg
        .received()
        .iter()
        .map(|r| {
            let body = String::from_utf8_lossy(&r.body).to_string();
            let file = ["one.txt", "two.txt"]
                .into_iter()
                .find(|f| body.contains(f))
                .unwrap_or("-");
            (r.path.clone(), file.to_string())
        })
        .collect();
    let expected = |path: &str, file: &str| (format!("/bot1:T/{path}"), file.to_string());
    assert_eq!(
        got,
        vec![
            expected("sendMessage", "-"),
            expected("sendDocument", "one.txt"),
            expected("sendDocument", "two.txt"),
            expected("sendDocument", "two.txt"),
        ],
        "{id}"
    );
}

#[test]
fn email_addresses_that_do_not_parse_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |from: &str, chat_id: Option<&str>| {
        let config = ChannelConfig {
            kind: Some(ChannelKind::Email),
            host: Some("localhost".into()),
            from: Some(from.into()),
            chat_id: chat_id.map(Into::into),
            ..ChannelConfig::default()
        };
        let configs = [("mail".to_string(), config)].into_iter().collect();
        toolbelt_sched::Channels::from_config(&configs, &|_| None, dir.path())
            .err()
            .map(|e| e.to_string())
    };
    assert_eq!(
        refused("not an address", None).as_deref(),
        Some("channel \"mail\": its from is not an email address")
    );
    assert_eq!(
        refused("bot@example.com", Some("nobody")).as_deref(),
        Some("channel \"mail\": its chat_id (the default recipient) is not an email address")
    );
    assert_eq!(refused("bot@example.com", Some("me@example.com")), None);
}
