//! `toolbelt checkpoints` (list, show, diff, gc) and `toolbelt rewind`: what the
//! tool calls changed in the files, and putting it back.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

use anyhow::{Context, Result};
use crossterm::style::Stylize;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use toolbelt_checkpoint::{
    CheckpointError, Checkpoints, FileDiff, RewindItem, RewindPlan, RewindRequest, checkpoint_diff,
    display_id, parse_id,
};
use toolbelt_core::human::{human_bytes, plural};
use toolbelt_core::{Origin, error_chain};
use toolbelt_store::{
    CheckpointRecord, FileChange, FileState, StoreHandle, get_checkpoint, last_rewind,
    list_checkpoints,
};

use super::{out, out_json};
use crate::cli::{CheckpointsAction, RewindArgs};
use crate::runtime::{self, Threads};
use crate::workspace::Workspace;

/// Why a conflicting path is left alone (the engine's words for it).
const CONFLICT_REASON: &str = "changed outside toolbelt since it last wrote it";

/// Runs `toolbelt checkpoints ...`.
///
/// # Errors
/// The runtime cannot be started, the store cannot be opened, or standard output
/// cannot be written.
pub fn run(action: CheckpointsAction, ws: &Workspace) -> Result<ExitCode> {
    let Some(checkpoints) = &ws.checkpoints else {
        return Ok(turned_off());
    };
    let rt = runtime::start(Threads::One)?;
    let done = match action {
        CheckpointsAction::List {
            limit,
            before,
            json,
        } => {
            let before = match before.as_deref().map(parse_id).transpose() {
                Ok(b) => b,
                Err(e) => return Ok(refused(&e)),
            };
            rt.block_on(list(checkpoints, &ws.store, limit, before, json))?
        }
        CheckpointsAction::Show { id, json } => match parse_id(&id) {
            Ok(id) => rt.block_on(show(checkpoints, &ws.store, id, json))?,
            Err(e) => Err(e),
        },
        CheckpointsAction::Diff { id, json } => match parse_id(&id) {
            Ok(id) => rt.block_on(diff(checkpoints, id, json))?,
            Err(e) => Err(e),
        },
        CheckpointsAction::Gc { json } => rt.block_on(gc(checkpoints, json))?,
    };
    Ok(match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => refused(&e),
    })
}

/// What a command says when checkpoints are off: how to turn them on. Status 1.
fn turned_off() -> ExitCode {
    let by_env = std::env::var("TOOLBELT_CHECKPOINTS")
        .is_ok_and(|v| matches!(v.trim(), "off" | "0" | "false" | "no"));
    let how = if by_env {
        "TOOLBELT_CHECKPOINTS=off turns them off: unset it"
    } else {
        "[checkpoints] enabled = false in the config file turns them off: set it to true or \
         remove the line (they are on by default)"
    };
    eprintln!(
        "toolbelt: checkpoints are off in this workspace, so there are none to show or rewind. \
         {how}; the calls made from then on get checkpoints."
    );
    ExitCode::from(1)
}

/// Prints why a checkpoint command cannot do what was asked, with what to do
/// instead; 2 for an id or glob that does not parse, else 1.
fn refused(e: &CheckpointError) -> ExitCode {
    let hint = match e {
        CheckpointError::NotFound(_) | CheckpointError::BadId(_) => {
            "; `toolbelt checkpoints list` shows the ids"
        }
        CheckpointError::Pruned(_) => {
            "; a later checkpoint may still be kept (`toolbelt checkpoints list`)"
        }
        CheckpointError::Io { .. } => {
            "; what was begun is finished the next time toolbelt starts here (`toolbelt doctor` \
             does it now)"
        }
        _ => "",
    };
    eprintln!("toolbelt: {}{hint}", error_chain(e));
    match e {
        CheckpointError::BadId(_) | CheckpointError::BadGlob { .. } => ExitCode::from(2),
        _ => ExitCode::from(1),
    }
}

/// A checkpoint as `list`, `show` and `diff` print it in JSON.
#[derive(Debug, Serialize)]
struct Summary {
    id: String,
    at_ms: i64,
    /// RFC 3339, UTC.
    time: String,
    tool: String,
    call_id: String,
    /// The call's origin as recorded (an object), and as a line.
    origin: Value,
    origin_text: String,
    /// How many paths it changed.
    files: i64,
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    /// On a rewind's own checkpoint: the checkpoint it rewound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    rewind_of: Option<String>,
    /// Content stored new for it.
    bytes: i64,
}

impl Summary {
    fn of(r: &CheckpointRecord) -> Summary {
        Summary {
            id: display_id(r.id),
            at_ms: r.at_ms,
            time: time_text(r.at_ms),
            tool: r.tool.clone(),
            call_id: r.call_id.clone(),
            origin: serde_json::from_str(&r.origin).unwrap_or_else(|_| json!(r.origin)),
            origin_text: origin_text(&r.origin),
            files: r.file_count,
            status: r.status.clone(),
            problem: r.problem.clone(),
            rewind_of: r.rewind_of.map(display_id),
            bytes: r.bytes,
        }
    }
}

/// The origin JSON of a record as a line: `cli`, `mcp (client codex, session 3f)`.
fn origin_text(raw: &str) -> String {
    serde_json::from_str::<Origin>(raw).map_or_else(|_| raw.to_string(), |o| o.to_string())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `at_ms` as RFC 3339 in UTC, to the second (as `toolbelt log` shows times).
fn time_text(at_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(at_ms).map_or_else(
        || at_ms.to_string(),
        |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}

/// How long ago `at_ms` was: `just now`, `42 s ago`, `5 min ago`, `3 h ago`, `4 days ago`.
fn age_text(at_ms: i64, now_ms: i64) -> String {
    let s = now_ms.saturating_sub(at_ms).max(0) / 1000;
    match s {
        0 => "just now".into(),
        1..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        3600..172_800 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86_400),
    }
}

/// The tool column: the tool, or what a rewind went back to.
fn tool_text(r: &CheckpointRecord) -> String {
    match r.rewind_of {
        Some(to) => format!("rewind to before {}", display_id(to)),
        None => r.tool.clone(),
    }
}

/// A status worth a word: `partial: ...`, `pruned: ...` (nothing for complete).
fn status_text(r: &CheckpointRecord) -> String {
    if r.status == "complete" {
        return String::new();
    }
    match &r.problem {
        Some(p) if p.starts_with(&r.status) => p.clone(),
        Some(p) => format!("{}: {p}", r.status),
        None => r.status.clone(),
    }
}

/// Pads each column but the last to its widest cell, two spaces apart.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths[c].saturating_sub(cell.chars().count());
                let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// `toolbelt checkpoints list`.
async fn list(
    checkpoints: &Checkpoints,
    store: &StoreHandle,
    limit: i64,
    before: Option<i64>,
    json: bool,
) -> Result<Result<(), CheckpointError>> {
    let opened = store.store().await.context("the store cannot be opened")?;
    let records = list_checkpoints(opened, checkpoints.workspace(), before, limit)
        .await
        .context("cannot read the checkpoints")?;
    if json {
        out_json(&records.iter().map(Summary::of).collect::<Vec<_>>())?;
        return Ok(Ok(()));
    }
    if records.is_empty() {
        out(&match before {
            Some(b) => format!(
                "no checkpoints before {} in this workspace\n",
                display_id(b)
            ),
            None => "no checkpoints in this workspace yet: each tool call that changes files \
                     gets one\n"
                .to_string(),
        })?;
        return Ok(Ok(()));
    }
    let now = now_ms();
    let mut rows = vec![
        ["ID", "TIME", "AGE", "TOOL", "ORIGIN", "FILES", "STATUS"]
            .map(str::to_string)
            .to_vec(),
    ];
    for r in &records {
        let n = u64::try_from(r.file_count).unwrap_or(0);
        rows.push(vec![
            display_id(r.id),
            time_text(r.at_ms),
            age_text(r.at_ms, now),
            tool_text(r),
            origin_text(&r.origin),
            format!("{n} {}", plural(n, "file")),
            status_text(r),
        ]);
    }
    let mut text = table(&rows);
    if i64::try_from(records.len()).is_ok_and(|n| n == limit)
        && let Some(last) = records.last()
        && last.id > 1
    {
        let _ = writeln!(
            text,
            "older: toolbelt checkpoints list --before {}",
            display_id(last.id)
        );
    }
    out(&text)?;
    Ok(Ok(()))
}

/// Checkpoint `id` of this workspace, with its files.
async fn record(
    checkpoints: &Checkpoints,
    store: &StoreHandle,
    id: i64,
) -> Result<Result<CheckpointRecord, CheckpointError>> {
    let opened = store.store().await.context("the store cannot be opened")?;
    let found = get_checkpoint(opened, id)
        .await
        .context("cannot read the checkpoints")?
        .filter(|r| r.workspace == checkpoints.workspace());
    Ok(found.ok_or_else(|| CheckpointError::NotFound(display_id(id))))
}

/// The paths of a checkpoint as shown: the `deleted` row of a rename's source is
/// folded into its `renamed` row, whose `before` (and whether it is captured)
/// becomes the source's.
fn shown_files(files: &[FileChange]) -> Vec<FileChange> {
    let sources = rename_sources(files);
    files
        .iter()
        .filter(|f| !(f.change == "deleted" && sources.contains_key(f.path.as_str())))
        .map(|f| {
            let mut f = f.clone();
            if let Some(src) = f.renamed_from.as_deref().and_then(|s| sources.get(s)) {
                f.before = src.before.clone();
                f.captured = src.captured;
                f.note = src.note.clone();
            }
            f
        })
        .collect()
}

/// The `deleted` rows that a `renamed` row of the same checkpoint moved from, by
/// path.
fn rename_sources(files: &[FileChange]) -> HashMap<&str, &FileChange> {
    files
        .iter()
        .filter(|f| f.change == "renamed")
        .filter_map(|f| f.renamed_from.as_deref())
        .filter_map(|from| {
            files
                .iter()
                .find(|g| g.path == from && g.change == "deleted")
                .map(|g| (from, g))
        })
        .collect()
}

/// A path's state in a few words: `absent`, `file 12 B 0644`, `dir 0755`,
/// `symlink -> target`.
fn state_text(s: &FileState) -> String {
    let mode = s.mode.map(|m| format!(" {m:04o}")).unwrap_or_default();
    match s.kind.as_str() {
        "absent" => "absent".into(),
        "file" => {
            let size = s
                .size
                .map(|n| format!(" {}", human_bytes(u64::try_from(n).unwrap_or(0))))
                .unwrap_or_default();
            format!("file{size}{mode}")
        }
        "symlink" => format!("symlink -> {}", s.link.as_deref().unwrap_or("?")),
        other => format!("{other}{mode}"),
    }
}

/// The change column: `renamed old -> new`, else the change and the path.
fn change_line(f: &FileChange) -> (String, String) {
    let path = match &f.renamed_from {
        Some(from) => format!("{from} -> {}", f.path),
        None => f.path.clone(),
    };
    (f.change.clone(), path)
}

/// `toolbelt checkpoints show`.
async fn show(
    checkpoints: &Checkpoints,
    store: &StoreHandle,
    id: i64,
    json: bool,
) -> Result<Result<(), CheckpointError>> {
    let r = match record(checkpoints, store, id).await? {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let files = shown_files(&r.files);
    if json {
        #[derive(Serialize)]
        struct Shown<'a> {
            #[serde(flatten)]
            summary: Summary,
            paths: &'a [FileChange],
        }
        out_json(&Shown {
            summary: Summary::of(&r),
            paths: &files,
        })?;
        return Ok(Ok(()));
    }
    let mut text = header(&r);
    let kept = files.iter().filter(|f| f.captured).count();
    let _ = writeln!(
        text,
        "content kept: {} new; the content before of {kept} of {} {} is kept",
        human_bytes(u64::try_from(r.bytes).unwrap_or(0)),
        files.len(),
        plural(files.len() as u64, "path")
    );
    text.push('\n');
    let rows: Vec<Vec<String>> = files
        .iter()
        .map(|f| {
            let (change, path) = change_line(f);
            let states = if f.change == "renamed" && f.before.kind == "absent" {
                state_text(&f.after)
            } else {
                format!("{} -> {}", state_text(&f.before), state_text(&f.after))
            };
            let captured = if f.captured {
                String::new()
            } else {
                f.note.clone().unwrap_or_else(|| "not captured".into())
            };
            vec![format!("  {change}"), path, states, captured]
        })
        .collect();
    text.push_str(&table(&rows));
    let _ = writeln!(
        text,
        "\n`toolbelt checkpoints diff {0}` shows the changes; `toolbelt rewind {0}` puts the files \
         back as they were before it.",
        display_id(r.id)
    );
    out(&text)?;
    Ok(Ok(()))
}

/// A checkpoint's first lines: id, tool, origin, time, status.
fn header(r: &CheckpointRecord) -> String {
    let mut text = format!(
        "{}  {}  from {}  {} ({})\n",
        display_id(r.id),
        tool_text(r),
        origin_text(&r.origin),
        time_text(r.at_ms),
        age_text(r.at_ms, now_ms())
    );
    let status = status_text(r);
    if !status.is_empty() {
        let _ = writeln!(text, "status: {status}");
    }
    text
}

/// Whether lines are coloured: a terminal, without `NO_COLOR`.
#[derive(Debug, Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn stdout() -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Paint(std::io::stdout().is_terminal() && !no_color)
    }

    /// A line of a unified diff, coloured as the agent's screen colours diffs:
    /// headers bold, additions green, removals red, hunks cyan.
    fn diff_line(self, line: &str) -> String {
        if !self.0 || line.is_empty() {
            return line.to_string();
        }
        if line.starts_with("+++") || line.starts_with("---") {
            line.bold().to_string()
        } else if line.starts_with('+') {
            line.green().to_string()
        } else if line.starts_with('-') {
            line.red().to_string()
        } else if line.starts_with("@@") {
            line.cyan().to_string()
        } else {
            line.to_string()
        }
    }

    fn bold(self, s: &str) -> String {
        if self.0 {
            s.bold().to_string()
        } else {
            s.into()
        }
    }
}

/// `toolbelt checkpoints diff`.
async fn diff(
    checkpoints: &Checkpoints,
    id: i64,
    json: bool,
) -> Result<Result<(), CheckpointError>> {
    let (r, diffs) = match checkpoint_diff(checkpoints, id).await {
        Ok(d) => d,
        Err(CheckpointError::Store(e)) => {
            return Err(anyhow::Error::new(e).context("cannot read the checkpoints"));
        }
        Err(e) => return Ok(Err(e)),
    };
    let sources = rename_sources(&r.files);
    let same_content = |d: &FileDiff| {
        let src = d.renamed_from.as_deref().and_then(|s| sources.get(s));
        let after = r.files.iter().find(|f| f.path == d.path);
        matches!((src, after), (Some(s), Some(a)) if s.before.hash.is_some() && s.before.hash == a.after.hash)
    };
    let diffs: Vec<FileDiff> = diffs
        .iter()
        .filter(|d| !(d.change == "deleted" && sources.contains_key(d.path.as_str())))
        .map(|d| {
            let mut d = d.clone();
            // A move keeping its content has nothing to show.
            if d.change == "renamed" && same_content(&d) {
                d.diff = None;
            }
            d
        })
        .collect();
    if json {
        out_json(&json!({"checkpoint": Summary::of(&r), "files": diffs}))?;
        return Ok(Ok(()));
    }
    let paint = Paint::stdout();
    let mut text = header(&r);
    for d in &diffs {
        let f = r.files.iter().find(|f| f.path == d.path);
        let mut title = match &d.renamed_from {
            Some(from) => format!("{} {from} -> {}", d.change, d.path),
            None => format!("{} {}", d.change, d.path),
        };
        let why = match (&d.diff, f) {
            (Some(_), _) => None,
            _ if !d.captured => Some(d.note.clone().unwrap_or_else(|| "not captured".into())),
            (None, Some(_)) if d.change == "renamed" && same_content(d) => {
                Some("content unchanged".into())
            }
            (None, Some(f)) if f.change == "mode" => Some(format!(
                "mode {} -> {}",
                f.before.mode.map_or("?".into(), |m| format!("{m:04o}")),
                f.after.mode.map_or("?".into(), |m| format!("{m:04o}"))
            )),
            (None, Some(f)) => Some(format!(
                "{} -> {}",
                state_text(&f.before),
                state_text(&f.after)
            )),
            (None, None) => None,
        };
        if let Some(why) = why {
            let _ = write!(title, " ({why})");
        }
        let _ = writeln!(text, "\n{}", paint.bold(&title));
        if let Some(diff) = &d.diff {
            for line in diff.lines() {
                let _ = writeln!(text, "{}", paint.diff_line(line));
            }
        }
    }
    out(&text)?;
    Ok(Ok(()))
}

/// `toolbelt checkpoints gc`.
async fn gc(checkpoints: &Checkpoints, json: bool) -> Result<Result<(), CheckpointError>> {
    let collected = match checkpoints.collect().await {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    if json {
        out_json(&json!({
            "dir": checkpoints.dir(),
            "pruned": collected.pruned,
            "removed": collected.removed,
            "freed_bytes": collected.freed_bytes,
            "kept_bytes": collected.kept_bytes,
        }))?;
        return Ok(Ok(()));
    }
    let n = collected.pruned.len() as u64;
    let mut text = if n == 0 {
        "pruned no checkpoints (none past the age or size limits)\n".to_string()
    } else {
        format!(
            "pruned {n} {}: {}\n",
            plural(n, "checkpoint"),
            collected.pruned.join(", ")
        )
    };
    let _ = writeln!(
        text,
        "removed {} kept {} no checkpoint needs any more ({} freed); {} kept in {}",
        collected.removed,
        plural(collected.removed as u64, "file"),
        human_bytes(collected.freed_bytes),
        human_bytes(collected.kept_bytes),
        checkpoints.dir().display()
    );
    out(&text)?;
    Ok(Ok(()))
}

/// What the flags make of a planned path: how it is shown and whether it is
/// done.
fn verdict(item: &RewindItem, args: &RewindArgs) -> (String, String, bool) {
    if item.action == "none" {
        return ("keep".into(), "already as it was".into(), false);
    }
    if let Some(why) = &item.skipped {
        return ("skip".into(), why.clone(), false);
    }
    if item.conflict {
        if args.force {
            return (
                item.action.clone(),
                format!("conflict: {CONFLICT_REASON}; overwritten (--force)"),
                true,
            );
        }
        if args.skip_conflicts {
            return (
                "skip".into(),
                format!("conflict: {CONFLICT_REASON} (--skip-conflicts)"),
                false,
            );
        }
        return ("CONFLICT".into(), CONFLICT_REASON.into(), false);
    }
    let detail = match item.action.as_str() {
        "remove" => format!("{} now", state_text(&item.now)),
        _ => format!("{} -> {}", state_text(&item.now), state_text(&item.to)),
    };
    (item.action.clone(), detail, true)
}

/// The plan as lines: what it undoes, then each path with its action.
fn plan_text(plan: &RewindPlan, args: &RewindArgs) -> String {
    let undoes = match plan.undoes.len() {
        0 => String::new(),
        1 => format!(" (undoes {})", plan.undoes[0]),
        n => format!(
            " (undoes {n} checkpoints: {} to {})",
            plan.undoes[0],
            plan.undoes[n - 1]
        ),
    };
    let mut text = format!(
        "Rewind to before {}{undoes}{}:\n",
        plan.to,
        if args.files.is_empty() {
            String::new()
        } else {
            format!(", only {}", args.files.join(" "))
        }
    );
    if plan.items.is_empty() {
        text.push_str("  (no paths)\n");
        return text;
    }
    let rows: Vec<Vec<String>> = plan
        .items
        .iter()
        .map(|i| {
            let (action, detail, _) = verdict(i, args);
            vec![format!("  {action}"), i.path.clone(), detail]
        })
        .collect();
    text.push_str(&table(&rows));
    text
}

/// The JSON of a plan that was not carried out, with why.
fn refusal_json(plan: &RewindPlan, code: &str, message: &str, extra: Value) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let (Some(e), Value::Object(more)) = (error.as_object_mut(), extra) {
        e.extend(more);
    }
    json!({"plan": plan, "done": false, "error": error})
}

/// Runs `toolbelt rewind`.
///
/// # Errors
/// The runtime cannot be started, the store cannot be opened, or standard output
/// cannot be written.
pub fn rewind(args: &RewindArgs, ws: &Workspace) -> Result<ExitCode> {
    let Some(checkpoints) = &ws.checkpoints else {
        return Ok(turned_off());
    };
    let rt = runtime::start(Threads::One)?;
    match rewind_with(&rt, args, checkpoints, &ws.store)? {
        Ok(code) => Ok(code),
        Err(e) => Ok(refused(&e)),
    }
}

fn rewind_with(
    rt: &Runtime,
    args: &RewindArgs,
    checkpoints: &Checkpoints,
    store: &StoreHandle,
) -> Result<Result<ExitCode, CheckpointError>> {
    let to = if args.undo {
        let opened = rt
            .block_on(store.store())
            .context("the store cannot be opened")?;
        match rt
            .block_on(last_rewind(opened, checkpoints.workspace()))
            .context("cannot read the checkpoints")?
        {
            Some(last) => last.id,
            None => return Ok(Err(CheckpointError::NoRewind)),
        }
    } else {
        match parse_id(args.id.as_deref().unwrap_or_default()) {
            Ok(id) => id,
            Err(e) => return Ok(Err(e)),
        }
    };
    let mut request = RewindRequest {
        to,
        files: args.files.clone(),
        skip_conflicts: args.skip_conflicts,
        force: args.force,
        dry_run: true,
        only: false,
        origin: Origin::new("cli"),
    };
    let plan = match rt.block_on(checkpoints.plan_rewind(&request)) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    if !args.json {
        out(&plan_text(&plan, args))?;
    }
    let conflicts = plan.conflicts();
    if !conflicts.is_empty() && !args.skip_conflicts && !args.force {
        return conflicted(&plan, &conflicts, args.json).map(Ok);
    }
    let todo = plan.items.iter().filter(|i| verdict(i, args).2).count() as u64;
    if todo == 0 || args.dry_run {
        let message = if todo == 0 {
            "nothing to rewind: every path is as it was, or left alone".to_string()
        } else {
            format!(
                "dry run: {todo} {} would be rewound; nothing was changed",
                plural(todo, "path")
            )
        };
        if args.json {
            out_json(&json!({
                "plan": plan,
                "done": false,
                "dry_run": args.dry_run,
                "would_rewind": todo,
                "message": message,
            }))?;
        } else {
            out(&format!("{message}\n"))?;
        }
        return Ok(Ok(ExitCode::SUCCESS));
    }
    if !args.yes {
        let question = format!(
            "Rewind {todo} {} to how {} before {}?",
            plural(todo, "path"),
            if todo == 1 { "it was" } else { "they were" },
            plan.to
        );
        match confirm(&question) {
            Some(true) => {}
            Some(false) => {
                eprintln!("toolbelt: not rewound; nothing was changed");
                if args.json {
                    out_json(&refusal_json(
                        &plan,
                        "DECLINED",
                        "not rewound; nothing was changed",
                        json!({}),
                    ))?;
                }
                return Ok(Ok(ExitCode::from(1)));
            }
            None => {
                let message = "not rewinding without --yes: standard input is not a terminal to \
                               ask on; nothing was changed (--dry-run prints the plan alone)";
                eprintln!("toolbelt: {message}");
                if args.json {
                    out_json(&refusal_json(&plan, "NEEDS_YES", message, json!({})))?;
                }
                return Ok(Ok(ExitCode::from(2)));
            }
        }
    }
    request.dry_run = false;
    let outcome = match rt.block_on(checkpoints.rewind(&request)) {
        Ok(o) => o,
        // Changed by hand between the plan and the rewind.
        Err(CheckpointError::Conflicts(conflicts)) => {
            return conflicted(&plan, &conflicts, args.json).map(Ok);
        }
        Err(e) => return Ok(Err(e)),
    };
    if args.json {
        out_json(&json!({
            "plan": outcome.plan,
            "done": true,
            "restored": outcome.restored,
            "skipped": outcome
                .skipped
                .iter()
                .map(|(path, reason)| json!({"path": path, "reason": reason}))
                .collect::<Vec<_>>(),
            "checkpoint": outcome.checkpoint,
        }))?;
        return Ok(Ok(ExitCode::SUCCESS));
    }
    let n = outcome.restored as u64;
    let mut text = format!(
        "Rewound {n} {} to how {} before {}.\n",
        plural(n, "path"),
        if n == 1 { "it was" } else { "they were" },
        outcome.plan.to
    );
    if !outcome.skipped.is_empty() {
        let _ = writeln!(text, "Left alone:");
        for (path, reason) in &outcome.skipped {
            let _ = writeln!(text, "  {path}: {reason}");
        }
    }
    if let Some(own) = &outcome.checkpoint {
        let _ = writeln!(
            text,
            "This rewind is checkpoint {own}: `toolbelt rewind --undo` takes it back."
        );
    }
    out(&text)?;
    Ok(Ok(ExitCode::SUCCESS))
}

/// Refuses a rewind whose paths changed outside toolbelt: names each, says what
/// the flags do. Status 1.
fn conflicted(plan: &RewindPlan, conflicts: &[String], json: bool) -> Result<ExitCode> {
    let n = conflicts.len() as u64;
    let message = format!(
        "{n} {} changed outside toolbelt since it last wrote {}; nothing was changed",
        plural(n, "file"),
        if n == 1 { "it" } else { "them" }
    );
    let mut text = format!("toolbelt: {message}:\n");
    for c in conflicts {
        let _ = writeln!(text, "  {c}");
    }
    text.push_str(
        "--skip-conflicts rewinds the other paths and leaves these as they are; --force \
         overwrites them too (the rewind keeps them: `toolbelt rewind --undo` brings them back).",
    );
    eprintln!("{text}");
    if json {
        out_json(&refusal_json(
            plan,
            "CONFLICTS",
            &message,
            json!({"conflicts": conflicts}),
        ))?;
    }
    Ok(ExitCode::from(1))
}

/// Asks `question` on standard error and reads y/N from standard input: `None`
/// when standard input is not a terminal.
fn confirm(question: &str) -> Option<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return None;
    }
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    if stdin.lock().read_line(&mut answer).is_err() {
        return Some(false);
    }
    Some(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn file(size: i64, hash: &str) -> FileState {
        FileState {
            kind: "file".into(),
            hash: Some(hash.into()),
            mode: Some(0o644),
            size: Some(size),
            link: None,
        }
    }

    #[test]
    fn a_rename_shows_once_with_its_source() {
        let files = vec![
            FileChange {
                path: "c.txt".into(),
                change: "deleted".into(),
                before: file(2, "h"),
                after: FileState::absent(),
                captured: true,
                ..FileChange::default()
            },
            FileChange {
                path: "d.txt".into(),
                change: "renamed".into(),
                renamed_from: Some("c.txt".into()),
                before: FileState::absent(),
                after: file(2, "h"),
                captured: true,
                note: None,
            },
            FileChange {
                path: "e.txt".into(),
                change: "deleted".into(),
                before: file(3, "x"),
                after: FileState::absent(),
                captured: true,
                ..FileChange::default()
            },
        ];
        let shown = shown_files(&files);
        let lines: Vec<(String, String)> = shown.iter().map(change_line).collect();
        assert_eq!(
            lines,
            vec![
                ("renamed".to_string(), "c.txt -> d.txt".to_string()),
                ("deleted".to_string(), "e.txt".to_string()),
            ]
        );
        assert_eq!(shown[0].before, file(2, "h"));
        assert_eq!(state_text(&shown[0].before), "file 2 B 0644");
    }

    #[test]
    fn ages_and_tables_read_well() {
        assert_eq!(age_text(0, 500), "just now");
        assert_eq!(age_text(0, 42_000), "42 s ago");
        assert_eq!(age_text(0, 300_000), "5 min ago");
        assert_eq!(age_text(0, 3 * 3_600_000), "3 h ago");
        assert_eq!(age_text(0, 4 * 86_400_000), "4 days ago");
        assert_eq!(
            table(&[
                vec!["a".into(), "bb".into(), "c".into()],
                vec!["ddd".into(), "e".into(), String::new()],
            ]),
            "a    bb  c\nddd  e\n"
        );
        assert_eq!(origin_text(r#"{"front_end":"cli"}"#), "cli");
        assert_eq!(
            origin_text(r#"{"front_end":"mcp","client":"codex"}"#),
            "mcp (client codex)"
        );
    }
}
