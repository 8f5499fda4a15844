//! Checkpoints through a real registry, real files and a real SQLite store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod engine;
