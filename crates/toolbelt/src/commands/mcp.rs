//! `toolbelt mcp`: the tools over MCP on standard input and output.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;
use toolbelt_store::CallLogWriter;
use toolbelt_upstream::Upstreams;

use crate::cli::{Global, McpFlags};
use crate::config::McpConfig;
use crate::runtime::{self, Threads};
use crate::settings::Settings;
use crate::stamps;
use crate::workspace::Workspace;

/// Serves the workspace's tools over MCP on standard input and output until the
/// client closes standard input (or SIGINT, SIGTERM). Without `--root` in `g`, the
/// client's roots become the workspace roots once it announces them.
///
/// # Errors
/// Invalid MCP options, the runtime or the store cannot be started, or the
/// server stops on an error.
pub fn run(flags: &McpFlags, ws: Workspace, mcp: &McpConfig, g: &Global) -> Result<ExitCode> {
    let options = mcp.options(flags)?;
    let Workspace {
        mut registry,
        store,
        call_log,
        messaging,
        subagents,
        upstreams,
        checks,
        ..
    } = ws;
    // One client, one request at a time mostly: a single-threaded runtime answers
    // without handing each message between threads (blocking file work still runs on
    // tokio's blocking pool), and holds less memory.
    let rt = runtime::start(Threads::One)?;
    rt.block_on(runtime::open_store(&store))?;
    // The other servers start beside the session: the client's handshake is
    // answered at once, and its first tools/list waits for their tools.
    {
        let upstreams = Arc::clone(&upstreams);
        rt.spawn(async move { upstreams.start().await });
    }
    // The client's roots may bring registries with stores of their own: every
    // writer is flushed at the end.
    let logs = Arc::new(Mutex::new(vec![runtime::start_call_log_on(
        &rt,
        &mut registry,
        &store,
        call_log,
    )]));
    if let Some(subagents) = &subagents {
        subagents.attach(&registry);
    }
    // Messages the `message` tool could not deliver at once (and those left by an
    // earlier run) go out while the session lasts, as under `toolbelt serve`.
    let outbox = CancellationToken::new();
    if !messaging.channels().is_empty() {
        let (deliverer, stop) = (messaging.outbox().clone(), outbox.clone());
        rt.spawn(async move { deliverer.run(stop).await });
    }
    let session = Arc::clone(registry.session());
    stamps::load(&session);
    // The skills are served as prompts too, following the workspace's roots.
    let skills = toolbelt_tools::Skills::from_env(session.roots());
    let mut server = toolbelt_server::McpServer::new(Arc::new(registry))
        .with_skills(skills)
        .with_options(options)
        .with_upstreams(Arc::clone(&upstreams));
    if g.roots.is_empty() {
        let g = g.clone();
        let logs = Arc::clone(&logs);
        server = server.with_client_roots(move |roots| {
            let mut ws = for_roots(&g, roots, &upstreams)?;
            let writer = runtime::start_call_log(&mut ws.registry, &ws.store, ws.call_log);
            ws.attach_subagents();
            toolbelt_core::sync::lock(&logs).push(writer);
            Ok(ws.registry)
        });
    }
    // SIGINT or SIGTERM ends the session like the end of standard input does: the
    // registry is dropped, which stops the background shells it started.
    let served = rt.block_on(async move {
        tokio::select! {
            served = toolbelt_server::mcp::serve(server) => served,
            () = toolbelt_server::http::shutdown_signal() => Ok(()),
        }
    });
    outbox.cancel();
    // No language server outlives the session.
    rt.block_on(checks.shutdown());
    let writers: Vec<Option<CallLogWriter>> = toolbelt_core::sync::lock(&logs).clone();
    for writer in writers.iter().flatten() {
        rt.block_on(writer.flush());
    }
    drop(rt);
    stamps::save_or_warn(&session);
    served.context("the MCP server stopped")?;
    Ok(ExitCode::SUCCESS)
}

/// The workspace of the command line `g` with the client's `roots`, offering the
/// tools of the other MCP servers already started.
fn for_roots(g: &Global, roots: Vec<PathBuf>, upstreams: &Arc<Upstreams>) -> Result<Workspace> {
    let g = Global { roots, ..g.clone() };
    let mut settings = Settings::new(&g)?;
    settings.mcp_servers.specs.clear();
    let mut ws = Workspace::build(&settings, false, true)?;
    if !upstreams.is_empty() {
        ws.registry
            .add_source(Arc::clone(upstreams) as Arc<dyn toolbelt_core::ToolSource>);
        ws.upstreams = Arc::clone(upstreams);
    }
    Ok(ws)
}
