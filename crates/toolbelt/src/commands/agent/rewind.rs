//! `toolbelt agent --resume ID --rewind-to TURN`: back to before a turn of a run.
//!
//! - The conversation (`--conversation`, `--both`): the run is forked before the
//!   turn ([`transcript::fork`]): a new run whose transcript is the old one's up to
//!   there; the old transcript is not touched. The command goes on with the new run.
//! - The files (`--code`, `--both`): rewound to the first checkpoint the run took
//!   in that turn or later ([`Checkpoints::rewind`], which undoes every later
//!   checkpoint of the workspace too). The run's checkpoints are those whose origin
//!   names it with such a turn, and those of its subagents (their origin names it
//!   as their parent) taken since the turn started; a run forked before turn F
//!   goes back through the run it came from for turns before F.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::json;
use tokio::runtime::Runtime;
use toolbelt_agent::transcript::{self, Forked};
use toolbelt_checkpoint::{CheckpointError, Checkpoints, RewindOutcome, RewindRequest};
use toolbelt_core::Origin;
use toolbelt_core::human::plural;
use toolbelt_store::{get_checkpoint, list_checkpoints};

use crate::cli::AgentArgs;
use crate::commands::{out, out_json};

/// Checkpoints read from the store at once, newest first.
const PAGE: i64 = 200;

/// What is rewound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Half {
    Code,
    Conversation,
    Both,
}

/// What the command does after the rewind.
pub(super) enum Next {
    /// Nothing more: exit with this.
    Exit(ExitCode),
    /// Go on with the forked run, whose transcript this is.
    Resume(PathBuf),
}

/// One run whose checkpoints count: from turn `turn` on, and its subagents' since
/// `since_ms`.
#[derive(Debug, Clone)]
struct Scope {
    run_id: String,
    turn: u32,
    since_ms: i64,
}

/// The files' side of a rewind: the checkpoint gone back to and what became of
/// the files; none when the run changed no file from the turn on.
pub(super) struct Files {
    rewound: Option<(String, RewindOutcome)>,
}

/// What a rewind did: the files' side (unless only the conversation was
/// rewound) and the new run (unless only the files were).
pub(super) struct Done {
    pub files: Option<Files>,
    pub forked: Option<Forked>,
}

/// Rewinds run `path` (in `runs_dir`) to before turn `turn`, as `args` say.
/// `goes_on`: the command runs a prompt or opens the screen on the new run, so
/// what was done goes to standard error.
///
/// # Errors
/// The run has no such turn, checkpoints are off (for the files), the files
/// conflict or cannot be restored, the new transcript cannot be written.
pub(super) fn run(
    rt: &Runtime,
    args: &AgentArgs,
    path: &Path,
    runs_dir: &Path,
    checkpoints: Option<&Checkpoints>,
    goes_on: bool,
) -> Result<Next> {
    let Some(turn) = args.rewind_to else {
        return Ok(Next::Resume(path.to_path_buf()));
    };
    let half = if args.code {
        Half::Code
    } else if args.conversation {
        Half::Conversation
    } else {
        Half::Both
    };
    let run_id = transcript::turns(path)?.run_id;
    let Done { files, forked } = rewind(rt, half, path, runs_dir, checkpoints, turn)?;
    let text = report(&run_id, turn, files.as_ref(), forked.as_ref());
    if args.json && !goes_on {
        out_json(&json!({
            "run_id": run_id,
            "turn": turn,
            "forked": forked,
            "files": files.as_ref().map(|f| json!({
                "checkpoint": f.rewound.as_ref().map(|r| &r.0),
                "rewind": f.rewound.as_ref().map(|r| &r.1),
            })),
        }))?;
    } else if goes_on {
        for line in text.lines() {
            eprintln!("toolbelt: {line}");
        }
    } else {
        out(&text)?;
    }
    Ok(match forked {
        Some(f) if goes_on => Next::Resume(f.path),
        _ => Next::Exit(ExitCode::SUCCESS),
    })
}

/// Rewinds run `path` (in `runs_dir`) to before turn `turn`: the files first
/// (unless `half` is the conversation alone), then the conversation forked
/// (unless it is the code alone). Nothing is forked when the files cannot be
/// rewound.
///
/// # Errors
/// The run has no such turn, checkpoints are off (for the files), the files
/// conflict or cannot be restored, the new transcript cannot be written.
pub(super) fn rewind(
    rt: &Runtime,
    half: Half,
    path: &Path,
    runs_dir: &Path,
    checkpoints: Option<&Checkpoints>,
    turn: u32,
) -> Result<Done> {
    let turns = transcript::turns(path)?;
    if turns.start(turn).is_none() {
        bail!(toolbelt_agent::AgentError::NoSuchTurn {
            id: turns.run_id,
            turn,
            turns: turns.count,
        });
    }
    let files = if half == Half::Conversation {
        None
    } else {
        let Some(checkpoints) = checkpoints else {
            bail!(
                "checkpoints are turned off in this workspace ([checkpoints] enabled = false): \
                 the files cannot be rewound (--conversation forks the run alone)"
            );
        };
        Some(rt.block_on(rewind_files(checkpoints, path, runs_dir, turn))?)
    };
    let forked = if half == Half::Code {
        None
    } else {
        Some(transcript::fork(path, turn).context("cannot fork the run")?)
    };
    Ok(Done { files, forked })
}

/// What was done, in a few lines.
pub(super) fn report(
    run_id: &str,
    turn: u32,
    files: Option<&Files>,
    forked: Option<&Forked>,
) -> String {
    let mut text = String::new();
    if let Some(f) = forked {
        text.push_str(&format!(
            "new run {}: the conversation of run {run_id} before its turn {turn} \
             (toolbelt agent --resume {} goes on with it)\n",
            f.run_id, f.run_id
        ));
    }
    match files {
        Some(Files {
            rewound: Some((cp, o)),
        }) => {
            text.push_str(&format!(
                "the files are as they were before turn {turn} of run {run_id} (before {cp}): \
                 {} {} restored\n",
                o.restored,
                plural(o.restored as u64, "path")
            ));
            for item in &o.plan.items {
                if item.action == "none" {
                    continue;
                }
                match o.skipped.iter().find(|(p, _)| *p == item.path) {
                    Some((_, why)) => {
                        text.push_str(&format!("  {:<9}{} ({why})\n", "left", item.path));
                    }
                    None => text.push_str(&format!("  {:<9}{}\n", item.action, item.path)),
                }
            }
            if let Some(own) = &o.checkpoint {
                text.push_str(&format!(
                    "toolbelt rewind --undo takes the rewind back (its checkpoint is {own})\n"
                ));
            }
        }
        Some(_) => text.push_str(&format!(
            "run {run_id} changed no file from its turn {turn} on: no file to restore\n"
        )),
        None => {}
    }
    text
}

/// Rewinds the files to before run `path`'s turn `turn`.
async fn rewind_files(
    checkpoints: &Checkpoints,
    path: &Path,
    runs_dir: &Path,
    turn: u32,
) -> Result<Files> {
    let scopes = scopes(path, runs_dir, turn)?;
    let Some(to) = first_checkpoint(checkpoints, &scopes).await? else {
        return Ok(Files { rewound: None });
    };
    let cp = toolbelt_checkpoint::display_id(to);
    let request = RewindRequest {
        to,
        origin: Origin::new("rewind"),
        ..RewindRequest::default()
    };
    let outcome = match checkpoints.rewind(&request).await {
        Ok(o) => o,
        Err(e @ CheckpointError::Conflicts(_)) => {
            return Err(anyhow::Error::new(e).context(format!(
                "the files cannot be rewound to before {cp}: nothing was changed \
                 (toolbelt rewind {cp} --skip-conflicts or --force decides, then \
                 --conversation forks the run)"
            )));
        }
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(format!("the files cannot be rewound to before {cp}")));
        }
    };
    Ok(Files {
        rewound: Some((cp, outcome)),
    })
}

/// The runs whose checkpoints count for run `path`'s turn `turn`: the run, and
/// for a run forked before a later turn, the run it came from (and so on).
fn scopes(path: &Path, runs_dir: &Path, turn: u32) -> Result<Vec<Scope>> {
    let mut scopes = Vec::new();
    let mut path = path.to_path_buf();
    loop {
        let turns = transcript::turns(&path)?;
        // A checkpoint's time and the transcript's are read from the same clock, in
        // whole milliseconds.
        let since_ms = turns.start(turn).and_then(|s| s.at_ms).unwrap_or(0);
        scopes.push(Scope {
            run_id: turns.run_id.clone(),
            turn,
            since_ms,
        });
        let Some(from) = turns.forked_from else {
            break;
        };
        if turn >= from.turn || scopes.iter().any(|s| s.run_id == from.run_id) {
            break;
        }
        // The turns before the fork were the older run's.
        match transcript::find(runs_dir, &from.run_id) {
            Ok(p) => path = p,
            Err(_) => break,
        }
    }
    Ok(scopes)
}

/// The workspace's checkpoints taken since `since_ms` (and the page that reaches
/// past it), newest first: id, time and origin.
async fn recent_origins(
    checkpoints: &Checkpoints,
    since_ms: i64,
) -> Result<Vec<(i64, i64, Origin)>> {
    let store = checkpoints
        .store()
        .await
        .context("the checkpoint records cannot be read")?;
    let mut out = Vec::new();
    let mut before = None;
    loop {
        let page = list_checkpoints(store, checkpoints.workspace(), before, PAGE)
            .await
            .context("the checkpoint records cannot be read")?;
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        out.extend(page.iter().filter_map(|record| {
            let origin = serde_json::from_str::<Origin>(&record.origin).ok()?;
            Some((record.id, record.at_ms, origin))
        }));
        // Newest first: an older page cannot hold a checkpoint since then.
        if last.at_ms < since_ms || page.len() < PAGE as usize {
            break;
        }
    }
    Ok(out)
}

/// The oldest checkpoint of the workspace that belongs to one of `scopes`.
async fn first_checkpoint(checkpoints: &Checkpoints, scopes: &[Scope]) -> Result<Option<i64>> {
    let oldest_start = scopes.iter().map(|s| s.since_ms).min().unwrap_or(0);
    let first = recent_origins(checkpoints, oldest_start)
        .await?
        .into_iter()
        .filter(|(_, at_ms, origin)| scopes.iter().any(|s| belongs(origin, *at_ms, s)))
        .map(|(id, _, _)| id)
        .min();
    Ok(first)
}

/// The first checkpoint a rewind of run `path` to before its turn `turn` goes
/// back to (none when the run changed no file from that turn on).
///
/// # Errors
/// A transcript or the checkpoint records cannot be read.
pub(super) async fn first_of_turn(
    checkpoints: &Checkpoints,
    path: &Path,
    runs_dir: &Path,
    turn: u32,
) -> Result<Option<i64>> {
    let scopes = scopes(path, runs_dir, turn)?;
    first_checkpoint(checkpoints, &scopes).await
}

/// The runs whose turns make up run `path`'s history: each with the turns that
/// are its own (from the first, up to the second, excluded). A run forked
/// before turn F owns its turns from F on; the run it came from, those before.
fn owners(path: &Path, runs_dir: &Path) -> Result<Vec<(String, u32, u32)>> {
    let mut owners = Vec::new();
    let mut turns = transcript::turns(path)?;
    let mut end = u32::MAX;
    loop {
        let first = turns.forked_from.as_ref().map_or(1, |f| f.turn);
        owners.push((turns.run_id.clone(), first, end));
        end = end.min(first);
        let Some(from) = turns.forked_from.take() else {
            break;
        };
        if end <= 1 || owners.iter().any(|o| o.0 == from.run_id) {
            break;
        }
        match transcript::find(runs_dir, &from.run_id) {
            Ok(p) => turns = transcript::turns(&p)?,
            Err(_) => break,
        }
    }
    Ok(owners)
}

/// The paths each turn of run `path` changed, by the checkpoints its calls took
/// (and its subagents' while the turn ran), in the order first changed; turns
/// that changed none are left out.
///
/// # Errors
/// A transcript or the checkpoint records cannot be read.
pub(super) async fn files_by_turn(
    checkpoints: &Checkpoints,
    path: &Path,
    runs_dir: &Path,
) -> Result<BTreeMap<u32, Vec<String>>> {
    let owners = owners(path, runs_dir)?;
    let starts: Vec<(u32, i64)> = transcript::turns(path)?
        .starts
        .iter()
        .map(|s| (s.turn, s.at_ms.unwrap_or(0)))
        .collect();
    let Some(oldest) = starts.iter().map(|s| s.1).min() else {
        return Ok(BTreeMap::new());
    };
    let owns = |run: &str, turn: u32| {
        owners
            .iter()
            .any(|(r, first, end)| r == run && (*first..*end).contains(&turn))
    };
    let turn_of = |origin: &Origin, at_ms: i64| -> Option<u32> {
        if let (Some(run), Some(turn)) = (&origin.run_id, origin.turn)
            && owns(run, turn)
        {
            return Some(turn);
        }
        // A subagent's: the turn of its parent that was running then.
        let parent = origin.parent_run_id.as_deref()?;
        let turn = starts.iter().filter(|s| s.1 <= at_ms).map(|s| s.0).max()?;
        owns(parent, turn).then_some(turn)
    };
    let mut found: Vec<(i64, u32)> = recent_origins(checkpoints, oldest)
        .await?
        .into_iter()
        .filter_map(|(id, at_ms, origin)| Some((id, turn_of(&origin, at_ms)?)))
        .collect();
    let store = checkpoints
        .store()
        .await
        .context("the checkpoint records cannot be read")?;
    // Oldest first, so each turn's paths are in the order they were changed.
    found.sort_unstable();
    let mut files: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (id, turn) in found {
        let Some(record) = get_checkpoint(store, id)
            .await
            .context("the checkpoint records cannot be read")?
        else {
            continue;
        };
        let paths = files.entry(turn).or_default();
        for f in record.files {
            if !paths.contains(&f.path) {
                paths.push(f.path);
            }
        }
    }
    files.retain(|_, paths| !paths.is_empty());
    Ok(files)
}

/// Whether a checkpoint from `origin` taken at `at_ms` belongs to `scope`.
fn belongs(origin: &Origin, at_ms: i64, scope: &Scope) -> bool {
    let own = origin.run_id.as_deref() == Some(scope.run_id.as_str())
        && origin.turn.is_some_and(|t| t >= scope.turn);
    let subagent =
        origin.parent_run_id.as_deref() == Some(scope.run_id.as_str()) && at_ms >= scope.since_ms;
    own || subagent
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        Scope {
            run_id: "r-1".into(),
            turn: 2,
            since_ms: 1_000,
        }
    }

    #[test]
    fn a_checkpoint_belongs_to_its_turn_and_later_and_to_subagents_since() {
        let s = scope();
        assert!(!belongs(&Origin::new("agent").in_turn("r-1", 1), 5_000, &s));
        assert!(belongs(&Origin::new("agent").in_turn("r-1", 2), 5_000, &s));
        assert!(belongs(&Origin::new("agent").in_turn("r-1", 3), 5_000, &s));
        assert!(!belongs(&Origin::new("agent").in_turn("r-2", 3), 5_000, &s));
        assert!(!belongs(&Origin::new("cli"), 5_000, &s));
        let child = Origin {
            parent_run_id: Some("r-1".into()),
            ..Origin::new("subagent").in_turn("r-9", 1)
        };
        assert!(belongs(&child, 1_000, &s));
        assert!(!belongs(&child, 999, &s));
    }
}
