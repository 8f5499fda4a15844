//! The agent's view of files, kept between `toolbelt call` runs.
//!
//! A long-lived server keeps its [`FileStamps`] in memory; each `toolbelt call` is
//! a new process, so that `call read_file` followed by `call edit_file` works, the
//! stamps (hashes and sizes, not contents) are saved in
//! `<state>/file-stamps.json` and loaded again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toolbelt_core::{FileStamps, Session, Stamp};

const FILE_NAME: &str = "file-stamps.json";

/// At most this many stamps are kept on disk; the oldest go first.
const MAX_SAVED_STAMPS: usize = 10_000;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    stamps: BTreeMap<PathBuf, SavedStamp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SavedStamp {
    hash: String,
    size: u64,
    /// Seconds since the Unix epoch.
    seen_at: u64,
}

fn load_saved(state_dir: &Path) -> Saved {
    std::fs::read(state_dir.join(FILE_NAME))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Loads the saved stamps into the session's; a missing or unreadable file loads nothing.
pub(crate) fn load(session: &Session) {
    load_into(session.state_dir(), session.file_stamps());
}

/// Saves the session's stamps, logging (not failing) when they cannot be written.
pub(crate) fn save_or_warn(session: &Session) {
    if let Err(err) = save(session.state_dir(), session.file_stamps()) {
        tracing::warn!(
            "cannot save what was read in {}: {err}",
            session.state_dir().display()
        );
    }
}

fn load_into(state_dir: &Path, stamps: &FileStamps) {
    for (path, s) in load_saved(state_dir).stamps {
        let seen_at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(s.seen_at);
        stamps.record(
            &path,
            Stamp {
                hash: s.hash,
                size: s.size,
                seen_at,
                snapshot: None,
            },
        );
    }
}

/// Saves `stamps` merged over what is on disk (another run may have saved since).
/// Does nothing when nothing changed.
///
/// # Errors
/// The state directory or the file cannot be written.
fn save(state_dir: &Path, stamps: &FileStamps) -> std::io::Result<()> {
    if stamps.is_empty() {
        return Ok(());
    }
    let mut saved = load_saved(state_dir);
    let mut changed = false;
    for (path, stamp) in stamps.entries() {
        let seen_at = stamp
            .seen_at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let new = SavedStamp {
            hash: stamp.hash,
            size: stamp.size,
            seen_at,
        };
        if saved
            .stamps
            .get(&path)
            .is_none_or(|old| old.hash != new.hash)
        {
            saved.stamps.insert(path, new);
            changed = true;
        }
    }
    if !changed {
        return Ok(());
    }
    if saved.stamps.len() > MAX_SAVED_STAMPS {
        let mut by_age: Vec<(u64, PathBuf)> = saved
            .stamps
            .iter()
            .map(|(p, s)| (s.seen_at, p.clone()))
            .collect();
        by_age.sort();
        let excess = saved.stamps.len() - MAX_SAVED_STAMPS;
        for (_, p) in by_age.into_iter().take(excess) {
            saved.stamps.remove(&p);
        }
    }
    std::fs::create_dir_all(state_dir)?;
    let tmp = state_dir.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&saved)?)?;
    std::fs::rename(&tmp, state_dir.join(FILE_NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_survive_a_save_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let stamps = FileStamps::new();
        stamps.record(
            Path::new("/w/a.txt"),
            Stamp::new("0123456789abcdef", b"hello"),
        );
        save(dir.path(), &stamps).unwrap();
        let again = FileStamps::new();
        load_into(dir.path(), &again);
        let got = again.get(Path::new("/w/a.txt")).unwrap();
        assert_eq!(got.hash, "0123456789abcdef");
        assert_eq!(got.size, 5);
        assert_eq!(got.snapshot, None);
        // Another run's stamps are merged, not lost.
        let other = FileStamps::new();
        other.record(Path::new("/w/b.txt"), Stamp::new("fedcba9876543210", b"x"));
        save(dir.path(), &other).unwrap();
        let merged = FileStamps::new();
        load_into(dir.path(), &merged);
        assert_eq!(merged.len(), 2);
    }

    #[test]
    fn a_corrupt_file_loads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "{not json").unwrap();
        let stamps = FileStamps::new();
        load_into(dir.path(), &stamps);
        assert!(stamps.is_empty());
    }
}
