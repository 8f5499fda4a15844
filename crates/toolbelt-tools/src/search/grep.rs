//! `grep`: searches file contents in the workspace with ripgrep's engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::policy::secret_file_label;
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_fs::{EntryKind, FsError, WorkPath};
use toolbelt_search::grep::{
    CaseMode, DEFAULT_HEAD_LIMIT, Grep as Engine, GrepOptions, GrepReport, LineKind,
    MAX_CONTEXT_LINES, OutputMode,
};
use toolbelt_search::{Budget, Stop, Withhold};

use crate::files::{Workspace, blocking, workspace};

/// Default time budget of one search.
pub const DEFAULT_SEARCH_TIMEOUT_MS: u64 = 30_000;

/// Share of the call's own timeout a search may use, in percent, so that partial
/// results come back before the call is cut off.
const BUDGET_SHARE_PERCENT: u32 = 90;

/// Arguments of `grep`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepParams {
    /// Regular expression (Rust/ripgrep syntax: `fn\s+main`, `log.*Error`, `\bfoo\b`); with fixed_strings=true, literal text.
    #[schemars(length(min = 1))]
    pub pattern: String,
    /// File or directory to search, relative to the working directory (default: the working directory); inside the workspace.
    #[serde(default)]
    pub path: Option<String>,
    /// Only files matching these globs, separated by spaces: `*.rs`, `*.{ts,tsx}`, `src/**/*.go`; a leading `!` excludes (`!*_test.go`); without `/` a glob matches the name at any depth.
    #[serde(default)]
    pub glob: Option<String>,
    /// Only files of these types from ripgrep's table, separated by commas: rust, py, js, ts, c, cpp, go, java, md, ... (faster than a glob).
    #[serde(default)]
    pub file_type: Option<String>,
    /// content (matching lines, the default), files_with_matches (paths only) or count (matching lines per file).
    #[serde(default)]
    pub output_mode: Option<GrepMode>,
    /// Lines of context before and after each match (content mode; at most 20).
    #[serde(default)]
    #[schemars(range(max = 20))]
    pub context_lines: Option<u32>,
    /// Lines of context before each match (overrides context_lines; at most 20).
    #[serde(default)]
    #[schemars(range(max = 20))]
    pub before: Option<u32>,
    /// Lines of context after each match (overrides context_lines; at most 20).
    #[serde(default)]
    #[schemars(range(max = 20))]
    pub after: Option<u32>,
    /// true: case matters; false: case is ignored; omitted: smart case (ignored unless the pattern has an uppercase letter).
    #[serde(default)]
    pub case_sensitive: Option<bool>,
    /// Match whole words only (`run` matches `run()`, not `runner`).
    #[serde(default)]
    pub whole_word: bool,
    /// Search for the pattern as literal text, not a regular expression.
    #[serde(default)]
    pub fixed_strings: bool,
    /// Let the pattern span lines; `.` then matches newlines too.
    #[serde(default)]
    pub multiline: bool,
    /// Entries to return: output lines in content mode, files otherwise (default 250; 0 = all, up to 10000).
    #[serde(default)]
    pub head_limit: Option<u32>,
    /// Entries to skip first, to read the next page (default 0).
    #[serde(default)]
    pub offset: Option<u32>,
    /// Also search files excluded by .gitignore / .ignore (build output, node_modules, target).
    #[serde(default)]
    pub include_ignored: bool,
    /// Also search hidden files and directories (`.github`, `.config`).
    #[serde(default)]
    pub include_hidden: bool,
    /// Time budget in milliseconds (default 30000); when it runs out, the results so far come back marked timed_out.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
}

/// What `grep` returns per entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GrepMode {
    /// Matching lines, with context lines when asked.
    #[default]
    Content,
    /// Paths of the files with a match.
    FilesWithMatches,
    /// Matching lines per file.
    Count,
}

/// One line of content output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GrepLine {
    /// The file, relative to the working directory.
    pub path: String,
    /// Line number, 1-based.
    pub line: u64,
    /// The line (cut after 500 characters, with a marker).
    pub text: String,
    /// A context line rather than a match.
    pub context: bool,
}

/// One file of files_with_matches / count output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GrepFile {
    /// The file, relative to the working directory.
    pub path: String,
    /// Matching lines (count mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

/// Result of `grep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GrepResult {
    /// The output mode used.
    pub output_mode: GrepMode,
    /// content mode: the lines of this page.
    pub matches: Vec<GrepLine>,
    /// files_with_matches / count mode: the files of this page.
    pub files: Vec<GrepFile>,
    /// Entries in all (output lines in content mode, files otherwise).
    pub total: usize,
    /// Entries skipped before this page.
    pub offset: usize,
    /// Entries on this page.
    pub shown: usize,
    /// The offset of the next page, when entries remain.
    pub next_offset: Option<usize>,
    /// Matching lines in all files (files_with_matches: files with a match).
    pub match_count: u64,
    /// Files with at least one match.
    pub files_matched: usize,
    /// Files searched.
    pub files_searched: usize,
    /// Binary files skipped.
    pub binary_skipped: usize,
    /// Secret files (.env, keys, credentials) not searched.
    pub secret_skipped: usize,
    /// Files or directories that could not be read.
    pub unreadable: usize,
    /// The time budget ran out; the results cover the files searched until then.
    pub timed_out: bool,
}

/// The `grep` tool.
#[derive(Debug, Default)]
pub struct Grep;

impl TypedTool for Grep {
    type Params = GrepParams;
    type Output = GrepResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("grep", include_str!("grep.md"))
            .title("Search File Contents")
            .category(Category::Search)
            .permission("fs:read")
            .hints(Hints::read_only())
            .key_argument("pattern")
            .permission_argument("path")
            .example(
                "Find where a function is called in the Rust sources",
                json!({"pattern": "parse_config\\(", "file_type": "rust"}),
                json!({
                    "output_mode": "content",
                    "matches": [
                        {"path": "src/cli.rs", "line": 42, "text": "    let cfg = parse_config(&args)?;", "context": false},
                        {"path": "src/config.rs", "line": 17, "text": "pub fn parse_config(args: &Args) -> Result<Config> {", "context": false}
                    ],
                    "files": [], "total": 2, "offset": 0, "shown": 2, "next_offset": null,
                    "match_count": 2, "files_matched": 2, "files_searched": 31, "binary_skipped": 0,
                    "secret_skipped": 0, "unreadable": 0, "timed_out": false
                }),
            )
            .example(
                "List the files that mention a TODO, Python only",
                json!({"pattern": "TODO", "file_type": "py", "output_mode": "files_with_matches"}),
                json!({
                    "output_mode": "files_with_matches", "matches": [],
                    "files": [{"path": "app/models.py"}, {"path": "app/views.py"}],
                    "total": 2, "offset": 0, "shown": 2, "next_offset": null,
                    "match_count": 2, "files_matched": 2, "files_searched": 12, "binary_skipped": 0,
                    "secret_skipped": 0, "unreadable": 0, "timed_out": false
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: GrepParams) -> ToolResult<GrepResult> {
        let ws = workspace(ctx)?;
        let opts = options(&p);
        let mode = p.output_mode.unwrap_or_default();
        let timeout = search_timeout(ctx, p.timeout_ms);
        let watch = SearchWatch::start(ctx, "grep");
        let budget = watch.budget(timeout);
        let path = p.path.clone().unwrap_or_else(|| ".".to_owned());
        let skip_secrets = ws.skips_secret_files();
        let pattern = p.pattern.clone();
        let (report, shown_root) = blocking(move || {
            // Compiling a large pattern can take a moment: off the async runtime too.
            let engine = Engine::new(opts)
                .map_err(|e| ToolError::from(e).data(json!({ "pattern": pattern })))?;
            let at = search_root(&ws, &path)?;
            let engine = if skip_secrets {
                engine.withholding(secret_files(&at.root))
            } else {
                engine
            };
            let open = |abs: &Path| ws.jail.open_walked(abs);
            Ok((engine.run(&at.path, &at.base, &open, &budget), at.shown))
        })
        .await?;
        drop(watch);
        if report.stop == Some(Stop::Cancelled) {
            return Err(ToolError::new(
                ErrorCode::Cancelled,
                "the search was cancelled",
            ));
        }
        if report.timed_out() && report.shown == 0 {
            return Err(ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "the search found nothing within its {} ms budget ({} files searched)",
                    timeout.as_millis(),
                    report.files_searched
                ),
            )
            .hint("narrow `path`, add `glob` or `file_type`, or raise timeout_ms"));
        }
        let text = render(&p, &shown_root, &report, timeout);
        let out = result(mode, report);
        let partial = out.timed_out;
        Ok(Reply::new(out.clone(), text)
            .partial(partial)
            .stat("matches", out.match_count)
            .stat("files", out.files_matched)
            .stat("files_searched", out.files_searched)
            .context("path_resolved", shown_root))
    }
}

/// The engine options for `p`.
fn options(p: &GrepParams) -> GrepOptions {
    let context = p.context_lines.unwrap_or(0) as usize;
    let cap = |n: Option<u32>| n.map_or(context, |n| n as usize).min(MAX_CONTEXT_LINES);
    GrepOptions {
        fixed_strings: p.fixed_strings,
        case: match p.case_sensitive {
            None => CaseMode::Smart,
            Some(true) => CaseMode::Sensitive,
            Some(false) => CaseMode::Insensitive,
        },
        whole_word: p.whole_word,
        multiline: p.multiline,
        globs: p
            .glob
            .as_deref()
            .map(|g| g.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default(),
        file_types: p
            .file_type
            .as_deref()
            .map(|t| {
                t.split([',', ' '])
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        output_mode: match p.output_mode.unwrap_or_default() {
            GrepMode::Content => OutputMode::Content,
            GrepMode::FilesWithMatches => OutputMode::FilesWithMatches,
            GrepMode::Count => OutputMode::Count,
        },
        before_context: cap(p.before),
        after_context: cap(p.after),
        head_limit: p.head_limit.map_or(DEFAULT_HEAD_LIMIT, |n| n as usize),
        offset: p.offset.unwrap_or(0) as usize,
        include_ignored: p.include_ignored,
        hidden: p.include_hidden,
        ..GrepOptions::new(p.pattern.clone())
    }
}

/// The time budget: what was asked (or the default), within the call's own timeout.
pub(crate) fn search_timeout(ctx: &ToolContext, asked_ms: Option<u64>) -> Duration {
    let asked = Duration::from_millis(asked_ms.unwrap_or(DEFAULT_SEARCH_TIMEOUT_MS).max(1));
    let ceiling = ctx.session().timeout() * BUDGET_SHARE_PERCENT / 100;
    asked.min(ceiling)
}

/// The built-in secret files, withheld from search results. Paths are checked
/// relative to `root` (the workspace root they lie in): the patterns match at any
/// depth, and the root's own location (say, beneath `~/.config`) must not count.
pub(crate) fn secret_files(root: &Path) -> Withhold {
    let skip = root.as_os_str().len() + 1;
    Withhold::files(move |p| {
        let bytes = p.as_os_str().as_encoded_bytes();
        let rel = bytes.get(skip..).unwrap_or(bytes);
        match std::str::from_utf8(rel) {
            Ok(rel) => secret_file_label(rel).is_some(),
            Err(_) => secret_file_label(&String::from_utf8_lossy(rel)).is_some(),
        }
    })
}

/// Where a search runs, resolved through the jail.
pub(crate) struct SearchRoot {
    /// The file or directory to walk.
    pub path: PathBuf,
    /// The workspace root it lies in.
    pub root: PathBuf,
    /// What paths are shown relative to: the working directory, as the kernel sees it.
    pub base: PathBuf,
    /// `path` as shown to the model.
    pub shown: String,
}

/// Resolves `path` for a search.
pub(crate) fn search_root(ws: &Workspace, path: &str) -> Result<SearchRoot, ToolError> {
    let p: WorkPath = ws.resolve(path)?;
    match ws.jail.metadata(&p) {
        Ok(m) if matches!(m.kind, EntryKind::File | EntryKind::Dir) => {}
        Ok(m) => {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!(
                    "{} is a {}, not a file or directory",
                    ws.display(&p),
                    m.kind.describe()
                ),
            ));
        }
        Err(FsError::NotFound { .. }) => return Err(ws.not_found(&p)),
        Err(e) => return Err(e.into()),
    }
    // The cwd as resolved by the jail, so that paths found beneath it are shown
    // relative to it even when a root was given through a symlink.
    let base = ws
        .jail
        .resolve(&ws.cwd, ".")
        .map_or_else(|_| ws.cwd.clone(), |b| b.abs().to_path_buf());
    Ok(SearchRoot {
        path: p.abs().to_path_buf(),
        root: p.root().to_path_buf(),
        base,
        shown: ws.display(&p),
    })
}

/// How often a long search reports how far it got, while somebody listens.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// Watches a blocking search from the async side. It sets the search's
/// cancellation flag when the call is cancelled, and when the watch is dropped (the
/// call ended or its timeout passed), so the search stops early; and while somebody
/// listens for progress it reports the entries walked so far, every
/// [`PROGRESS_INTERVAL`] in which the count grew.
pub(crate) struct SearchWatch {
    flag: Arc<AtomicBool>,
    walked: Option<Arc<AtomicU64>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl SearchWatch {
    /// Starts watching for `ctx`'s call; `what` names the search in progress
    /// messages ("grep", "glob").
    pub fn start(ctx: &ToolContext, what: &'static str) -> SearchWatch {
        let flag = Arc::new(AtomicBool::new(false));
        let token = ctx.cancel_token().clone();
        let set = Arc::clone(&flag);
        let mut tasks = vec![tokio::spawn(async move {
            token.cancelled().await;
            set.store(true, Ordering::Relaxed);
        })];
        let walked = ctx.wants_progress().then(|| Arc::new(AtomicU64::new(0)));
        if let Some(walked) = &walked {
            let (ctx, walked) = (ctx.clone(), Arc::clone(walked));
            tasks.push(tokio::spawn(async move {
                let started = Instant::now();
                let mut reported = 0;
                loop {
                    tokio::time::sleep(PROGRESS_INTERVAL).await;
                    let now = walked.load(Ordering::Relaxed);
                    if now > reported {
                        reported = now;
                        let message = format!(
                            "{what}: {} walked in {:.1} s",
                            plural(now as usize, "entry", "entries"),
                            started.elapsed().as_secs_f64()
                        );
                        ctx.progress(now as f64, None, Some(&message));
                    }
                }
            }));
        }
        SearchWatch {
            flag,
            walked,
            tasks,
        }
    }

    /// The budget for the search: `timeout`, this watch's cancellation flag and, when
    /// progress is wanted, its counter.
    pub fn budget(&self, timeout: Duration) -> Budget {
        let budget = Budget::unlimited()
            .with_time_limit(timeout)
            .with_cancel(Arc::clone(&self.flag));
        match &self.walked {
            Some(walked) => budget.with_progress(Arc::clone(walked)),
            None => budget,
        }
    }
}

impl Drop for SearchWatch {
    fn drop(&mut self) {
        self.flag.store(true, Ordering::Relaxed);
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The text the model reads: the page, then one summary line and notes.
fn render(p: &GrepParams, shown_root: &str, r: &GrepReport, timeout: Duration) -> String {
    let mode = p.output_mode.unwrap_or_default();
    let mut text = r.text.clone();
    let files = |n: usize| plural(n, "file", "files");
    if r.files_matched == 0 {
        text.push_str(&format!(
            "No matches for {:?} in {shown_root} ({} searched).",
            p.pattern,
            files(r.files_searched)
        ));
        if !p.include_ignored || !p.include_hidden {
            text.push_str(
                " Files excluded by .gitignore and hidden files were skipped \
                 (include_ignored / include_hidden search them).",
            );
        }
    } else {
        let found = match mode {
            GrepMode::FilesWithMatches => format!("Found {}", files(r.files_matched)),
            _ => format!(
                "Found {} in {}",
                plural(
                    usize::try_from(r.matches).unwrap_or(usize::MAX),
                    "matching line",
                    "matching lines"
                ),
                files(r.files_matched)
            ),
        };
        text.push_str(&format!("{found} ({} searched).", files(r.files_searched)));
        let unit = match mode {
            GrepMode::Content => "output lines",
            _ => "files",
        };
        if let Some(next) = r.next_offset {
            text.push_str(&format!(
                " Showing {unit} {}-{} of {}; continue with offset={next}.",
                r.offset + 1,
                r.offset + r.shown,
                r.total_entries
            ));
        } else if r.shown == 0 {
            text.push_str(&format!(
                " offset={} is past the last of the {} {unit}.",
                r.offset, r.total_entries
            ));
        }
    }
    let mut notes = Vec::new();
    if r.binary_skipped > 0 {
        notes.push(format!(
            "{} skipped.",
            plural(r.binary_skipped, "binary file", "binary files")
        ));
    }
    if r.withheld > 0 {
        notes.push(format!(
            "{} (.env, keys, credentials) not searched.",
            plural(r.withheld, "secret file", "secret files")
        ));
    }
    if r.errors > 0 {
        let first = r.error_samples.first().map_or("", String::as_str);
        notes.push(format!(
            "{} could not be read (first: {first}).",
            plural(r.errors, "entry", "entries")
        ));
    }
    if r.timed_out() {
        notes.push(format!(
            "Timed out after {} ms: the results cover the {} searched so far; \
             narrow path, glob or file_type, or raise timeout_ms.",
            timeout.as_millis(),
            files(r.files_searched)
        ));
    }
    for n in notes {
        text.push(' ');
        text.push_str(&n);
    }
    text.push('\n');
    text
}

fn result(mode: GrepMode, r: GrepReport) -> GrepResult {
    let timed_out = r.timed_out();
    GrepResult {
        output_mode: mode,
        matches: r
            .lines
            .into_iter()
            .map(|l| GrepLine {
                path: l.path,
                line: l.line,
                text: l.text,
                context: l.kind == LineKind::Context,
            })
            .collect(),
        files: r
            .files
            .into_iter()
            .map(|f| GrepFile {
                path: f.path,
                count: f.count,
            })
            .collect(),
        total: r.total_entries,
        offset: r.offset,
        shown: r.shown,
        next_offset: r.next_offset,
        match_count: r.matches,
        files_matched: r.files_matched,
        files_searched: r.files_searched,
        binary_skipped: r.binary_skipped,
        secret_skipped: r.withheld,
        unreadable: r.errors,
        timed_out,
    }
}

/// `n` with its noun, e.g. "1 file", "3 files".
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
