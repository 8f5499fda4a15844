//! `toolbelt doctor`: what this machine and the configuration allow — roots, the
//! state directory, tools, other MCP servers, skills, agent types, the store, and
//! what the shell sandbox can enforce here.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use toolbelt_agent::TypeProblem;
use toolbelt_checkpoint::Checkpoints;
use toolbelt_core::human::{human_bytes, plural};
use toolbelt_core::state::StateLocation;
use toolbelt_sandbox::{Sandbox, SandboxMode, Support};
use toolbelt_store::{Location, StoreHandle, list_checkpoints};
use toolbelt_tools::{SkillScan, Skills};
use toolbelt_upstream::{ServerState, ServerStatus};

use super::{exit_code, out, out_json};
use crate::runtime::{self, Threads};
use crate::settings::Settings;
use crate::workspace::Workspace;

/// What `doctor` found.
struct Report {
    /// The configuration can be served.
    ok: bool,
    problems: Vec<String>,
    roots: Vec<PathBuf>,
    state_dir: Option<StateLocation>,
    /// How many tools are served.
    tools: Option<usize>,
    /// The other MCP servers, each started once to see that it answers.
    servers: Vec<ServerStatus>,
    store: Option<String>,
    sandbox: SandboxMode,
    network: bool,
    /// What the sandbox of the configuration comes to here.
    verdict: String,
    /// Sandboxed commands can read the state directory.
    state_readable: bool,
    helper: Option<PathBuf>,
    support: &'static Support,
    skills: Skills,
    skill_scan: SkillScan,
    /// The agent types' names (joined), the directories searched, the types skipped.
    agent_types: Option<(String, Vec<PathBuf>, Vec<TypeProblem>)>,
    /// Checkpoints: on or off, where, how many, how much.
    checkpoints: Option<CheckpointsReport>,
    /// The hooks and the workspace's untrusted servers: lines for the text, and JSON.
    hooks: (Vec<String>, Value),
}

/// What turns checkpoints off from the environment.
const OFF_BY_ENV: &str = "TOOLBELT_CHECKPOINTS=off";

/// What `doctor` says of checkpoints.
struct CheckpointsReport {
    enabled: bool,
    /// What turned them off.
    off_by: Option<&'static str>,
    /// `<state>/checkpoints`.
    dir: PathBuf,
    /// This workspace's checkpoints, and how many of them are pruned (`None`:
    /// the store cannot be read).
    count: Option<(usize, usize)>,
    /// Bytes under `dir`.
    bytes: u64,
    /// A rewind a kill cut short was finished now.
    recovered: bool,
    /// A rewind cut short that cannot be finished yet.
    unrecovered: Option<toolbelt_checkpoint::CheckpointError>,
    /// The store cannot be read.
    unreadable: Option<anyhow::Error>,
}

/// Checks `settings` (whose errors are problems to report, not failures) and
/// prints the report; the status is 1 when the configuration cannot be served.
///
/// # Errors
/// Standard output cannot be written.
pub fn run(settings: Result<Settings>, json: bool) -> Result<ExitCode> {
    let report = check(settings);
    if json {
        out_json(&report_json(&report))?;
    } else {
        out(&report_text(&report))?;
    }
    Ok(exit_code(report.ok))
}

/// Looks at everything `doctor` reports.
fn check(settings: Result<Settings>) -> Report {
    let helper = toolbelt_sandbox::locate_helper();
    let support = Support::probe();
    let mut ok = true;
    let mut problems: Vec<String> = Vec::new();
    let store = match &settings {
        Ok(s) => match store_report(&s.store) {
            Ok(report) => Some(report),
            Err(e) => {
                problems.push(format!("{e:#}"));
                ok = false;
                Some(format!("{}: refused", s.store.describe()))
            }
        },
        Err(_) => None,
    };
    let (roots, sandbox, network, state_dir) = match &settings {
        Ok(s) => (
            s.roots.clone(),
            s.sandbox,
            s.network,
            Some(s.state_location()),
        ),
        Err(e) => {
            ok = false;
            problems.push(format!("{e:#}"));
            (Vec::new(), SandboxMode::None, true, None)
        }
    };
    // A sandbox hides the state directory (the store, the serve token) from
    // commands with a mount namespace; where none can be made, they can read it.
    let mut state_readable = false;
    let verdict = if settings.is_ok() {
        match Sandbox::new(sandbox, network, &roots) {
            Ok(Some(_)) if !support.mount_namespace => {
                state_readable = true;
                "enforced, but commands can read the state directory".to_string()
            }
            Ok(Some(_)) => "enforced".to_string(),
            Ok(None) => "no sandbox: commands run with the server's own rights".to_string(),
            Err(e) => {
                ok = false;
                let why = toolbelt_core::error_chain(&e);
                let refused = format!("refused: {why}");
                problems.push(why);
                refused
            }
        }
    } else {
        "unknown".to_string()
    };
    let settings = settings.ok().filter(|_| ok);
    // Before the workspace is built: building it finishes a cut-short rewind
    // quietly, and the doctor says so.
    let checkpoints = settings.as_ref().map(checkpoints_report);
    let built = settings.as_ref().map(|s| Workspace::build(s, false, false));
    let hooks = match (&settings, &built) {
        (Some(s), Some(ws)) => hooks_report(s, ws, &mut ok, &mut problems),
        _ => (Vec::new(), Value::Null),
    };
    let (tools, servers) = built.and_then(Result::ok).map_or((None, Vec::new()), |ws| {
        // Each server is started (side by side, within its startup timeout) to
        // see that it answers and what it offers.
        let rt = (!ws.upstreams.is_empty())
            .then(|| runtime::start(Threads::One).ok())
            .flatten();
        if let Some(rt) = &rt {
            rt.block_on(ws.start_servers());
        }
        (Some(ws.registry.definitions().len()), ws.upstreams.status())
    });
    // Broken skills are skipped where they are served: warnings, not failures.
    let skills = Skills::from_env(&roots);
    let skill_scan = skills.scan();
    // The same for agent types, checked against the tools subagents would get.
    let agent_types = settings.as_ref().and_then(|s| {
        let ws = Workspace::build(s, true, false).ok()?;
        let subagents = ws.subagents?;
        subagents.attach(&ws.registry);
        Some((
            subagents.types().names().join(", "),
            subagents.types().searched().to_vec(),
            subagents.problems(),
        ))
    });
    Report {
        ok,
        problems,
        roots,
        state_dir,
        tools,
        servers,
        store,
        sandbox,
        network,
        verdict,
        state_readable,
        helper,
        support,
        skills,
        skill_scan,
        agent_types,
        checkpoints,
        hooks,
    }
}

/// The hooks as `doctor` reports them: a hook whose command is not found, or
/// hooks that cannot be built, are problems (the status is 1); untrusted hooks
/// and servers of the workspace are warnings.
fn hooks_report(
    s: &Settings,
    ws: &Result<Workspace>,
    ok: &mut bool,
    problems: &mut Vec<String>,
) -> (Vec<String>, Value) {
    let mut lines = Vec::new();
    let untrusted_servers: Vec<Value> = s
        .mcp_servers
        .untrusted
        .iter()
        .map(|u| {
            lines.push(format!(
                "warning: {} {} (from {}) is not trusted and not started: `toolbelt hooks trust`",
                u.kind, u.name, u.origin
            ));
            json!({"name": u.name, "declared_in": u.origin, "runs": u.runs})
        })
        .collect();
    let infos = match ws {
        Ok(ws) => ws.hooks.as_ref().map(|h| h.list()).unwrap_or_default(),
        Err(e) => {
            if e.chain().any(|c| {
                c.is::<toolbelt_hooks::ConfigError>() || c.is::<toolbelt_diagnostics::ConfigError>()
            }) {
                *ok = false;
                problems.push(format!("{e:#}"));
            }
            Vec::new()
        }
    };
    if !infos.is_empty() {
        let untrusted = infos.iter().filter(|i| !i.trusted).count();
        lines.insert(
            0,
            format!("hooks: {} ({untrusted} not trusted)", infos.len()),
        );
    }
    for i in &infos {
        if let Some(program) = &i.missing {
            *ok = false;
            problems.push(format!(
                "hook '{}' ({}) runs {program}, which is not found: the calls it matches are denied",
                i.name,
                i.event.as_str()
            ));
        }
        if !i.trusted {
            lines.push(format!(
                "warning: hook '{}' ({}) is not trusted{}: `toolbelt hooks trust`",
                i.name,
                i.event.as_str(),
                if i.required {
                    " and required: the calls it matches are denied"
                } else {
                    ", so it does not run"
                }
            ));
        }
    }
    let checkers = ws
        .as_ref()
        .map(|ws| ws.checks.programs())
        .unwrap_or_default();
    for c in checkers.iter().filter(|c| !c.found) {
        lines.push(format!(
            "warning: [{}] runs {}, which is not found on PATH{}: its diagnostics are unavailable",
            c.table,
            c.program,
            c.install
                .as_deref()
                .map(|i| format!(" (`{i}`)"))
                .unwrap_or_default()
        ));
    }
    let json = json!({
        "checkers": checkers.iter().map(|c| json!({
            "table": c.table, "program": c.program, "found": c.found,
        })).collect::<Vec<_>>(),
        "hooks": infos.iter().map(|i| json!({
            "name": i.name,
            "event": i.event.as_str(),
            "trusted": i.trusted,
            "required": i.required,
            "missing": i.missing,
        })).collect::<Vec<_>>(),
        "untrusted_servers": untrusted_servers,
    });
    (lines, json)
}

/// Checkpoints as `toolbelt doctor` reports them; a rewind journal a kill left is
/// finished first. A SQLite store that does not exist yet is not created.
fn checkpoints_report(s: &Settings) -> CheckpointsReport {
    let settings = s.file.checkpoints.settings();
    let dir = s.state_dir.join("checkpoints");
    let mut report = CheckpointsReport {
        enabled: settings.enabled,
        off_by: None,
        dir: dir.clone(),
        count: None,
        bytes: 0,
        recovered: false,
        unrecovered: None,
        unreadable: None,
    };
    if !settings.enabled {
        report.bytes = dir_bytes(&dir);
        let by_env = std::env::var("TOOLBELT_CHECKPOINTS")
            .is_ok_and(|v| matches!(v.trim(), "off" | "0" | "false" | "no"));
        report.off_by = Some(if by_env {
            OFF_BY_ENV
        } else {
            "[checkpoints] enabled = false"
        });
        return report;
    }
    let checkpoints = Checkpoints::new(
        settings,
        StoreHandle::lazy(s.store.clone()),
        &s.state_dir,
        s.roots.clone(),
    );
    match checkpoints.recover() {
        Ok(done) => report.recovered = done,
        Err(e) => report.unrecovered = Some(e),
    }
    report.bytes = dir_bytes(&dir);
    if let Location::Sqlite(path) = &s.store
        && !path.exists()
    {
        report.count = Some((0, 0));
        return report;
    }
    let counted = runtime::start(Threads::One).and_then(|rt| {
        rt.block_on(async {
            let store = toolbelt_store::Store::open(&s.store)
                .await
                .context("the store cannot be opened")?;
            let all = list_checkpoints(&store, checkpoints.workspace(), None, i64::MAX)
                .await
                .context("cannot read the checkpoints")?;
            store.close().await;
            let pruned = all.iter().filter(|r| r.status == "pruned").count();
            anyhow::Ok((all.len(), pruned))
        })
    });
    match counted {
        Ok(c) => report.count = Some(c),
        Err(e) => report.unreadable = Some(e),
    }
    report
}

/// The bytes of the files under `dir` (0 when it is not there).
fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// `doctor`'s line on checkpoints (and one more when a rewind was finished).
fn checkpoints_text(c: &CheckpointsReport) -> String {
    let mut text = if c.enabled {
        let count = c.count.map_or_else(
            || "the count is unknown".to_string(),
            |(n, pruned)| {
                let mut t = format!("{n} {}", plural(n as u64, "checkpoint"));
                if pruned > 0 {
                    let _ = write!(t, " ({pruned} pruned)");
                }
                t
            },
        );
        format!(
            "checkpoints: on, kept in {}: {count}, {} on disk\n",
            c.dir.display(),
            human_bytes(c.bytes)
        )
    } else {
        let how = if c.off_by == Some(OFF_BY_ENV) {
            "unset TOOLBELT_CHECKPOINTS"
        } else {
            "set [checkpoints] enabled = true in the config file (or remove the line)"
        };
        format!(
            "checkpoints: off ({}): what the calls change is not kept and cannot be rewound; \
             to turn them on, {how}\n",
            c.off_by.unwrap_or("turned off")
        )
    };
    if c.recovered {
        text.push_str(
            "checkpoints: finished a rewind that was cut short (its journal was left by a kill)\n",
        );
    }
    if let Some(p) = checkpoints_problem(c) {
        let _ = writeln!(text, "warning: checkpoints: {p}");
    }
    text
}

/// What went wrong with checkpoints, as a line.
fn checkpoints_problem(c: &CheckpointsReport) -> Option<String> {
    match (&c.unrecovered, &c.unreadable) {
        (Some(e), _) => Some(format!(
            "a rewind that was cut short cannot be finished: {}",
            toolbelt_core::error_chain(e)
        )),
        (None, Some(e)) => Some(format!("{e:#}")),
        (None, None) => None,
    }
}

/// `doctor --json`'s `checkpoints`.
fn checkpoints_json(c: &CheckpointsReport) -> Value {
    json!({
        "enabled": c.enabled,
        "off_by": c.off_by,
        "dir": c.dir,
        "count": c.count.map(|(n, _)| n),
        "pruned": c.count.map(|(_, p)| p),
        "bytes": c.bytes,
        "recovered_rewind": c.recovered,
        "problem": checkpoints_problem(c),
    })
}

/// The store as `toolbelt doctor` reports it. A SQLite file that does not exist yet
/// is not created.
fn store_report(location: &Location) -> Result<String> {
    if let Location::Sqlite(path) = location
        && !path.exists()
    {
        return Ok(format!("SQLite {} (created on first use)", path.display()));
    }
    let rt = runtime::start(Threads::One)?;
    rt.block_on(async {
        let store = toolbelt_store::Store::open(location)
            .await
            .context("the store cannot be opened")?;
        let version = store.schema_version().await?;
        store.close().await;
        let kind = match store.backend() {
            toolbelt_store::Backend::Sqlite => "SQLite",
            toolbelt_store::Backend::Postgres => "PostgreSQL",
        };
        Ok(format!(
            "{kind} {} (schema version {version})",
            location.describe()
        ))
    })
}

/// `doctor --json`.
fn report_json(r: &Report) -> Value {
    json!({
        "ok": r.ok,
        "version": env!("CARGO_PKG_VERSION"),
        "roots": r.roots,
        "state_dir": r.state_dir.as_ref().map(|s| &s.dir),
        "state_source": r.state_dir.as_ref().map(|s| s.source),
        "state_reason": r.state_dir.as_ref().map(|s| s.source.reason()),
        "tools": r.tools,
        "mcp_servers": r.servers.iter().map(server_json).collect::<Vec<_>>(),
        "store": r.store,
        "shell": toolbelt_exec::default_shell(),
        "sandbox": {
            "mode": r.sandbox.as_str(),
            "network": r.network,
            "verdict": r.verdict,
            "state_hidden": !r.state_readable && r.sandbox != SandboxMode::None,
            "helper": r.helper,
            "support": r.support,
        },
        "skills": skills_json(&r.skills, &r.skill_scan),
        "agent_types": r.agent_types.as_ref().map(|(names, dirs, problems)| json!({
            "names": names.split(", ").collect::<Vec<_>>(),
            "dirs": dirs,
            "problems": problems
                .iter()
                .map(|p| json!({"path": p.path, "message": p.message}))
                .collect::<Vec<_>>(),
        })),
        "checkpoints": r.checkpoints.as_ref().map(checkpoints_json),
        "hooks": r.hooks.1,
        "problems": r.problems,
    })
}

/// `doctor` without `--json`.
fn report_text(r: &Report) -> String {
    let mut text = format!("toolbelt {}\n", env!("CARGO_PKG_VERSION"));
    for root in &r.roots {
        let _ = writeln!(text, "root: {}", root.display());
    }
    if let Some(state) = &r.state_dir {
        let _ = writeln!(
            text,
            "state dir: {} ({})",
            state.dir.display(),
            state.source.reason()
        );
    }
    if let Some(n) = r.tools {
        let _ = writeln!(text, "tools: {n}");
    }
    for s in &r.servers {
        let _ = writeln!(
            text,
            "MCP server {}: {} ({}, from {})",
            s.name,
            server_state(&s.state),
            s.transport,
            s.origin
        );
    }
    text.push_str(&skills_text(&r.skills, &r.skill_scan));
    if let Some((names, dirs, type_problems)) = &r.agent_types {
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let _ = writeln!(text, "agent types: {names} (looked in {})", dirs.join(", "));
        for p in type_problems {
            let _ = writeln!(
                text,
                "warning: agent type skipped: {}: {}",
                p.path.display(),
                p.message
            );
        }
    }
    if let Some(store) = &r.store {
        let _ = writeln!(text, "store: {store}");
    }
    if let Some(c) = &r.checkpoints {
        text.push_str(&checkpoints_text(c));
    }
    for line in &r.hooks.0 {
        let _ = writeln!(text, "{line}");
    }
    let _ = writeln!(text, "shell: {}", toolbelt_exec::default_shell().display());
    let _ = writeln!(
        text,
        "sandbox helper: {}",
        r.helper
            .as_ref()
            .map_or_else(|| "none found".to_string(), |h| h.display().to_string())
    );
    text.push_str("\nWhat this machine enforces:\n");
    for line in r.support.report().lines() {
        let _ = writeln!(text, "  {line}");
    }
    let _ = writeln!(
        text,
        "\nConfigured: sandbox {}, network {}: {}",
        r.sandbox,
        if r.network { "on" } else { "off" },
        r.verdict
    );
    if r.state_readable {
        let dir = r.state_dir.as_ref().map_or_else(
            || "the state directory".to_string(),
            |s| s.dir.display().to_string(),
        );
        let _ = writeln!(
            text,
            "warning: sandboxed commands can read {dir} (the store, saved outputs, the serve \
             token): this machine cannot make the mount namespace that hides it; keep \
             --state-dir out of reach some other way, or run where user namespaces are allowed"
        );
    }
    for p in &r.problems {
        let _ = writeln!(text, "problem: {p}");
    }
    text
}

/// How many skills each directory gives (the first of a name counts).
fn skills_by_dir(skills: &Skills, scan: &SkillScan) -> Vec<(PathBuf, usize)> {
    skills
        .dirs()
        .into_iter()
        .map(|dir| {
            let count = scan.skills.iter().filter(|s| s.source == dir).count();
            (dir, count)
        })
        .collect()
}

/// `doctor`'s lines on skills: how many from where, then each problem as a warning.
fn skills_text(skills: &Skills, scan: &SkillScan) -> String {
    let by_dir = skills_by_dir(skills, scan);
    let mut text = if scan.skills.is_empty() {
        let dirs: Vec<String> = by_dir
            .iter()
            .map(|(d, _)| d.display().to_string())
            .collect();
        format!("skills: none (looked in {})\n", dirs.join(", "))
    } else {
        let from: Vec<String> = by_dir
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(d, n)| format!("{n} in {}", d.display()))
            .collect();
        format!("skills: {} ({})\n", scan.skills.len(), from.join(", "))
    };
    for p in &scan.problems {
        let _ = writeln!(text, "warning: skill skipped: {p}");
    }
    text
}

/// `doctor --json`'s `skills`: the count, each directory searched with its count,
/// and the problems.
fn skills_json(skills: &Skills, scan: &SkillScan) -> Value {
    let dirs: Vec<Value> = skills_by_dir(skills, scan)
        .into_iter()
        .map(|(path, count)| json!({"path": path, "count": count}))
        .collect();
    let problems: Vec<Value> = scan
        .problems
        .iter()
        .map(|p| json!({"path": p.path, "message": p.message}))
        .collect();
    json!({"count": scan.skills.len(), "dirs": dirs, "problems": problems})
}

/// A server's state in a line of `doctor`.
fn server_state(state: &ServerState) -> String {
    match state {
        ServerState::NotStarted => "not started (lazy; its tools are from its last run)".into(),
        ServerState::Starting => "starting".into(),
        ServerState::Running { tools } => format!("running, {tools} tools"),
        ServerState::Failed { reason, .. } => format!("unavailable: {reason}"),
    }
}

/// `doctor --json`'s entry of a server.
fn server_json(s: &ServerStatus) -> Value {
    let (state, tools, reason) = match &s.state {
        ServerState::NotStarted => ("not_started", None, None),
        ServerState::Starting => ("starting", None, None),
        ServerState::Running { tools } => ("running", Some(*tools), None),
        ServerState::Failed { reason, .. } => ("unavailable", None, Some(reason.as_str())),
    };
    json!({
        "name": s.name,
        "transport": s.transport,
        "origin": s.origin,
        "state": state,
        "tools": tools,
        "reason": reason,
    })
}
