//! The temporary files of atomic writes a killed process left in the workspace,
//! removed when a command that builds a workspace's registry starts.
//!
//! The file tools note in `<state>/temp-dirs` each directory where they create a
//! temporary file ([`toolbelt_fs::TempJournal`]); at start, [`sweep_at_start`]
//! removes from those directories the files that are toolbelt's by name, owner and
//! age, compacts the journal, and gives the session the journal for this run's
//! writes. Nothing here fails the start: problems are warnings in the log.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use toolbelt_core::Session;
use toolbelt_fs::{Jail, TempJournal};

/// The journal's file in the state directory.
const JOURNAL_FILE: &str = "temp-dirs";

/// How long before this process started a temporary file must have been last
/// written to be taken for a killed write's: none, so that a restart right after a
/// crash leaves the workspace clean. Another process's write under way is safe
/// all the same: its directory is locked while it writes (the sweep skips a locked
/// directory), and directories noted only by running processes are not swept.
const MIN_LEFTOVER_AGE: Duration = Duration::ZERO;

/// When this process began to set up, before it wrote any file.
static STARTED: LazyLock<SystemTime> = LazyLock::new(SystemTime::now);

/// A journal's file and the workspace roots it was swept for.
type SweptFor = (PathBuf, Vec<PathBuf>);

/// Journals (with their roots) swept by this process: once each is enough.
static SWEPT: LazyLock<Mutex<HashSet<SweptFor>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

/// Removes what interrupted writes left in the workspace roots of `session` (the
/// first time this process sees its journal and roots), and returns `session`
/// keeping the journal of this run's temporary files.
pub(crate) fn sweep_at_start(session: Session) -> Session {
    let started = *STARTED;
    let journal = session.state_dir().join(JOURNAL_FILE);
    let first_time =
        toolbelt_core::sync::lock(&SWEPT).insert((journal.clone(), session.roots().to_vec()));
    if first_time {
        sweep(&journal, session.roots(), started);
    }
    session.with_temp_journal(journal)
}

fn sweep(path: &Path, roots: &[PathBuf], started: SystemTime) {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > 0 => {}
        Ok(_) => return,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return,
        Err(err) => {
            tracing::warn!("cannot read {}: {err}", path.display());
            return;
        }
    }
    let jail = match Jail::open(roots) {
        Ok(jail) => jail,
        Err(err) => {
            tracing::warn!(
                "temporary files of interrupted writes not cleaned up: {}",
                toolbelt_core::error_chain(&err)
            );
            return;
        }
    };
    let swept = match TempJournal::new(path).sweep(&jail, started, MIN_LEFTOVER_AGE) {
        Ok(swept) => swept,
        Err(err) => {
            tracing::warn!(
                "temporary files of interrupted writes not cleaned up: {}",
                toolbelt_core::error_chain(&err)
            );
            return;
        }
    };
    if !swept.removed.is_empty() {
        let shown: Vec<String> = swept
            .removed
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        tracing::info!(
            "removed {} temporary file(s) left by interrupted writes: {}",
            shown.len(),
            shown.join(", ")
        );
    }
    for problem in &swept.problems {
        tracing::warn!(
            "cleaning up after interrupted writes: {}",
            toolbelt_core::error_chain(problem)
        );
    }
    tracing::debug!(
        dirs_swept = swept.dirs_swept,
        too_young = swept.too_young.len(),
        busy = swept.busy.len(),
        journal_before = swept.entries_before,
        journal_after = swept.entries_after,
        "swept the directories of {}",
        path.display()
    );
}
