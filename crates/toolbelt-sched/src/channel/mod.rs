//! Channels: where messages go. [`ChannelConfig`] is one `[channels.NAME]` table of
//! `toolbelt.toml`; [`Channels`] is the set built from them, secrets read from the
//! environment; [`Channel::send`] delivers one [`Outgoing`] message.
//!
//! | kind | request |
//! |---|---|
//! | `webhook` | `POST url` JSON `{channel, chat_id, content, id, reply_to?, media?}` |
//! | `telegram` | `POST {base_url}/bot{token}/sendMessage` JSON `{chat_id, text}`; media with `sendDocument` |
//! | `slack` | `POST url` (incoming webhook) JSON `{text}` (`thread_ts` for `reply_to`) |
//! | `discord` | `POST url` (webhook) JSON `{content}` |
//! | `email` | SMTP (STARTTLS by default) to `chat_id` or `to`, from `from` |
//! | `file` | one JSON line appended to `path` (in the state directory) |
//!
//! Every HTTP request carries the message id as `Idempotency-Key`, the same on every
//! attempt. A send fails as [`SendError::Retry`] (429, 5xx, the network: try again,
//! after `Retry-After` when the channel says) or [`SendError::Refused`] (any other
//! 4xx, a permanent SMTP reply: the channel's own text).
//!
//! # Security
//! Tokens, passwords and webhook URLs come from the configuration or the
//! environment, never from a model; they are never part of an error, a log line or
//! a result ([`Secret`] prints as `***`).

mod email;
mod file;
mod http;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::{SchedError, SchedResult};

pub use email::TlsMode;

/// Telegram's API when `base_url` is not set.
pub const TELEGRAM_BASE_URL: &str = "https://api.telegram.org";
/// Longest wait for one HTTP or SMTP attempt, in milliseconds.
pub const SEND_TIMEOUT_MS: u64 = 30_000;
/// Attachments of one message, in bytes at most.
pub const MAX_MEDIA_BYTES: usize = 10 * 1024 * 1024;

/// A value that must not be shown: a token, a password, a webhook URL.
pub use toolbelt_core::Secret;

/// The kinds of channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    /// Any HTTP endpoint taking our JSON.
    Webhook,
    /// A Telegram bot.
    Telegram,
    /// A Slack incoming webhook.
    Slack,
    /// A Discord webhook.
    Discord,
    /// SMTP.
    Email,
    /// JSON lines in a file.
    File,
}

impl ChannelKind {
    /// The kind as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Webhook => "webhook",
            ChannelKind::Telegram => "telegram",
            ChannelKind::Slack => "slack",
            ChannelKind::Discord => "discord",
            ChannelKind::Email => "email",
            ChannelKind::File => "file",
        }
    }
}

/// One `[channels.NAME]` table. Which keys apply depends on `kind`; secrets are
/// named by environment variables (`*_env`) rather than written in the file, though
/// `url` may be written directly.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// webhook, telegram, slack, discord, email or file.
    pub kind: Option<ChannelKind>,
    /// The webhook's URL (webhook, slack, discord).
    pub url: Option<String>,
    /// The environment variable holding the webhook's URL instead.
    pub url_env: Option<String>,
    /// The environment variable holding the bot token (telegram).
    pub token_env: Option<String>,
    /// Telegram's API address (default [`TELEGRAM_BASE_URL`]).
    pub base_url: Option<String>,
    /// The chat used when a message names none (telegram: a chat id; email: an address).
    pub chat_id: Option<String>,
    /// The file (file; relative to the state directory).
    pub path: Option<PathBuf>,
    /// The SMTP server (email).
    pub host: Option<String>,
    /// The SMTP port (email; default 587, 465 with `tls = "tls"`).
    pub port: Option<u16>,
    /// `starttls` (the default), `tls` (implicit TLS) or `none` (only for a local relay).
    pub tls: Option<TlsMode>,
    /// The SMTP user name (email).
    pub username: Option<String>,
    /// The environment variable holding the SMTP password (email).
    pub password_env: Option<String>,
    /// The sender address (email).
    pub from: Option<String>,
    /// The subject of the mails (email; default "Message from toolbelt").
    pub subject: Option<String>,
}

/// One message to send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    /// Its id: the idempotency key.
    pub id: String,
    /// The chat, when the channel has chats.
    pub chat_id: Option<String>,
    /// The text.
    pub content: String,
    /// The message it answers.
    pub reply_to: Option<String>,
    /// Attachments.
    #[serde(default)]
    pub media: Vec<Attachment>,
    /// Parts delivered by earlier attempts (a Telegram message's text, then each
    /// attachment): this attempt sends the rest.
    #[serde(default)]
    pub parts_sent: u32,
}

/// Told, as each part of a message is delivered, how many are delivered so far
/// (kept in the outbox, so that an attempt cut off between parts, by an error or a
/// crash, goes on from the next part).
pub type PartsSent<'a> = &'a (dyn Fn(u32) -> toolbelt_core::BoxFuture<'a, ()> + Send + Sync);

/// An attachment, carried in the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The file's name.
    pub name: String,
    /// Its MIME type.
    pub content_type: String,
    /// Its bytes, base64.
    pub data: String,
}

impl Attachment {
    /// Its bytes, decoded from the outbox's base64.
    pub(crate) fn bytes(&self) -> Result<Vec<u8>, AttachmentError> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .map_err(|_| AttachmentError::Damaged {
                name: self.name.clone(),
            })
    }

    /// The attachments an outbox row keeps as JSON.
    pub(crate) fn from_outbox(text: &str) -> Result<Vec<Attachment>, AttachmentError> {
        Ok(serde_json::from_str(text)?)
    }
}

/// Why the attachments kept in the outbox cannot be sent: refused for good.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttachmentError {
    /// The base64 of one attachment does not decode.
    #[error("attachment {name} is damaged in the outbox")]
    Damaged {
        /// The attachment's name.
        name: String,
    },
    /// The JSON list of a message's attachments does not decode.
    #[error("the message's attachments are damaged in the outbox")]
    List(#[from] serde_json::Error),
}

impl From<AttachmentError> for SendError {
    fn from(e: AttachmentError) -> SendError {
        SendError::Refused {
            detail: toolbelt_core::error_chain(&e),
        }
    }
}

/// A failed send. Its detail is text, not a typed source: it is stored in the
/// outbox row and read back from there, so the cause is joined into it
/// ([`error_chain`](toolbelt_core::error_chain)) where the send fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Worth another try (429, 5xx, a network failure), after `retry_after` when
    /// the channel asked for it.
    #[error("{detail}")]
    Retry {
        /// What happened (the channel's status and text; never a secret).
        detail: String,
        /// The wait the channel asked for.
        retry_after: Option<Duration>,
    },
    /// Refused for good: the channel's own text.
    #[error("{detail}")]
    Refused {
        /// What the channel said.
        detail: String,
    },
}

/// A usable channel.
#[derive(Debug)]
pub struct Channel {
    name: String,
    kind: ChannelKind,
    target: Target,
}

#[derive(Debug)]
enum Target {
    Webhook {
        url: Secret,
    },
    Telegram {
        base: String,
        token: Secret,
        default_chat: Option<String>,
    },
    Slack {
        url: Secret,
    },
    Discord {
        url: Secret,
    },
    Email(Box<email::Email>),
    File {
        path: PathBuf,
    },
}

impl Channel {
    /// Its configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its kind.
    pub fn kind(&self) -> ChannelKind {
        self.kind
    }

    /// True when a message must name a chat (no default chat is configured).
    pub fn needs_chat_id(&self) -> bool {
        match &self.target {
            Target::Telegram { default_chat, .. } => default_chat.is_none(),
            Target::Email(e) => !e.has_default_to(),
            _ => false,
        }
    }

    /// True when messages may carry attachments.
    pub fn takes_media(&self) -> bool {
        matches!(
            self.kind,
            ChannelKind::Webhook | ChannelKind::Telegram | ChannelKind::Email | ChannelKind::File
        )
    }

    /// The longest text the channel takes, in characters.
    pub fn max_content_chars(&self) -> usize {
        match self.kind {
            ChannelKind::Telegram => 4_096,
            ChannelKind::Discord => 2_000,
            ChannelKind::Slack => 40_000,
            _ => 1_000_000,
        }
    }

    /// Sends `message`.
    ///
    /// # Errors
    /// [`SendError::Retry`] or [`SendError::Refused`], with the channel's text.
    ///
    /// # Security
    /// The URL and token go only into the request; errors never carry them.
    pub async fn send(
        &self,
        http: Option<&reqwest::Client>,
        message: &Outgoing,
        parts_sent: PartsSent<'_>,
    ) -> Result<(), SendError> {
        let client = || {
            http.ok_or_else(|| SendError::Refused {
                detail: "no HTTP client was set up for the HTTP channels".into(),
            })
        };
        match &self.target {
            Target::Webhook { url } => http::webhook(client()?, url, &self.name, message).await,
            Target::Telegram {
                base,
                token,
                default_chat,
            } => {
                let chat = message
                    .chat_id
                    .as_deref()
                    .or(default_chat.as_deref())
                    .ok_or_else(|| SendError::Refused {
                        detail: format!("channel {:?} needs a chat_id", self.name),
                    })?;
                http::telegram(client()?, base, token, chat, message, parts_sent).await
            }
            Target::Slack { url } => http::slack(client()?, url, message).await,
            Target::Discord { url } => http::discord(client()?, url, message).await,
            Target::Email(e) => e.send(message).await,
            Target::File { path } => file::append(path, &self.name, message).await,
        }
    }
}

/// The configured channels, by name.
#[derive(Debug, Default, Clone)]
pub struct Channels {
    by_name: BTreeMap<String, Arc<Channel>>,
    http: Option<reqwest::Client>,
}

impl Channels {
    /// No channel.
    pub fn none() -> Channels {
        Channels::default()
    }

    /// The channels of `configs`, reading secrets with `env` (`std::env::var` in the
    /// binary) and placing `file` channels' relative paths in `state_dir`.
    ///
    /// # Errors
    /// [`SchedError::Config`] naming the channel and what is missing; never a secret.
    ///
    /// # Security
    /// Tokens, passwords and webhook URLs are read here and kept as [`Secret`]s; an
    /// error names the variable or key, never its value.
    pub fn from_config(
        configs: &BTreeMap<String, ChannelConfig>,
        env: &dyn Fn(&str) -> Option<String>,
        state_dir: &Path,
    ) -> SchedResult<Channels> {
        let mut by_name = BTreeMap::new();
        for (name, config) in configs {
            let channel = build(name, config, env, state_dir)?;
            by_name.insert(name.clone(), Arc::new(channel));
        }
        let http = if by_name.values().any(|c| {
            matches!(
                c.kind,
                ChannelKind::Webhook
                    | ChannelKind::Telegram
                    | ChannelKind::Slack
                    | ChannelKind::Discord
            )
        }) {
            Some(http::client()?)
        } else {
            None
        };
        Ok(Channels { by_name, http })
    }

    /// True when no channel is configured.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.by_name.keys().map(String::as_str).collect()
    }

    /// The channel `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Channel>> {
        self.by_name.get(name)
    }

    /// The channel `name`, or an error naming the configured ones.
    ///
    /// # Errors
    /// [`SchedError::Request`] for a name not configured.
    pub fn require(&self, name: &str) -> SchedResult<&Arc<Channel>> {
        self.get(name).ok_or_else(|| {
            if self.is_empty() {
                SchedError::Request(format!(
                    "channel {name:?} is not configured, and no channel is: add a [channels.NAME] table to toolbelt.toml"
                ))
            } else {
                SchedError::Request(format!(
                    "channel {name:?} is not configured; the configured channels are: {}",
                    self.names().join(", ")
                ))
            }
        })
    }

    /// Checks a message for `name` before it is accepted: the channel exists, a
    /// chat is named when it needs one, the text fits, attachments are taken.
    ///
    /// # Errors
    /// [`SchedError::Request`] saying what to change.
    pub fn check(
        &self,
        name: &str,
        chat_id: Option<&str>,
        content: &str,
        media: bool,
    ) -> SchedResult<()> {
        let channel = self.require(name)?;
        if channel.needs_chat_id() && chat_id.is_none_or(|c| c.trim().is_empty()) {
            return Err(SchedError::Request(format!(
                "channel {name:?} ({}) needs a chat_id: {}",
                channel.kind.as_str(),
                match channel.kind {
                    ChannelKind::Email => "the recipient's address",
                    _ => "the chat to post in",
                }
            )));
        }
        if content.trim().is_empty() {
            return Err(SchedError::Request(
                "content is empty: write the message".into(),
            ));
        }
        let chars = content.chars().count();
        if chars > channel.max_content_chars() {
            return Err(SchedError::Request(format!(
                "content has {chars} characters; channel {name:?} ({}) takes at most {}: split it into several messages",
                channel.kind.as_str(),
                channel.max_content_chars()
            )));
        }
        if media && !channel.takes_media() {
            return Err(SchedError::Request(format!(
                "channel {name:?} ({}) takes no attachments: send the text alone, or use a webhook, telegram, email or file channel",
                channel.kind.as_str()
            )));
        }
        Ok(())
    }

    /// The HTTP client shared by the HTTP channels (`None` without one).
    pub fn http(&self) -> Option<&reqwest::Client> {
        self.http.as_ref()
    }
}

fn config_error(channel: &str, message: impl Into<String>) -> SchedError {
    SchedError::Config {
        channel: channel.to_string(),
        message: message.into(),
        source: None,
    }
}

/// [`SchedError::Config`] for `channel`: `message`, because of `source`.
fn config_failed(
    channel: &str,
    message: impl Into<String>,
    source: impl std::error::Error + Send + Sync + 'static,
) -> SchedError {
    SchedError::Config {
        channel: channel.to_string(),
        message: message.into(),
        source: Some(Box::new(source)),
    }
}

fn secret_url(
    name: &str,
    c: &ChannelConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> SchedResult<Secret> {
    let url = match (&c.url, &c.url_env) {
        (Some(url), None) => url.clone(),
        (None, Some(var)) => env(var).filter(|v| !v.trim().is_empty()).ok_or_else(|| {
            config_error(
                name,
                format!("the environment variable {var} (url_env) is not set"),
            )
        })?,
        (Some(_), Some(_)) => return Err(config_error(name, "give url or url_env, not both")),
        (None, None) => {
            return Err(config_error(
                name,
                "needs url (or url_env naming a variable that holds it)",
            ));
        }
    };
    let parsed = reqwest::Url::parse(url.trim())
        .map_err(|_| config_error(name, "its url is not a valid http(s) URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(config_error(name, "its url must be http:// or https://"));
    }
    Ok(Secret::new(url.trim()))
}

fn build(
    name: &str,
    c: &ChannelConfig,
    env: &dyn Fn(&str) -> Option<String>,
    state_dir: &Path,
) -> SchedResult<Channel> {
    let Some(kind) = c.kind else {
        return Err(config_error(
            name,
            "needs kind: webhook, telegram, slack, discord, email or file",
        ));
    };
    let target = match kind {
        ChannelKind::Webhook => Target::Webhook {
            url: secret_url(name, c, env)?,
        },
        ChannelKind::Slack => Target::Slack {
            url: secret_url(name, c, env)?,
        },
        ChannelKind::Discord => Target::Discord {
            url: secret_url(name, c, env)?,
        },
        ChannelKind::Telegram => {
            let var = c.token_env.as_deref().unwrap_or("TELEGRAM_BOT_TOKEN");
            let token = env(var).filter(|v| !v.trim().is_empty()).ok_or_else(|| {
                config_error(
                    name,
                    format!("the environment variable {var} (token_env) is not set"),
                )
            })?;
            let base = c
                .base_url
                .as_deref()
                .unwrap_or(TELEGRAM_BASE_URL)
                .trim_end_matches('/')
                .to_string();
            if reqwest::Url::parse(&base).is_err() {
                return Err(config_error(name, "its base_url is not a valid URL"));
            }
            Target::Telegram {
                base,
                token: Secret::new(token.trim()),
                default_chat: c.chat_id.clone(),
            }
        }
        ChannelKind::Email => Target::Email(Box::new(email::Email::from_config(name, c, env)?)),
        ChannelKind::File => {
            let path = c
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("messages-{name}.jsonl")));
            let path = if path.is_absolute() {
                path
            } else {
                state_dir.join(path)
            };
            Target::File { path }
        }
    };
    Ok(Channel {
        name: name.to_string(),
        kind,
        target,
    })
}
