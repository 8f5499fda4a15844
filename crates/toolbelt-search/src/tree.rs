//! The directory tree behind list_dir.
//!
//! [`list_tree`] walks a directory with `read_dir` down to a depth and
//! returns a [`Tree`]: the entries sorted (directories first, then by name), rendered
//! as text in the tree format below, and as a flat list of [`TreeEntry`]s (paths
//! relative to the listed directory) for JSON.
//!
//! ```text
//! 📁 project/
//! ├── 📁 src/
//! │   ├── lib.rs (1.2 KB)
//! │   └── main.rs (310 B)
//! ├── 📁 node_modules/ (not expanded)
//! └── README.md (2.4 KB)
//! ```
//!
//! What is listed:
//! - `.gitignore`, `.ignore` and `.git/info/exclude` rules apply unless
//!   [`TreeOptions::respect_gitignore`] is off, in a git repository or not;
//! - hidden entries (names starting with `.`) only with [`TreeOptions::show_hidden`];
//!   `.git` itself is never listed;
//! - the directories in [`COLLAPSED_DIRS`] (`node_modules`, `target`, ...) are shown
//!   but not descended into below the listed directory, marked `(not expanded)`; list
//!   one directly to see inside it;
//! - [`TreeOptions::pattern`] keeps entries whose name matches the glob (or whose path
//!   relative to the listed directory matches, when the glob has a `/`), plus the
//!   directories leading to them; [`TreeOptions::dirs_only`] keeps directories only;
//! - symlinks are listed with their target and never followed.
//!
//! Entries are numbered in the order they are shown; [`TreeOptions::offset`] and
//! [`TreeOptions::limit`] page through them. A page that starts inside a directory
//! repeats the directories above its first entry so it can be read on its own.
//!
//! ```
//! use toolbelt_search::tree::{TreeOptions, list_tree};
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::create_dir(dir.path().join("src")).unwrap();
//! std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
//! std::fs::write(dir.path().join("README.md"), "").unwrap();
//! let tree = list_tree(dir.path(), "project", &TreeOptions { depth: 2, ..TreeOptions::default() }).unwrap();
//! assert_eq!(tree.text, "📁 project/\n├── 📁 src/\n│   └── lib.rs\n└── README.md\n[3 entries: 1 directory, 2 files]");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use crate::rules::{Found, Rules};

/// Entries shown by default.
pub const DEFAULT_LIMIT_ENTRIES: usize = 500;
/// Deepest listing; deeper requests are listed to this depth.
pub const MAX_DEPTH: usize = 20;
/// Entries walked at most; a tree with more is listed from the first ones walked and
/// says so.
pub const MAX_WALK_ENTRIES: usize = 100_000;
/// Directories shown but not descended into (below the listed directory itself):
/// dependency caches and build outputs that would drown the listing.
pub const COLLAPSED_DIRS: &[&str] = &[
    "node_modules",
    "bower_components",
    "target",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".gradle",
    ".next",
];

/// What [`list_tree`] lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeOptions {
    /// Levels listed: 1 = the directory's own entries. 0 counts as 1; more than
    /// [`MAX_DEPTH`] as [`MAX_DEPTH`].
    pub depth: usize,
    /// List hidden entries (names starting with `.`); `.git` is never listed.
    pub show_hidden: bool,
    /// Apply `.gitignore`, `.ignore` and git exclude rules.
    pub respect_gitignore: bool,
    /// A glob on entry names (`*.rs`, `test_*`); with a `/` it is matched against the
    /// path relative to the listed directory (`src/**/*.rs`).
    pub pattern: Option<String>,
    /// List directories only.
    pub dirs_only: bool,
    /// Give file sizes.
    pub sizes: bool,
    /// First entry shown, 1-based; 0 means 1.
    pub offset: usize,
    /// Entries shown; 0 means [`DEFAULT_LIMIT_ENTRIES`].
    pub limit: usize,
}

impl Default for TreeOptions {
    fn default() -> TreeOptions {
        TreeOptions {
            depth: 1,
            show_hidden: false,
            respect_gitignore: true,
            pattern: None,
            dirs_only: false,
            sizes: false,
            offset: 1,
            limit: DEFAULT_LIMIT_ENTRIES,
        }
    }
}

/// The kind of a listed entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (not followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl NodeKind {
    /// `dir`, `file`, `symlink` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Dir => "dir",
            NodeKind::File => "file",
            NodeKind::Symlink => "symlink",
            NodeKind::Other => "other",
        }
    }
}

/// One entry shown in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Its path relative to the listed directory, `/`-separated; a directory's ends
    /// with `/`.
    pub path: String,
    /// What it is.
    pub kind: NodeKind,
    /// Its size in bytes, for files when sizes were asked for.
    pub size: Option<u64>,
    /// A symlink's target, as stored in the link.
    pub target: Option<String>,
    /// True for a directory of [`COLLAPSED_DIRS`] that was not descended into.
    pub collapsed: bool,
}

/// A listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// The tree as text: the root line, one line per entry shown, then a summary line.
    pub text: String,
    /// The entries shown, in the order of the listing.
    pub entries: Vec<TreeEntry>,
    /// Entries in the whole listing (after filters), shown or not.
    pub total_entries: usize,
    /// Directories among them.
    pub dirs: usize,
    /// Files (and symlinks and others) among them.
    pub files: usize,
    /// Entries on this page.
    pub shown: usize,
    /// Number of the first entry shown; 0 when none is.
    pub first_entry: usize,
    /// The offset that continues after this page, when entries remain.
    pub next_offset: Option<usize>,
    /// True when the walk stopped at [`MAX_WALK_ENTRIES`]: the listing is incomplete.
    pub walk_truncated: bool,
    /// Entries that could not be read (permission denied, vanished), with the first
    /// error's message.
    pub unreadable: usize,
    /// The first of those errors.
    pub first_error: Option<String>,
}

/// What can go wrong before anything is listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// The pattern is not a valid glob.
    #[error(
        "invalid pattern {pattern:?}: {message}; use a glob such as \"*.rs\" or \"src/**/*.py\""
    )]
    Pattern {
        /// The pattern given.
        pattern: String,
        /// What is wrong with it.
        message: String,
    },
    /// The path is not a directory.
    #[error("{} is not a directory", path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The directory cannot be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
}

struct Node {
    name: String,
    kind: NodeKind,
    size: Option<u64>,
    target: Option<String>,
    collapsed: bool,
    children: Vec<usize>,
    keep: bool,
}

/// Lists `dir` as a tree labelled `label` (shown as `📁 label/` on the first line).
///
/// # Errors
/// [`TreeError::Pattern`] for an invalid glob, [`TreeError::NotADirectory`] when `dir`
/// is not a directory, [`TreeError::Io`] when its metadata cannot be read.
/// Unreadable entries below it are counted in [`Tree::unreadable`], not errors.
///
/// # Security
/// `dir` must already be resolved inside the workspace. Symlinks beneath it are
/// listed, never followed, so the walk stays beneath `dir` unless a directory on the
/// way is swapped for a symlink while it runs; only names and sizes are read.
pub fn list_tree(dir: &Path, label: &str, opts: &TreeOptions) -> Result<Tree, TreeError> {
    let matcher = opts
        .pattern
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(|p| {
            GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map(|g| (g.compile_matcher(), p.contains('/')))
                .map_err(|e| TreeError::Pattern {
                    pattern: p.to_string(),
                    message: e.kind().to_string(),
                })
        })
        .transpose()?;
    // Opening it tells whether it is a directory: no separate look at its metadata.
    let root_entries = std::fs::read_dir(dir).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotADirectory {
            TreeError::NotADirectory {
                path: dir.to_path_buf(),
            }
        } else {
            TreeError::Io {
                path: dir.to_path_buf(),
                source,
            }
        }
    })?;

    let depth = opts.depth.clamp(1, MAX_DEPTH);
    let nodes = vec![Node {
        name: label.trim_end_matches('/').to_string(),
        kind: NodeKind::Dir,
        size: None,
        target: None,
        collapsed: false,
        children: Vec::new(),
        keep: true,
    }];
    let mut walk = Walk {
        root: dir,
        depth,
        opts,
        matcher: matcher.as_ref(),
        rules: None,
        nodes,
        truncated: false,
        unreadable: 0,
        first_error: None,
    };
    walk.visit_open(dir, root_entries, 0, 1);
    let Walk {
        mut nodes,
        truncated: walk_truncated,
        unreadable,
        first_error,
        ..
    } = walk;

    mark_kept(&mut nodes, 0);
    sort_children(&mut nodes);
    let mut flat = Vec::new();
    flatten(&nodes, 0, &mut Vec::new(), &mut flat);

    let total = flat.len();
    let limit = if opts.limit == 0 {
        DEFAULT_LIMIT_ENTRIES
    } else {
        opts.limit
    };
    let start = opts.offset.max(1);
    let end = start.saturating_add(limit - 1).min(total);
    let page: &[Line] = if start <= total {
        &flat[start - 1..end]
    } else {
        &[]
    };

    let mut text = String::new();
    let _ = writeln!(text, "📁 {}/", nodes[0].name);
    // Directories above the first entry of a page that starts inside them.
    let context: Vec<usize> = page
        .first()
        .map(|l| {
            flat[..start - 1]
                .iter()
                .filter(|c| l.ancestors.contains(&c.node))
                .map(|c| c.node)
                .collect()
        })
        .unwrap_or_default();
    for line in flat[..start.min(total + 1) - 1]
        .iter()
        .filter(|l| context.contains(&l.node))
        .chain(page)
    {
        text.push_str(&line.prefix);
        render_entry(&mut text, &nodes[line.node]);
        text.push('\n');
    }
    let dirs = flat
        .iter()
        .filter(|l| nodes[l.node].kind == NodeKind::Dir)
        .count();
    let tree = Tree {
        text: String::new(),
        entries: page.iter().map(|l| entry(&nodes, l)).collect(),
        total_entries: total,
        dirs,
        files: total - dirs,
        shown: page.len(),
        first_entry: if page.is_empty() { 0 } else { start },
        next_offset: (!page.is_empty() && end < total).then_some(end + 1),
        walk_truncated,
        unreadable,
        first_error,
    };
    let summary = summary(&tree, start, opts);
    Ok(Tree {
        text: text + &summary,
        ..tree
    })
}

/// One listing's walk: a depth-first descent with `read_dir`, no symlink
/// followed.
struct Walk<'a> {
    root: &'a Path,
    depth: usize,
    opts: &'a TreeOptions,
    /// The name glob, and whether it is matched against the relative path.
    matcher: Option<&'a (GlobMatcher, bool)>,
    /// The ignore rules, when they apply (from the listed directory's entries on).
    rules: Option<Rules>,
    nodes: Vec<Node>,
    truncated: bool,
    unreadable: usize,
    first_error: Option<String>,
}

impl Walk<'_> {
    /// Adds the entries of `dir` (node `parent`, whose entries are at `level`)
    /// and descends into its subdirectories down to the depth.
    fn visit(&mut self, dir: &Path, parent: usize, level: usize) {
        match std::fs::read_dir(dir) {
            Ok(entries) => self.visit_open(dir, entries, parent, level),
            Err(e) => self.failed(dir, &e),
        }
    }

    /// [`Walk::visit`] of a directory already opened.
    fn visit_open(&mut self, dir: &Path, entries: std::fs::ReadDir, parent: usize, level: usize) {
        // The whole directory is read first: which ignore files it holds decides
        // what of it is listed.
        let mut found = Found::default();
        let entries: Vec<_> = entries
            .filter_map(|entry| match entry {
                Ok(entry) => {
                    let name = entry.file_name();
                    found.note(&name);
                    Some((entry, name))
                }
                Err(e) => {
                    self.failed(dir, &e);
                    None
                }
            })
            .collect();
        if self.opts.respect_gitignore {
            match &mut self.rules {
                Some(rules) => rules.enter(dir, found),
                None => self.rules = Some(Rules::for_dir(dir, found)),
            }
        }
        self.visit_entries(entries, parent, level);
        if level > 1
            && let Some(rules) = &mut self.rules
        {
            rules.leave();
        }
    }

    fn visit_entries(
        &mut self,
        entries: Vec<(std::fs::DirEntry, std::ffi::OsString)>,
        parent: usize,
        level: usize,
    ) {
        let mut subdirs = Vec::new();
        for (entry, file_name) in entries {
            if self.truncated {
                return;
            }
            let name = file_name.to_string_lossy();
            if name == ".git" || (!self.opts.show_hidden && name.starts_with('.')) {
                continue;
            }
            let path = entry.path();
            let file_type = match entry.file_type() {
                Ok(t) => t,
                Err(e) => {
                    self.failed(&path, &e);
                    continue;
                }
            };
            let kind = if file_type.is_dir() {
                NodeKind::Dir
            } else if file_type.is_file() {
                NodeKind::File
            } else if file_type.is_symlink() {
                NodeKind::Symlink
            } else {
                NodeKind::Other
            };
            if self
                .rules
                .as_ref()
                .is_some_and(|r| r.ignored(&path, kind == NodeKind::Dir))
            {
                continue;
            }
            if self.nodes.len() > MAX_WALK_ENTRIES {
                self.truncated = true;
                return;
            }
            let name = name.into_owned();
            let collapsed = kind == NodeKind::Dir && COLLAPSED_DIRS.contains(&name.as_str());
            let size = match kind {
                NodeKind::File if self.opts.sizes => entry.metadata().ok().map(|m| m.len()),
                _ => None,
            };
            let target = (kind == NodeKind::Symlink)
                .then(|| std::fs::read_link(&path).ok())
                .flatten()
                .map(|t| t.to_string_lossy().into_owned());
            let self_match = (!self.opts.dirs_only || kind == NodeKind::Dir)
                && self.matcher.is_none_or(|(m, by_path)| {
                    if *by_path {
                        m.is_match(path.strip_prefix(self.root).unwrap_or(&path))
                    } else {
                        m.is_match(&name)
                    }
                });
            let expanded = kind == NodeKind::Dir && !collapsed && level < self.depth;
            let id = self.nodes.len();
            self.nodes.push(Node {
                name,
                kind,
                size,
                target,
                collapsed,
                children: Vec::new(),
                keep: self_match,
            });
            self.nodes[parent].children.push(id);
            if expanded {
                subdirs.push((path, id));
            }
        }
        for (path, id) in subdirs {
            self.visit(&path, id, level + 1);
        }
    }

    /// Counts an entry that cannot be read; keeps the first error.
    fn failed(&mut self, path: &Path, e: &std::io::Error) {
        self.unreadable += 1;
        self.first_error
            .get_or_insert_with(|| format!("{}: {e}", path.display()));
    }
}

/// Keeps a directory when something beneath it is kept; returns whether `id` is kept.
fn mark_kept(nodes: &mut [Node], id: usize) -> bool {
    let children = std::mem::take(&mut nodes[id].children);
    let mut any = false;
    for &c in &children {
        any |= mark_kept(nodes, c);
    }
    nodes[id].children = children;
    nodes[id].keep |= any;
    nodes[id].keep
}

fn sort_children(nodes: &mut [Node]) {
    for id in 0..nodes.len() {
        let mut children = std::mem::take(&mut nodes[id].children);
        children.retain(|&c| nodes[c].keep);
        // Each name is lowercased once, not once per comparison.
        children.sort_by_cached_key(|&c| order_key(&nodes[c]));
        nodes[id].children = children;
    }
}

/// The sort key of a node: directories first, then by name ignoring case, then by
/// name.
fn order_key(n: &Node) -> (bool, Cow<'_, str>, &str) {
    let changes = if n.name.is_ascii() {
        n.name.bytes().any(|b| b.is_ascii_uppercase())
    } else {
        n.name.chars().any(|c| c.to_lowercase().ne([c]))
    };
    let folded = if changes {
        Cow::Owned(n.name.to_lowercase())
    } else {
        Cow::Borrowed(n.name.as_str())
    };
    (n.kind != NodeKind::Dir, folded, &n.name)
}

struct Line {
    node: usize,
    prefix: String,
    ancestors: Vec<usize>,
}

fn flatten(nodes: &[Node], id: usize, path: &mut Vec<(usize, bool)>, out: &mut Vec<Line>) {
    let children = &nodes[id].children;
    for (i, &c) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let mut prefix = String::new();
        for &(_, ancestor_last) in path.iter() {
            prefix.push_str(if ancestor_last { "    " } else { "│   " });
        }
        prefix.push_str(if last { "└── " } else { "├── " });
        out.push(Line {
            node: c,
            prefix,
            ancestors: path.iter().map(|&(a, _)| a).collect(),
        });
        path.push((c, last));
        flatten(nodes, c, path, out);
        path.pop();
    }
}

fn render_entry(out: &mut String, node: &Node) {
    match node.kind {
        NodeKind::Dir => {
            let _ = write!(out, "📁 {}/", node.name);
            if node.collapsed {
                out.push_str(" (not expanded)");
            }
        }
        NodeKind::Symlink => {
            let _ = write!(
                out,
                "{} -> {}",
                node.name,
                node.target.as_deref().unwrap_or("?")
            );
        }
        NodeKind::File | NodeKind::Other => out.push_str(&node.name),
    }
    if let Some(size) = node.size {
        let _ = write!(out, " ({})", human_bytes(size));
    }
}

/// The entry of `line`, with its path relative to the listed directory.
fn entry(nodes: &[Node], line: &Line) -> TreeEntry {
    let node = &nodes[line.node];
    let mut path = String::with_capacity(node.name.len() + 1);
    for &a in &line.ancestors {
        path.push_str(&nodes[a].name);
        path.push('/');
    }
    path.push_str(&node.name);
    if node.kind == NodeKind::Dir {
        path.push('/');
    }
    TreeEntry {
        path,
        kind: node.kind,
        size: node.size,
        target: node.target.clone(),
        collapsed: node.collapsed,
    }
}

fn summary(tree: &Tree, start: usize, opts: &TreeOptions) -> String {
    let total = tree.total_entries;
    let mut out = String::from("[");
    if total == 0 {
        out.push_str(if opts.pattern.is_some() || opts.dirs_only {
            "no entries match"
        } else {
            "empty directory"
        });
    } else {
        let _ = write!(
            out,
            "{} {}: {} {}, {} {}",
            group(total),
            plural(total, "entry", "entries"),
            group(tree.dirs),
            plural(tree.dirs, "directory", "directories"),
            group(tree.files),
            plural(tree.files, "file", "files"),
        );
    }
    if tree.shown < total {
        if tree.shown == 0 {
            let _ = write!(
                out,
                "; offset {start} is past the last entry, use an offset from 1 to {total}"
            );
        } else {
            let _ = write!(out, "; showing {} of {}", group(tree.shown), group(total));
            if tree.first_entry > 1 {
                let _ = write!(
                    out,
                    " (entries {}-{})",
                    group(tree.first_entry),
                    group(tree.first_entry + tree.shown - 1)
                );
            }
            if let Some(next) = tree.next_offset {
                let _ = write!(out, "; continue with offset={next}");
            }
        }
    }
    if tree.walk_truncated {
        let _ = write!(
            out,
            "; stopped after {} entries walked, so the listing is incomplete: list a subdirectory or use a smaller depth",
            group(MAX_WALK_ENTRIES)
        );
    }
    if tree.unreadable > 0 {
        let _ = write!(
            out,
            "; {} {} could not be read ({})",
            group(tree.unreadable),
            plural(tree.unreadable, "entry", "entries"),
            tree.first_error.as_deref().unwrap_or("unknown error")
        );
    }
    out.push(']');
    out
}

/// A byte count in decimal units (the one format of `toolbelt_core::human`).
pub fn human_bytes(n: u64) -> String {
    usize::try_from(n).map_or_else(|_| format!("{n} B"), toolbelt_fs::text::human_bytes)
}

fn group(n: usize) -> String {
    toolbelt_fs::text::group(n)
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
