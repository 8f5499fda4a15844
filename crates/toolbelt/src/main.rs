//! `toolbelt`: list the tools, export their schemas for any model API, call them.
//!
//! A run goes parse → settings → run: [`cli`] reads the command line, [`settings`]
//! adds the environment and the config file ([`config`]), [`workspace`] builds the
//! tools those settings describe, and one of [`commands`] does the work, on the
//! runtime, store and call log of [`runtime`].
// The doc comments of the command-line types are the text of `--help` (clap reads
// them): `[mcp] output_budget` and `<state-dir>` there are words for the terminal,
// not rustdoc links or HTML.
#![allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls
)]

mod cli;
mod commands;
mod config;
mod constraint;
mod diagnostics;
mod hooks;
mod jobs;
mod leftovers;
mod model;
mod render;
mod runtime;
mod saved_outputs;
mod settings;
mod stamps;
mod upstream;
mod workspace;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use crate::cli::{Cli, Command};
use crate::commands::ClosedStdout;
use crate::settings::{AgentSettings, Settings};
use crate::workspace::Workspace;

fn main() -> ExitCode {
    // Re-run as the sandbox helper: sets the sandbox up, runs a command, exits.
    toolbelt_sandbox::dispatch();
    let cli = Cli::parse();
    // `TOOLBELT_PARSE_ONLY=1`: check the command line and stop, running nothing (a
    // bad one has already exited with clap's message and status 2).
    if std::env::var_os("TOOLBELT_PARSE_ONLY").is_some_and(|v| v == "1") {
        return ExitCode::SUCCESS;
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colours only on a terminal: a log file or a client's pipe gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(cli) {
        Ok(code) => code,
        // A reader that stopped reading (`toolbelt schema | head`) is not an error.
        Err(e) if e.is::<ClosedStdout>() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("toolbelt: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The settings of the command line, the workspace they describe, then the command.
fn run(cli: Cli) -> Result<ExitCode> {
    let Cli { global, command } = cli;
    let settings = Settings::new(&global);
    // The doctor reports bad settings rather than failing on them.
    // Adding or removing a server edits a config file that may not load yet.
    if let Command::McpServers(args) = command {
        return commands::mcp_servers::run(args.action, &global);
    }
    if let Command::Doctor(args) = command {
        return commands::doctor::run(settings, args.json);
    }
    let mut settings = settings?;
    if let Command::Agent(args) = &command
        && AgentSettings::small_model(args, &settings.file.agent)?
    {
        settings.for_small_model();
    }
    let for_agent = matches!(command, Command::Agent(_));
    let inline_files = matches!(command, Command::Mcp(_));
    let ws = Workspace::build(&settings, for_agent, inline_files)?;
    let file = &settings.file;
    // Listing the tools of other MCP servers starts them (on a runtime that lives
    // while they are listed).
    let listing = matches!(command, Command::Tools(_) | Command::Schema(_));
    let _servers = if listing && !ws.upstreams.is_empty() {
        let rt = runtime::start(runtime::Threads::One)?;
        rt.block_on(ws.start_servers());
        Some(rt)
    } else {
        None
    };
    if matches!(
        command,
        Command::Mcp(_) | Command::Serve(_) | Command::Agent(_) | Command::Cron(_)
    ) {
        hooks::warn_untrusted(ws.hooks.as_deref(), &settings.mcp_servers.untrusted);
    }
    match command {
        Command::Tools(args) => commands::tools::run(args, &ws.registry),
        Command::Schema(args) => commands::schema::run(args, &ws.registry),
        Command::Call(args) => commands::call::run(args, ws),
        Command::Batch(args) => commands::batch::run(args, ws),
        Command::Serve(args) => commands::serve::run(args, ws, &file.mcp),
        Command::Mcp(flags) => commands::mcp::run(&flags, ws, &file.mcp, &global),
        Command::Log(args) => commands::log::run(&args, &ws.store),
        Command::Checkpoints(args) => commands::checkpoints::run(args.action, &ws),
        Command::Rewind(args) => commands::checkpoints::rewind(&args, &ws),
        Command::Hooks(args) => commands::hooks::run(args.action, &ws, &settings),
        Command::Agent(args) => commands::agent::run(args, ws, &file.agent),
        Command::Cron(args) => commands::cron::run(args, ws),
        Command::Doctor(_) | Command::McpServers(_) => unreachable!("answered above"),
    }
}
