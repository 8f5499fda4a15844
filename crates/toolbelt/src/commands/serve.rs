//! `toolbelt serve`: the tools over HTTP (MCP at /mcp, a JSON API at /v1, the web
//! page at /), with the scheduler running beside them.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use toolbelt_core::Session;
use toolbelt_server::http::{Health, SchedulerState};
use toolbelt_server::{PendingQuestions, ServeConfig};

use crate::cli::ServeArgs;
use crate::config::McpConfig;
use crate::jobs;
use crate::runtime::{self, Threads};
use crate::settings::token_dir;
use crate::workspace::Workspace;

/// Listens until SIGINT or SIGTERM; the MCP flags over `[mcp]` shape the results
/// at /mcp.
///
/// # Errors
/// Invalid MCP options, a token that cannot be used for the address, the token
/// file, the runtime, the store, or the address cannot be listened on.
pub fn run(args: ServeArgs, mut ws: Workspace, mcp: &McpConfig) -> Result<ExitCode> {
    let mcp = mcp.options(&args.mcp)?;
    let ServeArgs {
        bind,
        token,
        no_token,
        allowed_origins,
        open,
        ..
    } = args;
    let (mut config, shown) = if no_token {
        without_token(bind)?
    } else {
        with_token(bind, token, ws.registry.session())?
    };
    config.allowed_origins = allowed_origins;
    config.mcp = mcp;
    // The web page reads the call log, todos and planner from the tools' store.
    config.store = Some(ws.store.clone());
    config.upstreams = Some(Arc::clone(&ws.upstreams));
    // The checkpoints the registry takes, listed and restored at /v1/checkpoints.
    config.checkpoints = ws.checkpoints.clone();
    if open && config.token.is_some() {
        config.login_code =
            Some(toolbelt_server::web::new_login_code().context("cannot make a login code")?);
    }
    let login_code = config.login_code.clone();
    // The questions of the jobs' runs wait on the page until someone answers them;
    // kept in the store, like the runs, so that every replica lists and answers them.
    let replica = toolbelt_server::replica_id();
    let questions = PendingQuestions::new().with_store(ws.store.clone(), replica.clone());
    config.questions = questions.clone();
    let rt = runtime::start(Threads::Many)?;
    rt.block_on(runtime::open_store(&ws.store))?;
    share_stamps(&ws);
    rt.block_on(ws.start_servers());
    let log = runtime::start_call_log_on(&rt, &mut ws.registry, &ws.store, ws.call_log);
    ws.attach_subagents();
    // Jobs fire and the outbox drains while the server runs.
    let scheduler = {
        let _entered = rt.enter();
        let shared = jobs::Shared {
            questions: &questions,
            store: &ws.store,
            replica: &replica,
        };
        jobs::spawn(&ws.messaging, ws.jobs.as_deref(), &ws.registry, &shared)
    };
    // /healthz names the replica; on SIGTERM the scheduler stops at once, while
    // the calls under way finish.
    let health = Health::new(replica.clone(), env!("CARGO_PKG_VERSION"));
    health.set_scheduler(SchedulerState::Running);
    config.health = health.clone();
    let shutdown = {
        let (health, stop_jobs) = (health.clone(), scheduler.stopper());
        // Armed now, before the server says it listens: a SIGTERM right after that
        // line stops it cleanly (calls logged, nothing cut off).
        let signal = {
            let _entered = rt.enter();
            toolbelt_server::http::armed_shutdown_signal()
        };
        async move {
            signal.await;
            health.set_scheduler(SchedulerState::Stopping);
            stop_jobs.cancel();
        }
    };
    let registry = ws.registry;
    let checks = ws.checks;
    let served = rt.block_on(async move {
        let listener = toolbelt_server::http::bind(bind).await?;
        let addr = listener.local_addr().unwrap_or(bind);
        eprintln!(
            "toolbelt listening on http://{addr} (web page at /, MCP at /mcp, JSON API at /v1)"
        );
        eprintln!("token: {shown}");
        if let Some(code) = &login_code {
            eprintln!(
                "log in (once, within 10 minutes): {}",
                toolbelt_server::web::login_url(addr, code)
            );
        } else if open {
            eprintln!("open http://{addr}/ (no token needed)");
        }
        toolbelt_server::http::serve_listener(listener, Arc::new(registry), config, shutdown).await
    });
    // Prompt runs cut off by the stop record that they were.
    rt.block_on(scheduler.stop());
    health.set_scheduler(SchedulerState::Stopped);
    // No language server outlives the server.
    rt.block_on(checks.shutdown());
    rt.block_on(runtime::flush_log(log.as_ref()));
    // Calls cut off by the shutdown may still be reading files on blocking threads.
    rt.shutdown_timeout(Duration::from_millis(100));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Replicas on one PostgreSQL store share what was read of each file, so that a
/// write answered by one knows of a read answered by another. A SQLite store is
/// one machine's: its server keeps its stamps in memory.
fn share_stamps(ws: &Workspace) {
    if !matches!(ws.store.location(), toolbelt_store::Location::Postgres(_)) {
        return;
    }
    let session = ws.registry.session();
    let key = toolbelt_store::workspace_key(session);
    session
        .file_stamps()
        .share_through(Arc::new(toolbelt_store::StoreStamps::new(
            ws.store.clone(),
            key,
        )));
}

/// `--no-token`: loopback addresses only. Returns the configuration and how the
/// token is shown.
fn without_token(bind: SocketAddr) -> Result<(ServeConfig, String)> {
    if !bind.ip().is_loopback() {
        bail!(
            "refusing to listen on {bind}, which is reachable from other machines, \
             without a token; --no-token is for loopback addresses only"
        );
    }
    Ok((
        ServeConfig::without_token(bind),
        "none (--no-token: every program on this machine can call the tools)".to_string(),
    ))
}

/// `--token` / `TOOLBELT_TOKEN`, or the generated one (loopback addresses only),
/// kept in the token directory of `session`. Returns the configuration and how the
/// token is shown.
fn with_token(
    bind: SocketAddr,
    token: Option<String>,
    session: &Session,
) -> Result<(ServeConfig, String)> {
    let explicit = token
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    if explicit.is_none() && !bind.ip().is_loopback() {
        bail!(
            "refusing to listen on {bind}, which is reachable from other machines, with a \
             generated token; pass --token or set TOOLBELT_TOKEN (use a long random value)"
        );
    }
    let (token, shown) = match explicit {
        Some(token) => (token, "from --token or TOOLBELT_TOKEN".to_string()),
        None => {
            let dir = &token_dir(session)?;
            let token = toolbelt_server::load_or_create_token(dir)
                .with_context(|| format!("cannot read or create the token in {}", dir.display()))?;
            let shown = token.clone();
            (token, shown)
        }
    };
    Ok((ServeConfig::new(bind, token), shown))
}
