#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

const OPENAI_KEY: &str = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123";
const GITHUB_TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
const SLACK_TOKEN: &str = "xoxb-1234567890-abcdefghij";
const AWS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";

#[test]
fn secret_keys_are_whole_words_in_any_spelling() {
    for key in [
        "password",
        "PASSWORD",
        "db_password",
        "passwd",
        "secret",
        "client_secret",
        "clientSecret",
        "token",
        "GITHUB_TOKEN",
        "accessToken",
        "refresh-token",
        "api_key",
        "apiKey",
        "apikey",
        "x-api-key",
        "X-Api-Key",
        "Authorization",
        "headers.Authorization",
        "Proxy-Authorization",
        "cookie",
        "Set-Cookie",
        "private_key",
        "privateKeyPem",
        "credential",
        "credentials",
        "aws_access_key_id",
        "AWS_SECRET_ACCESS_KEY",
        "token_count",
    ] {
        assert!(is_secret_key(key), "{key} should name a secret");
    }
    for key in [
        "tokens_used",
        "max_tokens",
        "maxTokens",
        "author",
        "path",
        "key",
        "primary_key",
        "keyboard",
        "secretary_name_x",
        "passage",
        "command",
    ] {
        assert!(!is_secret_key(key), "{key} should not name a secret");
    }
}

#[test]
fn values_of_secret_keys_are_redacted_at_any_depth() {
    let args = json!({
        "url": "https://api.example.com",
        "password": "hunter2",
        "headers": {"Authorization": "Basic dXNlcjpwYXNz", "Accept": "text/html"},
        "accounts": [
            {"name": "a", "api_key": "k-111"},
            {"name": "b", "credentials": {"user": "u", "pin": 1234}}
        ],
        "tokens_used": 42,
        "token": null
    });
    assert_eq!(
        args_digest(&args),
        concat!(
            r#"{"accounts":[{"api_key":"[redacted]","name":"a"},{"credentials":"[redacted]","name":"b"}],"#,
            r#""headers":{"Accept":"text/html","Authorization":"[redacted]"},"#,
            r#""password":"[redacted]","token":null,"tokens_used":42,"url":"https://api.example.com"}"#
        )
    );
}

#[test]
fn credential_shaped_strings_are_redacted_under_any_key() {
    let args = json!({
        "command": format!("curl -H 'Authorization: Bearer abcdefgh12345678' https://x.test -d key={OPENAI_KEY}"),
        "note": format!("push with {GITHUB_TOKEN} then notify {SLACK_TOKEN}"),
        "aws": format!("id {AWS_KEY_ID} region eu"),
        "db": "postgres://admin:s3cr3t-pw@db.internal:5432/app",
        "plain": "ssh://git@github.com/org/repo"
    });
    assert_eq!(
        args_digest(&args),
        concat!(
            r#"{"aws":"id [redacted] region eu","#,
            r#""command":"curl -H 'Authorization: [redacted]' https://x.test -d key=[redacted]","#,
            r#""db":"postgres://admin:[redacted]@db.internal:5432/app","#,
            r#""note":"push with [redacted] then notify [redacted]","#,
            r#""plain":"ssh://git@github.com/org/repo"}"#
        )
    );
}

#[test]
fn assignments_to_secret_names_inside_text_are_redacted() {
    assert_eq!(
        redact_text("export GITHUB_TOKEN=abc123 && DB_PASSWORD='p w' make"),
        "export GITHUB_TOKEN=[redacted] && DB_PASSWORD='[redacted]' make"
    );
    assert_eq!(
        redact_text(r#"mysql --password hunter2 -e 'select 1'"#),
        "mysql --password [redacted] -e 'select 1'"
    );
    assert_eq!(
        redact_text(r#"{"client_secret": "abc", "scope": "read"}"#),
        r#"{"client_secret": "[redacted]", "scope": "read"}"#
    );
    assert_eq!(
        redact_text("curl -H \"Authorization: Basic dXNlcjpwYXNz\" x"),
        "curl -H \"Authorization: [redacted]\" x"
    );
    // Prose that names a secret without giving one stays.
    assert_eq!(
        redact_text("the password is in the vault"),
        "the password is in the vault"
    );
    assert_eq!(
        redact_text("max_tokens=100 tokens_used=5"),
        "max_tokens=100 tokens_used=5"
    );
}

#[test]
fn look_alikes_of_token_prefixes_stay() {
    for text in [
        "task-1234567890123456789012",
        "sk-short",
        "ghp_short",
        "AKIA1234",
        "AKIAIOSFODNN7EXAMPLEXX",
        "the bearer of news",
        "https://example.com/path?q=1",
        "user@example.com",
    ] {
        assert_eq!(redact_text(text), text);
    }
}

#[test]
fn private_key_blocks_are_redacted_whole() {
    let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUJDREVGR0hJSktMTU5PUA==\n-----END OPENSSH PRIVATE KEY-----\n";
    let text = format!("write this:\n{pem}done");
    assert_eq!(redact_text(&text), "write this:\n[redacted]\ndone");
    // A public certificate is not a secret.
    let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
    assert_eq!(redact_text(cert), cert);
    // A block cut short is redacted to the end.
    assert_eq!(
        redact_text("key: -----BEGIN RSA PRIVATE KEY-----\nMIIEow"),
        "key: [redacted]"
    );
}

#[test]
fn secrets_in_arrays_keys_and_stringified_arguments_are_redacted() {
    let args = json!([OPENAI_KEY, {"nested": [[{"Cookie": "sid=1"}]]}]);
    assert_eq!(
        args_digest(&args),
        r#"["[redacted]",{"nested":[[{"Cookie":"[redacted]"}]]}]"#
    );
    // Arguments sent as a JSON string are parsed, so their keys are seen.
    let stringified = json!(r#"{"path": "a.txt", "api_key": "plainvalue"}"#);
    assert_eq!(
        args_digest(&stringified),
        r#"{"api_key":"[redacted]","path":"a.txt"}"#
    );
    // Malformed JSON text is still scanned for assignments.
    let broken = json!(r#"{"path": "a.txt", "password": "plainvalue""#);
    let digest = args_digest(&broken);
    assert!(!digest.contains("plainvalue"), "{digest}");
    // A secret used as a key.
    let digest = args_digest(&json!({ OPENAI_KEY: 1 }));
    assert_eq!(digest, r#"{"[redacted]":1}"#);
}

#[test]
fn long_strings_are_cut_with_their_length() {
    let long = "x".repeat(500);
    assert_eq!(
        args_digest(&json!({ "content": long })),
        format!(r#"{{"content":"{}… [cut, 500 chars]"}}"#, "x".repeat(200))
    );
    // Characters, not bytes.
    let wide = "é".repeat(201);
    assert_eq!(
        args_digest(&json!(wide)),
        format!(r#""{}… [cut, 201 chars]""#, "é".repeat(200))
    );
}

#[test]
fn a_secret_past_the_cut_is_redacted_not_cut_in_half() {
    let text = format!("{}{OPENAI_KEY}", "a ".repeat(95));
    let digest = args_digest(&json!({ "text": text }));
    assert!(digest.contains("[redacted]"), "{digest}");
    assert!(!digest.contains("sk-proj"), "{digest}");
}

#[test]
fn a_huge_string_is_scanned_at_its_start_only_and_cut() {
    let mut content = format!("token={OPENAI_KEY}\n-----BEGIN RSA PRIVATE KEY-----\n");
    content.push_str(&"QUJD".repeat(250_000));
    let total = content.chars().count();
    let digest = args_digest(&json!({ "content": content }));
    assert_eq!(
        digest,
        format!(r#"{{"content":"token=[redacted]\n[redacted]… [cut, {total} chars]"}}"#)
    );
    // A redaction that ends a string after its cut point still leaves the head whole.
    let prefix = "é".repeat(199);
    let digest = args_digest(&json!(format!(
        "{prefix}{OPENAI_KEY}{}",
        "z".repeat(20_000)
    )));
    assert_eq!(
        digest,
        format!(
            r#""{prefix}[… [cut, {} chars]""#,
            199 + OPENAI_KEY.len() + 20_000
        )
    );
}

#[test]
fn the_whole_digest_is_bounded() {
    let args: serde_json::Map<String, Value> = (0..100)
        .map(|i| (format!("field{i:03}"), json!("y".repeat(150))))
        .collect();
    let digest = args_digest(&Value::Object(args));
    assert_eq!(digest.chars().count(), MAX_DIGEST_CHARS);
    assert!(
        digest.ends_with(" chars]"),
        "{}",
        &digest[digest.len() - 40..]
    );
    assert!(digest.starts_with(r#"{"field000":"yyy"#));
}

#[test]
fn plain_arguments_are_compact_json() {
    assert_eq!(
        args_digest(&json!({"path": "src/main.rs", "offset": 10, "all": true})),
        r#"{"all":true,"offset":10,"path":"src/main.rs"}"#
    );
    assert_eq!(args_digest(&json!({})), "{}");
    assert_eq!(args_digest(&Value::Null), "null");
}

#[derive(Default)]
struct Collect(std::sync::Mutex<Vec<CallRecord>>);

impl CallLog for Collect {
    fn record(&self, record: CallRecord) {
        self.0.lock().unwrap().push(record);
    }
}

#[tokio::test]
async fn the_registry_records_every_call_once_its_envelope_is_final() {
    use crate::{Registry, Reply, Session, ToolSpec};
    use std::sync::Arc;

    let mut registry = Registry::new(Session::new(std::env::temp_dir()));
    registry
        .register_fn(
            ToolSpec::describe("echo", "Echoes.").output_schema(json!({"type": "object"})),
            |_ctx, args| async move { Ok(Reply::new(args, "echoed")) },
        )
        .unwrap();
    let log = Arc::new(Collect::default());
    registry.set_call_log(Some(log.clone()));

    let ok = registry
        .execute("echo", json!({"password": "hunter2", "n": 1}))
        .await;
    let unknown = registry.execute("nope", json!({"token": "abc"})).await;
    let records = log.0.lock().unwrap().clone();
    assert_eq!(records.len(), 2);

    let first = &records[0];
    assert_eq!(
        (
            first.tool.as_str(),
            first.status.as_str(),
            first.error_code.as_deref()
        ),
        ("echo", "success", None)
    );
    assert_eq!(first.call_id, ok.context.call_id);
    assert_eq!(first.args, r#"{"n":1,"password":"[redacted]"}"#);
    assert_eq!(
        first.bytes_out,
        ("echoed".len() + serde_json::to_string(&ok.data).unwrap().len()) as u64
    );
    assert_eq!(first.duration_ms, ok.stats.time_ms);
    assert!(first.at_ms > 1_600_000_000_000);

    let second = &records[1];
    assert_eq!(
        (
            second.tool.as_str(),
            second.status.as_str(),
            second.error_code.as_deref()
        ),
        ("nope", "error", Some("UNKNOWN_TOOL"))
    );
    assert_eq!(second.call_id, unknown.context.call_id);
    assert_eq!(second.args, r#"{"token":"[redacted]"}"#);

    // Without a log, nothing is recorded.
    registry.set_call_log(None);
    registry.execute("echo", json!({})).await;
    assert_eq!(log.0.lock().unwrap().len(), 2);
}
