//! `message` and `cron` through the registry, as a model calls them: `message` only
//! with a channel, `cron` also with an agent to run prompts; refusals with what to
//! do, sends through the outbox, jobs added, listed, fired now and removed.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::{ErrorCode, Registry, Session, Status};
use toolbelt_sched::{ChannelConfig, ChannelKind, Channels, Messaging, Zone};
use toolbelt_store::{Location, StoreHandle};

use super::{builtins, call, error_message, success_data};

/// Registers `message` and `cron` with a file channel `local` (messages to
/// `<dir>/messages-local.jsonl`) and `extra` channels; the store in `dir`.
pub fn register(registry: &mut Registry, dir: &Path, extra: &[(&str, ChannelConfig)]) -> Messaging {
    let mut configs = BTreeMap::new();
    configs.insert(
        "local".to_string(),
        ChannelConfig {
            kind: Some(ChannelKind::File),
            ..ChannelConfig::default()
        },
    );
    for (name, c) in extra {
        configs.insert((*name).to_string(), c.clone());
    }
    let channels = Channels::from_config(&configs, &|_| None, dir).unwrap();
    let store = StoreHandle::lazy(Location::in_state_dir(dir));
    let messaging =
        Messaging::new(store, channels).with_default_zone(Zone::parse("Europe/Berlin").unwrap());
    assert!(toolbelt_tools::register_messaging(registry, &messaging).unwrap());
    messaging
}

fn lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("messages-local.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_tools_are_there_only_with_a_channel() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = builtins(dir.path());
    let none = Messaging::new(
        StoreHandle::lazy(Location::in_state_dir(dir.path())),
        Channels::none(),
    );
    assert!(!toolbelt_tools::register_messaging(&mut registry, &none).unwrap());
    assert!(!registry.has("message") && !registry.has("cron"));
    register(&mut registry, dir.path(), &[]);
    assert!(registry.has("message") && registry.has("cron"));
}

/// Answers every prompt with "Answered: <prompt>".
#[derive(Debug)]
struct Echo;

impl toolbelt_sched::PromptRunner for Echo {
    fn run<'a>(
        &'a self,
        job: &'a toolbelt_store::CronJob,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> toolbelt_core::BoxFuture<'a, toolbelt_sched::PromptRun> {
        Box::pin(std::future::ready(toolbelt_sched::PromptRun {
            outcome: toolbelt_sched::FINAL_ANSWER.into(),
            text: format!("Answered: {}", job.prompt.clone().unwrap_or_default()),
            run_id: Some("run-7".into()),
        }))
    }
}

#[tokio::test]
async fn without_channels_cron_runs_prompts_and_keeps_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = builtins(dir.path());
    let messaging = Messaging::new(
        StoreHandle::lazy(Location::in_state_dir(dir.path())),
        Channels::none(),
    )
    .with_prompt_runner(std::sync::Arc::new(Echo));
    assert!(toolbelt_tools::register_messaging(&mut registry, &messaging).unwrap());
    assert!(registry.has("cron") && !registry.has("message"));
    let add = json!({"action": "add", "name": "tidy", "schedule": "every 1h", "prompt": "Tidy the todo list"});
    let env = call(&registry, "cron", add).await;
    let job = &success_data(&env)["jobs"][0];
    assert_eq!(
        (&job["prompt"], &job["channel"], &job["message"]),
        (&json!("Tidy the todo list"), &Value::Null, &json!(""))
    );
    // run_now makes it due; the scheduler's next round runs it.
    let env = call(
        &registry,
        "cron",
        json!({"action": "run_now", "name": "tidy"}),
    )
    .await;
    assert_eq!(success_data(&env)["delivery"], "running");
    assert!(
        env.text.contains("its answer is kept as its last run"),
        "{}",
        env.text
    );
    assert_eq!(messaging.run_once().await.unwrap().len(), 1);
    let env = call(&registry, "cron", json!({"action": "list"})).await;
    let last = &success_data(&env)["jobs"][0]["last_run"];
    assert_eq!(
        (
            &last["status"],
            &last["outcome"],
            &last["result"],
            &last["run_id"]
        ),
        (
            &json!("answered"),
            &json!("final_answer"),
            &json!("Answered: Tidy the todo list"),
            &json!("run-7")
        )
    );
    assert!(
        env.text.contains(" prompt -> (kept): next ")
            && env
                .text
                .contains(" answered, final_answer: Answered: Tidy the todo list"),
        "{}",
        env.text
    );
}

#[tokio::test]
async fn message_goes_through_the_outbox_to_the_channel() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = builtins(dir.path());
    register(&mut registry, dir.path(), &[]);
    std::fs::write(dir.path().join("report.txt"), "all green").unwrap();
    let env = call(
        &registry,
        "message",
        json!({"channel": "local", "content": "Build passed", "chat_id": "me", "media": ["report.txt"]}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(
        (data["status"].clone(), data["attempts"].clone()),
        (json!("sent"), json!(1))
    );
    let got = lines(dir.path());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["id"], data["id"]);
    assert_eq!(got[0]["content"], json!("Build passed"));
    assert_eq!(
        got[0]["media"],
        json!([{"name": "report.txt", "content_type": "text/plain", "bytes": 9}])
    );
    assert!(env.text.contains("sent to local chat me"), "{}", env.text);
}

#[tokio::test]
async fn message_refusals_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = builtins(dir.path());
    let slack = ChannelConfig {
        kind: Some(ChannelKind::Slack),
        url: Some("http://127.0.0.1:9/hook".into()),
        ..ChannelConfig::default()
    };
    register(&mut registry, dir.path(), &[("team", slack)]);
    let env = call(
        &registry,
        "message",
        json!({"channel": "telegram", "content": "hi"}),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::InvalidParams),
        "channel \"telegram\" is not configured; the configured channels are: local, team"
    );
    let env = call(
        &registry,
        "message",
        json!({"channel": "team", "content": "hi", "media": ["x.png"]}),
    )
    .await;
    assert!(error_message(&env, ErrorCode::InvalidParams).contains("takes no attachments"));
    let env = call(
        &registry,
        "message",
        json!({"channel": "local", "content": "hi", "media": ["../../etc/passwd"]}),
    )
    .await;
    assert_eq!(env.status, Status::Error);
    assert_ne!(env.error.as_ref().unwrap().code, ErrorCode::InvalidParams);
    assert!(lines(dir.path()).is_empty());
}

#[tokio::test]
async fn a_channel_refusal_is_an_error_with_the_channels_text() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = sock.read(&mut buf);
        let body = "no_such_channel";
        let _ = write!(
            sock,
            "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let mut registry = builtins(dir.path());
    let hook = ChannelConfig {
        kind: Some(ChannelKind::Slack),
        url: Some(url),
        ..ChannelConfig::default()
    };
    register(&mut registry, dir.path(), &[("team", hook)]);
    let env = call(
        &registry,
        "message",
        json!({"channel": "team", "content": "hi"}),
    )
    .await;
    let message = error_message(&env, ErrorCode::HttpStatus);
    assert!(
        message.contains("404") && message.contains("no_such_channel"),
        "{message}"
    );
    assert!(!message.contains("127.0.0.1"), "{message}");
    assert_eq!(env.data["status"], json!("failed"));
}

#[tokio::test]
async fn cron_adds_lists_fires_and_removes_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::new(dir.path());
    let mut registry = super::registry_with(session);
    register(&mut registry, dir.path(), &[]);
    let add = json!({
        "action": "add", "name": "summary", "schedule": "7 18 * * *",
        "message": "Daily summary time", "channel": "local"
    });
    let env = call(&registry, "cron", add.clone()).await;
    let job = &success_data(&env)["jobs"][0];
    assert_eq!(job["tz"], json!("Europe/Berlin"));
    let next = job["next_run"].as_str().unwrap();
    assert!(
        next.ends_with("T18:07:00+01:00") || next.ends_with("T18:07:00+02:00"),
        "{next}"
    );

    let env = call(&registry, "cron", add).await;
    assert!(error_message(&env, ErrorCode::Conflict).contains("already exists"));

    let env = call(
        &registry,
        "cron",
        json!({"action": "run_now", "name": "summary"}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["delivery"], json!("sent"));
    let got = lines(dir.path());
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0]["content"].clone(), got[0]["id"].clone()),
        (json!("Daily summary time"), data["message_id"].clone())
    );

    let env = call(&registry, "cron", json!({"action": "list"})).await;
    let listed = &success_data(&env)["jobs"];
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(
        listed[0]["next_run"],
        json!(next),
        "run_now leaves the schedule alone"
    );
    assert_eq!(listed[0]["last_run"]["status"], json!("sent"));
    assert!(
        env.text
            .contains("summary [7 18 * * * Europe/Berlin] -> local"),
        "{}",
        env.text
    );

    let env = call(
        &registry,
        "cron",
        json!({"action": "remove", "name": "summary"}),
    )
    .await;
    success_data(&env);
    let env = call(
        &registry,
        "cron",
        json!({"action": "remove", "name": "summary"}),
    )
    .await;
    assert!(error_message(&env, ErrorCode::NotFound).contains("this workspace has no jobs"));
    let env = call(&registry, "cron", json!({"action": "list"})).await;
    assert_eq!(success_data(&env)["jobs"], json!([]));
}

#[tokio::test]
async fn cron_refuses_bad_schedules_zones_and_intervals_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = builtins(dir.path());
    register(&mut registry, dir.path(), &[]);
    let add = |schedule: &str, tz: Option<&str>| {
        let mut a = json!({"action": "add", "name": "j", "schedule": schedule, "message": "m", "channel": "local"});
        if let Some(tz) = tz {
            a["tz"] = json!(tz);
        }
        a
    };
    for (args, says) in [
        (add("61 * * * *", None), "not a valid cron expression"),
        (add("every 500ms", None), "shortest interval, 1 s"),
        (
            add("0 9 * * *", Some("Europe/Atlantis")),
            "unknown time zone",
        ),
        (add("2001-01-01T00:00:00Z", None), "not in the future"),
        (
            json!({"action": "add", "name": "j", "schedule": "0 9 * * *", "channel": "local"}),
            "message or prompt is required",
        ),
        (
            json!({"action": "add", "name": "j", "schedule": "0 9 * * *", "message": "m"}),
            "channel is required",
        ),
        (
            json!({"action": "add", "name": "j", "schedule": "0 9 * * *", "message": "m", "prompt": "p", "channel": "local"}),
            "not both",
        ),
        // No agent is configured here: a prompt job is refused, saying how to set one.
        (
            json!({"action": "add", "name": "j", "schedule": "0 9 * * *", "prompt": "p"}),
            "no agent is configured",
        ),
    ] {
        let env = call(&registry, "cron", args.clone()).await;
        let error = env
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{args}: {env:#?}"));
        assert_eq!(error.code, ErrorCode::InvalidParams, "{args}");
        let shown = format!("{} {}", error.message, env.text);
        assert!(shown.contains(says), "{args}: {shown}");
        assert!(
            error.hint.as_deref().is_some_and(|h| !h.is_empty()),
            "{args}: no hint"
        );
    }
}
