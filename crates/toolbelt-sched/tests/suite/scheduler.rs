//! The scheduler on SQLite and PostgreSQL: claims once per `(job, scheduled_for)`
//! across schedulers, missed firings once, one-shot jobs removed, jobs kept across
//! restarts, daylight-saving days on an injected clock.

use std::sync::Arc;

use chrono::{DateTime, TimeZone};
use pretty_assertions::assert_eq;
use toolbelt_sched::{ChannelConfig, ChannelKind, Clock, ManualClock, Messaging, Schedule, Zone};
use toolbelt_store::{
    NewCronJob, OutboxStatus, create_cron_job, cron_firings, list_cron_jobs, list_messages, testing,
};

use super::messaging;

fn file_channel() -> [(&'static str, ChannelConfig); 1] {
    [(
        "local",
        ChannelConfig {
            kind: Some(ChannelKind::File),
            ..ChannelConfig::default()
        },
    )]
}

fn ms(rfc3339: &str) -> i64 {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .timestamp_millis()
}

/// Messaging with the file channel over `location`, on a clock stopped at
/// 2026-06-01T10:00:00Z: its state directory, that time, the clock.
fn at_t0(
    location: &toolbelt_store::Location,
) -> (tempfile::TempDir, i64, Arc<ManualClock>, Messaging) {
    let dir = tempfile::tempdir().unwrap();
    let t0 = ms("2026-06-01T10:00:00Z");
    let clock = ManualClock::new(t0);
    let m = messaging(location, &file_channel(), &[], dir.path(), clock.clone());
    (dir, t0, clock, m)
}

/// Adds a job as the cron tool does.
async fn add(m: &Messaging, name: &str, schedule: &str, tz: &str, now: i64) -> i64 {
    let zone = Zone::parse(tz).unwrap();
    let s = Schedule::parse(schedule, zone).unwrap();
    let store = m.store().store().await.unwrap();
    create_cron_job(
        store,
        &NewCronJob {
            workspace: "/w".into(),
            name: name.into(),
            schedule: schedule.into(),
            tz: tz.into(),
            message: format!("{name} says hi"),
            channel: Some("local".into()),
            prompt: None,
            chat_id: None,
            next_at: Some(s.first(now, zone).unwrap()),
        },
        now,
    )
    .await
    .unwrap()
    .id
}

#[tokio::test]
async fn two_schedulers_on_one_store_fire_each_tick_once() {
    for t in testing::both().await.unwrap() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = ms("2026-06-01T10:00:00Z");
        let clock = ManualClock::new(t0);
        // Two schedulers, each with its own pool on the same database.
        let a = messaging(&t.location, &file_channel(), &[], dir.path(), clock.clone())
            .with_instance("a");
        let b = messaging(&t.location, &file_channel(), &[], dir.path(), clock.clone())
            .with_instance("b");
        let job = add(&a, "tick", "every 1s", "UTC", t0).await;
        let mut fired = Vec::new();
        for _ in 0..30 {
            clock.advance(1_000);
            let (x, y) = tokio::join!(a.scheduler().fire_due(), b.scheduler().fire_due());
            fired.extend(x.unwrap().into_iter().map(|f| f.scheduled_for));
            fired.extend(y.unwrap().into_iter().map(|f| f.scheduled_for));
        }
        fired.sort_unstable();
        let want: Vec<i64> = (1..=30).map(|i| t0 + i * 1_000).collect();
        assert_eq!(fired, want, "{:?}", t.store.backend());
        let claims = cron_firings(a.store().store().await.unwrap(), job)
            .await
            .unwrap();
        assert_eq!(claims.iter().map(|c| c.0).collect::<Vec<_>>(), want);
        // Both took part (the claims are what counts; this shows there was a race).
        let messages = list_messages(a.store().store().await.unwrap(), 100)
            .await
            .unwrap();
        assert_eq!(messages.len(), 30);
    }
}

#[tokio::test]
async fn missed_firings_fire_once_and_one_shot_jobs_go() {
    for t in testing::both().await.unwrap() {
        let (dir, t0, clock, m) = at_t0(&t.location);
        let every = add(&m, "every10", "every 10s", "UTC", t0).await;
        add(&m, "once", "2026-06-01T10:00:30Z", "UTC", t0).await;
        // Nothing ran for 95 s: each job fires once.
        clock.set(t0 + 95_000);
        let fired = m.scheduler().fire_due().await.unwrap();
        let mut got: Vec<(String, i64, Option<i64>)> = fired
            .iter()
            .map(|f| (f.job.name.clone(), f.scheduled_for, f.next_at))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("every10".into(), t0 + 10_000, Some(t0 + 100_000)),
                ("once".into(), t0 + 30_000, None),
            ]
        );
        assert!(m.scheduler().fire_due().await.unwrap().is_empty());
        let store = m.store().store().await.unwrap();
        let jobs = list_cron_jobs(store, Some("/w")).await.unwrap();
        assert_eq!(
            jobs.iter().map(|j| j.job.name.as_str()).collect::<Vec<_>>(),
            ["every10"]
        );
        // Delivered, and the job's last run says so.
        m.outbox().drain().await.unwrap();
        let jobs = list_cron_jobs(store, Some("/w")).await.unwrap();
        let last = jobs[0].last.clone().unwrap();
        assert_eq!(
            (last.scheduled_for, last.status),
            (t0 + 10_000, Some(OutboxStatus::Sent))
        );
        let lines = std::fs::read_to_string(dir.path().join("messages-local.jsonl")).unwrap();
        assert_eq!(lines.lines().count(), 2);
        assert_eq!(cron_firings(store, every).await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_restart_keeps_the_jobs() {
    for t in testing::both().await.unwrap() {
        let (dir, t0, clock, m) = at_t0(&t.location);
        add(&m, "daily", "7 9 * * *", "Asia/Shanghai", t0).await;
        m.store().store().await.unwrap().close().await;
        drop(m);
        let again = messaging(&t.location, &file_channel(), &[], dir.path(), clock.clone());
        let jobs = list_cron_jobs(again.store().store().await.unwrap(), None)
            .await
            .unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].job.next_at, Some(ms("2026-06-02T09:07:00+08:00")));
    }
}

/// Steps the clock every 10 minutes from `from` to `to`, firing at each step;
/// returns the instants fired.
async fn run_days(m: &Messaging, clock: &Arc<ManualClock>, from: i64, to: i64) -> Vec<i64> {
    let mut fired = Vec::new();
    let mut now = from;
    while now <= to {
        clock.set(now);
        fired.extend(
            m.scheduler()
                .fire_due()
                .await
                .unwrap()
                .into_iter()
                .map(|f| f.scheduled_for),
        );
        now += 600_000;
    }
    fired
}

#[tokio::test]
async fn a_daily_0230_job_in_berlin_fires_once_on_both_dst_days() {
    let t = testing::sqlite().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let berlin = chrono_tz::Europe::Berlin;
    let start = ms("2026-03-28T12:00:00+01:00");
    let clock = ManualClock::new(start);
    let m = messaging(&t.location, &file_channel(), &[], dir.path(), clock.clone());
    add(&m, "night", "30 2 * * *", "Europe/Berlin", start).await;
    let local = |ms: i64| berlin.timestamp_millis_opt(ms).unwrap().to_rfc3339();
    // Spring forward (29 March): 02:30 does not exist; it fires at 03:00 CEST.
    let spring = run_days(&m, &clock, start, ms("2026-03-30T12:00:00+02:00")).await;
    assert_eq!(
        spring.iter().map(|t| local(*t)).collect::<Vec<_>>(),
        ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
    );
    // Fall back (25 October): 02:30 happens twice; it fires once, at the first.
    let autumn = ms("2026-10-24T12:00:00+02:00");
    clock.set(autumn);
    // Months without a server: one catch-up firing, then the days themselves.
    let catch_up = m.scheduler().fire_due().await.unwrap();
    assert_eq!(catch_up.len(), 1);
    let fall = run_days(&m, &clock, autumn, ms("2026-10-26T12:00:00+01:00")).await;
    assert_eq!(
        fall.iter().map(|t| local(*t)).collect::<Vec<_>>(),
        ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
    );
    let _ = clock.now_ms();
}

#[tokio::test]
async fn a_run_whose_delivery_fails_is_recorded_and_retried_not_fired_again() {
    use super::server::{Answer, Server};
    let t = testing::sqlite().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Answer::new(503, "maintenance"), Answer::new(200, "")]).await;
    let t0 = ms("2026-06-01T10:00:00Z");
    let clock = ManualClock::new(t0);
    let hook = ChannelConfig {
        kind: Some(ChannelKind::Webhook),
        url: Some(server.url.clone()),
        ..ChannelConfig::default()
    };
    let m = messaging(
        &t.location,
        &[("local", hook)],
        &[],
        dir.path(),
        clock.clone(),
    );
    add(&m, "hourly", "7 * * * *", "UTC", t0).await;
    clock.set(ms("2026-06-01T10:07:00Z"));
    let fired = m.scheduler().fire_due().await.unwrap();
    assert_eq!(fired.len(), 1);
    m.outbox().drain().await.unwrap();
    let store = m.store().store().await.unwrap();
    let last = list_cron_jobs(store, None).await.unwrap()[0]
        .last
        .clone()
        .unwrap();
    assert_eq!(last.status, Some(OutboxStatus::Pending));
    assert!(last.error.unwrap().contains("503"));
    // Not fired again; the outbox retries the same message (the same key).
    clock.advance(2_000);
    assert!(m.scheduler().fire_due().await.unwrap().is_empty());
    m.outbox().drain().await.unwrap();
    let last = list_cron_jobs(store, None).await.unwrap()[0]
        .last
        .clone()
        .unwrap();
    assert_eq!(
        (last.status, last.error.is_some()),
        (Some(OutboxStatus::Sent), true)
    );
    let got = server.received();
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0].header("idempotency-key"),
        got[1].header("idempotency-key")
    );
    assert_eq!(got[0].json()["content"], "hourly says hi");
}

/// Answers every prompt with `answer`, or fails with `error`.
#[derive(Debug)]
struct Scripted {
    answer: Result<&'static str, &'static str>,
}

impl toolbelt_sched::PromptRunner for Scripted {
    fn run<'a>(
        &'a self,
        job: &'a toolbelt_store::CronJob,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> toolbelt_core::BoxFuture<'a, toolbelt_sched::PromptRun> {
        let run = match self.answer {
            Ok(text) => toolbelt_sched::PromptRun {
                outcome: toolbelt_sched::FINAL_ANSWER.into(),
                text: format!("{text} ({})", job.prompt.clone().unwrap_or_default()),
                run_id: Some("run-1".into()),
            },
            Err(e) => toolbelt_sched::PromptRun::failed("error", e),
        };
        Box::pin(std::future::ready(run))
    }
}

/// Adds a prompt job every 10 s, to `channel` or none.
async fn add_prompt(m: &Messaging, name: &str, channel: Option<&str>, now: i64) {
    let store = m.store().store().await.unwrap();
    create_cron_job(
        store,
        &NewCronJob {
            workspace: "/w".into(),
            name: name.into(),
            schedule: "every 10s".into(),
            tz: "UTC".into(),
            prompt: Some(format!("{name}?")),
            channel: channel.map(str::to_string),
            next_at: Some(now + 10_000),
            ..NewCronJob::default()
        },
        now,
    )
    .await
    .unwrap();
}

/// `(job, status, outcome, result)` of each job's last run.
async fn last_runs(
    m: &Messaging,
) -> Vec<(String, Option<OutboxStatus>, Option<String>, Option<String>)> {
    let store = m.store().store().await.unwrap();
    list_cron_jobs(store, Some("/w"))
        .await
        .unwrap()
        .into_iter()
        .map(|j| {
            let last = j.last.unwrap();
            (j.job.name, last.status, last.outcome, last.result)
        })
        .collect()
}

#[tokio::test]
async fn prompt_jobs_send_the_answer_or_keep_it_and_failures_are_not_fired_again() {
    for (answer, sent, kept) in [
        (
            Ok("done"),
            "done (with?)",
            (None, Some("final_answer"), Some("done (without?)")),
        ),
        (
            Err("the provider said no"),
            "Job \"with\" ended without an answer (error): the provider said no",
            (None, Some("error"), Some("the provider said no")),
        ),
    ] {
        let t = testing::sqlite().await.unwrap();
        let (dir, t0, clock, m) = at_t0(&t.location);
        let m = m.with_prompt_runner(Arc::new(Scripted { answer }));
        add_prompt(&m, "with", Some("local"), t0).await;
        add_prompt(&m, "without", None, t0).await;
        clock.set(t0 + 10_000);
        let fired = m.run_once().await.unwrap();
        assert_eq!(fired.len(), 2);
        let lines: Vec<serde_json::Value> =
            std::fs::read_to_string(dir.path().join("messages-local.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["content"], sent);
        let runs = last_runs(&m).await;
        let outcome = kept.1.map(str::to_string);
        assert_eq!(
            runs,
            vec![
                (
                    "with".into(),
                    Some(OutboxStatus::Sent),
                    outcome.clone(),
                    runs[0].3.clone()
                ),
                (
                    "without".into(),
                    kept.0,
                    outcome,
                    kept.2.map(str::to_string)
                ),
            ]
        );
        // Not fired again until the next tick.
        assert!(m.run_once().await.unwrap().is_empty());
    }
}
