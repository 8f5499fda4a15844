//! What the tools that send messages share (`message`, and `cron`'s jobs that
//! send one): the channels listed in a description, the wait for a delivery
//! through the outbox ([`toolbelt_sched::Outbox`]), and a delivery as the model
//! reads it.

use schemars::JsonSchema;
use serde::Serialize;
use toolbelt_core::human::plural;
use toolbelt_core::{ErrorCode, Reply, ToolContext, ToolError, ToolResult};
use toolbelt_sched::{Messaging, Zone};
use toolbelt_store::{OutboxMessage, OutboxStatus};

/// How long a call waits for its message to be delivered, retries included,
/// before leaving the rest to the outbox.
pub const MESSAGE_WAIT_MS: i64 = 20_000;

/// Result of `message`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MessageOutput {
    /// The message's id, also its idempotency key.
    pub id: String,
    /// The channel.
    pub channel: String,
    /// The chat.
    pub chat_id: Option<String>,
    /// `sent`, or `pending` when the outbox is still retrying.
    pub status: String,
    /// Attempts made so far.
    pub attempts: i64,
    /// The last failure, when an attempt failed.
    pub error: Option<String>,
    /// The next attempt (RFC 3339), while pending.
    pub next_attempt: Option<String>,
}

/// How long a call waits for a delivery: [`MESSAGE_WAIT_MS`], or less when the
/// call's own timeout is shorter (a second is kept for the answer).
pub(crate) fn delivery_wait(ctx: &ToolContext) -> i64 {
    i64::try_from(ctx.session().timeout().as_millis())
        .unwrap_or(MESSAGE_WAIT_MS)
        .min(MESSAGE_WAIT_MS + 1_000)
        .saturating_sub(1_000)
        .max(0)
}

/// `base` and the configured channels as the descriptions list them, within
/// [`toolbelt_core::MAX_DESCRIPTION_CHARS`].
pub(crate) fn with_channels(base: &str, messaging: &Messaging) -> String {
    let channels = messaging.channels();
    let lines = channels.names().into_iter().filter_map(|name| {
        let c = channels.get(name)?;
        let mut notes = vec![c.kind().as_str().to_string()];
        if c.needs_chat_id() {
            notes.push("needs chat_id".into());
        }
        if !c.takes_media() {
            notes.push("no attachments".into());
        }
        Some(format!("\n- `{name}` ({})", notes.join(", ")))
    });
    crate::describe::with_listing(
        format!("{base}\n\nConfigured channels:"),
        lines,
        0,
        |left| format!("\n... and {left} more (a wrong name gets the full list)"),
    )
}

fn output(m: &OutboxMessage) -> MessageOutput {
    MessageOutput {
        id: m.id.clone(),
        channel: m.channel.clone(),
        chat_id: m.chat_id.clone(),
        status: m.status.as_str().replace("sending", "pending"),
        attempts: m.attempts,
        error: m.last_error.clone(),
        next_attempt: (m.status == OutboxStatus::Pending)
            .then(|| Zone::utc().format(m.next_attempt_at)),
    }
}

/// A delivered, pending or failed message as the model reads it.
pub(crate) fn delivery_reply(m: &OutboxMessage, what: &str) -> ToolResult<MessageOutput> {
    let out = output(m);
    match m.status {
        OutboxStatus::Sent => {
            let text = format!(
                "{what} sent to {}{} (id {}, {} {}).",
                m.channel,
                m.chat_id.as_deref().map(|c| format!(" chat {c}")).unwrap_or_default(),
                m.id,
                m.attempts,
                plural(m.attempts as u64, "attempt")
            );
            Ok(Reply::new(out, text))
        }
        OutboxStatus::Failed => Err(ToolError::new(
            ErrorCode::HttpStatus,
            format!(
                "channel {} refused the {}: {}",
                m.channel,
                what.to_lowercase(),
                m.last_error.as_deref().unwrap_or("no reason given")
            ),
        )
        .hint("fix what the channel complains about (chat_id, content) and send again; do not resend unchanged")
        .data(serde_json::to_value(&out).unwrap_or_default())),
        OutboxStatus::Pending | OutboxStatus::Sending => {
            let text = format!(
                "{what} accepted (id {}) but not delivered yet: {}. The outbox keeps retrying{}; do not send it again.",
                m.id,
                m.last_error.as_deref().unwrap_or("the channel has not answered yet"),
                out.next_attempt
                    .as_deref()
                    .map(|t| format!(" (next attempt {t})"))
                    .unwrap_or_default()
            );
            Ok(Reply::new(out, text).partial(false))
        }
    }
}
