//! [`SchedError`]: what the scheduler, the channels and the outbox can refuse or fail with.

use toolbelt_core::{ErrorCode, ToolError, error_chain};
use toolbelt_store::StoreError;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchedError {
    /// A schedule that cannot be read (bad cron expression, interval, time).
    #[error("{message}")]
    Schedule {
        /// What is wrong with it.
        message: String,
        /// How to write it instead.
        hint: String,
    },
    /// A cron expression croner refuses.
    #[error("schedule {text:?} is not a valid cron expression")]
    Cron {
        /// The schedule as written.
        text: String,
        /// How to write it instead.
        hint: String,
        /// What croner finds wrong with it.
        #[source]
        source: croner::errors::CronError,
    },
    /// A time zone that is not an IANA name.
    #[error("unknown time zone {zone:?}")]
    TimeZone {
        /// The name given.
        zone: String,
    },
    /// A channel's configuration cannot be used.
    #[error("channel {channel:?}: {message}")]
    Config {
        /// The channel's name.
        channel: String,
        /// What is wrong (never a secret).
        message: String,
        /// The error behind it, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// The attachments of a message cannot be encoded for the outbox.
    #[error("the attachments cannot be encoded")]
    Attachments(#[source] serde_json::Error),
    /// A request naming no configured channel, or not fitting the channel.
    #[error("{0}")]
    Request(String),
    /// The store failed or refused.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SchedError {
    /// The error as a model reads it.
    pub fn into_tool_error(self) -> ToolError {
        match self {
            SchedError::Schedule { message, hint } => {
                ToolError::new(ErrorCode::InvalidParams, message).hint(hint)
            }
            SchedError::Cron { ref hint, .. } => {
                ToolError::new(ErrorCode::InvalidParams, error_chain(&self)).hint(hint.clone())
            }
            e @ SchedError::TimeZone { .. } => ToolError::new(ErrorCode::InvalidParams, error_chain(&e))
                .hint("use an IANA time zone name such as \"Europe/Berlin\", \"America/New_York\", \"Asia/Shanghai\" or \"UTC\""),
            e @ SchedError::Config { .. } => ToolError::new(ErrorCode::DependencyMissing, error_chain(&e))
                .hint("the channel is not usable as configured; tell the user, who can fix toolbelt.toml or the environment"),
            e @ SchedError::Attachments(_) => {
                ToolError::new(ErrorCode::InvalidParams, error_chain(&e))
            }
            SchedError::Request(m) => ToolError::new(ErrorCode::InvalidParams, m),
            SchedError::Store(e) => e.into(),
        }
    }
}

impl From<SchedError> for ToolError {
    fn from(e: SchedError) -> ToolError {
        e.into_tool_error()
    }
}

/// Results of this crate.
pub type SchedResult<T> = Result<T, SchedError>;
