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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use ignore::Match;
use ignore::gitignore::Gitignore;

/// Parsed ignore files kept at most; the cache is emptied when it is full.
const MAX_CACHED: usize = 1024;

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
    /// The rules in force in `dir` (an absolute, resolved directory): its own
    /// ignore files and those of its ancestors.
    pub(crate) fn for_dir(dir: &Path) -> Rules {
        let mut chain: Vec<&Path> = Vec::new();
        let mut repo = None;
        for ancestor in dir.ancestors() {
            chain.push(ancestor);
            if ancestor.join(".git").exists() {
                repo = Some(ancestor);
                break;
            }
        }
        let mut rules = Rules {
            levels: Vec::with_capacity(chain.len()),
            exclude: repo.and_then(|r| parsed(&r.join(".git/info/exclude"), r)),
            global: global(),
        };
        for ancestor in chain.into_iter().rev() {
            rules.enter(ancestor);
        }
        rules
    }

    /// Adds the ignore files of `dir`, a directory the walk enters.
    pub(crate) fn enter(&mut self, dir: &Path) {
        self.levels.push(Level {
            dot_ignore: parsed(&dir.join(".ignore"), dir),
            git_ignore: parsed(&dir.join(".gitignore"), dir),
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
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    let stamp = Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        ino: meta.ino(),
    };
    let cache = PARSED.get_or_init(Mutex::default);
    if let Some((seen, matcher)) = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(path)
        && *seen == stamp
    {
        return matcher.clone();
    }
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    // A line that does not parse is skipped, as git skips it; the rest apply.
    let _ = builder.add(path);
    let matcher = builder.build().ok().filter(|m| !m.is_empty()).map(Arc::new);
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
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
