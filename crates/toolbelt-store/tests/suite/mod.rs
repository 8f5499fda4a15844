#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod call_journal;
mod calls;
mod checkpoints;
mod cron;
mod open;
mod outputs;
mod planner;
mod questions;
mod reliability;
mod reviews;
mod runs;
mod subagents;
mod todos;
