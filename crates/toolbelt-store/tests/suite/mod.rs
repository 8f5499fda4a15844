#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod calls;
mod checkpoints;
mod cron;
mod open;
mod planner;
mod reliability;
mod reviews;
mod subagents;
mod todos;
