#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agent;
mod hooks;
mod local;
mod origins;
mod providers;
mod scripted;
mod sinks;
mod subagents;
