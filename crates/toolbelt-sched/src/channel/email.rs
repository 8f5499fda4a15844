//! The email channel: SMTP through lettre (STARTTLS by default, rustls).

use std::time::Duration;

use lettre::message::header::{ContentType, ContentTypeErr};
use lettre::message::{Attachment as MailAttachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde::Deserialize;

use super::{ChannelConfig, Outgoing, SEND_TIMEOUT_MS, SendError, config_error, config_failed};
use crate::error::SchedResult;

/// How the SMTP connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// Plain connection upgraded with STARTTLS, required (port 587).
    #[default]
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// No TLS: only for a relay on this machine or a test server.
    None,
}

/// A mail that cannot be built is refused for good: trying again builds the
/// same mail.
/// Only the fallback type `application/octet-stream` is parsed with `?`, and it
/// always parses.
impl From<ContentTypeErr> for SendError {
    fn from(_: ContentTypeErr) -> SendError {
        SendError::Refused {
            detail: "bad type".into(),
        }
    }
}

impl From<lettre::error::Error> for SendError {
    fn from(e: lettre::error::Error) -> SendError {
        SendError::Refused {
            detail: format!(
                "the mail cannot be built: {}",
                toolbelt_core::error_chain(&e)
            ),
        }
    }
}

/// A configured SMTP channel.
pub(crate) struct Email {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    default_to: Option<String>,
    subject: String,
}

impl std::fmt::Debug for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Email")
            .field("from", &self.from.to_string())
            .field("default_to", &self.default_to)
            .finish_non_exhaustive()
    }
}

/// The address configured as `field` of channel `channel`.
fn address(channel: &str, field: &str, text: &str) -> SchedResult<Mailbox> {
    text.parse()
        .map_err(|_| config_error(channel, format!("its {field} is not an email address")))
}

impl Email {
    pub(crate) fn from_config(
        name: &str,
        c: &ChannelConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> SchedResult<Email> {
        let host = c
            .host
            .as_deref()
            .filter(|h| !h.trim().is_empty())
            .ok_or_else(|| config_error(name, "needs host (the SMTP server)"))?;
        let from = c
            .from
            .as_deref()
            .ok_or_else(|| config_error(name, "needs from (the sender's address)"))?;
        let from = address(name, "from", from)?;
        let tls = c.tls.unwrap_or_default();
        let builder = match tls {
            TlsMode::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host),
            TlsMode::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(host),
            TlsMode::None => Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(
                host,
            )),
        }
        .map_err(|e| config_failed(name, "SMTP setup failed", e))?;
        let port = c.port.unwrap_or(match tls {
            TlsMode::Tls => 465,
            TlsMode::Starttls => 587,
            TlsMode::None => 25,
        });
        let mut builder = builder
            .port(port)
            .timeout(Some(Duration::from_millis(SEND_TIMEOUT_MS)));
        if let Some(user) = &c.username {
            let var = c.password_env.as_deref().ok_or_else(|| {
                config_error(
                    name,
                    "has a username but no password_env naming the variable with the password",
                )
            })?;
            let password = env(var).ok_or_else(|| {
                config_error(
                    name,
                    format!("the environment variable {var} (password_env) is not set"),
                )
            })?;
            builder = builder.credentials(Credentials::new(user.clone(), password));
        }
        if let Some(to) = &c.chat_id {
            address(name, "chat_id (the default recipient)", to)?;
        }
        Ok(Email {
            transport: builder.build(),
            from,
            default_to: c.chat_id.clone(),
            subject: c
                .subject
                .clone()
                .unwrap_or_else(|| "Message from toolbelt".to_string()),
        })
    }

    pub(crate) fn has_default_to(&self) -> bool {
        self.default_to.is_some()
    }

    pub(crate) async fn send(&self, message: &Outgoing) -> Result<(), SendError> {
        let refused = |detail: String| SendError::Refused { detail };
        let to_text = message
            .chat_id
            .as_deref()
            .or(self.default_to.as_deref())
            .ok_or_else(|| refused("an email needs a chat_id: the recipient's address".into()))?;
        let to: Mailbox = to_text
            .parse()
            .map_err(|_| refused(format!("{to_text:?} is not an email address")))?;
        let mut builder = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(self.subject.clone())
            .message_id(Some(format!("<{}@toolbelt>", message.id)));
        if let Some(reply_to) = &message.reply_to {
            builder = builder.in_reply_to(reply_to.clone());
        }
        let text = SinglePart::builder()
            .header(ContentType::TEXT_PLAIN)
            .body(message.content.clone());
        let built = if message.media.is_empty() {
            builder.singlepart(text)
        } else {
            let mut parts = MultiPart::mixed().singlepart(text);
            for m in &message.media {
                let bytes = m.bytes()?;
                let kind = ContentType::parse(&m.content_type)
                    .or_else(|_| ContentType::parse("application/octet-stream"))?;
                parts = parts.singlepart(MailAttachment::new(m.name.clone()).body(bytes, kind));
            }
            builder.multipart(parts)
        }?;
        match self.transport.send(built).await {
            Ok(_) => Ok(()),
            // The detail is stored in the outbox row: the cause is joined into it.
            Err(e) => {
                let why = toolbelt_core::error_chain(&e);
                Err(if e.is_permanent() {
                    refused(format!("the SMTP server refused the mail: {why}"))
                } else {
                    SendError::Retry {
                        detail: format!("SMTP: {why}"),
                        retry_after: None,
                    }
                })
            }
        }
    }
}
