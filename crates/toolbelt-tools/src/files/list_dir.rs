//! `list_dir`: a directory as a tree in text, and as a list of paths in JSON.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, Subject, ToolContext, ToolError, ToolResult, ToolSpec,
    TypedTool,
};
use toolbelt_fs::EntryKind;
use toolbelt_search::tree::{self, Tree, TreeOptions};

use crate::workspace::{Workspace, blocking, workspace};

/// Deepest listing run inline where the session allows it (see `Workspace::run`).
const MAX_INLINE_DEPTH: u32 = 3;

/// Deepest `depth` accepted.
pub const MAX_LIST_DEPTH: u32 = 20;
/// Most entries one call shows.
pub const MAX_LIST_LIMIT: u32 = 5_000;

/// Arguments of `list_dir`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirParams {
    /// The directory, relative to the working directory or absolute inside the workspace. Default: the working directory.
    #[serde(default)]
    pub path: Option<String>,
    /// Levels to list: 1 (default) = the directory's own entries, 2 = also the entries of its subdirectories, ...
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    pub depth: Option<u32>,
    /// List hidden entries (names starting with "."). Default false; `.git` is never listed.
    #[serde(default)]
    pub show_hidden: Option<bool>,
    /// Keep only entries whose name matches this glob (`*.rs`, `test_*`), plus the directories leading to them. With a `/` it matches the path relative to `path` (`src/**/*.py`).
    #[serde(default)]
    pub pattern: Option<String>,
    /// List directories only. Default false.
    #[serde(default)]
    pub dirs_only: Option<bool>,
    /// Show file sizes (`12.3 KB`). Default false.
    #[serde(default)]
    pub sizes: Option<bool>,
    /// First entry to show, 1-based, in the order of the listing. Default 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<u32>,
    /// Most entries to show (default 500, at most 5000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 5000))]
    pub limit: Option<u32>,
    /// Leave out what `.gitignore`, `.ignore` and `.git/info/exclude` ignore. Default true.
    #[serde(default)]
    pub respect_gitignore: Option<bool>,
}

/// Result of `list_dir`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListDirOutput {
    /// The directory listed, as given to the model.
    pub path: String,
    /// Entries in the whole listing (after filters).
    pub total_entries: usize,
    /// Directories among them.
    pub dirs: usize,
    /// Files, symlinks and others among them.
    pub files: usize,
    /// Entries shown in this page.
    pub shown: usize,
    /// The offset that continues the listing, when entries remain.
    pub next_offset: Option<usize>,
    /// True when the walk stopped early and the listing is incomplete.
    pub incomplete: bool,
    /// The entries shown, in the listing's order: paths relative to `path`, `/`-separated; a directory's ends with `/`.
    pub entries: Vec<String>,
    /// Size in bytes of each file shown, by entry path (when `sizes` was asked for).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sizes: BTreeMap<String, u64>,
    /// Where each symlink shown points, by entry path (symlinks are listed, never followed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub symlinks: BTreeMap<String, String>,
    /// Dependency and build directories shown but not descended into (`node_modules/`, `target/`, ...); list one directly to see inside.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collapsed: Vec<String>,
}

/// The `list_dir` tool.
#[derive(Debug, Default)]
pub struct ListDir;

impl TypedTool for ListDir {
    type Params = ListDirParams;
    type Output = ListDirOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("list_dir", include_str!("list_dir.md"))
            .title("List Directory")
            .category(Category::Files)
            .subject(Subject::Path)
            .permission("fs:read")
            .hints(Hints::read_only())
            .key_argument("path")
            .example(
                "List a project two levels deep",
                serde_json::json!({"path": ".", "depth": 2}),
                serde_json::json!({
                    "path": ".", "total_entries": 4, "dirs": 1, "files": 3, "shown": 4,
                    "next_offset": null, "incomplete": false,
                    "entries": ["src/", "src/main.rs", "Cargo.toml", "README.md"]
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: ListDirParams) -> ToolResult<ListDirOutput> {
        let ws = workspace(ctx)?;
        if p.depth.is_some_and(|d| d > MAX_INLINE_DEPTH) {
            // A deep walk may take a while: not on the calling thread.
            return blocking(move || list(&ws, &p)).await;
        }
        ws.run(move |ws| list(ws, &p)).await
    }
}

fn list(ws: &Workspace, p: &ListDirParams) -> Result<Reply<ListDirOutput>, ToolError> {
    let path = ws.resolve(p.path.as_deref().unwrap_or("."))?;
    let shown = ws.display(&path);
    let meta = match ws.jail.metadata(&path) {
        Ok(meta) => meta,
        Err(toolbelt_fs::FsError::NotFound { .. }) => return Err(ws.not_found(&path)),
        Err(e) => return Err(e.into()),
    };
    if meta.kind != EntryKind::Dir {
        return Err(ToolError::new(
            ErrorCode::InvalidParams,
            format!("{shown} is a {}, not a directory", meta.kind.describe()),
        )
        .hint("read_file reads a file; list_dir its directory"));
    }
    let opts = TreeOptions {
        depth: p.depth.map_or(1, |d| d.min(MAX_LIST_DEPTH) as usize),
        show_hidden: p.show_hidden.unwrap_or(false),
        respect_gitignore: p.respect_gitignore.unwrap_or(true),
        pattern: p.pattern.clone(),
        dirs_only: p.dirs_only.unwrap_or(false),
        sizes: p.sizes.unwrap_or(false),
        offset: p.offset.map_or(1, |o| o as usize),
        limit: p.limit.map_or(tree::DEFAULT_LIMIT_ENTRIES, |l| {
            l.min(MAX_LIST_LIMIT) as usize
        }),
    };
    let tree = tree::list_tree(path.abs(), &shown, &opts)?;
    Ok(reply(shown, tree))
}

fn reply(path: String, tree: Tree) -> Reply<ListDirOutput> {
    let mut out = ListDirOutput {
        path,
        total_entries: tree.total_entries,
        dirs: tree.dirs,
        files: tree.files,
        shown: tree.shown,
        next_offset: tree.next_offset,
        incomplete: tree.walk_truncated,
        entries: Vec::with_capacity(tree.entries.len()),
        sizes: BTreeMap::new(),
        symlinks: BTreeMap::new(),
        collapsed: Vec::new(),
    };
    for e in tree.entries {
        if let Some(size) = e.size {
            out.sizes.insert(e.path.clone(), size);
        }
        if let Some(target) = e.target {
            out.symlinks.insert(e.path.clone(), target);
        }
        if e.collapsed {
            out.collapsed.push(e.path.clone());
        }
        out.entries.push(e.path);
    }
    let stats = (out.shown, out.total_entries);
    Reply::new(out, tree.text)
        .partial(tree.walk_truncated)
        .stat("entries", stats.0)
        .stat("total_entries", stats.1)
}
