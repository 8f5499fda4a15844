#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agent;
mod providers;
mod scripted;
mod subagents;
