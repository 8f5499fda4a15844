//! The parallel, .gitignore-aware walk shared by grep and glob.
//!
//! The rules are ripgrep's defaults: hidden files and directories are skipped,
//! `.gitignore` (inside a git repository), `.ignore`, `.rgignore`, the global git
//! excludes and `.git/info/exclude` are honoured, and symbolic links are never
//! followed (a link is neither searched nor descended into).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use toolbelt_core::sync::lock;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{FileTypeDef, Types, TypesBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use crate::SearchError;

/// Most walker threads used, whatever the machine has (ripgrep's own cap).
pub const MAX_THREADS: usize = 12;

/// Most walk errors (unreadable directories, broken ignore files) kept in a result.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// Opens the files a walk finds.
///
/// # Security
///
/// The walk lists names with plain directory reads; file contents are only ever read
/// through this opener, which for a workspace is
/// [`Jail::open_walked`](toolbelt_fs::Jail::open_walked): resolved by the kernel
/// beneath the root, so a directory swapped for a symbolic link mid-walk cannot lead
/// a search outside.
pub trait Opener: Sync {
    /// Opens `path` (absolute, found beneath the walk's root) for reading.
    ///
    /// # Errors
    ///
    /// Any I/O error; the file is then reported as unreadable and skipped.
    fn open(&self, path: &Path) -> io::Result<File>;
}

impl<F> Opener for F
where
    F: Fn(&Path) -> io::Result<File> + Sync,
{
    fn open(&self, path: &Path) -> io::Result<File> {
        self(path)
    }
}

/// Files a search must not show although the walk finds them (for a workspace, the
/// built-in secret files: `.env`, private keys, cloud credentials). Withheld files
/// are neither opened nor listed, only counted.
#[derive(Clone, Default)]
pub struct Withhold(Option<Arc<WithholdFn>>);

type WithholdFn = dyn Fn(&Path) -> bool + Send + Sync;

impl Withhold {
    /// Withholds nothing.
    pub fn nothing() -> Withhold {
        Withhold(None)
    }

    /// Withholds the files for which `f` (given the absolute path) is true.
    pub fn files(f: impl Fn(&Path) -> bool + Send + Sync + 'static) -> Withhold {
        Withhold(Some(Arc::new(f)))
    }

    /// Whether `path` is withheld.
    pub fn covers(&self, path: &Path) -> bool {
        self.0.as_ref().is_some_and(|f| f(path))
    }
}

impl std::fmt::Debug for Withhold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Withhold(fn)"
        } else {
            "Withhold(nothing)"
        })
    }
}

/// When a walk gives up early: a deadline and a cancellation flag, checked before
/// every entry.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    deadline: Option<Instant>,
    cancel: Option<Arc<AtomicBool>>,
    progress: Option<Arc<AtomicU64>>,
}

impl Budget {
    /// No deadline, no cancellation.
    pub fn unlimited() -> Budget {
        Budget::default()
    }

    /// Stops at `deadline`.
    pub fn with_deadline(mut self, deadline: Instant) -> Budget {
        self.deadline = Some(deadline);
        self
    }

    /// Stops `time` from now.
    pub fn with_time_limit(self, time: Duration) -> Budget {
        let deadline = Instant::now() + time;
        self.with_deadline(deadline)
    }

    /// Stops once `flag` is set.
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Budget {
        self.cancel = Some(flag);
        self
    }

    /// Counts the entries walked into `counter` as the walk goes (in batches of
    /// `PROGRESS_EVERY` per walker thread, and whole at the end), so that another
    /// thread can report progress.
    pub fn with_progress(mut self, counter: Arc<AtomicU64>) -> Budget {
        self.progress = Some(counter);
        self
    }

    /// Why the work must stop now, if it must.
    #[cfg(test)]
    pub(crate) fn check(&self) -> Option<Stop> {
        self.check_cancel().or_else(|| self.check_clock())
    }

    /// [`Stop::Cancelled`] once the flag is set: one atomic load, cheap enough for
    /// every entry.
    pub(crate) fn check_cancel(&self) -> Option<Stop> {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
            .then_some(Stop::Cancelled)
    }

    /// [`Stop::TimedOut`] once the deadline passed: reads the clock.
    pub(crate) fn check_clock(&self) -> Option<Stop> {
        self.deadline
            .is_some_and(|d| Instant::now() >= d)
            .then_some(Stop::TimedOut)
    }
}

/// Why a walk ended before visiting everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The deadline passed; the results so far are returned.
    TimedOut,
    /// The cancellation flag was set.
    Cancelled,
}

/// Which entries a walk yields.
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    /// Yield hidden files and enter hidden directories.
    pub hidden: bool,
    /// Honour .gitignore, .ignore, .rgignore and git excludes.
    pub ignore_files: bool,
    /// Include/exclude globs (`!` excludes), relative to the root.
    pub globs: Vec<String>,
    /// File types (`rust`, `py`, ...) from ripgrep's default table.
    pub file_types: Vec<String>,
    /// Worker threads; 0 = one per core (at most [`MAX_THREADS`]).
    pub threads: usize,
}

/// One per-thread worker of a parallel walk. `finish` hands its results over when
/// the thread is done.
pub(crate) trait Worker: Send {
    type Out: Send;
    /// Handles one entry (never an error, never the caller's job to check budgets).
    fn visit(&mut self, entry: DirEntry) -> WalkState;
    fn finish(self) -> Self::Out;
}

/// What a walk returns besides the workers' results.
#[derive(Debug, Default)]
pub(crate) struct WalkEnd {
    pub stop: Option<Stop>,
    pub errors: Vec<String>,
    pub error_count: usize,
}

/// Threads to use for `requested` (0 = automatic).
pub(crate) fn thread_count(requested: usize) -> usize {
    if requested > 0 {
        return requested.min(MAX_THREADS);
    }
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(MAX_THREADS)
}

/// Builds the walker for `root` under `filter`.
pub(crate) fn builder(root: &Path, filter: &Filter) -> Result<WalkBuilder, SearchError> {
    let mut b = WalkBuilder::new(root);
    let ig = filter.ignore_files;
    b.follow_links(false)
        .hidden(!filter.hidden)
        .parents(ig)
        .ignore(ig)
        .git_ignore(ig)
        .git_global(ig)
        .git_exclude(ig)
        .require_git(true)
        .threads(thread_count(filter.threads));
    if ig {
        b.add_custom_ignore_filename(".rgignore");
    }
    if let Some(o) = overrides(root, &filter.globs)? {
        b.overrides(o);
    }
    if let Some(t) = types(&filter.file_types)? {
        b.types(t);
    }
    Ok(b)
}

fn overrides(root: &Path, globs: &[String]) -> Result<Option<Override>, SearchError> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut b = OverrideBuilder::new(root);
    for g in globs {
        b.add(g).map_err(|error| SearchError::GlobSyntax {
            glob: g.clone(),
            error,
        })?;
    }
    let o = b.build().map_err(|error| SearchError::GlobSyntax {
        glob: globs.join(" "),
        error,
    })?;
    Ok(Some(o))
}

fn types(names: &[String]) -> Result<Option<Types>, SearchError> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut b = TypesBuilder::new();
    b.add_defaults();
    let defs = b.definitions();
    for n in names {
        if !defs.iter().any(|d| d.name() == n) {
            return Err(SearchError::UnknownFileType {
                name: n.clone(),
                similar: similar_types(n, &defs),
            });
        }
        b.select(n);
    }
    let t = b.build().map_err(|source| SearchError::FileTypes {
        names: names.to_vec(),
        source,
    })?;
    Ok(Some(t))
}

/// Up to five known types for `name`: first those with a `*.<name>` glob (`rs` ->
/// `rust`), then names sharing a prefix with it (`python` -> `py`).
fn similar_types(name: &str, defs: &[FileTypeDef]) -> Vec<String> {
    let lower = name
        .trim_start_matches("*.")
        .trim_start_matches('.')
        .to_ascii_lowercase();
    let ext = format!("*.{lower}");
    let by_ext = defs
        .iter()
        .filter(|d| d.globs().iter().any(|g| g.eq_ignore_ascii_case(&ext)));
    let by_name = defs.iter().filter(|d| {
        let k = d.name();
        lower.len() >= 2 && (k.starts_with(&lower) || lower.starts_with(k))
    });
    let mut out: Vec<String> = Vec::new();
    for d in by_ext.chain(by_name) {
        if out.len() < 5 && !out.iter().any(|o| o == d.name()) {
            out.push(d.name().to_owned());
        }
    }
    if out.is_empty() {
        out = ["rust", "py", "js", "ts", "c", "cpp", "go", "java"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
    }
    out
}

/// All type names in ripgrep's default table, sorted.
pub fn file_type_names() -> Vec<String> {
    let mut b = TypesBuilder::new();
    b.add_defaults();
    b.definitions()
        .iter()
        .map(|d| d.name().to_owned())
        .collect()
}

/// Runs `make()` workers over the walk of `builder`, checking `budget` before every
/// entry; returns their results (in no particular order) and how the walk ended.
pub(crate) fn run<W, M>(builder: &WalkBuilder, budget: &Budget, make: M) -> (Vec<W::Out>, WalkEnd)
where
    W: Worker,
    M: Fn() -> W + Sync,
{
    let shared = Shared {
        outs: Mutex::new(Vec::new()),
        end: Mutex::new(WalkEnd::default()),
        stop: AtomicU8::new(0),
    };
    let mut vb = VisitorBuilder {
        shared: &shared,
        budget,
        make: &make,
    };
    builder.build_parallel().visit(&mut vb);
    let outs = shared
        .outs
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let mut end = shared
        .end
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    end.stop = match shared.stop.load(Ordering::Relaxed) {
        STOP_TIMED_OUT => Some(Stop::TimedOut),
        STOP_CANCELLED => Some(Stop::Cancelled),
        _ => None,
    };
    (outs, end)
}

const STOP_TIMED_OUT: u8 = 1;
const STOP_CANCELLED: u8 = 2;

struct Shared<O> {
    outs: Mutex<Vec<O>>,
    end: Mutex<WalkEnd>,
    stop: AtomicU8,
}

struct VisitorBuilder<'s, W: Worker, M> {
    shared: &'s Shared<W::Out>,
    budget: &'s Budget,
    make: &'s M,
}

impl<'s, W, M> ParallelVisitorBuilder<'s> for VisitorBuilder<'s, W, M>
where
    W: Worker + 's,
    M: Fn() -> W + Sync,
{
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            worker: Some((self.make)()),
            shared: self.shared,
            budget: self.budget,
            errors: Vec::new(),
            error_count: 0,
            visited: 0,
            unreported: 0,
        })
    }
}

/// The budget's clock is read once per this many entries of one walker thread (a
/// clock read per entry is measurable on a large tree); the cancellation flag is
/// checked at every entry.
const BUDGET_CHECK_EVERY: u32 = 64;

/// Entries a walker thread counts before adding them to the budget's progress
/// counter (one shared atomic add per entry would contend between threads).
pub const PROGRESS_EVERY: u64 = 16;

struct Visitor<'s, W: Worker> {
    worker: Option<W>,
    shared: &'s Shared<W::Out>,
    budget: &'s Budget,
    errors: Vec<String>,
    error_count: usize,
    visited: u32,
    unreported: u64,
}

impl<W: Worker> Visitor<'_, W> {
    /// Adds the entries counted since the last report to the progress counter.
    fn report_progress(&mut self) {
        if let Some(counter) = &self.budget.progress
            && self.unreported > 0
        {
            counter.fetch_add(self.unreported, Ordering::Relaxed);
        }
        self.unreported = 0;
    }
}

impl<W: Worker> ParallelVisitor for Visitor<'_, W> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.stop.load(Ordering::Relaxed) != 0 {
            return WalkState::Quit;
        }
        self.visited = self.visited.wrapping_add(1);
        self.unreported += 1;
        if self.unreported >= PROGRESS_EVERY {
            self.report_progress();
        }
        let stop = self.budget.check_cancel().or_else(|| {
            (self.visited % BUDGET_CHECK_EVERY == 1)
                .then(|| self.budget.check_clock())
                .flatten()
        });
        if let Some(stop) = stop {
            let code = match stop {
                Stop::TimedOut => STOP_TIMED_OUT,
                Stop::Cancelled => STOP_CANCELLED,
            };
            self.shared.stop.store(code, Ordering::Relaxed);
            return WalkState::Quit;
        }
        match entry {
            Ok(e) => match self.worker.as_mut() {
                Some(w) => w.visit(e),
                None => WalkState::Quit,
            },
            Err(e) => {
                self.error_count += 1;
                if self.errors.len() < MAX_REPORTED_ERRORS {
                    self.errors.push(e.to_string());
                }
                WalkState::Continue
            }
        }
    }
}

impl<W: Worker> Drop for Visitor<'_, W> {
    fn drop(&mut self) {
        self.report_progress();
        if let Some(w) = self.worker.take() {
            let out = w.finish();
            lock(&self.shared.outs).push(out);
        }
        if self.error_count > 0 {
            let mut end = lock(&self.shared.end);
            end.error_count += self.error_count;
            for e in self.errors.drain(..) {
                if end.errors.len() < MAX_REPORTED_ERRORS {
                    end.errors.push(e);
                }
            }
        }
    }
}

/// `path` as shown to the model: relative to `base` when beneath it (`.` for `base`
/// itself), else absolute; always with `/` separators.
pub fn display_path(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// Sorts `items` by `key` path, component by component (so `a/b` precedes `a.b`,
/// like a tree listing). Already sorted runs (e.g. one per walker thread) are merged
/// rather than sorted again.
pub(crate) fn sort_by_path<T>(items: &mut [T], key: impl Fn(&T) -> &PathBuf) {
    items.sort_by(|a, b| cmp_paths(key(a), key(b)));
}

/// Component-wise order of two normalized paths (no `.`, `..` or doubled `/`, as a
/// walk produces them), computed on the bytes with `/` below every other byte: the
/// same order as [`Path`]'s `Ord`, several times faster.
pub(crate) fn cmp_paths(a: &Path, b: &Path) -> std::cmp::Ordering {
    let (a, b) = (
        a.as_os_str().as_encoded_bytes(),
        b.as_os_str().as_encoded_bytes(),
    );
    let key = |c: u8| if c == b'/' { 0 } else { u16::from(c) + 1 };
    match first_difference(a, b) {
        Some(i) => key(a[i]).cmp(&key(b[i])),
        None => a.len().cmp(&b.len()),
    }
}

/// Index of the first byte where `a` and `b` differ, within the shorter one.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    const WORD: usize = 8;
    let n = a.len().min(b.len());
    let mut i = 0;
    // Paths from one walk share long prefixes: skip them a word at a time.
    while i + WORD <= n && a[i..i + WORD] == b[i..i + WORD] {
        i += WORD;
    }
    (i..n).find(|&j| a[j] != b[j])
}

#[cfg(test)]
#[path = "walk_tests.rs"]
mod tests;
