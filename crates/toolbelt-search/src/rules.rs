//! The ignore rules that apply to a directory listing, as `git` and ripgrep
//! apply them: `.ignore` files, then `.gitignore` files (the deepest directory
//! first at each kind), then the repository's `.git/info/exclude`, then the
//! user's global excludes file (`core.excludesFile`).
//!
//! [`Rules`] holds the matchers of the listed directory's ancestors (up to the
//! root of the git repository holding it, or `/` outside one) and, while a walk
//! descends, of each directory entered. Parsed files are kept between calls and
//! used again while their size, modification time and inode are unchanged; the
//! global excludes file is found once per process.
//!
//! Which ignore files a directory holds is learnt from its listing for the
//! directories a walk reads, and by looking for them in the ancestors above. What
//! an ancestor holds is remembered with the directory's own identity and times
//! (adding, removing or renaming an entry changes them), as git's untracked cache
//! does, so that a listing looks at each ancestor once instead of once per name;
//! a directory changed in the last seconds is looked at again every time, since
//! its times may not yet tell a further change apart.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};
use toolbelt_core::sync::lock;

use ignore::Match;
use ignore::gitignore::Gitignore;

/// Parsed ignore files (and ancestors' contents) kept at most; a cache is
/// emptied when it is full.
const MAX_CACHED: usize = 1024;

/// How long after its last change a directory's times are trusted to tell the
/// next change apart (timestamps are taken from a clock that ticks in steps of
/// milliseconds, and of seconds or two on some filesystems).
const SETTLED: Duration = Duration::from_secs(3);

/// The names a directory holds that matter to the rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Found {
    git: bool,
    dot_ignore: bool,
    git_ignore: bool,
}

impl Found {
    /// Notes `name`, an entry of the directory.
    pub(crate) fn note(&mut self, name: &OsStr) {
        match name.as_bytes() {
            b".git" => self.git = true,
            b".ignore" => self.dot_ignore = true,
            b".gitignore" => self.git_ignore = true,
            _ => {}
        }
    }

    /// Looks for the names in `dir`.
    fn probe(dir: &Path) -> Found {
        let has = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
        Found {
            git: dir.join(".git").exists(),
            dot_ignore: has(".ignore"),
            git_ignore: has(".gitignore"),
        }
    }
}

/// The ignore files of one directory.
struct Level {
    dot_ignore: Option<Arc<Gitignore>>,
    git_ignore: Option<Arc<Gitignore>>,
}

/// The rules in force at some directory of a walk.
pub(crate) struct Rules {
    /// Outermost first.
    levels: Vec<Level>,
    exclude: Option<Arc<Gitignore>>,
    global: Option<Arc<Gitignore>>,
}

impl Rules {
    /// The rules in force in `dir` (an absolute, resolved directory), which holds
    /// the names `found` (from its listing): its own ignore files and those of its
    /// ancestors.
    pub(crate) fn for_dir(dir: &Path, found: Found) -> Rules {
        let mut chain: Vec<(&Path, Found)> = vec![(dir, found)];
        let mut repo = found.git.then_some(dir);
        if repo.is_none() {
            for ancestor in dir.ancestors().skip(1) {
                let found = ancestor_found(ancestor);
                chain.push((ancestor, found));
                if found.git {
                    repo = Some(ancestor);
                    break;
                }
            }
        }
        let mut rules = Rules {
            levels: Vec::with_capacity(chain.len()),
            exclude: repo.and_then(|r| parsed(&r.join(".git/info/exclude"), r)),
            global: global(),
        };
        for (ancestor, found) in chain.into_iter().rev() {
            rules.enter(ancestor, found);
        }
        rules
    }

    /// Adds the ignore files of `dir`, a directory the walk enters, which holds
    /// the names `found`.
    pub(crate) fn enter(&mut self, dir: &Path, found: Found) {
        self.levels.push(Level {
            dot_ignore: found
                .dot_ignore
                .then(|| parsed(&dir.join(".ignore"), dir))
                .flatten(),
            git_ignore: found
                .git_ignore
                .then(|| parsed(&dir.join(".gitignore"), dir))
                .flatten(),
        });
    }

    /// Drops the ignore files of the directory entered last.
    pub(crate) fn leave(&mut self) {
        self.levels.pop();
    }

    /// Whether `path` (beneath the directories entered) is ignored.
    pub(crate) fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let dot_ignores = self
            .levels
            .iter()
            .rev()
            .filter_map(|l| l.dot_ignore.as_deref());
        let git_ignores = self
            .levels
            .iter()
            .rev()
            .filter_map(|l| l.git_ignore.as_deref());
        let rest = [&self.exclude, &self.global]
            .into_iter()
            .flatten()
            .map(Arc::as_ref);
        for matcher in dot_ignores.chain(git_ignores).chain(rest) {
            match matcher.matched(path, is_dir) {
                Match::None => {}
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
            }
        }
        false
    }
}

/// What identifies a version of a directory's entries.
#[derive(Clone, Copy, PartialEq, Eq)]
struct DirStamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl DirStamp {
    fn of(meta: &std::fs::Metadata) -> DirStamp {
        DirStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the directory last changed long enough before `now` for its times
    /// to show the next change.
    fn settled(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let now = i64::try_from(now.saturating_sub(SETTLED).as_secs()).unwrap_or(i64::MAX);
        self.mtime.0 < now && self.ctime.0 < now
    }
}

/// The names that matter in `dir`, an ancestor of a listed directory.
fn ancestor_found(dir: &Path) -> Found {
    ancestor_found_at(dir, SystemTime::now())
}

fn ancestor_found_at(dir: &Path, now: SystemTime) -> Found {
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, (DirStamp, Found)>>> = OnceLock::new();
    let Ok(meta) = std::fs::metadata(dir) else {
        return Found::probe(dir);
    };
    let stamp = DirStamp::of(&meta);
    let seen = SEEN.get_or_init(Mutex::default);
    if let Some(&(was, found)) = lock(seen).get(dir)
        && was == stamp
    {
        return found;
    }
    // Looked for after the stamp was taken: a change in between leaves a newer
    // stamp on the directory, which does not match the one kept.
    let found = Found::probe(dir);
    if stamp.settled(now) {
        let mut seen = lock(seen);
        if seen.len() >= MAX_CACHED {
            seen.clear();
        }
        seen.insert(dir.to_path_buf(), (stamp, found));
    }
    found
}

/// What identifies a version of a file.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    ino: u64,
}

type Cache = HashMap<PathBuf, (Stamp, Option<Arc<Gitignore>>)>;

static PARSED: OnceLock<Mutex<Cache>> = OnceLock::new();

/// The matcher of the ignore file at `path`, rooted at `root`; `None` when
/// there is none or it has no rules.
fn parsed(path: &Path, root: &Path) -> Option<Arc<Gitignore>> {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    let stamp = Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        ino: meta.ino(),
    };
    let cache = PARSED.get_or_init(Mutex::default);
    if let Some((seen, matcher)) = lock(cache).get(path)
        && *seen == stamp
    {
        return matcher.clone();
    }
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    // A line that does not parse is skipped, as git skips it; the rest apply.
    let _ = builder.add(path);
    let matcher = builder.build().ok().filter(|m| !m.is_empty()).map(Arc::new);
    let mut cache = lock(cache);
    if cache.len() >= MAX_CACHED {
        cache.clear();
    }
    cache.insert(path.to_path_buf(), (stamp, matcher.clone()));
    matcher
}

/// The user's global excludes file, found once.
fn global() -> Option<Arc<Gitignore>> {
    static GLOBAL: OnceLock<Option<Arc<Gitignore>>> = OnceLock::new();
    GLOBAL
        .get_or_init(|| {
            let (matcher, _partial_error) = Gitignore::global();
            (!matcher.is_empty()).then(|| Arc::new(matcher))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_ancestor_is_looked_at_again_once_its_entries_change() {
        let dir = tempfile::tempdir().unwrap();
        let later = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(ancestor_found_at(dir.path(), later), Found::default());
        // Kept (the directory counts as settled a minute from now) ...
        assert_eq!(ancestor_found_at(dir.path(), later), Found::default());
        // ... until an entry is added, which the directory's times show (past the
        // timestamp clock's tick).
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        let found = ancestor_found_at(dir.path(), later);
        assert!(found.git_ignore && !found.dot_ignore && !found.git);
        std::thread::sleep(Duration::from_millis(50));
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert!(ancestor_found_at(dir.path(), later).git);
    }

    #[test]
    fn a_directory_changed_just_now_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let meta = std::fs::metadata(dir.path()).unwrap();
        assert!(!DirStamp::of(&meta).settled(SystemTime::now()));
        assert!(DirStamp::of(&meta).settled(SystemTime::now() + SETTLED * 2));
    }
}
