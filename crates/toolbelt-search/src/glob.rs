//! glob: file names matching a pattern.
//!
//! Pattern rules (globset syntax: `*`, `?`, `[abc]`, `{a,b}`, `**`):
//! - a pattern without `/` matches the file name at any depth: `*.rs` finds
//!   `main.rs` and `src/lib.rs` (like `**/*.rs`, ripgrep's `--glob` and `fd --glob`);
//! - a pattern with `/` matches the whole path relative to the search root: `*`
//!   stays within one directory, `**` crosses any number (`src/**/*.ts`);
//! - a leading `./` is ignored; a trailing `/` matches directories only.
//!
//! The walk starts at the pattern's literal directory prefix (`src/` for
//! `src/**/*.ts`) when it is a real directory, so narrow patterns stay fast in
//! large trees. Hidden entries are skipped unless asked for or the pattern names
//! them (a component starting with `.`, e.g. `.github/**`).

use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::{DirEntry, WalkState};

use crate::SearchError;
use crate::walk::{self, Budget, Filter, Stop, Withhold, Worker};

/// Default page size in entries.
pub const DEFAULT_LIMIT: usize = 200;

/// Order of the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GlobSort {
    /// Most recently modified first (ties by path).
    #[default]
    Modified,
    /// By path, component by component.
    Path,
}

/// Everything that defines a glob search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobOptions {
    /// The pattern (see the module documentation).
    pub pattern: String,
    /// List matching directories too.
    pub include_dirs: bool,
    /// Order of the results.
    pub sort: GlobSort,
    /// Entries per page; 0 = unlimited.
    pub limit: usize,
    /// Entries skipped before the page.
    pub offset: usize,
    /// Skip what .gitignore / .ignore exclude.
    pub respect_gitignore: bool,
    /// List hidden entries too (implied when the pattern names hidden ones).
    pub hidden: bool,
    /// Worker threads; 0 = one per core.
    pub threads: usize,
}

impl GlobOptions {
    /// Defaults (newest first, 200 entries, .gitignore respected) for `pattern`.
    pub fn new(pattern: impl Into<String>) -> GlobOptions {
        GlobOptions {
            pattern: pattern.into(),
            include_dirs: false,
            sort: GlobSort::Modified,
            limit: DEFAULT_LIMIT,
            offset: 0,
            respect_gitignore: true,
            hidden: false,
            threads: 0,
        }
    }
}

/// A compiled glob search.
#[derive(Debug, Clone)]
pub struct Glob {
    opts: GlobOptions,
    /// A set of one glob: sets pick a fast strategy (extension, literal, prefix)
    /// where a lone glob always runs a regex.
    matcher: GlobSet,
    /// The pattern has no `/`: match file names.
    by_name: bool,
    /// The pattern ended in `/`.
    dirs_only: bool,
    /// Literal leading directories of the pattern.
    prefix: PathBuf,
    hidden: bool,
    withhold: Withhold,
}

/// One entry found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobEntry {
    /// Path relative to the display base.
    pub path: String,
    /// A directory (only with `include_dirs`).
    pub is_dir: bool,
    /// Last modification (sort = modified only).
    pub modified: Option<SystemTime>,
}

/// The result of a run: one page, rendered and structured, plus totals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GlobReport {
    /// The page as text: one path per line (directories end in `/`).
    pub text: String,
    /// The entries of the page.
    pub entries: Vec<GlobEntry>,
    /// Matches in all.
    pub total: usize,
    /// Entries skipped before the page.
    pub offset: usize,
    /// Where the next page starts, when entries remain.
    pub next_offset: Option<usize>,
    /// Matching files not listed because the [`Withhold`] covers them.
    pub withheld: usize,
    /// Entries that could not be read.
    pub errors: usize,
    /// The first of those errors.
    pub error_samples: Vec<String>,
    /// Set when the run stopped early; the results cover what was walked.
    pub stop: Option<Stop>,
}

impl GlobReport {
    /// True when the deadline cut the walk short.
    pub fn timed_out(&self) -> bool {
        self.stop == Some(Stop::TimedOut)
    }
}

impl Glob {
    /// Compiles `opts`.
    ///
    /// # Errors
    ///
    /// [`SearchError::Glob`] for a pattern that does not parse or is absolute.
    pub fn new(opts: GlobOptions) -> Result<Glob, SearchError> {
        let bad = |reason: &str| SearchError::Glob {
            glob: opts.pattern.clone(),
            reason: reason.to_owned(),
        };
        let mut pat = opts.pattern.trim();
        while let Some(rest) = pat.strip_prefix("./") {
            pat = rest;
        }
        if pat.starts_with('/') {
            return Err(bad(
                "the pattern is absolute; put the directory in `path` and keep the pattern relative to it",
            ));
        }
        let dirs_only = pat.ends_with('/');
        let pat = pat.trim_end_matches('/');
        if pat.is_empty() {
            return Err(bad("the pattern is empty"));
        }
        let matcher = GlobBuilder::new(pat)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .and_then(|glob| GlobSetBuilder::new().add(glob).build())
            .map_err(|e| bad(&e.kind().to_string()))?;
        let by_name = !pat.contains('/');
        let parts: Vec<&str> = pat.split('/').collect();
        let mut prefix = PathBuf::new();
        if let Some((_, dirs)) = parts.split_last() {
            for p in dirs {
                if p.contains(['*', '?', '[', '{', '\\']) || *p == ".." || *p == "." {
                    break;
                }
                prefix.push(p);
            }
        }
        let hidden = opts.hidden
            || parts
                .iter()
                .any(|p| p.starts_with('.') && *p != "." && *p != "..");
        Ok(Glob {
            opts,
            matcher,
            by_name,
            dirs_only,
            prefix,
            hidden,
            withhold: Withhold::nothing(),
        })
    }

    /// Never lists the files `withhold` covers; they are counted in
    /// [`GlobReport::withheld`].
    pub fn withholding(mut self, withhold: Withhold) -> Glob {
        self.withhold = withhold;
        self
    }

    /// The options in effect.
    pub fn options(&self) -> &GlobOptions {
        &self.opts
    }

    /// Lists what matches beneath `root`, with paths shown relative to `base`.
    ///
    /// # Security
    ///
    /// Symbolic links are neither listed nor followed, and the literal prefix is
    /// only used as the walk's start when none of its components is a link.
    pub fn run(&self, root: &Path, base: &Path, budget: &Budget) -> GlobReport {
        let start = self.start(root);
        let filter = Filter {
            hidden: self.hidden,
            ignore_files: self.opts.respect_gitignore,
            globs: Vec::new(),
            file_types: Vec::new(),
            threads: self.opts.threads,
        };
        let mut report = GlobReport {
            offset: self.opts.offset,
            ..GlobReport::default()
        };
        let builder = match walk::builder(&start, &filter) {
            Ok(b) => b,
            Err(e) => {
                report.errors = 1;
                report.error_samples.push(e.to_string());
                return report;
            }
        };
        let (outs, end) = walk::run(&builder, budget, || GlobWorker {
            glob: self,
            root,
            found: Vec::new(),
            withheld: 0,
        });
        report.errors = end.error_count;
        report.error_samples = end.errors;
        report.stop = end.stop;
        let mut found: Vec<Found> = Vec::new();
        for (f, withheld) in outs {
            found.extend(f);
            report.withheld += withheld;
        }
        sort_found(&mut found, self.opts.sort);
        report.total = found.len();
        let limit = if self.opts.limit == 0 {
            usize::MAX
        } else {
            self.opts.limit
        };
        let mut text = String::new();
        for f in found.into_iter().skip(self.opts.offset).take(limit) {
            let path = walk::display_path(&f.path, base);
            text.push_str(&path);
            if f.is_dir {
                text.push('/');
            }
            text.push('\n');
            report.entries.push(GlobEntry {
                path,
                is_dir: f.is_dir,
                modified: f.modified,
            });
        }
        let end = self.opts.offset.saturating_add(report.entries.len());
        report.next_offset = (end < report.total && !report.entries.is_empty()).then_some(end);
        report.text = text;
        report
    }

    /// Where the walk starts: `root` joined with the literal prefix when every
    /// component of it is a real directory, else `root`.
    fn start(&self, root: &Path) -> PathBuf {
        let mut dir = root.to_path_buf();
        for c in self.prefix.components() {
            let Component::Normal(name) = c else {
                return root.to_path_buf();
            };
            dir.push(name);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                _ => return root.to_path_buf(),
            }
        }
        dir
    }

    fn matches(&self, root: &Path, path: &Path) -> bool {
        if self.by_name {
            return path.file_name().is_some_and(|n| self.matcher.is_match(n));
        }
        path.strip_prefix(root)
            .is_ok_and(|rel| self.matcher.is_match(rel))
    }
}

/// Sorts `found` by `sort`; stable, so sorted runs are merged in linear time.
fn sort_found(found: &mut [Found], sort: GlobSort) {
    match sort {
        GlobSort::Path => walk::sort_by_path(found, |f| &f.path),
        GlobSort::Modified => found.sort_by(|a, b| {
            b.modified
                .cmp(&a.modified)
                .then_with(|| walk::cmp_paths(&a.path, &b.path))
        }),
    }
}

struct Found {
    path: PathBuf,
    is_dir: bool,
    modified: Option<SystemTime>,
}

struct GlobWorker<'a> {
    glob: &'a Glob,
    root: &'a Path,
    found: Vec<Found>,
    withheld: usize,
}

impl Worker for GlobWorker<'_> {
    type Out = (Vec<Found>, usize);

    fn visit(&mut self, entry: DirEntry) -> WalkState {
        let Some(ft) = entry.file_type() else {
            return WalkState::Continue;
        };
        let is_dir = ft.is_dir();
        let g = self.glob;
        let listable = (ft.is_file() && !g.dirs_only)
            || (is_dir && (g.opts.include_dirs || g.dirs_only) && entry.depth() > 0);
        if !listable || !g.matches(self.root, entry.path()) {
            return WalkState::Continue;
        }
        if !is_dir && g.withhold.covers(entry.path()) {
            self.withheld += 1;
            return WalkState::Continue;
        }
        let modified = match g.opts.sort {
            GlobSort::Modified => entry.metadata().ok().and_then(|m| m.modified().ok()),
            GlobSort::Path => None,
        };
        self.found.push(Found {
            path: entry.into_path(),
            is_dir,
            modified,
        });
        WalkState::Continue
    }

    fn finish(mut self) -> (Vec<Found>, usize) {
        // Each thread sorts its own share; the final sort then only merges runs.
        sort_found(&mut self.found, self.glob.opts.sort);
        (self.found, self.withheld)
    }
}

#[cfg(test)]
#[path = "glob_tests.rs"]
mod tests;
