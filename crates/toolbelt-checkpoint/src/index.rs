//! The stat index of a workspace root: every entry the ignore rules leave (`.git`
//! never), with its `lstat` and the hash of its kept content, so that the walk
//! after a shell command shows exactly what it changed, and only changed entries
//! are read again.
//!
//! It is kept in memory by a long-running process and on disk
//! (`<state>/checkpoints/index-<root id>`) between short ones.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ignore::{WalkBuilder, WalkState};

use crate::observe::{DIR, FILE, OTHER, SYMLINK, Stat};

/// Names never walked: git's own directory (and the older in-workspace state
/// directory, whose files are toolbelt's).
pub(crate) const NEVER_WALKED: &[&str] = &[".git", ".toolbelt"];

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
#[derive(Debug, Default, Clone)]
pub(crate) struct Index {
    pub entries: HashMap<String, Entry>,
    /// Whether it was ever walked whole (a new index is not a baseline yet).
    pub complete: bool,
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
        .filter_entry(move |e| {
            e.depth() == 0
                || !(NEVER_WALKED
                    .iter()
                    .any(|n| e.file_name() == std::ffi::OsStr::new(n))
                    || skip.iter().any(|s| e.path() == s))
        })
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

    /// Writes the index to `path` (through a temporary file renamed over it).
    ///
    /// # Errors
    /// It cannot be written.
    pub(crate) fn save(&self, path: &Path) -> io::Result<()> {
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
                write_str(&mut out, rel)?;
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
                write_str(&mut out, e.hash.as_deref().unwrap_or(""))?;
                write_str(&mut out, e.link.as_deref().unwrap_or(""))?;
            }
            out.into_inner().map_err(io::IntoInnerError::into_error)?;
            fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Every kept hash the index refers to.
    pub(crate) fn hashes(&self) -> impl Iterator<Item = &str> {
        self.entries.values().filter_map(|e| e.hash.as_deref())
    }
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
        let rel = r.string().ok_or_else(bad)?;
        let kind = match r.take(1).ok_or_else(bad)?[0] {
            0 => FILE,
            1 => DIR,
            2 => SYMLINK,
            _ => OTHER,
        };
        let size = r.u64().ok_or_else(bad)?;
        let ino = r.u64().ok_or_else(bad)?;
        let dev = r.u64().ok_or_else(bad)?;
        let nlink = r.u64().ok_or_else(bad)?;
        let mtime_ns = r.u64().ok_or_else(bad)? as i64;
        let ctime_ns = r.u64().ok_or_else(bad)? as i64;
        let mode = u32::from_le_bytes(r.take(4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
        let hash = r.string().ok_or_else(bad)?;
        let link = r.string().ok_or_else(bad)?;
        entries.insert(
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
        );
    }
    Ok(Index { entries, complete })
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
