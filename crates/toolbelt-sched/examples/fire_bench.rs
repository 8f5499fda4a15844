//! The scheduler benchmark: JOBS one-shot jobs all due in the same second, fired
//! by one running [`Messaging`] (scheduler + outbox, file channel) on SQLite (or
//! PostgreSQL with a URL). Reports how long after the due second the last job was
//! claimed and the last message delivered, and the CPU the process used while
//! nothing was due (the scheduler sleeps until the next due time; it does not poll).
//!
//! ```text
//! cargo run --release -p toolbelt-sched --example fire_bench -- [JOBS] [POSTGRES_URL]
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sqlx::Row;
use tokio_util::sync::CancellationToken;
use toolbelt_sched::{ChannelConfig, ChannelKind, Channels, Messaging, Zone};
use toolbelt_store::{Location, NewCronJob, Store, StoreHandle, create_cron_job};

/// User + system CPU time of this process, in milliseconds (`/proc/self/stat`).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks * 10.0 // USER_HZ is 100 on Linux
}

async fn count(store: &Store, sql: &'static str) -> (i64, Option<i64>) {
    let row = sqlx::query(sql).fetch_one(store.pool()).await.unwrap();
    (row.try_get(0).unwrap(), row.try_get(1).unwrap())
}

async fn run(location: Location, jobs: usize, label: &str) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&location).await.unwrap();
    let mut configs = BTreeMap::new();
    configs.insert(
        "local".to_string(),
        ChannelConfig {
            kind: Some(ChannelKind::File),
            ..ChannelConfig::default()
        },
    );
    let channels = Channels::from_config(&configs, &|_| None, dir.path()).unwrap();
    let messaging = Messaging::new(StoreHandle::open(store.clone()), channels);

    // All due at the same whole second, 3 s from now.
    let now = toolbelt_store::now_ms();
    let due = (now / 1_000 + 3) * 1_000;
    let zone = Zone::utc();
    for i in 0..jobs {
        create_cron_job(
            &store,
            &NewCronJob {
                workspace: "/bench".into(),
                name: format!("job-{i:05}"),
                schedule: zone.format(due),
                tz: "UTC".into(),
                message: format!("message {i}"),
                channel: Some("local".into()),
                prompt: None,
                chat_id: None,
                next_at: Some(due),
            },
            now,
        )
        .await
        .unwrap();
    }
    // One more, far away: the scheduler has something to sleep towards afterwards.
    create_cron_job(
        &store,
        &NewCronJob {
            workspace: "/bench".into(),
            name: "later".into(),
            schedule: "0 0 1 1 *".into(),
            tz: "UTC".into(),
            message: "later".into(),
            channel: Some("local".into()),
            prompt: None,
            chat_id: None,
            next_at: Some(due + 86_400_000),
        },
        now,
    )
    .await
    .unwrap();

    let cancel = CancellationToken::new();
    let task = {
        let m = messaging.clone();
        let c = cancel.clone();
        tokio::spawn(async move { m.run(c).await })
    };
    // Idle before the due second: what does waiting cost?
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_start = (cpu_ms(), Instant::now());
    let wait = u64::try_from(due - toolbelt_store::now_ms() - 200).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let idle_before = (cpu_ms() - idle_start.0, idle_start.1.elapsed());

    // Wait for every message to be delivered.
    let start = Instant::now();
    loop {
        let (sent, _) = count(
            &store,
            "SELECT COUNT(*), MAX(sent_at) FROM outbox WHERE status = 'sent'",
        )
        .await;
        if usize::try_from(sent).unwrap() >= jobs {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not delivered in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (claims, last_claim) =
        count(&store, "SELECT COUNT(*), MAX(fired_at) FROM cron_firings").await;
    let (sent, last_sent) = count(
        &store,
        "SELECT COUNT(*), MAX(sent_at) FROM outbox WHERE status = 'sent'",
    )
    .await;
    let lines = std::fs::read_to_string(dir.path().join("messages-local.jsonl"))
        .unwrap()
        .lines()
        .count();

    // Idle after: only the far job is left.
    let idle_start = (cpu_ms(), Instant::now());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle_after = (cpu_ms() - idle_start.0, idle_start.1.elapsed());
    cancel.cancel();
    task.await.unwrap();

    println!(
        "| {label} | {jobs} | {claims} | {:.0} ms | {sent} ({lines} lines) | {:.0} ms | {:.0} ms CPU in {:.1} s | {:.0} ms CPU in {:.1} s |",
        last_claim.unwrap() - due,
        last_sent.unwrap() - due,
        idle_before.0,
        idle_before.1.as_secs_f64(),
        idle_after.0,
        idle_after.1.as_secs_f64(),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let jobs: usize = args.next().map_or(1_000, |a| a.parse().unwrap());
    let postgres = args.next();
    println!(
        "| store | jobs | claimed | last claimed after the due second | delivered | last delivered after the due second | idle before | idle after |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let dir = tempfile::tempdir().unwrap();
    run(Location::in_state_dir(dir.path()), jobs, "SQLite").await;
    if let Some(url) = postgres {
        run(Location::Postgres(url), jobs, "PostgreSQL").await;
    }
}
