//! `glob`: finds files in the workspace by name or path pattern.

use std::time::{Duration, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::human::{noun, plural};
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, Subject, ToolContext, ToolError, ToolResult, ToolSpec,
    TypedTool,
};
use toolbelt_search::Stop;
use toolbelt_search::glob::{DEFAULT_LIMIT, Glob as Engine, GlobOptions, GlobReport, GlobSort};

use crate::search::{SearchWatch, search_root, search_timeout, secret_files};
use crate::workspace::{blocking, workspace};

/// Arguments of `glob`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobParams {
    /// Glob pattern. Without `/` it matches file names at any depth (`*.rs`, `Cargo.toml`); with `/` the path relative to `path` (`src/**/*.ts`, `docs/*.md`). `*` stays within a directory, `**` crosses any number, `{a,b}` and `[abc]` work.
    #[schemars(length(min = 1))]
    pub pattern: String,
    /// Directory to search, relative to the working directory (default: the working directory); inside the workspace.
    #[serde(default)]
    pub path: Option<String>,
    /// List matching directories too (shown with a trailing `/`).
    #[serde(default)]
    pub include_dirs: bool,
    /// modified (newest first, the default: the files you are working on come first) or path.
    #[serde(default)]
    pub sort: Option<GlobSortParam>,
    /// Entries to return (default 200; 0 = all).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Entries to skip first, to read the next page (default 0).
    #[serde(default)]
    pub offset: Option<u32>,
    /// Skip what .gitignore / .ignore exclude (default true).
    #[serde(default)]
    pub respect_gitignore: Option<bool>,
    /// Also list hidden files and directories (implied when the pattern names one, e.g. `.github/**`).
    #[serde(default)]
    pub include_hidden: bool,
    /// Time budget in milliseconds (default 30000); when it runs out, what was found so far comes back marked timed_out.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
}

/// Order of `glob`'s results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GlobSortParam {
    /// Most recently modified first.
    #[default]
    Modified,
    /// By path.
    Path,
}

/// One entry found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GlobFound {
    /// The path, relative to the working directory.
    pub path: String,
    /// A directory (only listed with include_dirs).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub is_dir: bool,
    /// Last modification, seconds since the Unix epoch (sort = modified).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_unix: Option<u64>,
}

/// Result of `glob`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GlobResult {
    /// The entries of this page.
    pub files: Vec<GlobFound>,
    /// Matching entries in all.
    pub total: usize,
    /// Entries skipped before this page.
    pub offset: usize,
    /// Entries on this page.
    pub shown: usize,
    /// The offset of the next page, when entries remain.
    pub next_offset: Option<usize>,
    /// The order used.
    pub sort: GlobSortParam,
    /// Secret files (.env, keys, credentials) matching but not listed.
    pub secret_skipped: usize,
    /// Directories that could not be read.
    pub unreadable: usize,
    /// The time budget ran out; the results cover what was walked until then.
    pub timed_out: bool,
}

/// The `glob` tool.
#[derive(Debug, Default)]
pub struct Glob;

impl TypedTool for Glob {
    type Params = GlobParams;
    type Output = GlobResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("glob", include_str!("glob.md"))
            .title("Find Files by Pattern")
            .category(Category::Search)
            .subject(Subject::Path)
            .permission("fs:read")
            .hints(Hints::read_only())
            .key_argument("pattern")
            .short_arguments(&[])
            .permission_argument("path")
            .example(
                "Find the TypeScript components, most recently changed first",
                json!({"pattern": "src/components/**/*.tsx"}),
                json!({
                    "files": [
                        {"path": "src/components/Button.tsx", "modified_unix": 1767225600},
                        {"path": "src/components/forms/Input.tsx", "modified_unix": 1767139200}
                    ],
                    "total": 2, "offset": 0, "shown": 2, "next_offset": null, "sort": "modified",
                    "secret_skipped": 0, "unreadable": 0, "timed_out": false
                }),
            )
            .example(
                "Every Cargo.toml at any depth, by path",
                json!({"pattern": "Cargo.toml", "sort": "path"}),
                json!({
                    "files": [{"path": "Cargo.toml"}, {"path": "crates/core/Cargo.toml"}],
                    "total": 2, "offset": 0, "shown": 2, "next_offset": null, "sort": "path",
                    "secret_skipped": 0, "unreadable": 0, "timed_out": false
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: GlobParams) -> ToolResult<GlobResult> {
        let ws = workspace(ctx)?;
        let (path, pattern) = split_absolute(&p)?;
        let sort = p.sort.unwrap_or_default();
        let engine = Engine::new(GlobOptions {
            include_dirs: p.include_dirs,
            sort: match sort {
                GlobSortParam::Modified => GlobSort::Modified,
                GlobSortParam::Path => GlobSort::Path,
            },
            limit: p.limit.map_or(DEFAULT_LIMIT, |n| n as usize),
            offset: p.offset.unwrap_or(0) as usize,
            respect_gitignore: p.respect_gitignore.unwrap_or(true),
            hidden: p.include_hidden,
            ..GlobOptions::new(pattern.clone())
        })?;
        let timeout = search_timeout(ctx, p.timeout_ms);
        let watch = SearchWatch::start(ctx, "glob");
        let budget = watch.budget(timeout);
        let skip_secrets = ws.skips_secret_files();
        let (report, shown_root) = blocking(move || {
            let at = search_root(&ws, &path)?;
            let engine = if skip_secrets {
                engine.withholding(secret_files(&at.root))
            } else {
                engine
            };
            Ok((engine.run(&at.path, &at.base, &budget), at.shown))
        })
        .await?;
        drop(watch);
        if report.stop == Some(Stop::Cancelled) {
            return Err(ToolError::new(
                ErrorCode::Cancelled,
                "the search was cancelled",
            ));
        }
        if report.timed_out() && report.entries.is_empty() {
            return Err(ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "nothing matched {pattern:?} within the {} ms budget",
                    timeout.as_millis()
                ),
            )
            .hint("narrow `path` or the pattern's leading directories, or raise timeout_ms"));
        }
        let text = render(&pattern, &shown_root, sort, &p, &report, timeout);
        let out = result(sort, report);
        let partial = out.timed_out;
        Ok(Reply::new(out.clone(), text)
            .partial(partial)
            .stat("files", out.total)
            .context("path_resolved", shown_root))
    }
}

/// An absolute pattern (`/work/src/**/*.rs`) becomes a path (`/work/src`) and a
/// relative pattern (`**/*.rs`), when no path was given.
fn split_absolute(p: &GlobParams) -> Result<(String, String), ToolError> {
    let path = p.path.clone().unwrap_or_else(|| ".".to_owned());
    if !p.pattern.starts_with('/') {
        return Ok((path, p.pattern.clone()));
    }
    if p.path.is_some() {
        return Err(ToolError::new(
            ErrorCode::InvalidParams,
            format!("pattern {:?} is absolute while path is given", p.pattern),
        )
        .hint("keep the pattern relative to path, e.g. path=\"src\", pattern=\"**/*.rs\""));
    }
    let parts: Vec<&str> = p.pattern.split('/').collect();
    let literal = parts
        .iter()
        .take(parts.len().saturating_sub(1))
        .take_while(|c| !c.contains(['*', '?', '[', '{', '\\']))
        .count();
    let dir = parts[..literal].join("/");
    let rest = parts[literal..].join("/");
    Ok((if dir.is_empty() { "/".to_owned() } else { dir }, rest))
}

fn render(
    pattern: &str,
    shown_root: &str,
    sort: GlobSortParam,
    p: &GlobParams,
    r: &GlobReport,
    timeout: Duration,
) -> String {
    let mut text = r.text.clone();
    let what = if p.include_dirs {
        ("entry", "entries")
    } else {
        ("file", "files")
    };
    if r.total == 0 {
        text.push_str(&format!("No {} in {shown_root} match {pattern:?}.", what.1));
        if p.respect_gitignore.unwrap_or(true) || !p.include_hidden {
            text.push_str(
                " Files excluded by .gitignore and hidden files were skipped \
                 (respect_gitignore=false / include_hidden list them).",
            );
        }
    } else {
        let order = match sort {
            GlobSortParam::Modified => "newest first",
            GlobSortParam::Path => "by path",
        };
        text.push_str(&format!(
            "Found {} {} matching {pattern:?} in {shown_root} ({order}).",
            r.total,
            if r.total == 1 { what.0 } else { what.1 }
        ));
        if let Some(next) = r.next_offset {
            text.push_str(&format!(
                " Showing {}-{} of {}; continue with offset={next}.",
                r.offset + 1,
                r.offset + r.entries.len(),
                r.total
            ));
        } else if r.entries.is_empty() {
            text.push_str(&format!(" offset={} is past the last of them.", r.offset));
        }
    }
    if r.withheld > 0 {
        text.push_str(&format!(
            " {} {} (.env, keys, credentials) not listed.",
            r.withheld,
            plural(r.withheld as u64, "secret file")
        ));
    }
    if r.errors > 0 {
        let first = r.error_samples.first().map_or("", String::as_str);
        text.push_str(&format!(
            " {} {} could not be read (first: {first}).",
            r.errors,
            noun(r.errors as u64, "entry", "entries")
        ));
    }
    if r.timed_out() {
        text.push_str(&format!(
            " Timed out after {} ms: the list covers what was walked so far; narrow path \
             or the pattern, or raise timeout_ms.",
            timeout.as_millis()
        ));
    }
    text.push('\n');
    text
}

fn result(sort: GlobSortParam, r: GlobReport) -> GlobResult {
    let timed_out = r.timed_out();
    let shown = r.entries.len();
    GlobResult {
        files: r
            .entries
            .into_iter()
            .map(|e| GlobFound {
                path: e.path,
                is_dir: e.is_dir,
                modified_unix: e
                    .modified
                    .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
                    .map(|d| d.as_secs()),
            })
            .collect(),
        total: r.total,
        offset: r.offset,
        shown,
        next_offset: r.next_offset,
        sort,
        secret_skipped: r.withheld,
        unreadable: r.errors,
        timed_out,
    }
}
