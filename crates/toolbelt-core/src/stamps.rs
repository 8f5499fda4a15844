//! [`FileStamps`]: what the agent last saw of each file, for optimistic locking.
//!
//! read_file records a [`Stamp`] (the content hash, and for small files the bytes
//! themselves); a write tool compares the file on disk with it and refuses when the
//! file changed since, saying what changed. Our own writes refresh the stamp.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::sync::lock;

/// Files up to this size keep a copy of their content in the stamp, so that a
/// conflict can show what changed.
pub const MAX_SNAPSHOT_BYTES: usize = 256 * 1024;

/// The copies kept by all stamps together stay under this; older copies are
/// dropped first (their hashes stay).
pub const MAX_SNAPSHOTS_TOTAL_BYTES: usize = 32 * 1024 * 1024;

/// What the agent last saw of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The content hash (see `toolbelt_fs::content_hash`).
    pub hash: String,
    /// Size in bytes.
    pub size: u64,
    /// When it was seen.
    pub seen_at: SystemTime,
    /// The content itself, for files up to [`MAX_SNAPSHOT_BYTES`].
    pub snapshot: Option<Arc<[u8]>>,
}

impl Stamp {
    /// A stamp of `bytes` with content hash `hash`, seen now.
    pub fn new(hash: impl Into<String>, bytes: &[u8]) -> Stamp {
        Stamp {
            hash: hash.into(),
            size: bytes.len() as u64,
            seen_at: SystemTime::now(),
            snapshot: (bytes.len() <= MAX_SNAPSHOT_BYTES).then(|| Arc::from(bytes)),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    stamps: HashMap<PathBuf, (u64, Stamp)>,
    /// Bumped at every record; orders stamps by age.
    clock: u64,
    snapshot_bytes: usize,
}

/// The stamps of one session, keyed by absolute path. Shared by every call.
#[derive(Debug, Default)]
pub struct FileStamps {
    inner: Mutex<Inner>,
}

impl FileStamps {
    /// An empty set.
    pub fn new() -> FileStamps {
        FileStamps::default()
    }

    /// Records `stamp` as the agent's view of `path`.
    pub fn record(&self, path: &Path, stamp: Stamp) {
        let mut inner = lock(&self.inner);
        inner.clock += 1;
        let now = inner.clock;
        inner.snapshot_bytes += stamp.snapshot.as_ref().map_or(0, |s| s.len());
        if let Some((_, old)) = inner.stamps.insert(path.to_path_buf(), (now, stamp)) {
            inner.snapshot_bytes -= old.snapshot.as_ref().map_or(0, |s| s.len());
        }
        if inner.snapshot_bytes > MAX_SNAPSHOTS_TOTAL_BYTES {
            let mut by_age: Vec<(u64, PathBuf)> = inner
                .stamps
                .iter()
                .filter(|(_, (_, s))| s.snapshot.is_some())
                .map(|(p, (t, _))| (*t, p.clone()))
                .collect();
            by_age.sort();
            for (_, p) in by_age {
                if inner.snapshot_bytes <= MAX_SNAPSHOTS_TOTAL_BYTES {
                    break;
                }
                let freed = inner
                    .stamps
                    .get_mut(&p)
                    .and_then(|(_, s)| s.snapshot.take())
                    .map_or(0, |s| s.len());
                inner.snapshot_bytes -= freed;
            }
        }
    }

    /// The agent's last view of `path`, if any.
    pub fn get(&self, path: &Path) -> Option<Stamp> {
        let inner = lock(&self.inner);
        inner.stamps.get(path).map(|(_, s)| s.clone())
    }

    /// Forgets `path` (e.g. after it was deleted).
    pub fn forget(&self, path: &Path) {
        let mut inner = lock(&self.inner);
        if let Some((_, old)) = inner.stamps.remove(path) {
            inner.snapshot_bytes -= old.snapshot.as_ref().map_or(0, |s| s.len());
        }
    }

    /// Every stamp, by path (sorted), e.g. to save them between processes.
    pub fn entries(&self) -> Vec<(PathBuf, Stamp)> {
        let inner = lock(&self.inner);
        let mut out: Vec<(PathBuf, Stamp)> = inner
            .stamps
            .iter()
            .map(|(p, (_, s))| (p.clone(), s.clone()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// How many files have a stamp.
    pub fn len(&self) -> usize {
        let inner = lock(&self.inner);
        inner.stamps.len()
    }

    /// True when no file has a stamp.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_get_forget() {
        let stamps = FileStamps::new();
        let p = Path::new("/w/a.txt");
        assert_eq!(stamps.get(p), None);
        stamps.record(p, Stamp::new("abc", b"hello"));
        let got = stamps.get(p).unwrap();
        assert_eq!(got.hash, "abc");
        assert_eq!(got.size, 5);
        assert_eq!(got.snapshot.as_deref(), Some(&b"hello"[..]));
        stamps.record(p, Stamp::new("def", b"bye"));
        assert_eq!(stamps.get(p).unwrap().hash, "def");
        assert_eq!(stamps.len(), 1);
        stamps.forget(p);
        assert!(stamps.is_empty());
    }

    #[test]
    fn large_files_keep_only_the_hash() {
        let stamps = FileStamps::new();
        let big = vec![b'x'; MAX_SNAPSHOT_BYTES + 1];
        stamps.record(Path::new("/w/big"), Stamp::new("h", &big));
        let got = stamps.get(Path::new("/w/big")).unwrap();
        assert_eq!(got.snapshot, None);
        assert_eq!(got.size, big.len() as u64);
    }

    #[test]
    fn snapshots_stay_under_the_total_cap_oldest_dropped_first() {
        let stamps = FileStamps::new();
        let chunk = vec![b'y'; MAX_SNAPSHOT_BYTES];
        let n = MAX_SNAPSHOTS_TOTAL_BYTES / MAX_SNAPSHOT_BYTES + 3;
        for i in 0..n {
            stamps.record(
                &PathBuf::from(format!("/w/{i}")),
                Stamp::new(format!("h{i}"), &chunk),
            );
        }
        assert_eq!(stamps.len(), n);
        assert_eq!(stamps.get(Path::new("/w/0")).unwrap().snapshot, None);
        assert_eq!(stamps.get(Path::new("/w/0")).unwrap().hash, "h0");
        let last = format!("/w/{}", n - 1);
        assert!(stamps.get(Path::new(&last)).unwrap().snapshot.is_some());
        let kept: usize = (0..n)
            .filter_map(|i| {
                stamps
                    .get(&PathBuf::from(format!("/w/{i}")))
                    .unwrap()
                    .snapshot
            })
            .map(|s| s.len())
            .sum();
        assert!(kept <= MAX_SNAPSHOTS_TOTAL_BYTES);
    }
}
