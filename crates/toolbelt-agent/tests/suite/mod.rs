#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agent;
mod constrain;
mod hooks;
mod local;
mod origins;
mod providers;
mod scripted;
mod shaped;
mod sinks;
mod small;
mod subagents;
