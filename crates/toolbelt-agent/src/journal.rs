//! Where a run reports what happens: its events, and its transcript when it has
//! one. The loop and compaction both write here.

use serde_json::{Value, json};
use toolbelt_core::error_chain;

use crate::events::{AgentEvent, EventTx};
use crate::transcript::Transcript;

/// A run's events and transcript.
#[derive(Debug)]
pub(crate) struct Journal {
    events: EventTx,
    transcript: Option<Transcript>,
}

impl Journal {
    /// Events to `events`, no transcript yet.
    pub(crate) fn new(events: EventTx) -> Journal {
        Journal {
            events,
            transcript: None,
        }
    }

    /// Where the events go.
    pub(crate) fn events(&self) -> &EventTx {
        &self.events
    }

    /// The transcript, once there is one.
    pub(crate) fn transcript(&self) -> Option<&Transcript> {
        self.transcript.as_ref()
    }

    /// Writes to `transcript` from now on (none: no transcript).
    pub(crate) fn set_transcript(&mut self, transcript: Option<Transcript>) {
        self.transcript = transcript;
    }

    /// Appends `line` to the transcript, if there is one; a failed write is logged,
    /// never fatal.
    pub(crate) fn record(&mut self, line: &Value) {
        if let Some(t) = &mut self.transcript
            && let Err(e) = t.write(line)
        {
            tracing::warn!("the transcript cannot be written: {}", error_chain(&e));
        }
    }

    /// Sends `event` (nobody listening is fine).
    pub(crate) fn emit(&self, event: AgentEvent) {
        let _ = self.events.send(event);
    }

    /// Something the person watching should know, in the transcript and the events.
    pub(crate) fn notice(&mut self, message: String) {
        self.record(&json!({"type": "notice", "message": message}));
        self.emit(AgentEvent::Notice { message });
    }
}
