//! The integration tests of toolbelt-sched, in one binary: channels against
//! loopback servers speaking each API, the outbox's retries, the scheduler's
//! claims on SQLite and PostgreSQL, daylight-saving days on an injected clock.

mod suite;
