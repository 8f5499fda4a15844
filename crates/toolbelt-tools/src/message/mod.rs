//! The message toolset: [`message::Message`] sends to the configured channels
//! through the outbox ([`toolbelt_sched::Outbox`]); what it shares with `cron` is
//! in [`crate::delivery`].

// Each tool of a toolset is `<toolset>/<tool>.rs`; here the tool is named like its set.
#[allow(clippy::module_inception)]
pub(crate) mod message;
