//! `toolbelt agent import [DIR]`: the runs kept as transcript files, copied into
//! the store, where `toolbelt serve` lists them on every replica. Each line of a
//! transcript becomes an event of its run, numbered as in the file (so that a run
//! continued since is brought up to date by importing it again).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use toolbelt_agent::transcript::{self, RunInfo};
use toolbelt_core::human::plural;
use toolbelt_store::{Store, StoreHandle, StoredRun};

use crate::cli::AgentImportArgs;
use crate::commands::{exit_code, out, out_json};
use crate::runtime::{self, Threads};

/// The `replica` of a run imported from its file.
const IMPORTED: &str = "import";

/// What an import did, run by run (with `--json`, this object, each failure's
/// error as its chain of causes).
#[derive(Debug, Default, Serialize)]
struct Counts {
    /// Runs the store did not have.
    imported: usize,
    /// Runs it had, given the lines written since.
    updated: usize,
    /// Runs it had whole.
    unchanged: usize,
    /// Lines added, over all runs.
    lines: u64,
    /// Files in the folder that are not transcripts.
    skipped: usize,
    /// Runs that could not be imported, with why.
    failed: Vec<Failed>,
}

/// A run that could not be imported.
#[derive(Debug, Serialize)]
struct Failed {
    run_id: String,
    #[serde(serialize_with = "chain")]
    error: anyhow::Error,
}

/// An error as the chain of its causes, where it leaves the program.
fn chain<S: serde::Serializer>(error: &anyhow::Error, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{error:#}"))
}

/// Imports the transcripts of `args.dir` (default `runs_dir`) into `store`, as
/// runs of `args.workspace` (default `workspace`).
///
/// # Errors
/// The folder cannot be read, the store cannot be opened, or the output cannot be
/// written.
pub fn run(
    args: &AgentImportArgs,
    runs_dir: &Path,
    workspace: String,
    store: &StoreHandle,
) -> Result<ExitCode> {
    let dir = args.dir.as_deref().unwrap_or(runs_dir);
    let workspace = args
        .workspace
        .as_ref()
        .map_or(workspace, |w| w.display().to_string());
    if !dir.is_dir() {
        match args.dir {
            None => anyhow::bail!(
                "there are no runs to import: {} does not exist yet (the runs of `toolbelt agent` go there)",
                dir.display()
            ),
            Some(_) => anyhow::bail!(
                "{} is not a folder of transcripts (this workspace's runs are in {})",
                dir.display(),
                runs_dir.display()
            ),
        }
    }
    let runs = transcript::list(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let files = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .count()
        })
        .unwrap_or(0);
    let rt = runtime::start(Threads::One)?;
    let counts = rt.block_on(async {
        let store = store.store().await.context("the store cannot be opened")?;
        let mut counts = Counts {
            skipped: files.saturating_sub(runs.len()),
            ..Counts::default()
        };
        for run in &runs {
            import_one(store, run, &workspace, &mut counts).await;
        }
        anyhow::Ok(counts)
    })?;
    if args.json {
        out_json(&counts)?;
    } else {
        out(&summary(&counts, dir, &workspace, store))?;
    }
    Ok(exit_code(counts.failed.is_empty()))
}

/// Imports the transcript of `run`, counting what happened.
async fn import_one(store: &Store, run: &RunInfo, workspace: &str, counts: &mut Counts) {
    let fail = |counts: &mut Counts, error: anyhow::Error| {
        counts.failed.push(Failed {
            run_id: run.id.clone(),
            error,
        });
    };
    let text = match std::fs::read_to_string(&run.path)
        .with_context(|| format!("cannot read {}", run.path.display()))
    {
        Ok(text) => text,
        Err(e) => return fail(counts, e),
    };
    // Numbered as the file's lines, as a server numbers them; a line cut by a
    // crash keeps its number and is left out.
    let lines: Vec<(u64, String)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| serde_json::from_str::<Value>(line).is_ok())
        .map(|(i, line)| (i as u64, line.to_string()))
        .collect();
    let time_of = |line: &str| {
        serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v.get("time").and_then(Value::as_str).map(str::to_string))
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.timestamp_millis())
    };
    let started_ms =
        chrono::DateTime::parse_from_rfc3339(&run.started).map_or(0, |t| t.timestamp_millis());
    let updated_ms = lines
        .last()
        .and_then(|(_, line)| time_of(line))
        .unwrap_or(started_ms)
        .max(started_ms);
    let stored = StoredRun {
        run_id: run.id.clone(),
        workspace: workspace.to_string(),
        started_ms,
        updated_ms,
        replica: IMPORTED.into(),
    };
    match toolbelt_store::import_agent_run(store, &stored, &lines).await {
        Ok(done) => {
            counts.lines += done.lines;
            match (done.new_run, done.lines) {
                (true, _) => counts.imported += 1,
                (false, 0) => counts.unchanged += 1,
                (false, _) => counts.updated += 1,
            }
        }
        Err(e) => fail(counts, e.into()),
    }
}

/// What an import did, for the terminal.
fn summary(counts: &Counts, dir: &Path, workspace: &str, store: &StoreHandle) -> String {
    let runs = |n: usize| format!("{n} {}", plural(n as u64, "run"));
    let mut text = format!(
        "{} imported, {} brought up to date, {} already there ({} {}) from {} into {}, as runs of {workspace}\n",
        runs(counts.imported),
        runs(counts.updated),
        runs(counts.unchanged),
        counts.lines,
        plural(counts.lines, "line"),
        dir.display(),
        store.location().describe(),
    );
    if counts.skipped > 0 {
        let (files, are) = match counts.skipped {
            1 => ("1 file".to_string(), "is"),
            n => (format!("{n} files"), "are"),
        };
        text.push_str(&format!(
            "{files} of {} {are} not a transcript, skipped\n",
            dir.display()
        ));
    }
    for f in &counts.failed {
        text.push_str(&format!("run {}: not imported: {:#}\n", f.run_id, f.error));
    }
    text
}
