//! How long saved outputs are kept: [`SavedOutputLimits`], one rule for the spill
//! files ([`expire_spilled`]) and for a store's copies.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::page::is_valid_output_id;

/// Saved outputs older than this are removed.
pub const SAVED_OUTPUT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// Past this many bytes of saved outputs (of one spill directory, or of one
/// workspace in a store), the oldest are removed.
pub const SAVED_OUTPUT_MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;

/// What is kept of saved outputs: none older than `max_age`, then the newest
/// whose bytes together stay within `max_total_bytes` (the oldest go first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedOutputLimits {
    /// Saved outputs older than this are removed.
    pub max_age: Duration,
    /// The bytes kept at most; past them, the oldest outputs are removed.
    pub max_total_bytes: u64,
}

impl Default for SavedOutputLimits {
    fn default() -> Self {
        SavedOutputLimits {
            max_age: SAVED_OUTPUT_MAX_AGE,
            max_total_bytes: SAVED_OUTPUT_MAX_TOTAL_BYTES,
        }
    }
}

impl SavedOutputLimits {
    /// Of outputs given as `(created, bytes)`, the indexes of those to remove at
    /// `now`: the ones older than `max_age`, then the oldest of the others while
    /// their bytes together pass `max_total_bytes` (newest first, each output whose
    /// bytes with those of the newer ones pass it). Equal times: the later index is
    /// taken for the newer.
    pub fn expired(&self, outputs: &[(SystemTime, u64)], now: SystemTime) -> Vec<usize> {
        let mut order: Vec<usize> = (0..outputs.len()).collect();
        order.sort_by(|&a, &b| outputs[b].0.cmp(&outputs[a].0).then(b.cmp(&a)));
        let mut newer_bytes = 0u64;
        let mut gone = Vec::new();
        for i in order {
            let (created, bytes) = outputs[i];
            let old = now
                .duration_since(created)
                .is_ok_and(|age| age > self.max_age);
            if old {
                gone.push(i);
                continue;
            }
            newer_bytes = newer_bytes.saturating_add(bytes);
            if newer_bytes > self.max_total_bytes {
                gone.push(i);
            }
        }
        gone.sort_unstable();
        gone
    }
}

/// What [`expire_spilled`] removed.
#[derive(Debug, Default)]
pub struct Expired {
    /// The outputs removed.
    pub outputs: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files that could not be removed, with why.
    pub problems: Vec<(PathBuf, io::Error)>,
}

/// Removes from `spill_dir` the saved outputs `limits` no longer keeps at `now`
/// (by the time each file was last written). Only the files saved outputs are
/// written to (`out_<32 hex digits>.txt`, regular files) are looked at; a missing
/// directory has nothing to remove.
///
/// # Errors
/// The directory cannot be listed.
pub fn expire_spilled(
    spill_dir: &Path,
    limits: &SavedOutputLimits,
    now: SystemTime,
) -> io::Result<Expired> {
    let entries = match std::fs::read_dir(spill_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Expired::default()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_output = name
            .to_str()
            .and_then(|n| n.strip_suffix(".txt"))
            .is_some_and(is_valid_output_id);
        // `DirEntry::metadata` does not follow symlinks.
        let Ok(meta) = entry.metadata() else { continue };
        if !is_output || !meta.file_type().is_file() {
            continue;
        }
        let written = meta.modified().unwrap_or(now);
        files.push((entry.path(), written, meta.len()));
    }
    let outputs: Vec<(SystemTime, u64)> = files.iter().map(|(_, t, n)| (*t, *n)).collect();
    let mut expired = Expired::default();
    for i in limits.expired(&outputs, now) {
        let (path, _, bytes) = &files[i];
        match std::fs::remove_file(path) {
            Ok(()) => {
                expired.outputs += 1;
                expired.bytes += bytes;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => expired.problems.push((path.clone(), e)),
        }
    }
    Ok(expired)
}
