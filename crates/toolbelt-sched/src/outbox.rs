//! [`Outbox`]: delivers the messages kept in the store's outbox, each under a
//! lease, with retries bounded by a [`RetryPolicy`]. A deliverer that stops gives
//! back the leases of the sends it cuts off, so that another process takes those
//! messages at once instead of after the lease.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use toolbelt_core::error_chain;
use toolbelt_store::{
    NewOutboxMessage, OutboxMessage, OutboxStatus, StoreHandle, claim_message, due_messages,
    enqueue_message, get_message, next_message_due, record_failed, record_parts_sent, record_retry,
    record_sent, release_message,
};

use crate::channel::{Attachment, Channels, Outgoing, SEND_TIMEOUT_MS, SendError};
use crate::clock::Clock;
use crate::error::{SchedError, SchedResult};

/// How long a deliverer holds a message: one attempt's timeout and a margin. A
/// deliverer that dies leaves the message to another after this.
pub const LEASE_MS: i64 = SEND_TIMEOUT_MS as i64 + 15_000;
/// Longest sleep of an idle outbox loop, in milliseconds: how soon it notices a
/// message another process left behind.
pub const MAX_IDLE_MS: i64 = 5_000;
/// Messages sent at once by one outbox.
pub const MAX_CONCURRENT_SENDS: usize = 16;
/// How long a stopping outbox lets a send under way finish, in milliseconds,
/// before it cuts the send off and gives the message back (see
/// [`Outbox::run`]).
pub const STOP_SEND_GRACE_MS: u64 = 1_000;

pub use toolbelt_core::RetryPolicy;

/// How the outbox retries a message: 5 attempts, waits of 1, 2, 4 and 8 s (at
/// most 30 s), or the channel's `Retry-After` up to 60 s (a channel asking for more
/// fails the message).
pub const DELIVERY_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 5,
    initial_delay: Duration::from_secs(1),
    max_delay: Duration::from_secs(30),
    max_retry_after: Duration::from_secs(60),
};

/// The number of attempts stored with a message, as the policy counts them.
fn attempts(stored: i64) -> u32 {
    u32::try_from(stored.max(0)).unwrap_or(u32::MAX)
}

/// What one attempt did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Delivered.
    Sent,
    /// Failed; tried again at `at` (ms).
    Retry {
        /// The next attempt.
        at: i64,
        /// What happened.
        error: String,
    },
    /// Given up.
    Failed {
        /// Why.
        error: String,
    },
    /// Not takeable now: delivered, given up, not due, or held by another deliverer.
    NotTaken,
    /// Cut off by a stop: the message was given back, due at once for any deliverer.
    Released,
}

/// A message to accept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewMessage {
    /// The configured channel.
    pub channel: String,
    /// The chat in it.
    pub chat_id: Option<String>,
    /// The text.
    pub content: String,
    /// The message it answers.
    pub reply_to: Option<String>,
    /// Attachments.
    pub media: Vec<Attachment>,
}

/// The deliverer of the outbox. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbox {
    store: StoreHandle,
    channels: Arc<Channels>,
    clock: Arc<dyn Clock>,
    policy: RetryPolicy,
    wake: Arc<Notify>,
}

impl Outbox {
    /// An outbox in `store` delivering to `channels`, on `clock`.
    pub fn new(store: StoreHandle, channels: Arc<Channels>, clock: Arc<dyn Clock>) -> Outbox {
        Outbox {
            store,
            channels,
            clock,
            policy: DELIVERY_RETRY,
            wake: Arc::new(Notify::new()),
        }
    }

    /// The same outbox retrying by `policy`.
    pub fn with_policy(mut self, policy: RetryPolicy) -> Outbox {
        self.policy = policy;
        self
    }

    /// The channels.
    pub fn channels(&self) -> &Arc<Channels> {
        &self.channels
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The store.
    pub fn store(&self) -> &StoreHandle {
        &self.store
    }

    /// Tells [`Outbox::run`] that a message is waiting.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Checks and accepts `message`: written to the outbox with a new id, which is
    /// returned. From then on it is delivered even if this process stops.
    ///
    /// # Errors
    /// [`SchedError::Request`] for a message the channel cannot take; a store failure.
    pub async fn enqueue(&self, message: NewMessage) -> SchedResult<String> {
        self.channels.check(
            &message.channel,
            message.chat_id.as_deref(),
            &message.content,
            !message.media.is_empty(),
        )?;
        let total: usize = message.media.iter().map(|m| m.data.len() / 4 * 3).sum();
        if total > crate::channel::MAX_MEDIA_BYTES {
            return Err(SchedError::Request(format!(
                "the attachments have {total} bytes; a message carries at most {}",
                crate::channel::MAX_MEDIA_BYTES
            )));
        }
        let media = if message.media.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&message.media).map_err(SchedError::Attachments)?)
        };
        let id = uuid::Uuid::now_v7().to_string();
        let store = self.store.store().await?;
        enqueue_message(
            store,
            &NewOutboxMessage {
                id: id.clone(),
                channel: message.channel,
                chat_id: message.chat_id,
                content: message.content,
                reply_to: message.reply_to,
                media,
                job_id: None,
            },
            self.clock.now_ms(),
        )
        .await?;
        Ok(id)
    }

    /// One attempt at message `id`, if it is takeable now.
    ///
    /// # Errors
    /// A store failure.
    pub async fn attempt(&self, id: &str) -> SchedResult<Attempt> {
        self.attempt_until(id, &CancellationToken::new()).await
    }

    /// [`Outbox::attempt`], cut off when `stop` fires and the send has not ended
    /// within [`STOP_SEND_GRACE_MS`]: the message is then given back at once
    /// ([`Attempt::Released`]) rather than held until its lease runs out. A send
    /// cut off may have reached the channel: the next attempt carries the same
    /// idempotency key and goes on from the parts already noted as sent.
    async fn attempt_until(&self, id: &str, stop: &CancellationToken) -> SchedResult<Attempt> {
        let store = self.store.store().await?;
        let now = self.clock.now_ms();
        let lease = now + LEASE_MS;
        let Some(message) = claim_message(store, id, now, lease).await? else {
            return Ok(Attempt::NotTaken);
        };
        let result = match self.channels.get(&message.channel) {
            None => Err(SendError::Refused {
                detail: format!("channel {:?} is no longer configured", message.channel),
            }),
            Some(channel) => match outgoing(&message) {
                Ok(out) => {
                    let parts_sent = |parts: u32| -> toolbelt_core::BoxFuture<'_, ()> {
                        Box::pin(async move {
                            let now = self.clock.now_ms();
                            if let Err(e) =
                                record_parts_sent(store, id, lease, i64::from(parts), now).await
                            {
                                tracing::warn!(
                                    id,
                                    "cannot note the parts delivered: {}",
                                    error_chain(&e)
                                );
                            }
                        })
                    };
                    let send = channel.send(self.channels.http(), &out, &parts_sent);
                    tokio::select! {
                        sent = send => sent,
                        () = stopped_for(stop, Duration::from_millis(STOP_SEND_GRACE_MS)) => {
                            let now = self.clock.now_ms();
                            release_message(store, id, lease, now).await?;
                            tracing::info!(channel = %message.channel, id, "stopping: the send was cut off and the message given back");
                            return Ok(Attempt::Released);
                        }
                    }
                }
                Err(e) => Err(e),
            },
        };
        let now = self.clock.now_ms();
        let outcome = match result {
            Ok(()) => {
                record_sent(store, id, lease, now).await?;
                tracing::debug!(channel = %message.channel, id, "message delivered");
                Attempt::Sent
            }
            Err(SendError::Refused { detail }) => {
                tracing::warn!(channel = %message.channel, id, "message refused: {detail}");
                record_failed(store, id, lease, &detail, now).await?;
                Attempt::Failed { error: detail }
            }
            Err(SendError::Retry {
                detail,
                retry_after,
            }) => {
                let asked = retry_after.filter(|d| *d > self.policy.max_retry_after);
                if let Some(asked) = asked {
                    let error = format!(
                        "{detail} (the channel asked to wait {} s, more than the {} s allowed)",
                        asked.as_secs(),
                        self.policy.max_retry_after.as_secs()
                    );
                    record_failed(store, id, lease, &error, now).await?;
                    Attempt::Failed { error }
                } else if !self.policy.allows_another(attempts(message.attempts)) {
                    let error = format!("{detail} (gave up after {} attempts)", message.attempts);
                    tracing::warn!(channel = %message.channel, id, "message given up: {error}");
                    record_failed(store, id, lease, &error, now).await?;
                    Attempt::Failed { error }
                } else {
                    let wait = self
                        .policy
                        .backoff(attempts(message.attempts))
                        .max(retry_after.unwrap_or_default());
                    let at = now + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX / 2);
                    tracing::info!(channel = %message.channel, id, attempt = message.attempts, "message will be retried: {detail}");
                    record_retry(store, id, lease, at, &detail, now).await?;
                    Attempt::Retry { at, error: detail }
                }
            }
        };
        Ok(outcome)
    }

    /// Delivers message `id` now, retrying while the next attempt falls within
    /// `wait_ms`; returns the message as it then is (sent, failed, or still
    /// pending for the outbox loop to finish).
    ///
    /// # Errors
    /// A store failure, or an unknown id.
    pub async fn deliver(&self, id: &str, wait_ms: i64) -> SchedResult<OutboxMessage> {
        let store = self.store.store().await?;
        let deadline = self.clock.now_ms().saturating_add(wait_ms);
        loop {
            self.attempt(id).await?;
            let message = get_message(store, id)
                .await?
                .ok_or_else(|| SchedError::Request(format!("no message {id:?} in the outbox")))?;
            if message.status.is_final() {
                return Ok(message);
            }
            let now = self.clock.now_ms();
            let wake_at = match message.status {
                // Another deliverer holds it: look again shortly.
                OutboxStatus::Sending => now + 100,
                _ => message.next_attempt_at,
            };
            if wake_at > deadline {
                return Ok(message);
            }
            let ms = u64::try_from((wake_at - now).max(1)).unwrap_or(1);
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// Attempts every message due now, [`MAX_CONCURRENT_SENDS`] at a time; returns
    /// how many were attempted.
    ///
    /// # Errors
    /// A store failure while looking for them.
    pub async fn drain(&self) -> SchedResult<usize> {
        self.drain_until(&CancellationToken::new()).await
    }

    /// [`Outbox::drain`] until `stop`: no message is taken after it fires, and the
    /// sends under way are cut off as [`Outbox::attempt_until`] says.
    async fn drain_until(&self, stop: &CancellationToken) -> SchedResult<usize> {
        let store = self.store.store().await?;
        let permits = Arc::new(Semaphore::new(MAX_CONCURRENT_SENDS));
        let mut attempted = 0;
        // Each round takes what is due; what it attempted is no longer due.
        for _ in 0..1_000 {
            if stop.is_cancelled() {
                break;
            }
            let ids = due_messages(store, self.clock.now_ms(), 512).await?;
            if ids.is_empty() {
                break;
            }
            let mut tasks = JoinSet::new();
            for id in ids {
                let permit = tokio::select! {
                    permit = permits.clone().acquire_owned() => permit,
                    () = stop.cancelled() => break,
                };
                let Ok(permit) = permit else {
                    break;
                };
                let outbox = self.clone();
                let stop = stop.clone();
                tasks.spawn(async move {
                    let _permit = permit;
                    if let Err(e) = outbox.attempt_until(&id, &stop).await {
                        tracing::warn!(id, "outbox attempt failed: {}", error_chain(&e));
                    }
                });
                attempted += 1;
            }
            while tasks.join_next().await.is_some() {}
        }
        Ok(attempted)
    }

    /// Delivers until `cancel`: drains what is due, then sleeps until the next
    /// message is due (at most [`MAX_IDLE_MS`]) or [`Outbox::wake`] is called.
    /// When `cancel` fires, no message is taken any more, and a send still under
    /// way after [`STOP_SEND_GRACE_MS`] is cut off and its message given back at
    /// once, due for any other deliverer (another replica on the same store).
    pub async fn run(&self, cancel: CancellationToken) {
        loop {
            if let Err(e) = self.drain_until(&cancel).await {
                tracing::warn!("outbox: cannot deliver what is due: {}", error_chain(&e));
            }
            let now = self.clock.now_ms();
            let next = match self.store.store().await {
                Ok(store) => next_message_due(store).await.ok().flatten(),
                Err(_) => None,
            };
            let sleep_ms = next.map_or(MAX_IDLE_MS, |at| (at - now).clamp(20, MAX_IDLE_MS));
            let sleep_ms = u64::try_from(sleep_ms).unwrap_or(1_000);
            tokio::select! {
                () = cancel.cancelled() => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(Duration::from_millis(sleep_ms)) => {}
            }
        }
    }
}

/// Completes `grace` after `stop` fires.
async fn stopped_for(stop: &CancellationToken, grace: Duration) {
    stop.cancelled().await;
    tokio::time::sleep(grace).await;
}

fn outgoing(message: &OutboxMessage) -> Result<Outgoing, SendError> {
    let media: Vec<Attachment> = match &message.media {
        None => Vec::new(),
        Some(text) => Attachment::from_outbox(text)?,
    };
    Ok(Outgoing {
        id: message.id.clone(),
        chat_id: message.chat_id.clone(),
        content: message.content.clone(),
        reply_to: message.reply_to.clone(),
        media,
        parts_sent: u32::try_from(message.parts_sent).unwrap_or(0),
    })
}
