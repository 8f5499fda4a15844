//! `toolbelt hooks` (list, trust, test, import): the person's own hooks.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use toolbelt_core::hooks::{HookCall, HookDecision, HookEvent, HookInput};
use toolbelt_core::{Changes, Origin};
use toolbelt_hooks::{CommandSpec, Dialect, HookInfo, HookSpec, HooksConfig, Source};

use super::{exit_code, out, out_json};
use crate::cli::HooksAction;
use crate::runtime::{self, Threads};
use crate::settings::Settings;
use crate::upstream::UntrustedServer;
use crate::workspace::Workspace;

/// Runs `toolbelt hooks ...`.
///
/// # Errors
/// Standard output cannot be written; the trust file cannot be written; the
/// file to import cannot be read.
pub fn run(action: HooksAction, ws: &Workspace, settings: &Settings) -> Result<ExitCode> {
    let hooks = ws.hooks.as_deref();
    let servers = &settings.mcp_servers.untrusted;
    match action {
        HooksAction::List { json } => list(hooks, servers, json),
        HooksAction::Trust { yes } => trust(hooks, servers, yes),
        HooksAction::Test {
            event,
            tool,
            args,
            json,
        } => test(ws, &event, tool.as_deref(), &args, json),
        HooksAction::Import { path } => import(&path),
    }
}

fn source_text(s: &Source) -> String {
    match s {
        Source::User(p) => format!("user {}", p.display()),
        Source::Workspace(p) => format!("workspace {}", p.display()),
    }
}

fn list(
    hooks: Option<&toolbelt_hooks::Hooks>,
    servers: &[UntrustedServer],
    json: bool,
) -> Result<ExitCode> {
    let infos = hooks.map(toolbelt_hooks::Hooks::list).unwrap_or_default();
    if json {
        out_json(&json!({
            "hooks": infos.iter().map(info_json).collect::<Vec<_>>(),
            "untrusted_servers": servers.iter().map(|s| json!({
                "name": s.name, "declared_in": s.origin, "runs": s.runs,
            })).collect::<Vec<_>>(),
        }))?;
        return Ok(exit_code(true));
    }
    let mut text = String::new();
    if infos.is_empty() {
        text.push_str("no hooks (add [[hooks.pre_tool_use]] tables to toolbelt.toml; see `toolbelt hooks --help`)\n");
    }
    for i in &infos {
        let state = match (i.trusted, i.required) {
            (true, _) => "trusted",
            (false, true) => "NOT TRUSTED, required: denies what it matches",
            (false, false) => "NOT TRUSTED: skipped",
        };
        let _ = writeln!(
            text,
            "{:<18} {}  [{state}]\n  {}\n  from {}",
            i.event.as_str(),
            i.name,
            i.handler,
            source_text(&i.source)
        );
        if let Some(p) = &i.missing {
            let _ = writeln!(text, "  warning: {p} is not found");
        }
    }
    for s in servers {
        let _ = writeln!(
            text,
            "{} {} (from {}): NOT TRUSTED, not started\n  runs {}",
            s.kind, s.name, s.origin, s.runs
        );
    }
    if infos.iter().any(|i| !i.trusted) || !servers.is_empty() {
        text.push_str("`toolbelt hooks trust` trusts them as they are now\n");
    }
    out(&text)?;
    Ok(exit_code(true))
}

fn info_json(i: &HookInfo) -> Value {
    json!({
        "name": i.name,
        "event": i.event.as_str(),
        "source": source_text(&i.source),
        "handler": i.handler,
        "trusted": i.trusted,
        "required": i.required,
        "missing": i.missing,
    })
}

fn trust(
    hooks: Option<&toolbelt_hooks::Hooks>,
    servers: &[UntrustedServer],
    yes: bool,
) -> Result<ExitCode> {
    let pending: Vec<HookInfo> = hooks
        .map(toolbelt_hooks::Hooks::list)
        .unwrap_or_default()
        .into_iter()
        .filter(|i| !i.trusted)
        .collect();
    if pending.is_empty() && servers.is_empty() {
        out("nothing to trust: every hook and MCP server of this workspace is trusted\n")?;
        return Ok(exit_code(true));
    }
    let mut text = String::from("This workspace asks toolbelt to run:\n");
    for i in &pending {
        let _ = writeln!(
            text,
            "  hook {} '{}': {}",
            i.event.as_str(),
            i.name,
            i.handler
        );
    }
    for s in servers {
        let _ = writeln!(
            text,
            "  {} {} (from {}): {}",
            s.kind, s.name, s.origin, s.runs
        );
    }
    out(&text)?;
    if !yes {
        if !std::io::stdin().is_terminal() {
            bail!("standard input is not a terminal: pass --yes to trust without asking");
        }
        out("Trust them as they are now? [y/N] ")?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            out("not trusted\n")?;
            return Ok(exit_code(false));
        }
    }
    let store = crate::upstream::trust_store()
        .context("no user configuration directory (set XDG_CONFIG_HOME or HOME)")?;
    let trusted = match hooks {
        Some(h) => h.trust_all().context("cannot record the trust")?,
        None => Vec::new(),
    };
    for s in servers {
        s.trust(&store).context("cannot record the trust")?;
    }
    out(&format!(
        "trusted {} {} and {} MCP {} (recorded in {})\n",
        trusted.len(),
        toolbelt_core::human::plural(trusted.len() as u64, "hook"),
        servers.len(),
        toolbelt_core::human::plural(servers.len() as u64, "server"),
        store.path().display()
    ))?;
    Ok(exit_code(true))
}

fn test(
    ws: &Workspace,
    event: &str,
    tool: Option<&str>,
    args: &str,
    json: bool,
) -> Result<ExitCode> {
    let Some(event) = HookEvent::parse(event) else {
        bail!(
            "unknown event {event:?}; choose one of: {}",
            HookEvent::ALL.map(HookEvent::as_str).join(", ")
        );
    };
    let arguments: Value =
        serde_json::from_str(args).with_context(|| format!("--args is not JSON: {args}"))?;
    let Some(hooks) = ws.hooks.as_deref() else {
        out("no hooks are configured\n")?;
        return Ok(exit_code(true));
    };
    let registry = &ws.registry;
    let found =
        match tool {
            Some(name) => Some(registry.get(name).with_context(|| {
                format!("no tool named {name:?} (`toolbelt tools` lists them)")
            })?),
            None => None,
        };
    let origin = Origin::new("cli");
    let cwd = registry.session().cwd().to_path_buf();
    let subject = found
        .as_ref()
        .and_then(|t| t.permission_subject(&arguments));
    let changes = found
        .as_ref()
        .map_or(Changes::Nothing, |t| t.changes(&arguments));
    let canonical = found
        .as_ref()
        .map(|t| t.spec().name.clone())
        .unwrap_or_default();
    let exposed = registry.profile().exposed(&canonical).to_string();
    let mut input = HookInput::new(event, &origin, &cwd);
    if let Some(t) = &found {
        input.call = Some(HookCall {
            tool: &canonical,
            exposed: &exposed,
            call_id: "hooks-test",
            arguments: &arguments,
            subject: subject.as_deref(),
            subject_is_command: t.spec().subject == Some(toolbelt_core::Subject::Command),
            changes: &changes,
            permissions: &t.spec().permissions,
        });
    }
    let rt = runtime::start(Threads::One)?;
    let verdict = rt.block_on(hooks.run_event(input));
    let (decision, reason, denied) = match &verdict.decision {
        HookDecision::Continue => ("none", None, false),
        HookDecision::Allow => ("allow", None, false),
        HookDecision::Ask { reason, .. } => ("ask", reason.clone(), false),
        HookDecision::Deny { reason, .. } => ("deny", Some(reason.clone()), true),
        HookDecision::Block { reason, .. } => ("block", Some(reason.clone()), true),
        HookDecision::Revert { reason, .. } => ("revert", Some(reason.clone()), true),
    };
    if json {
        out_json(&json!({
            "decision": decision,
            "reason": reason,
            "hooks": verdict.runs,
            "arguments": verdict.rewrite.as_ref().map(|r| &r.arguments),
            "context": verdict.context.iter().map(|c| json!({"hook": c.hook, "text": c.text})).collect::<Vec<_>>(),
        }))?;
    } else {
        let mut text = String::new();
        if verdict.runs.is_empty() {
            text.push_str("no hook matched\n");
        }
        for r in &verdict.runs {
            let _ = writeln!(
                text,
                "{} {}: {} ({} ms){}",
                r.event,
                r.name,
                r.outcome,
                r.ms,
                r.message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(
            text,
            "decision: {decision}{}",
            reason.map(|r| format!(" ({r})")).unwrap_or_default()
        );
        if let Some(r) = &verdict.rewrite {
            let _ = writeln!(text, "arguments rewritten to: {}", r.arguments);
        }
        for c in &verdict.context {
            let _ = writeln!(text, "context from {}: {}", c.hook, c.text);
        }
        out(&text)?;
    }
    Ok(exit_code(!denied))
}

/// Claude Code's event names, as toolbelt's.
fn claude_event(name: &str) -> Option<HookEvent> {
    Some(match name {
        "PreToolUse" => HookEvent::PreToolUse,
        "PermissionRequest" => HookEvent::PermissionRequest,
        "PostToolUse" => HookEvent::PostToolUse,
        "PostToolUseFailure" => HookEvent::PostToolFailure,
        "SessionStart" => HookEvent::SessionStart,
        "UserPromptSubmit" => HookEvent::UserPrompt,
        "SubagentStart" => HookEvent::SubagentStart,
        "SubagentStop" => HookEvent::SubagentStop,
        "PreCompact" => HookEvent::PreCompact,
        "Stop" => HookEvent::Stop,
        "SessionEnd" => HookEvent::SessionEnd,
        _ => return None,
    })
}

fn import(path: &Path) -> Result<ExitCode> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let settings: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let Some(Value::Object(events)) = settings.get("hooks") else {
        bail!("{} has no \"hooks\" object", path.display());
    };
    let mut config = HooksConfig::default();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for (name, groups) in events {
        let Some(event) = claude_event(name) else {
            *skipped.entry(name.clone()).or_default() += 1;
            continue;
        };
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty() && *m != "*")
                .map(str::to_string);
            for hook in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if hook.get("type").and_then(Value::as_str) != Some("command") {
                    *skipped.entry(format!("{name} (non-command)")).or_default() += 1;
                    continue;
                }
                let Some(command) = hook.get("command").and_then(Value::as_str) else {
                    continue;
                };
                let timeout_ms = hook
                    .get("timeout")
                    .and_then(Value::as_f64)
                    .map(|s| (s * 1000.0).round() as u64);
                config
                    .events
                    .entry(event.as_str().to_string())
                    .or_default()
                    .push(HookSpec {
                        matcher: matcher.clone(),
                        command: Some(CommandSpec::Line(command.to_string())),
                        timeout_ms,
                        dialect: Dialect::Claude,
                        ..HookSpec::default()
                    });
            }
        }
    }
    #[derive(serde::Serialize)]
    struct File {
        hooks: HooksConfig,
    }
    let toml =
        toml::to_string(&File { hooks: config }).context("cannot write the hooks as TOML")?;
    out(&toml)?;
    for (name, n) in skipped {
        eprintln!("toolbelt: skipped {n} {name} hook(s): toolbelt has no such event or handler");
    }
    Ok(exit_code(true))
}
