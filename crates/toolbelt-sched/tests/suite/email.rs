//! The email channel against a real SMTP server: Python's aiosmtpd, from the
//! virtual environment of tests/python (tests/python/setup.sh makes it).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use toolbelt_sched::{ChannelConfig, ChannelKind, NewMessage, TlsMode};
use toolbelt_store::{OutboxStatus, testing};

use super::{TEST_TIMEOUT, system_messaging};

/// The Python of the tests' virtual environment, made (or found up to date) by
/// tests/python/setup.sh.
fn venv_python() -> PathBuf {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(repo.join("tests/python/setup.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("tests/python/setup.sh runs");
    assert!(out.status.success(), "tests/python/setup.sh failed");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()).join("bin/python")
}

#[tokio::test]
async fn email_goes_through_smtp_with_its_id_and_attachments() {
    let python = venv_python();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let maildir = tempfile::tempdir().unwrap();
    let mut server = tokio::process::Command::new(python)
        .args([
            "-m",
            "aiosmtpd",
            "-n",
            "-l",
            &format!("127.0.0.1:{port}"),
            "-c",
            "aiosmtpd.handlers.Mailbox",
        ])
        .arg(maildir.path().join("box"))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait for it to listen.
    let mut up = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "aiosmtpd did not start");

    let t = testing::sqlite().await.unwrap();
    let config = ChannelConfig {
        kind: Some(ChannelKind::Email),
        host: Some("127.0.0.1".into()),
        port: Some(port),
        tls: Some(TlsMode::None),
        from: Some("toolbelt <bot@example.test>".into()),
        subject: Some("Nightly report".into()),
        ..ChannelConfig::default()
    };
    let m = system_messaging(
        &t.location,
        &[("mail", config)],
        &[],
        tempfile::tempdir().unwrap().path(),
    );
    let id = m
        .outbox()
        .enqueue(NewMessage {
            channel: "mail".into(),
            chat_id: Some("ops@example.test".into()),
            content: "All 412 tests passed.\nSee you tomorrow.".into(),
            reply_to: Some("<earlier@example.test>".into()),
            media: vec![toolbelt_sched::Attachment {
                name: "report.txt".into(),
                content_type: "text/plain".into(),
                data: "cmVwb3J0IGJvZHk=".into(),
            }],
        })
        .await
        .unwrap();
    let sent = tokio::time::timeout(TEST_TIMEOUT, m.outbox().deliver(&id, 10_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sent.status, OutboxStatus::Sent, "{:?}", sent.last_error);

    // The mailbox holds one mail, as sent.
    let new = maildir.path().join("box/new");
    let files: Vec<_> = std::fs::read_dir(&new).unwrap().collect();
    assert_eq!(files.len(), 1);
    let mail = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    for want in [
        "From: toolbelt <bot@example.test>",
        "To: ops@example.test",
        "Subject: Nightly report",
        &format!("Message-ID: <{id}@toolbelt>"),
        "In-Reply-To: <earlier@example.test>",
        "All 412 tests passed.",
        "filename=\"report.txt\"",
        "report body",
    ] {
        assert!(mail.contains(want), "{want:?} not in:\n{mail}");
    }
    server.kill().await.unwrap();
}
