//! The stat index of a workspace root: every entry the ignore rules leave (`.git`
//! never), with its `lstat` and the hash of its kept content, so that the walk
//! after a shell command shows exactly what it changed, and only changed entries
//! are read again.
//!
//! It is kept in memory by a long-running process and on disk
//! (`<state>/checkpoints/index-<root id>`) between short ones.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ignore::{WalkBuilder, WalkState};

use crate::observe::{DIR, FILE, OTHER, SYMLINK, Stat};

/// Names never walked: git's own directory (and the older in-workspace state
/// directory, whose files are toolbelt's, but for its `hooks`: see [`walked`]).
pub(crate) const NEVER_WALKED: &[&str] = &[".git", ".toolbelt"];

/// The workspace's hook scripts, in `.toolbelt` at a root: walked, so that a
/// command that changes one is seen (its hook then stops until trusted again).
const HOOKS_DIR: &str = "hooks";

/// Whether the walk of a root enters `e`: not `.git`, nor the state directories
/// `skip`, nor `.toolbelt` at any depth but the root's, and of the root's only
/// `hooks`.
fn walked(e: &ignore::DirEntry, skip: &[PathBuf]) -> bool {
    if e.depth() == 0 {
        return true;
    }
    if skip.iter().any(|s| e.path() == s) {
        return false;
    }
    let name = e.file_name();
    if name == std::ffi::OsStr::new(".toolbelt") {
        return e.depth() == 1;
    }
    let in_toolbelt = e.depth() == 2
        && e.path().parent().and_then(Path::file_name) == Some(std::ffi::OsStr::new(".toolbelt"));
    if in_toolbelt {
        return name == std::ffi::OsStr::new(HOOKS_DIR);
    }
    !NEVER_WALKED.iter().any(|n| name == std::ffi::OsStr::new(n))
}

const MAGIC: &[u8; 8] = b"TBIDX01\n";

/// One entry of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub stat: Stat,
    /// The hash of the kept content (a file captured).
    pub hash: Option<String>,
    /// A link's target.
    pub link: Option<String>,
}

/// The index of one root: paths relative to it, `/`-separated.
///
/// On disk it is a snapshot and a log of the entries changed since (a call's few
/// changes are appended, not the whole index written again); the snapshot is
/// written again when the log has grown to a quarter of it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Index {
    pub entries: HashMap<String, Entry>,
    /// Whether it was ever walked whole (a new index is not a baseline yet).
    pub complete: bool,
    /// Paths changed (or gone) since the index was last written.
    pub dirty: HashSet<String>,
    /// Records in the log on disk since the snapshot.
    pub logged: usize,
}

/// What a walk saw.
pub(crate) struct Walked {
    pub entries: Vec<(String, Stat)>,
    /// The walk stopped at its deadline.
    pub cut: bool,
}

/// Walks `root` in parallel, honouring `.gitignore`, `.ignore` and git's global
/// excludes (in a directory without git too), hidden files included, `.git`
/// and the directories `skip` (a state directory inside the workspace) skipped, links
/// not followed; stops at `deadline`.
pub(crate) fn walk(root: &Path, skip: &[PathBuf], deadline: Instant) -> Walked {
    let shared = Shared {
        root,
        deadline,
        found: Mutex::new(Vec::new()),
        cut: AtomicBool::new(false),
    };
    let skip: Vec<PathBuf> = skip.to_vec();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    WalkBuilder::new(root)
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .follow_links(false)
        .threads(threads)
        .filter_entry(move |e| walked(e, &skip))
        .build_parallel()
        .visit(&mut Builder(&shared));
    Walked {
        entries: shared
            .found
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
        cut: shared.cut.into_inner(),
    }
}

struct Shared<'a> {
    root: &'a Path,
    deadline: Instant,
    found: Mutex<Vec<(String, Stat)>>,
    cut: AtomicBool,
}

struct Builder<'s, 'a>(&'s Shared<'a>);

impl<'s> ignore::ParallelVisitorBuilder<'s> for Builder<'s, '_> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.0,
            local: Vec::with_capacity(256),
        })
    }
}

/// One walker thread's visitor: gathers locally, hands over in batches and when
/// the walker drops it.
struct Visitor<'s, 'a> {
    shared: &'s Shared<'a>,
    local: Vec<(String, Stat)>,
}

impl ignore::ParallelVisitor for Visitor<'_, '_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
        if Instant::now() > self.shared.deadline {
            self.shared.cut.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        // An entry that cannot be read is left out: the walk after leaves it
        // out too, so it is not taken for a deletion.
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if entry.depth() == 0 {
            return WalkState::Continue;
        }
        let Some(rel) = relative(self.shared.root, entry.path()) else {
            return WalkState::Continue;
        };
        if let Ok(m) = entry.metadata() {
            self.local.push((rel, Stat::from_metadata(&m)));
        }
        if self.local.len() >= 256 {
            toolbelt_core::sync::lock(&self.shared.found).append(&mut self.local);
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_, '_> {
    fn drop(&mut self) {
        toolbelt_core::sync::lock(&self.shared.found).append(&mut self.local);
    }
}

/// `path` relative to `root`, `/`-separated; `None` when it is not under it or
/// not UTF-8.
pub(crate) fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let text = rel.to_str()?;
    if text.is_empty() {
        return None;
    }
    Some(text.to_string())
}

impl Index {
    /// Reads the index kept at `path`; an empty one when there is none or it is
    /// unreadable (the next walk rebuilds it).
    pub(crate) fn load(path: &Path) -> Index {
        match read_index(path) {
            Ok(index) => index,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(
                        "the checkpoint index {} cannot be read ({e}); it is rebuilt",
                        path.display()
                    );
                }
                Index::default()
            }
        }
    }

    /// Writes what changed to `path`: appended to its log, or the whole index
    /// again (through a temporary file renamed over it) when the log has grown to
    /// a quarter of it or there is no snapshot yet.
    ///
    /// # Errors
    /// It cannot be written.
    pub(crate) fn save(&mut self, path: &Path) -> io::Result<()> {
        let log = log_path(path);
        let whole =
            !path.exists() || (self.logged + self.dirty.len()) * 4 > self.entries.len().max(64);
        if !whole {
            if self.dirty.is_empty() {
                return Ok(());
            }
            let mut out = Vec::with_capacity(self.dirty.len() * 96);
            for rel in &self.dirty {
                match self.entries.get(rel) {
                    Some(e) => {
                        out.push(1u8);
                        write_entry(&mut out, rel, e)?;
                    }
                    None => {
                        out.push(2u8);
                        write_str(&mut out, rel)?;
                    }
                }
            }
            // One write: records of two processes do not interleave.
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)?
                .write_all(&out)?;
            self.logged += self.dirty.len();
            self.dirty.clear();
            return Ok(());
        }
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let result = (|| {
            let mut out = io::BufWriter::new(fs::File::create(&tmp)?);
            out.write_all(MAGIC)?;
            out.write_all(&[u8::from(self.complete)])?;
            out.write_all(&(self.entries.len() as u64).to_le_bytes())?;
            for (rel, e) in &self.entries {
                write_entry(&mut out, rel, e)?;
            }
            out.into_inner().map_err(io::IntoInnerError::into_error)?;
            fs::rename(&tmp, path)?;
            match fs::remove_file(&log) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        } else {
            self.logged = 0;
            self.dirty.clear();
        }
        result
    }

    /// Every kept hash the index refers to.
    pub(crate) fn hashes(&self) -> impl Iterator<Item = &str> {
        self.entries.values().filter_map(|e| e.hash.as_deref())
    }
}

/// The log of changes beside the snapshot at `path`.
fn log_path(path: &Path) -> PathBuf {
    path.with_extension("log")
}

fn write_entry(out: &mut impl Write, rel: &str, e: &Entry) -> io::Result<()> {
    write_str(out, rel)?;
    let kind = match e.stat.kind {
        FILE => 0u8,
        DIR => 1,
        SYMLINK => 2,
        _ => 3,
    };
    out.write_all(&[kind])?;
    for n in [e.stat.size, e.stat.ino, e.stat.dev, e.stat.nlink] {
        out.write_all(&n.to_le_bytes())?;
    }
    for n in [e.stat.mtime_ns, e.stat.ctime_ns] {
        out.write_all(&n.to_le_bytes())?;
    }
    out.write_all(&e.stat.mode.to_le_bytes())?;
    write_str(out, e.hash.as_deref().unwrap_or(""))?;
    write_str(out, e.link.as_deref().unwrap_or(""))
}

fn write_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    out.write_all(&(s.len() as u32).to_le_bytes())?;
    out.write_all(s.as_bytes())
}

fn read_index(path: &Path) -> io::Result<Index> {
    let mut bytes = Vec::new();
    fs::File::open(path)?.read_to_end(&mut bytes)?;
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "not a checkpoint index");
    let mut r = Reader {
        bytes: &bytes,
        at: 0,
    };
    if r.take(8).ok_or_else(bad)? != MAGIC {
        return Err(bad());
    }
    let complete = r.take(1).ok_or_else(bad)?[0] == 1;
    let count = r.u64().ok_or_else(bad)?;
    let mut entries = HashMap::with_capacity(usize::try_from(count).unwrap_or(0).min(1 << 24));
    for _ in 0..count {
        let (rel, entry) = read_entry(&mut r).ok_or_else(bad)?;
        entries.insert(rel, entry);
    }
    // The log of changes since, up to its first torn record.
    let mut logged = 0;
    if let Ok(log) = fs::read(log_path(path)) {
        let mut r = Reader { bytes: &log, at: 0 };
        while let Some(op) = r.take(1) {
            match op[0] {
                1 => match read_entry(&mut r) {
                    Some((rel, entry)) => {
                        entries.insert(rel, entry);
                    }
                    None => break,
                },
                2 => match r.string() {
                    Some(rel) => {
                        entries.remove(&rel);
                    }
                    None => break,
                },
                _ => break,
            }
            logged += 1;
        }
    }
    Ok(Index {
        entries,
        complete,
        dirty: HashSet::new(),
        logged,
    })
}

fn read_entry(r: &mut Reader<'_>) -> Option<(String, Entry)> {
    let rel = r.string()?;
    let kind = match r.take(1)?[0] {
        0 => FILE,
        1 => DIR,
        2 => SYMLINK,
        _ => OTHER,
    };
    let size = r.u64()?;
    let ino = r.u64()?;
    let dev = r.u64()?;
    let nlink = r.u64()?;
    let mtime_ns = r.u64()? as i64;
    let ctime_ns = r.u64()? as i64;
    let mode = u32::from_le_bytes(r.take(4)?.try_into().ok()?);
    let hash = r.string()?;
    let link = r.string()?;
    Some((
        rel,
        Entry {
            stat: Stat {
                kind,
                size,
                mode,
                mtime_ns,
                ctime_ns,
                ino,
                dev,
                nlink,
            },
            hash: (!hash.is_empty()).then_some(hash),
            link: (!link.is_empty()).then_some(link),
        },
    ))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let out = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(out)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn string(&mut self) -> Option<String> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
}

/// The file an index of `root` is kept in, under `dir`.
pub(crate) fn index_path(dir: &Path, root: &Path) -> PathBuf {
    let id = crate::blobs::hash_bytes(root.as_os_str().as_encoded_bytes());
    dir.join(format!("index-{}", &id[..16]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(size: u64, hash: &str) -> Entry {
        Entry {
            stat: Stat {
                kind: FILE,
                size,
                mode: 0o644,
                mtime_ns: 1,
                ctime_ns: 2,
                ino: size,
                dev: 3,
                nlink: 1,
            },
            hash: Some(hash.to_string()),
            link: None,
        }
    }

    #[test]
    fn changes_are_logged_and_read_back_and_a_long_log_is_folded_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index-x");
        let mut index = Index::default();
        for i in 0..100 {
            index.entries.insert(format!("f{i}"), entry(i, "h"));
        }
        index.complete = true;
        index.save(&path).unwrap();
        assert!(
            !log_path(&path).exists(),
            "the first save writes the snapshot"
        );
        // A few changes: appended to the log.
        index.entries.insert("f1".into(), entry(1000, "changed"));
        index.entries.remove("f2");
        index.entries.insert("new".into(), entry(7, "n"));
        index.dirty.extend(["f1", "f2", "new"].map(String::from));
        index.save(&path).unwrap();
        assert!(log_path(&path).exists());
        let loaded = Index::load(&path);
        assert_eq!(loaded.entries, index.entries);
        assert_eq!(loaded.logged, 3);
        // A torn last record is left out, what comes before it kept.
        let mut log = fs::read(log_path(&path)).unwrap();
        log.extend_from_slice(&[1, 200, 0]);
        fs::write(log_path(&path), &log).unwrap();
        assert_eq!(Index::load(&path).entries, index.entries);
        // Many changes: the snapshot is written again and the log removed.
        for i in 0..60 {
            index.entries.insert(format!("f{i}"), entry(i, "again"));
            index.dirty.insert(format!("f{i}"));
        }
        index.save(&path).unwrap();
        assert!(!log_path(&path).exists());
        assert_eq!(Index::load(&path).entries, index.entries);
    }
}
