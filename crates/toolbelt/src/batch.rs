//! `toolbelt batch`: several calls from one JSON array, as seed 003's batch
//! operations write them (`[{"tool": "createProject", "params": {...}}, ...]`).

use std::io::Read;

use anyhow::{Context, Result};
use clap::Args;
use toolbelt_core::{BatchMode, ToolCall};
use toolbelt_wire::batch::parse_calls;

/// Arguments of `toolbelt batch`.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// A JSON file holding an array of calls, each `{"tool": NAME, "params": {...}}`
    /// (`arguments` is accepted for `params`, which may be left out, and an `id` may
    /// name the call); `-` reads standard input.
    #[arg(default_value = "-")]
    pub file: String,
    /// Print the envelopes as one JSON array.
    #[arg(long)]
    pub json: bool,
    /// Let up to this many calls run at once. Only calls that are safe to run side
    /// by side do; any other call waits for the calls before it and runs alone. The
    /// default runs the calls one after another, each seeing what the ones before
    /// it did.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrent: Option<u16>,
    /// Timeout for each call in milliseconds (at most 600000).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
}

impl BatchArgs {
    /// How the calls run.
    pub fn mode(&self) -> BatchMode {
        match self.concurrent {
            Some(max) if max > 1 => BatchMode::Concurrent {
                max: usize::from(max),
            },
            _ => BatchMode::Sequential,
        }
    }

    /// The calls, read and checked: nothing runs when any of them is malformed.
    pub fn read_calls(&self) -> Result<Vec<ToolCall>> {
        let json = if self.file == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read the calls from standard input")?;
            bytes
        } else {
            std::fs::read(&self.file)
                .with_context(|| format!("cannot read the calls from {}", self.file))?
        };
        parse_calls(&json).map_err(anyhow::Error::msg)
    }
}
