//! The outbox: messages to channels, kept until they are delivered or given up.
//!
//! A message is written once ([`enqueue_message`], or by a cron firing) with an id
//! that is its idempotency key. A deliverer takes a lease on it
//! ([`claim_message`]: `pending` and due, or `sending` with a lease run out — the
//! deliverer died), sends it, and records the outcome under that lease
//! ([`record_sent`], [`record_retry`], [`record_failed`]); an outcome recorded
//! under a lease that was taken over in the meantime changes nothing.

use sqlx::{Any, Row, Transaction};

use crate::error::{DbError, StoreError, StoreResult};
use crate::store::Store;

/// A query on the store's database.
type AnyQuery<'q> = sqlx::query::Query<'q, Any, sqlx::any::AnyArguments>;

/// Where a message is in its delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxStatus {
    /// Waiting for its next attempt.
    Pending,
    /// A deliverer holds its lease.
    Sending,
    /// Delivered.
    Sent,
    /// Given up (the channel refused it, or the retries ran out).
    Failed,
}

impl OutboxStatus {
    /// The status as stored (`pending`, `sending`, `sent`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxStatus::Pending => "pending",
            OutboxStatus::Sending => "sending",
            OutboxStatus::Sent => "sent",
            OutboxStatus::Failed => "failed",
        }
    }

    /// The status stored as `text`.
    pub fn parse(text: &str) -> Option<OutboxStatus> {
        match text {
            "pending" => Some(OutboxStatus::Pending),
            "sending" => Some(OutboxStatus::Sending),
            "sent" => Some(OutboxStatus::Sent),
            "failed" => Some(OutboxStatus::Failed),
            _ => None,
        }
    }

    /// True once nothing more will happen to the message.
    pub fn is_final(self) -> bool {
        matches!(self, OutboxStatus::Sent | OutboxStatus::Failed)
    }
}

/// A message to put into the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOutboxMessage {
    /// Its id: the idempotency key sent with every attempt.
    pub id: String,
    /// The configured channel's name.
    pub channel: String,
    /// The chat (or address) in the channel.
    pub chat_id: Option<String>,
    /// The text.
    pub content: String,
    /// The message it answers, in the channel's own ids.
    pub reply_to: Option<String>,
    /// Attachments, as JSON (the deliverer's format).
    pub media: Option<String>,
    /// The cron job that sent it.
    pub job_id: Option<i64>,
}

/// A message in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// Its id (the idempotency key).
    pub id: String,
    /// The channel's name.
    pub channel: String,
    /// The chat in the channel.
    pub chat_id: Option<String>,
    /// The text.
    pub content: String,
    /// The message it answers.
    pub reply_to: Option<String>,
    /// Attachments, as JSON.
    pub media: Option<String>,
    /// The cron job that sent it.
    pub job_id: Option<i64>,
    /// Where its delivery is.
    pub status: OutboxStatus,
    /// Attempts so far (the one under way included).
    pub attempts: i64,
    /// When it may next be tried (ms).
    pub next_attempt_at: i64,
    /// The lease of the deliverer holding it (ms), while `sending`.
    pub lease_until: Option<i64>,
    /// What the last failed attempt got.
    pub last_error: Option<String>,
    /// When it was accepted (ms).
    pub created_at: i64,
    /// When it was delivered (ms).
    pub sent_at: Option<i64>,
    /// Its parts already delivered (a Telegram message's text, then each
    /// attachment): a new attempt goes on from the next.
    pub parts_sent: i64,
}

const COLUMNS: &str = "id, channel, chat_id, content, reply_to, media, job_id, status, attempts, next_attempt_at, lease_until, last_error, created_at, sent_at, parts_sent";

fn message_row(row: &sqlx::any::AnyRow) -> StoreResult<OutboxMessage> {
    let status: String = row.try_get(7)?;
    Ok(OutboxMessage {
        id: row.try_get(0)?,
        channel: row.try_get(1)?,
        chat_id: row.try_get(2)?,
        content: row.try_get(3)?,
        reply_to: row.try_get(4)?,
        media: row.try_get(5)?,
        job_id: row.try_get(6)?,
        status: OutboxStatus::parse(&status).ok_or_else(|| {
            StoreError::Internal(format!("outbox row with an unknown status {status:?}"))
        })?,
        attempts: row.try_get(8)?,
        next_attempt_at: row.try_get(9)?,
        lease_until: row.try_get(10)?,
        last_error: row.try_get(11)?,
        created_at: row.try_get(12)?,
        sent_at: row.try_get(13)?,
        parts_sent: row.try_get(14)?,
    })
}

pub(crate) async fn insert_message(
    tx: &mut Transaction<'static, Any>,
    m: &NewOutboxMessage,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO outbox (id, channel, chat_id, content, reply_to, media, job_id, status, attempts, next_attempt_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8, $8, $8)",
    )
    .bind(&m.id)
    .bind(&m.channel)
    .bind(&m.chat_id)
    .bind(&m.content)
    .bind(&m.reply_to)
    .bind(&m.media)
    .bind(m.job_id)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Puts a message into the outbox, due at once.
///
/// # Errors
/// [`StoreError::Conflict`] when a message with this id exists; a failed query.
pub async fn enqueue_message(store: &Store, m: &NewOutboxMessage, now: i64) -> StoreResult<()> {
    let mut tx = store.begin_write().await?;
    match insert_message(&mut tx, m, now).await {
        Err(StoreError::Query(DbError(sqlx::Error::Database(e)))) if e.is_unique_violation() => {
            return Err(StoreError::conflict(format!(
                "a message with id {:?} is already in the outbox",
                m.id
            )));
        }
        other => other?,
    }
    tx.commit().await?;
    Ok(())
}

/// The message `id`.
///
/// # Errors
/// The query fails.
pub async fn get_message(store: &Store, id: &str) -> StoreResult<Option<OutboxMessage>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM outbox WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(message_row).transpose()
}

/// Messages of the outbox, newest first, at most `limit`.
///
/// # Errors
/// The query fails.
pub async fn list_messages(store: &Store, limit: i64) -> StoreResult<Vec<OutboxMessage>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM outbox ORDER BY created_at DESC, id DESC LIMIT $1"
    )))
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(message_row).collect()
}

/// Ids of the messages a deliverer may take at `now`: pending and due, or sending
/// with a lease run out. Earliest first, at most `limit`.
///
/// # Errors
/// The query fails.
pub async fn due_messages(store: &Store, now: i64, limit: i64) -> StoreResult<Vec<String>> {
    let rows = sqlx::query(
        "SELECT id FROM outbox WHERE (status = 'pending' AND next_attempt_at <= $1) \
         OR (status = 'sending' AND lease_until <= $1) ORDER BY next_attempt_at, id LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}

/// When the next message becomes takeable (a pending one's next attempt, or a
/// lease running out).
///
/// # Errors
/// The query fails.
pub async fn next_message_due(store: &Store) -> StoreResult<Option<i64>> {
    let row = sqlx::query(
        "SELECT MIN(CASE WHEN status = 'pending' THEN next_attempt_at ELSE lease_until END) \
         FROM outbox WHERE status IN ('pending', 'sending')",
    )
    .fetch_one(store.pool())
    .await?;
    Ok(row.try_get::<Option<i64>, _>(0)?)
}

/// Takes the lease on message `id` until `lease_until` when it is takeable at
/// `now`, counting one more attempt. `None` when it is not (sent, failed, not due,
/// or leased by another deliverer).
///
/// # Errors
/// The query fails.
pub async fn claim_message(
    store: &Store,
    id: &str,
    now: i64,
    lease_until: i64,
) -> StoreResult<Option<OutboxMessage>> {
    let mut tx = store.begin_write().await?;
    let taken = sqlx::query(
        "UPDATE outbox SET status = 'sending', lease_until = $1, attempts = attempts + 1, updated_at = $2 \
         WHERE id = $3 AND ((status = 'pending' AND next_attempt_at <= $2) OR (status = 'sending' AND lease_until <= $2))",
    )
    .bind(lease_until)
    .bind(now)
    .bind(id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if taken == 0 {
        return Ok(None);
    }
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM outbox WHERE id = $1"
    )))
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    let message = message_row(&row)?;
    tx.commit().await?;
    Ok(Some(message))
}

/// Marks message `id`, leased until `lease_until`, as delivered. False when the
/// lease was taken over meanwhile.
///
/// # Errors
/// The query fails.
pub async fn record_sent(store: &Store, id: &str, lease_until: i64, now: i64) -> StoreResult<bool> {
    release(
        store,
        id,
        lease_until,
        now,
        "status = 'sent', sent_at = $3",
        |q| q,
    )
    .await
}

/// Notes that the first `parts` parts of message `id` are delivered, while the
/// lease `lease_until` holds it. False when the lease was taken over meanwhile.
///
/// # Errors
/// The query fails.
pub async fn record_parts_sent(
    store: &Store,
    id: &str,
    lease_until: i64,
    parts: i64,
    now: i64,
) -> StoreResult<bool> {
    let done = sqlx::query(
        "UPDATE outbox SET parts_sent = $4, updated_at = $3 \
         WHERE id = $1 AND status = 'sending' AND lease_until = $2",
    )
    .bind(id)
    .bind(lease_until)
    .bind(now)
    .bind(parts)
    .execute(store.pool())
    .await?
    .rows_affected();
    Ok(done == 1)
}

/// Gives message `id` back for another attempt at `next_attempt_at`, noting
/// `error`. False when the lease was taken over meanwhile.
///
/// # Errors
/// The query fails.
pub async fn record_retry(
    store: &Store,
    id: &str,
    lease_until: i64,
    next_attempt_at: i64,
    error: &str,
    now: i64,
) -> StoreResult<bool> {
    release(
        store,
        id,
        lease_until,
        now,
        "status = 'pending', next_attempt_at = $4, last_error = $5",
        |q| q.bind(next_attempt_at).bind(error),
    )
    .await
}

/// Gives up on message `id`, noting `error`. False when the lease was taken over
/// meanwhile.
///
/// # Errors
/// The query fails.
pub async fn record_failed(
    store: &Store,
    id: &str,
    lease_until: i64,
    error: &str,
    now: i64,
) -> StoreResult<bool> {
    release(
        store,
        id,
        lease_until,
        now,
        "status = 'failed', last_error = $4",
        |q| q.bind(error),
    )
    .await
}

/// Gives message `id`, leased until `lease_until`, back at once, as if this
/// attempt had not been made: pending, due `now`, its attempt not counted. For a
/// deliverer that stops in the middle of an attempt, so that another takes the
/// message without waiting for the lease to run out. False when the lease was
/// taken over meanwhile.
///
/// # Errors
/// The query fails.
pub async fn release_message(
    store: &Store,
    id: &str,
    lease_until: i64,
    now: i64,
) -> StoreResult<bool> {
    release(
        store,
        id,
        lease_until,
        now,
        "status = 'pending', next_attempt_at = $3, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END",
        |q| q,
    )
    .await
}

/// Ends the lease `lease_until` of message `id` at `now` with `set` (an SQL `SET`
/// list whose values from `$4` on `bind` adds; `$1` is the id, `$2` the lease,
/// `$3` now). False when the lease was taken over meanwhile.
async fn release<'q>(
    store: &Store,
    id: &'q str,
    lease_until: i64,
    now: i64,
    set: &str,
    bind: impl FnOnce(AnyQuery<'q>) -> AnyQuery<'q>,
) -> StoreResult<bool> {
    let query = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE outbox SET {set}, lease_until = NULL, updated_at = $3 \
         WHERE id = $1 AND status = 'sending' AND lease_until = $2"
    )))
    .bind(id)
    .bind(lease_until)
    .bind(now);
    let done = bind(query).execute(store.pool()).await?.rows_affected();
    Ok(done == 1)
}
