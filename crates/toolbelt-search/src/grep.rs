//! grep: file contents matching a pattern.
//!
//! [`Grep::new`] compiles a [`GrepOptions`] once (regex, globs, file types);
//! [`Grep::run`] walks a root in parallel (one [`Searcher`] per thread, ripgrep's
//! line-oriented fast path), collects, sorts by path and renders one page of results:
//!
//! - content: `path:line: text` for matching lines, `path-line- text` for context
//!   lines, `--` between groups that are not adjacent;
//! - files_with_matches: one path per line;
//! - count: `path:count` (matching lines per file).
//!
//! Binary files (a NUL byte in the data read) are skipped and counted, like
//! ripgrep's default. Lines that are not valid UTF-8 are kept, lossily.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use toolbelt_core::sync::lock;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::{DirEntry, WalkState};

use crate::SearchError;
use crate::walk::{self, Budget, Filter, Opener, Stop, Withhold, Worker};

/// Default page size in entries (output lines, or files).
pub const DEFAULT_HEAD_LIMIT: usize = 250;
/// Most entries on one page, also when all are asked for (`head_limit: 0`): content
/// lines are held in memory until the walk ends, so a page has a ceiling.
pub const MAX_PAGE_ENTRIES: usize = 10_000;
/// Most context lines before or after a match.
pub const MAX_CONTEXT_LINES: usize = 20;
/// Default cap on the characters shown of one line.
pub const DEFAULT_MAX_LINE_CHARS: usize = 500;
/// Largest compiled regex, in bytes (ripgrep's default is 100 MiB; a model never
/// needs that much and a huge alternation should fail fast).
pub const REGEX_SIZE_LIMIT_BYTES: usize = 64 * 1024 * 1024;

/// What a search returns per entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// Matching lines (and context lines).
    Content,
    /// Paths of files with at least one match.
    #[default]
    FilesWithMatches,
    /// Matching lines per file.
    Count,
}

/// Case sensitivity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CaseMode {
    /// Case matters.
    Sensitive,
    /// Case is ignored.
    Insensitive,
    /// Ignored unless the pattern has an uppercase letter (ripgrep's `--smart-case`).
    #[default]
    Smart,
}

/// Everything that defines a search, independent of where it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepOptions {
    /// Regular expression (Rust `regex` syntax), or text when `fixed_strings`.
    pub pattern: String,
    /// Treat `pattern` as literal text.
    pub fixed_strings: bool,
    /// Case sensitivity.
    pub case: CaseMode,
    /// Only matches surrounded by word boundaries.
    pub whole_word: bool,
    /// Patterns may span lines and `.` matches newlines (ripgrep's `-U --multiline-dotall`).
    pub multiline: bool,
    /// Include globs (`*.rs`) and exclude globs (`!*_test.go`); matched like
    /// .gitignore lines, relative to the search root.
    pub globs: Vec<String>,
    /// File types from ripgrep's table (`rust`, `py`, `js`, `c`, ...).
    pub file_types: Vec<String>,
    /// What to return.
    pub output_mode: OutputMode,
    /// Context lines before each match (content mode; at most [`MAX_CONTEXT_LINES`]).
    pub before_context: usize,
    /// Context lines after each match (content mode; at most [`MAX_CONTEXT_LINES`]).
    pub after_context: usize,
    /// Entries per page; 0 = all (both capped at [`MAX_PAGE_ENTRIES`]).
    pub head_limit: usize,
    /// Entries skipped before the page.
    pub offset: usize,
    /// Search files that .gitignore / .ignore exclude too.
    pub include_ignored: bool,
    /// Search hidden files and directories too.
    pub hidden: bool,
    /// Characters kept of one rendered line; the rest is cut with a marker.
    pub max_line_chars: usize,
    /// Worker threads; 0 = one per core.
    pub threads: usize,
}

impl GrepOptions {
    /// Defaults (files_with_matches, smart case, 250 entries) for `pattern`.
    pub fn new(pattern: impl Into<String>) -> GrepOptions {
        GrepOptions {
            pattern: pattern.into(),
            fixed_strings: false,
            case: CaseMode::Smart,
            whole_word: false,
            multiline: false,
            globs: Vec::new(),
            file_types: Vec::new(),
            output_mode: OutputMode::FilesWithMatches,
            before_context: 0,
            after_context: 0,
            head_limit: DEFAULT_HEAD_LIMIT,
            offset: 0,
            include_ignored: false,
            hidden: false,
            max_line_chars: DEFAULT_MAX_LINE_CHARS,
            threads: 0,
        }
    }
}

/// A compiled search; cheap to run many times.
#[derive(Debug, Clone)]
pub struct Grep {
    opts: GrepOptions,
    matcher: RegexMatcher,
    searcher: SearcherBuilder,
    withhold: Withhold,
}

/// Kind of a rendered content line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// The line matches.
    Match,
    /// A context line around a match.
    Context,
}

/// One line of content output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchLine {
    /// Path relative to the display base.
    pub path: String,
    /// 1-based line number.
    pub line: u64,
    /// Match or context.
    pub kind: LineKind,
    /// The line without its terminator, lossily decoded, cut at `max_line_chars`.
    pub text: String,
}

/// One file of files_with_matches / count output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCount {
    /// Path relative to the display base.
    pub path: String,
    /// Matching lines; `None` in files_with_matches mode, which stops at the first match.
    pub count: Option<u64>,
}

/// The result of a run: one page, rendered and structured, plus totals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GrepReport {
    /// The page as text: one entry per line, each ending in `\n`.
    pub text: String,
    /// Content mode: the lines of the page.
    pub lines: Vec<MatchLine>,
    /// files_with_matches / count mode: the files of the page.
    pub files: Vec<FileCount>,
    /// Entries in all (output lines in content mode, files otherwise).
    pub total_entries: usize,
    /// Entries skipped before the page.
    pub offset: usize,
    /// Entries on the page.
    pub shown: usize,
    /// Where the next page starts, when entries remain after this one.
    pub next_offset: Option<usize>,
    /// Matching lines in all files (files_with_matches: files, as it stops at the first match).
    pub matches: u64,
    /// Files with at least one match.
    pub files_matched: usize,
    /// Files opened and searched (binary ones included).
    pub files_searched: usize,
    /// Files skipped because they hold binary data.
    pub binary_skipped: usize,
    /// Files not searched because the [`Withhold`] covers them.
    pub withheld: usize,
    /// Files or directories that could not be read.
    pub errors: usize,
    /// The first of those errors (at most [`crate::MAX_REPORTED_ERRORS`]).
    pub error_samples: Vec<String>,
    /// Set when the run stopped early; the totals then cover what was searched.
    pub stop: Option<Stop>,
}

impl GrepReport {
    /// True when the deadline cut the search short.
    pub fn timed_out(&self) -> bool {
        self.stop == Some(Stop::TimedOut)
    }
}

impl Grep {
    /// Compiles `opts`.
    ///
    /// # Errors
    ///
    /// [`SearchError::Pattern`] for a regex that does not compile,
    /// [`SearchError::GlobSyntax`] and [`SearchError::UnknownFileType`] for bad
    /// filters.
    pub fn new(mut opts: GrepOptions) -> Result<Grep, SearchError> {
        opts.before_context = opts.before_context.min(MAX_CONTEXT_LINES);
        opts.after_context = opts.after_context.min(MAX_CONTEXT_LINES);
        opts.max_line_chars = opts.max_line_chars.max(1);
        opts.head_limit = match opts.head_limit {
            0 => MAX_PAGE_ENTRIES,
            n => n.min(MAX_PAGE_ENTRIES),
        };
        let matcher = build_matcher(&opts)?;
        // Fail on bad filters now rather than at the first run.
        walk::builder(Path::new("."), &filter(&opts))?;
        let mut searcher = SearcherBuilder::new();
        // Line numbers cost a count of every newline read; only content shows them.
        searcher
            .line_number(opts.output_mode == OutputMode::Content)
            .multi_line(opts.multiline)
            .binary_detection(BinaryDetection::quit(b'\x00'));
        if opts.output_mode == OutputMode::Content {
            searcher
                .before_context(opts.before_context)
                .after_context(opts.after_context);
        }
        Ok(Grep {
            opts,
            matcher,
            searcher,
            withhold: Withhold::nothing(),
        })
    }

    /// Never searches the files `withhold` covers; they are counted in
    /// [`GrepReport::withheld`].
    pub fn withholding(mut self, withhold: Withhold) -> Grep {
        self.withhold = withhold;
        self
    }

    /// The options in effect (context lines capped).
    pub fn options(&self) -> &GrepOptions {
        &self.opts
    }

    /// Searches `root` (a directory, walked, or one file) and returns one page of
    /// results with paths shown relative to `base`.
    ///
    /// Files are opened with `opener`; unreadable ones are counted in `errors`.
    /// When `budget` runs out the results so far come back with `stop` set.
    ///
    /// # Security
    ///
    /// Symbolic links are neither searched nor followed; file contents are only read
    /// through `opener` (see [`Opener`]).
    pub fn run(
        &self,
        root: &Path,
        base: &Path,
        opener: &dyn Opener,
        budget: &Budget,
    ) -> GrepReport {
        let builder = match walk::builder(root, &filter(&self.opts)) {
            Ok(b) => b,
            // Validated in `new`; a root-relative glob cannot fail later.
            Err(e) => {
                return GrepReport {
                    errors: 1,
                    error_samples: vec![e.to_string()],
                    ..GrepReport::default()
                };
            }
        };
        let need = (self.opts.offset as u64).saturating_add(self.opts.head_limit as u64);
        let kept = Kept {
            need,
            inner: Mutex::new(KeptInner::default()),
        };
        let (outs, end) = walk::run(&builder, budget, || GrepWorker {
            grep: self,
            searcher: self.searcher.build(),
            opener,
            kept: &kept,
            out: WorkerOut::default(),
        });
        let mut files = Vec::new();
        let mut report = GrepReport {
            errors: end.error_count,
            error_samples: end.errors,
            stop: end.stop,
            ..GrepReport::default()
        };
        for o in outs {
            files.extend(o.files);
            report.files_searched += o.searched;
            report.binary_skipped += o.binary;
            report.withheld += o.withheld;
            report.errors += o.error_count;
            for e in o.errors {
                if report.error_samples.len() < walk::MAX_REPORTED_ERRORS {
                    report.error_samples.push(e);
                }
            }
        }
        walk::sort_by_path(&mut files, |f| &f.path);
        let lines = kept
            .inner
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .files;
        self.page(&mut report, &files, lines, base);
        report
    }

    /// Fills the page of `report` from the sorted `files`.
    fn page(
        &self,
        report: &mut GrepReport,
        files: &[FileHit],
        mut lines: BTreeMap<PathBuf, Vec<Line>>,
        base: &Path,
    ) {
        let o = &self.opts;
        report.files_matched = files.len();
        report.matches = files.iter().map(|f| f.count).sum();
        report.offset = o.offset;
        let limit = o.head_limit;
        let mut text = String::new();
        match o.output_mode {
            OutputMode::FilesWithMatches | OutputMode::Count => {
                report.total_entries = files.len();
                for f in files.iter().skip(o.offset).take(limit) {
                    let path = walk::display_path(&f.path, base);
                    text.push_str(&path);
                    let count = (o.output_mode == OutputMode::Count).then_some(f.count);
                    if let Some(c) = count {
                        text.push(':');
                        text.push_str(&c.to_string());
                    }
                    text.push('\n');
                    report.files.push(FileCount { path, count });
                }
                report.shown = report.files.len();
            }
            OutputMode::Content => {
                let total: u64 = files.iter().map(|f| f.entries).sum();
                report.total_entries = usize::try_from(total).unwrap_or(usize::MAX);
                let context = o.before_context > 0 || o.after_context > 0;
                let mut pos = 0usize; // entries before the current file
                let mut last_printed = false;
                for f in files {
                    let entries = usize::try_from(f.entries).unwrap_or(usize::MAX);
                    if pos.saturating_add(entries) <= o.offset {
                        pos = pos.saturating_add(entries);
                        continue;
                    }
                    if report.lines.len() >= limit {
                        break;
                    }
                    let Some(file_lines) = lines.remove(&f.path) else {
                        break;
                    };
                    let path = walk::display_path(&f.path, base);
                    let mut gap = last_printed && context;
                    for l in file_lines {
                        let Some(kind) = l.kind else {
                            gap = true;
                            continue;
                        };
                        if pos < o.offset {
                            pos += 1;
                            continue;
                        }
                        if report.lines.len() >= limit {
                            break;
                        }
                        pos += 1;
                        if gap && context && last_printed {
                            text.push_str("--\n");
                        }
                        gap = false;
                        last_printed = true;
                        let sep = if kind == LineKind::Match { ':' } else { '-' };
                        text.push_str(&path);
                        text.push(sep);
                        text.push_str(&l.number.to_string());
                        text.push(sep);
                        if !l.text.is_empty() {
                            text.push(' ');
                            text.push_str(&l.text);
                        }
                        text.push('\n');
                        report.lines.push(MatchLine {
                            path: path.clone(),
                            line: l.number,
                            kind,
                            text: l.text,
                        });
                    }
                }
                report.shown = report.lines.len();
            }
        }
        let end = o.offset.saturating_add(report.shown);
        report.next_offset = (end < report.total_entries && report.shown > 0).then_some(end);
        report.text = text;
    }
}

fn filter(o: &GrepOptions) -> Filter {
    Filter {
        hidden: o.hidden,
        ignore_files: !o.include_ignored,
        globs: o.globs.clone(),
        file_types: o.file_types.clone(),
        threads: o.threads,
    }
}

/// ripgrep's matcher configuration (`rg` with the same flags).
fn build_matcher(o: &GrepOptions) -> Result<RegexMatcher, SearchError> {
    let mut b = RegexMatcherBuilder::new();
    b.multi_line(true)
        .unicode(true)
        .octal(false)
        .fixed_strings(o.fixed_strings)
        .word(o.whole_word)
        .size_limit(REGEX_SIZE_LIMIT_BYTES)
        .ban_byte(Some(b'\x00'));
    match o.case {
        CaseMode::Sensitive => b.case_insensitive(false),
        CaseMode::Insensitive => b.case_insensitive(true),
        CaseMode::Smart => b.case_smart(true),
    };
    if o.multiline {
        b.dot_matches_new_line(true);
    } else {
        b.line_terminator(Some(b'\n')).dot_matches_new_line(false);
    }
    b.build(&o.pattern).map_err(|error| SearchError::Pattern {
        pattern: o.pattern.clone(),
        line_break: !o.multiline
            && matches!(error.kind(), grep_regex::ErrorKind::NotAllowed(l) if l == "\n"),
        error,
    })
}

/// A matched file: totals known for every file, lines kept only for the first page.
#[derive(Debug)]
struct FileHit {
    path: PathBuf,
    /// Matching lines.
    count: u64,
    /// Output lines (content mode: match + context lines).
    entries: u64,
}

/// A collected line; `kind: None` marks a break between context groups.
#[derive(Debug)]
struct Line {
    number: u64,
    kind: Option<LineKind>,
    text: String,
}

/// The content lines of the files that can still fall on the page: files are sorted
/// by path at the end, so only the smallest paths holding `need` entries matter.
struct Kept {
    need: u64,
    inner: Mutex<KeptInner>,
}

#[derive(Default)]
struct KeptInner {
    files: BTreeMap<PathBuf, Vec<Line>>,
    entries: BTreeMap<PathBuf, u64>,
    total: u64,
}

impl Kept {
    /// Whether lines of `path` could fall on the page.
    fn wants(&self, path: &Path) -> bool {
        let k = lock(&self.inner);
        k.total < self.need
            || k.files
                .last_key_value()
                .is_some_and(|(last, _)| path < last.as_path())
    }

    /// Offers the lines of `path` (`entries` of them, breaks aside).
    fn offer(&self, path: &Path, lines: Vec<Line>, entries: u64) {
        let mut k = lock(&self.inner);
        let fits = k.total < self.need
            || k.files
                .last_key_value()
                .is_some_and(|(last, _)| path < last.as_path());
        if !fits {
            return;
        }
        k.files.insert(path.to_path_buf(), lines);
        k.entries.insert(path.to_path_buf(), entries);
        k.total += entries;
        // Drop the largest paths while the others still fill the page.
        while let Some((last, n)) = k.entries.last_key_value() {
            let n = *n;
            if k.total - n < self.need {
                break;
            }
            let last = last.clone();
            k.entries.remove(&last);
            k.files.remove(&last);
            k.total -= n;
        }
    }
}

#[derive(Default)]
struct WorkerOut {
    files: Vec<FileHit>,
    searched: usize,
    binary: usize,
    withheld: usize,
    error_count: usize,
    errors: Vec<String>,
}

struct GrepWorker<'a> {
    grep: &'a Grep,
    searcher: Searcher,
    opener: &'a dyn Opener,
    kept: &'a Kept,
    out: WorkerOut,
}

impl GrepWorker<'_> {
    fn error(&mut self, path: &Path, e: &io::Error) {
        self.out.error_count += 1;
        if self.out.errors.len() < walk::MAX_REPORTED_ERRORS {
            self.out.errors.push(format!("{}: {e}", path.display()));
        }
    }

    fn search(&mut self, path: &Path, file: &File) -> io::Result<()> {
        let matcher = &self.grep.matcher;
        let (count, entries, binary) = match self.grep.opts.output_mode {
            OutputMode::FilesWithMatches => {
                let mut sink = FirstMatch::default();
                self.searcher.search_file(matcher, file, &mut sink)?;
                (
                    u64::from(sink.found),
                    u64::from(sink.found),
                    sink.binary && !sink.found,
                )
            }
            OutputMode::Count => {
                let mut sink = Counter::default();
                self.searcher.search_file(matcher, file, &mut sink)?;
                (sink.count, sink.count, sink.binary)
            }
            OutputMode::Content => {
                let mut sink = Collect {
                    kept: self.kept,
                    path,
                    collect: None,
                    lines: Vec::new(),
                    collected: 0,
                    count: 0,
                    entries: 0,
                    binary: false,
                    max_chars: self.grep.opts.max_line_chars,
                };
                self.searcher.search_file(matcher, file, &mut sink)?;
                if !sink.binary && sink.count > 0 && sink.collect == Some(true) {
                    self.kept.offer(path, sink.lines, sink.entries);
                }
                (sink.count, sink.entries, sink.binary)
            }
        };
        if binary {
            self.out.binary += 1;
        } else if count > 0 {
            self.out.files.push(FileHit {
                path: path.to_path_buf(),
                count,
                entries,
            });
        }
        Ok(())
    }
}

impl Worker for GrepWorker<'_> {
    type Out = WorkerOut;

    fn visit(&mut self, entry: DirEntry) -> WalkState {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let path = entry.path();
        if self.grep.withhold.covers(path) {
            self.out.withheld += 1;
            return WalkState::Continue;
        }
        let file = match self.opener.open(path) {
            Ok(f) => f,
            Err(e) => {
                self.error(path, &e);
                return WalkState::Continue;
            }
        };
        self.out.searched += 1;
        if let Err(e) = self.search(path, &file) {
            self.error(path, &e);
        }
        WalkState::Continue
    }

    fn finish(self) -> WorkerOut {
        self.out
    }
}

/// Stops at the first match (files_with_matches).
#[derive(Default)]
struct FirstMatch {
    found: bool,
    binary: bool,
}

impl Sink for FirstMatch {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.found = true;
        Ok(false)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Counts matching lines.
#[derive(Default)]
struct Counter {
    count: u64,
    binary: bool,
}

impl Sink for Counter {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Collects content lines while they can still fall on the page; counts always.
struct Collect<'a> {
    kept: &'a Kept,
    path: &'a Path,
    /// Decided at the first match: whether this file's lines may be needed.
    collect: Option<bool>,
    lines: Vec<Line>,
    /// Entries in `lines`.
    collected: u64,
    count: u64,
    entries: u64,
    binary: bool,
    max_chars: usize,
}

impl Collect<'_> {
    fn wanted(&mut self) -> bool {
        let want = *self
            .collect
            .get_or_insert_with(|| self.kept.wants(self.path));
        want && self.collected < self.kept.need
    }

    fn push(&mut self, first_line: Option<u64>, bytes: &[u8], kind: LineKind) {
        let lines = bytes.split_inclusive(|b| *b == b'\n');
        for (number, line) in (first_line.unwrap_or(0)..).zip(lines) {
            self.entries += 1;
            if self.wanted() {
                self.collected += 1;
                self.lines.push(Line {
                    number,
                    kind: Some(kind),
                    text: render_line(line, self.max_chars),
                });
            }
        }
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        // One line per call, except for a multiline match spanning several.
        self.push(m.line_number(), m.bytes(), LineKind::Match);
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        if matches!(c.kind(), SinkContextKind::Other) {
            return Ok(true);
        }
        self.push(c.line_number(), c.bytes(), LineKind::Context);
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.collect == Some(true) && self.collected < self.kept.need {
            self.lines.push(Line {
                number: 0,
                kind: None,
                text: String::new(),
            });
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line for display: terminator removed, lossily decoded, cut after `max_chars`
/// characters with a marker saying how many bytes were left out.
pub fn render_line(line: &[u8], max_chars: usize) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // No character takes more than 4 bytes, so the first `max_chars` characters lie
    // within this prefix; decoding only it keeps a 100 MB minified line cheap.
    let head = &line[..line.len().min(max_chars.saturating_mul(4))];
    let decoded = String::from_utf8_lossy(head);
    match decoded.char_indices().nth(max_chars) {
        None if head.len() == line.len() => decoded.into_owned(),
        cut => {
            let kept = &decoded[..cut.map_or(decoded.len(), |(i, _)| i)];
            let rest = line.len().saturating_sub(original_len(head, kept));
            format!("{kept} [… {rest} more bytes]")
        }
    }
}

/// Bytes of `orig` that decode (lossily) to `prefix`.
fn original_len(orig: &[u8], prefix: &str) -> usize {
    let mut bytes = 0;
    let mut chars = prefix.chars().count();
    for chunk in orig.utf8_chunks() {
        let valid = chunk.valid();
        let n = valid.chars().count();
        if n >= chars {
            return bytes
                + valid
                    .char_indices()
                    .nth(chars)
                    .map_or(valid.len(), |(i, _)| i);
        }
        chars -= n;
        bytes += valid.len();
        let invalid = chunk.invalid();
        if !invalid.is_empty() {
            if chars == 0 {
                return bytes;
            }
            chars -= 1;
            bytes += invalid.len();
        }
    }
    bytes
}

#[cfg(test)]
#[path = "grep_tests.rs"]
mod tests;
