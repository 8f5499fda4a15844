//! The message toolset: [`message::Message`] sends to the configured channels
//! through the outbox ([`toolbelt_sched::Outbox`]).

// Each tool of a toolset is `<toolset>/<tool>.rs`; here the tool is named like its set.
#[allow(clippy::module_inception)]
pub(crate) mod message;
