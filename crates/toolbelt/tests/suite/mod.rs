//! The `toolbelt` binary, run as a user runs it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agent;
mod agent_guards;
mod agent_rewind;
mod agent_tui;
mod agent_tui_rewind;
mod call_log;
mod checkpoints;
mod cli;
mod cron;
mod diagnostics;
mod docs;
mod hooks;
mod layout;
mod leftovers;
mod mcp;
mod replica_runs;
mod replicas;
mod sandbox;
mod saved_outputs;
mod skills;
mod state;
mod store;
mod subagents;
mod surface;
mod toolsets;
mod upstream;
mod web;
