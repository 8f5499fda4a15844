//! [`FileStamps`]: what the agent last saw of each file, for optimistic locking.
//!
//! read_file records a [`Stamp`] (the content hash, and for small files the bytes
//! themselves); a write tool compares the file on disk with it and refuses when the
//! file changed since, saying what changed. Our own writes refresh the stamp. Which
//! files were read in this session (not only written, or known from a stamp saved
//! by another process) is kept apart: [`FileStamps::was_read`].
//!
//! Replicas of one server that serve the same workspace share their stamps
//! through a [`SharedStamps`] (the store): every stamp recorded or forgotten is
//! queued and [`FileStamps::publish`]ed before the call's answer is sent, and a
//! write asks [`FileStamps::refresh`] first, so that a `read_file` answered by one
//! replica lets a write answered by another go through.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::sync::lock;

/// A boxed future, as [`crate::BoxFuture`] (spelled out here: the tool module
/// depends on this one through the session).
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

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

/// A stamp as replicas share it: no copy of the content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedStamp {
    /// The content hash.
    pub hash: String,
    /// Size in bytes.
    pub size: u64,
    /// When it was seen, in milliseconds since the Unix epoch.
    pub seen_ms: i64,
}

/// One change to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StampChange {
    /// `path` was seen as the stamp says.
    Seen(PathBuf, SharedStamp),
    /// `path` was deleted: no stamp.
    Forgotten(PathBuf),
}

/// Where the replicas of a server keep the stamps they share (the store).
pub trait SharedStamps: Send + Sync + fmt::Debug {
    /// The shared stamp of `path`, if any; a failure to reach it is `None` (and
    /// logged by the implementation): the local stamps still apply.
    fn load<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<SharedStamp>>;
    /// Saves `changes`, in order; a failure is logged, never returned.
    fn save(&self, changes: Vec<StampChange>) -> BoxFuture<'_, ()>;
}

fn to_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[derive(Debug, Default)]
struct Inner {
    stamps: HashMap<PathBuf, (u64, Stamp)>,
    /// Bumped at every record; orders stamps by age.
    clock: u64,
    snapshot_bytes: usize,
    /// The files read in this session ([`FileStamps::record_read`]).
    read: HashSet<PathBuf>,
}

/// The stamps of one session, keyed by absolute path. Shared by every call.
#[derive(Debug, Default)]
pub struct FileStamps {
    inner: Mutex<Inner>,
    shared: OnceLock<Arc<dyn SharedStamps>>,
    /// Changes not yet published to `shared`.
    outgoing: Mutex<Vec<StampChange>>,
    /// Held while changes are saved: a publish that finds the queue emptied by
    /// another waits until that one's save is done.
    publishing: tokio::sync::Mutex<()>,
}

impl FileStamps {
    /// An empty set.
    pub fn new() -> FileStamps {
        FileStamps::default()
    }

    /// Shares the stamps through `shared` from now on (once; a second call is
    /// ignored).
    pub fn share_through(&self, shared: Arc<dyn SharedStamps>) {
        let _ = self.shared.set(shared);
    }

    /// Whether the stamps are shared ([`FileStamps::share_through`]).
    pub fn is_shared(&self) -> bool {
        self.shared.get().is_some()
    }

    /// Records `stamp` as the agent's view of `path`.
    pub fn record(&self, path: &Path, stamp: Stamp) {
        if self.shared.get().is_some() {
            let shared = SharedStamp {
                hash: stamp.hash.clone(),
                size: stamp.size,
                seen_ms: to_ms(stamp.seen_at),
            };
            lock(&self.outgoing).push(StampChange::Seen(path.to_path_buf(), shared));
        }
        self.keep(path, stamp);
    }

    /// Records `stamp` as the agent's view of `path`, which it has just read (not
    /// written): [`FileStamps::was_read`] is true for it from now on.
    pub fn record_read(&self, path: &Path, stamp: Stamp) {
        self.record(path, stamp);
        lock(&self.inner).read.insert(path.to_path_buf());
    }

    /// Whether `path` was read in this session ([`FileStamps::record_read`]) since
    /// it was last forgotten. Stamps of writes, of other replicas and of other
    /// processes do not count.
    pub fn was_read(&self, path: &Path) -> bool {
        lock(&self.inner).read.contains(path)
    }

    fn keep(&self, path: &Path, stamp: Stamp) {
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
        if self.shared.get().is_some() {
            lock(&self.outgoing).push(StampChange::Forgotten(path.to_path_buf()));
        }
        let mut inner = lock(&self.inner);
        inner.read.remove(path);
        if let Some((_, old)) = inner.stamps.remove(path) {
            inner.snapshot_bytes -= old.snapshot.as_ref().map_or(0, |s| s.len());
        }
    }

    /// Takes the shared stamp of `path` when it is newer than the local one (or
    /// there is no local one): another replica read or wrote the file since. Does
    /// nothing when the stamps are not shared.
    pub async fn refresh(&self, path: &Path) {
        let Some(shared) = self.shared.get() else {
            return;
        };
        let Some(seen) = shared.load(path).await else {
            return;
        };
        let newer = match self.get(path) {
            None => true,
            Some(local) => seen.seen_ms > to_ms(local.seen_at) && seen.hash != local.hash,
        };
        if newer {
            let seen_at =
                UNIX_EPOCH + Duration::from_millis(u64::try_from(seen.seen_ms).unwrap_or(0));
            self.keep(
                path,
                Stamp {
                    hash: seen.hash,
                    size: seen.size,
                    seen_at,
                    snapshot: None,
                },
            );
        }
    }

    /// Saves the stamps recorded or forgotten since the last publish to the shared
    /// place, when there is one. The registry calls it before a call's answer is
    /// returned, so that the next call, answered anywhere, sees them.
    pub async fn publish(&self) {
        let Some(shared) = self.shared.get() else {
            return;
        };
        if lock(&self.outgoing).is_empty() {
            return;
        }
        let _publishing = self.publishing.lock().await;
        let changes = std::mem::take(&mut *lock(&self.outgoing));
        if !changes.is_empty() {
            shared.save(changes).await;
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
    fn only_reads_count_as_read_until_forgotten() {
        let stamps = FileStamps::new();
        let p = Path::new("/w/a.txt");
        stamps.record(p, Stamp::new("abc", b"hello"));
        assert!(!stamps.was_read(p));
        stamps.record_read(p, Stamp::new("abc", b"hello"));
        assert!(stamps.was_read(p));
        // A later write keeps the read.
        stamps.record(p, Stamp::new("def", b"bye"));
        assert!(stamps.was_read(p));
        stamps.forget(p);
        assert!(!stamps.was_read(p));
        assert_eq!(stamps.get(p), None);
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
