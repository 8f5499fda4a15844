//! What every command that calls tools shares: the Tokio runtime (one builder,
//! two sizes), opening the store, the call log, and running calls.

use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::runtime::Runtime;
use toolbelt_core::{BatchMode, CallOptions, Envelope, Registry, ToolCall};
use toolbelt_store::{CALL_JOURNAL_DIR, CallLogWriter, StoreHandle};

use crate::stamps;
use crate::workspace::Workspace;

/// How many threads a runtime runs tasks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// The calling thread: starts fastest and holds the least memory, for a
    /// command that makes a few calls or serves one client (blocking file work
    /// still runs on Tokio's blocking pool).
    One,
    /// A worker per core, for servers of many clients and the agent.
    Many,
}

/// A Tokio runtime with I/O and timers.
///
/// # Errors
/// The runtime cannot be started (no threads, no event loop).
pub fn start(threads: Threads) -> Result<Runtime> {
    let mut builder = match threads {
        Threads::One => tokio::runtime::Builder::new_current_thread(),
        Threads::Many => tokio::runtime::Builder::new_multi_thread(),
    };
    builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Opens the store now: a server refuses to start on a corrupt, foreign or newer
/// database (which is left untouched) rather than failing its first planner call.
///
/// # Errors
/// The store cannot be opened.
pub async fn open_store(store: &StoreHandle) -> Result<()> {
    store
        .store()
        .await
        .map(|_| ())
        .context("the store cannot be opened")
}

/// Opens the store for the call log before the calls: a store that cannot be
/// opened costs the log (with a warning), not the calls.
pub fn open_store_for_log(rt: &Runtime, store: &StoreHandle, call_log: bool) {
    if call_log && let Err(e) = rt.block_on(store.store()) {
        eprintln!(
            "toolbelt: warning: the calls will not be logged: {}",
            toolbelt_core::error_chain(&e)
        );
    }
}

/// Records every call of `registry` in the call log of `store` (unless the log is
/// switched off), through the call journal in the session's state directory
/// (`<state>/call-journal/`): a call is journalled before its answer leaves, and
/// what an ended process left there is written first. Flush the writer before the
/// process ends. Needs a Tokio runtime entered.
pub fn start_call_log(
    registry: &mut Registry,
    store: &StoreHandle,
    on: bool,
) -> Option<CallLogWriter> {
    if !on {
        return None;
    }
    let workspace = toolbelt_store::workspace_key(registry.session());
    let journal = registry.session().state_dir().join(CALL_JOURNAL_DIR);
    let writer = CallLogWriter::start_journaled(store.clone(), workspace.clone(), &journal)
        .unwrap_or_else(|e| {
            eprintln!(
                "toolbelt: warning: calls are logged without a journal (a crash loses the last ones): {}",
                toolbelt_core::error_chain(&e)
            );
            CallLogWriter::start(store.clone(), workspace)
        });
    registry.set_call_log(Some(Arc::new(writer.clone())));
    Some(writer)
}

/// [`start_call_log`] on `rt`.
pub fn start_call_log_on(
    rt: &Runtime,
    registry: &mut Registry,
    store: &StoreHandle,
    on: bool,
) -> Option<CallLogWriter> {
    let _entered = rt.enter();
    start_call_log(registry, store, on)
}

/// Waits until `writer` has written what it was given (or, when the store cannot
/// be written, until it has tried: the records stay in the journal).
pub async fn flush_log(writer: Option<&CallLogWriter>) {
    if let Some(w) = writer {
        w.flush().await;
    }
}

/// Runs `calls` (what `call`, `batch` and `cron` do) on a single-threaded runtime
/// (it starts fastest; blocking file work and searches run on their own threads),
/// with the files the agent has seen loaded and saved around them when a file tool
/// takes part, and the calls logged.
///
/// # Errors
/// The runtime cannot be started.
pub fn run_calls(
    ws: &mut Workspace,
    calls: Vec<ToolCall>,
    mode: BatchMode,
    opts: &CallOptions,
) -> Result<Vec<Envelope>> {
    let rt = start(Threads::One)?;
    // Only the other MCP servers whose tools are called are started.
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    rt.block_on(ws.upstreams.start_for(&names));
    // Only file tools read or refresh what the agent has seen of files.
    let uses_files = calls.iter().any(|call| {
        ws.registry
            .get(&call.name)
            .is_some_and(|t| t.spec().permissions.iter().any(|p| p.starts_with("fs:")))
    });
    if uses_files {
        stamps::load(ws.registry.session());
    }
    // The store is opened before the calls (the call log writes to it after).
    open_store_for_log(&rt, &ws.store, ws.call_log);
    let log = start_call_log_on(&rt, &mut ws.registry, &ws.store, ws.call_log);
    ws.attach_subagents();
    let envs = rt.block_on(ws.registry.execute_batch_with(calls, mode, opts));
    rt.block_on(flush_log(log.as_ref()));
    if uses_files {
        stamps::save_or_warn(ws.registry.session());
    }
    Ok(envs)
}
