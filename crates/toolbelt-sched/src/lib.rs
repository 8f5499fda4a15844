//! toolbelt's scheduler and messages.
//!
//! - [`Schedule`] and [`Zone`]: cron expressions (croner: 5 or 6 fields), intervals
//!   (`every 30s`) and one-shot times, read in IANA time zones (chrono-tz), with
//!   [`Schedule::next_after`] handling daylight-saving gaps and overlaps.
//! - [`Channels`]: the configured channels ([`ChannelConfig`]: webhook, Telegram,
//!   Slack, Discord, email over SMTP, a file), secrets from the environment only.
//! - [`Outbox`]: delivers the messages kept in the store's outbox under leases, with
//!   an `Idempotency-Key`, retrying 429/5xx with backoff and `Retry-After`
//!   ([`RetryPolicy`]), failing other 4xx at once with the channel's text.
//! - [`Scheduler`]: fires due jobs; each `(job, scheduled_for)` is claimed once in
//!   the store, however many schedulers share it. Jobs that run a prompt are run by
//!   a [`PromptRunner`] given by whoever wires the scheduler (the binary: an agent),
//!   their answer sent like a message.
//! - [`Messaging`]: all of it for one store and one set of channels — what the
//!   `message` and `cron` tools and `toolbelt serve` share.
//! - [`Clock`]: the time, injected ([`SystemClock`], [`ManualClock`] for tests).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::collections::BTreeMap;
//! use toolbelt_sched::{ChannelConfig, ChannelKind, Channels, Messaging, NewMessage};
//! use toolbelt_store::{Location, StoreHandle};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let mut configs = BTreeMap::new();
//! configs.insert(
//!     "local".to_string(),
//!     ChannelConfig { kind: Some(ChannelKind::File), ..ChannelConfig::default() },
//! );
//! let channels = Channels::from_config(&configs, &|_| None, dir.path()).unwrap();
//! let store = StoreHandle::lazy(Location::in_state_dir(dir.path()));
//! let messaging = Messaging::new(store, channels);
//! let id = messaging
//!     .outbox()
//!     .enqueue(NewMessage { channel: "local".into(), content: "hello".into(), ..NewMessage::default() })
//!     .await
//!     .unwrap();
//! let sent = messaging.outbox().deliver(&id, 0).await.unwrap();
//! assert_eq!(sent.status, toolbelt_store::OutboxStatus::Sent);
//! let line = std::fs::read_to_string(dir.path().join("messages-local.jsonl")).unwrap();
//! assert!(line.contains("\"content\":\"hello\""));
//! # });
//! ```

mod channel;
mod clock;
mod error;
mod outbox;
mod prompt;
mod schedule;
mod scheduler;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolbelt_store::StoreHandle;

pub use channel::{
    Attachment, Channel, ChannelConfig, ChannelKind, Channels, MAX_MEDIA_BYTES, Outgoing,
    SEND_TIMEOUT_MS, Secret, SendError, TELEGRAM_BASE_URL, TlsMode,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{SchedError, SchedResult};
pub use outbox::{
    Attempt, DELIVERY_RETRY, LEASE_MS, MAX_CONCURRENT_SENDS, MAX_IDLE_MS as OUTBOX_MAX_IDLE_MS,
    NewMessage, Outbox, RetryPolicy, STOP_SEND_GRACE_MS,
};
pub use prompt::{FINAL_ANSWER, INTERRUPTED, PromptRun, PromptRunner};
pub use schedule::{MAX_INTERVAL_MS, MIN_INTERVAL_MS, Schedule, Zone, local_zone};
pub use scheduler::{
    CLAIM_RETENTION_MS, MAX_IDLE_MS, MAX_RESULT_CHARS, STOP_GRACE_MS, Scheduler, next_fire,
};

/// The scheduler, the outbox and the channels of one store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Messaging {
    store: StoreHandle,
    channels: Arc<Channels>,
    outbox: Outbox,
    scheduler: Scheduler,
    default_zone: Zone,
}

impl Messaging {
    /// Messaging over `store` and `channels`, on the system clock, with the
    /// machine's time zone as the default of jobs.
    pub fn new(store: StoreHandle, channels: Channels) -> Messaging {
        Messaging::with_clock(
            store,
            channels,
            Arc::new(SystemClock),
            outbox::DELIVERY_RETRY,
        )
    }

    /// Messaging on `clock`, retrying by `policy`.
    pub fn with_clock(
        store: StoreHandle,
        channels: Channels,
        clock: Arc<dyn Clock>,
        policy: RetryPolicy,
    ) -> Messaging {
        let channels = Arc::new(channels);
        let outbox = Outbox::new(store.clone(), channels.clone(), clock).with_policy(policy);
        let scheduler = Scheduler::new(store.clone(), outbox.clone());
        Messaging {
            store,
            channels,
            outbox,
            scheduler,
            default_zone: local_zone(),
        }
    }

    /// The same, with `zone` as the default time zone of jobs.
    pub fn with_default_zone(mut self, zone: Zone) -> Messaging {
        self.default_zone = zone;
        self
    }

    /// The same, running the prompts of jobs on `runner`.
    pub fn with_prompt_runner(mut self, runner: Arc<dyn PromptRunner>) -> Messaging {
        self.scheduler = self.scheduler.with_prompt_runner(runner);
        self
    }

    /// Whether jobs can run prompts (a [`PromptRunner`] is given).
    pub fn runs_prompts(&self) -> bool {
        self.scheduler.prompt_runner().is_some()
    }

    /// The same, its scheduler's claims carrying `instance`.
    pub fn with_instance(mut self, instance: impl Into<String>) -> Messaging {
        self.scheduler = self.scheduler.with_instance(instance);
        self
    }

    /// The store.
    pub fn store(&self) -> &StoreHandle {
        &self.store
    }

    /// The channels.
    pub fn channels(&self) -> &Arc<Channels> {
        &self.channels
    }

    /// The outbox.
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The time zone of jobs that name none.
    pub fn default_zone(&self) -> Zone {
        self.default_zone
    }

    /// Runs the scheduler and the outbox until `cancel`.
    pub async fn run(&self, cancel: CancellationToken) {
        tokio::join!(self.scheduler.run(cancel.clone()), self.outbox.run(cancel));
    }

    /// One round: fires what is due now, waits for the prompts those firings run,
    /// and attempts every message due. What could not be delivered yet stays in
    /// the outbox for the next round. Returns the firings.
    ///
    /// # Errors
    /// A store failure.
    pub async fn run_once(&self) -> SchedResult<Vec<toolbelt_store::Firing>> {
        let fired = self.scheduler.fire_due().await?;
        self.scheduler.wait_runs().await;
        self.outbox.drain().await?;
        Ok(fired)
    }
}
