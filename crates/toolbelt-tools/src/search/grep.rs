//! `grep`: searches file contents in the workspace with ripgrep's engine.

use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::human::{noun, plural};
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, Subject, ToolContext, ToolError, ToolResult, ToolSpec,
    TypedTool,
};
use toolbelt_search::Stop;
use toolbelt_search::grep::{
    CaseMode, DEFAULT_HEAD_LIMIT, Grep as Engine, GrepOptions, GrepReport, LineKind,
    MAX_CONTEXT_LINES, OutputMode,
};

use crate::search::{SearchWatch, search_root, search_timeout, secret_files};
use crate::workspace::{blocking, workspace};

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
            .subject(Subject::Path)
            .permission("fs:read")
            .hints(Hints::read_only())
            .key_argument("pattern")
            .short_arguments(&[])
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

/// The text the model reads: the page, then one summary line and notes.
fn render(p: &GrepParams, shown_root: &str, r: &GrepReport, timeout: Duration) -> String {
    let mode = p.output_mode.unwrap_or_default();
    let mut text = r.text.clone();
    let files = |n: usize| format!("{n} {}", plural(n as u64, "file"));
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
                "Found {} {} in {}",
                r.matches,
                plural(r.matches, "matching line"),
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
            "{} {} skipped.",
            r.binary_skipped,
            plural(r.binary_skipped as u64, "binary file")
        ));
    }
    if r.withheld > 0 {
        notes.push(format!(
            "{} {} (.env, keys, credentials) not searched.",
            r.withheld,
            plural(r.withheld as u64, "secret file")
        ));
    }
    if r.errors > 0 {
        let first = r.error_samples.first().map_or("", String::as_str);
        notes.push(format!(
            "{} {} could not be read (first: {first}).",
            r.errors,
            noun(r.errors as u64, "entry", "entries")
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
