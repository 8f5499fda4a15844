//! Running a command hook: JSON on its standard input, a scrubbed environment,
//! a timeout, its whole process tree killed, its output read up to 1 MiB (its
//! standard error up to 64 KiB).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::hooks::{HookEvent, HookInput};
use toolbelt_core::output::OutputBudget;
use toolbelt_exec::{EnvPolicy, ExecRequest};

use crate::config::{CommandSpec, Dialect};
use crate::ended::{Ended, MAX_HOOK_OUTPUT_BYTES};
use crate::matcher::CallWrites;

/// Bytes of a hook's standard error that are read (a reason, an error line).
const MAX_HOOK_STDERR_BYTES: usize = 64 * 1024;
/// Between `SIGTERM` and `SIGKILL` for a hook past its time.
const KILL_GRACE: Duration = Duration::from_millis(200);
/// How long a hook's leftovers may hold its output open after it exits.
const DRAIN: Duration = Duration::from_millis(300);

/// The text of `spec` as the shell runs it: a shell line as written, a program
/// and its arguments quoted and `exec`ed.
pub(crate) fn shell_line(spec: &CommandSpec) -> String {
    match spec {
        CommandSpec::Line(line) => line.clone(),
        CommandSpec::Exec(argv) => toolbelt_exec::exec_line(argv),
    }
}

/// The program a command starts, when it names one (for `doctor` and for
/// hashing the script): the first word of a line, the first of an argv.
pub(crate) fn program(spec: &CommandSpec) -> Option<String> {
    match spec {
        CommandSpec::Exec(argv) => argv.first().cloned(),
        CommandSpec::Line(line) => line
            .split_whitespace()
            .next()
            .map(|w| w.trim_matches(['"', '\'']).to_string()),
    }
}

/// Runs `spec` in `cwd` with `payload` on its standard input.
pub(crate) async fn run(
    spec: &CommandSpec,
    payload: Vec<u8>,
    cwd: &Path,
    vars: &BTreeMap<String, String>,
    timeout_ms: u64,
) -> Ended {
    let mut req = ExecRequest::new(shell_line(spec), cwd, Duration::from_millis(timeout_ms));
    req.env = EnvPolicy::default().build(std::env::vars(), vars);
    req.stdin = Some(payload);
    req.stdout_budget = OutputBudget::with_max_bytes(MAX_HOOK_OUTPUT_BYTES);
    req.stderr_budget = OutputBudget::with_max_bytes(MAX_HOOK_STDERR_BYTES);
    req.kill_grace = KILL_GRACE;
    req.drain_timeout = DRAIN;
    match toolbelt_exec::run(req, &CancellationToken::new()).await {
        Err(e) => Ended::NotStarted(e),
        Ok(out) if out.timed_out => Ended::Timeout(timeout_ms),
        Ok(out) => match out.signal {
            Some(signal) => Ended::Signal(signal),
            None => Ended::Exit {
                code: out.exit_code,
                cut: out.stdout.captured.truncated,
                stdout: out.stdout.captured.text,
                stderr: out.stderr.captured.text,
            },
        },
    }
}

/// Claude Code's name of an event.
pub(crate) fn claude_event(event: HookEvent) -> &'static str {
    match event {
        HookEvent::PreToolUse => "PreToolUse",
        HookEvent::PermissionRequest => "PermissionRequest",
        HookEvent::PostToolUse => "PostToolUse",
        HookEvent::PostToolFailure => "PostToolUseFailure",
        HookEvent::FileChanged => "FileChanged",
        HookEvent::SessionStart => "SessionStart",
        HookEvent::UserPrompt => "UserPromptSubmit",
        HookEvent::SubagentStart => "SubagentStart",
        HookEvent::SubagentStop => "SubagentStop",
        HookEvent::PreCompact => "PreCompact",
        HookEvent::Stop => "Stop",
        HookEvent::SessionEnd => "SessionEnd",
    }
}

/// The JSON every command hook of `input` is given, before the fields that
/// depend on its dialect ([`for_dialect`]).
pub(crate) fn payload(input: &HookInput<'_>, writes: &CallWrites) -> Map<String, Value> {
    let origin = input.origin;
    let session = origin
        .run_id
        .clone()
        .or_else(|| origin.session.clone())
        .unwrap_or_default();
    let mut m = Map::new();
    m.insert("session_id".into(), json!(session));
    m.insert("transcript_path".into(), Value::Null);
    m.insert("cwd".into(), json!(input.cwd.display().to_string()));
    m.insert("permission_mode".into(), json!("default"));
    m.insert("event".into(), json!(input.event.as_str()));
    m.insert(
        "origin".into(),
        serde_json::to_value(origin).unwrap_or(Value::Null),
    );
    if let Some(call) = input.call {
        m.insert("tool_input".into(), call.arguments.clone());
        m.insert("tool_use_id".into(), json!(call.call_id));
        m.insert("tool".into(), json!(call.tool));
        m.insert("exposed_name".into(), json!(call.exposed));
        let mut w: Vec<Value> = writes.paths.iter().map(|p| json!(p)).collect();
        if writes.unknown {
            w.push(json!("unknown"));
        }
        m.insert(
            "subjects".into(),
            json!({ "subject": call.subject, "writes": w }),
        );
    }
    if let Some(env) = input.response {
        m.insert(
            "tool_response".into(),
            json!({
                "status": env.status,
                "text": env.text,
                "data": env.data,
                "error": env.error,
            }),
        );
    }
    if input.response.is_some() || !input.changed.is_empty() {
        m.insert("changed_files".into(), json!(input.changed));
        m.insert("checkpoint".into(), json!(input.checkpoint));
    }
    if let Some(extra) = input.extra {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    m
}

/// `base` with the event's and the tool's names as `dialect` spells them.
pub(crate) fn for_dialect(
    mut base: Map<String, Value>,
    input: &HookInput<'_>,
    dialect: Dialect,
    claude_name: Option<&str>,
) -> Vec<u8> {
    let (event, tool) = match dialect {
        Dialect::Toolbelt => (
            input.event.as_str().to_string(),
            input.call.map(|c| c.exposed.to_string()),
        ),
        Dialect::Claude => (
            claude_event(input.event).to_string(),
            input
                .call
                .map(|c| claude_name.unwrap_or(c.exposed).to_string()),
        ),
    };
    base.insert("hook_event_name".into(), json!(event));
    if let Some(tool) = tool {
        base.insert("tool_name".into(), json!(tool));
    }
    serde_json::to_vec(&Value::Object(base)).unwrap_or_default()
}
