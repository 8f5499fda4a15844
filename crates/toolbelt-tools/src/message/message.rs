//! `message`: sends a message to a configured channel.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolbelt_core::{
    Category, ErrorCode, Hints, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_sched::{Attachment, MAX_MEDIA_BYTES, Messaging, NewMessage};

use crate::delivery::{MessageOutput, delivery_reply, delivery_wait, with_channels};
use crate::workspace::workspace;

/// Arguments of `message`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageParams {
    /// The text to send.
    #[schemars(length(min = 1))]
    pub content: String,
    /// The configured channel to send to (see the list in the description).
    #[schemars(length(min = 1))]
    pub channel: String,
    /// The chat in the channel (a Telegram chat id, an email address); needed when the channel has no default chat.
    #[serde(default)]
    pub chat_id: Option<String>,
    /// Files in the workspace to attach, where the channel takes attachments.
    #[serde(default)]
    pub media: Option<Vec<String>>,
    /// The message this one answers, in the channel's own ids (a Telegram message id, a Slack thread ts, an email Message-ID).
    #[serde(default)]
    pub reply_to: Option<String>,
}

/// The `message` tool: registered when at least one channel is configured.
#[derive(Debug, Clone)]
pub struct Message {
    messaging: Messaging,
}

impl Message {
    /// The tool, sending through `messaging`.
    pub fn new(messaging: Messaging) -> Message {
        Message { messaging }
    }
}

fn read_media(ctx: &ToolContext, paths: &[String]) -> Result<Vec<Attachment>, ToolError> {
    let ws = workspace(ctx)?;
    let mut total = 0usize;
    let mut out = Vec::new();
    for path in paths {
        let p = ws.resolve(path)?;
        let bytes = ws.jail.read(&p, MAX_MEDIA_BYTES as u64)?;
        total += bytes.len();
        if total > MAX_MEDIA_BYTES {
            return Err(ToolError::new(
                ErrorCode::TooLarge,
                format!("the attachments pass {MAX_MEDIA_BYTES} bytes"),
            )
            .hint("attach fewer or smaller files, or send a link instead"));
        }
        let name = std::path::Path::new(path).file_name().map_or_else(
            || "attachment".to_string(),
            |n| n.to_string_lossy().to_string(),
        );
        out.push(Attachment {
            content_type: content_type(&name).to_string(),
            name,
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        });
    }
    Ok(out)
}

fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("pdf") => "application/pdf",
        Some("txt" | "log" | "md") => "text/plain",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

impl TypedTool for Message {
    type Params = MessageParams;
    type Output = MessageOutput;

    fn spec(&self) -> ToolSpec {
        let description = with_channels(include_str!("message.md").trim_end(), &self.messaging);
        ToolSpec::describe("message", description)
            .title("Send Message")
            .category(Category::Message)
            .permission("message:send")
            .key_argument("channel")
            .hints(Hints::writes().open_world().concurrency_safe())
            .example(
                "Tell the team a build finished",
                json!({"channel": "team", "content": "Nightly build passed: 412 tests, 0 failures."}),
                json!({
                    "id": "01970f3e-8c7a-7d52-b1a4-3f7e2c9d0a11",
                    "channel": "team",
                    "chat_id": null,
                    "status": "sent",
                    "attempts": 1,
                    "error": null,
                    "next_attempt": null
                }),
            )
    }

    fn validate(&self, p: &MessageParams) -> Vec<Violation> {
        let mut out = Vec::new();
        if p.content.trim().is_empty() {
            out.push(Violation::new(
                "content",
                "content is empty: write the message",
            ));
        }
        if let Some(media) = &p.media
            && media.iter().any(|m| m.trim().is_empty())
        {
            out.push(Violation::new("media", "a media path is empty"));
        }
        out
    }

    async fn call(&self, ctx: &ToolContext, p: MessageParams) -> ToolResult<MessageOutput> {
        let channels = self.messaging.channels();
        let media_given = p.media.as_ref().is_some_and(|m| !m.is_empty());
        channels
            .check(&p.channel, p.chat_id.as_deref(), &p.content, media_given)
            .map_err(|e| {
                ToolError::from(e)
                    .hint("pick one of the configured channels and the arguments it needs")
            })?;
        let media = match &p.media {
            Some(paths) if !paths.is_empty() => read_media(ctx, paths)?,
            _ => Vec::new(),
        };
        let outbox = self.messaging.outbox();
        let id = outbox
            .enqueue(NewMessage {
                channel: p.channel,
                chat_id: p.chat_id,
                content: p.content,
                reply_to: p.reply_to,
                media,
            })
            .await?;
        let wait = delivery_wait(ctx);
        let sent = tokio::select! {
            r = outbox.deliver(&id, wait) => r?,
            () = ctx.cancel_token().cancelled() => {
                return Err(ToolError::new(ErrorCode::Cancelled, format!("cancelled; message {id} stays in the outbox and will be delivered")));
            }
        };
        delivery_reply(&sent, "Message")
    }
}
