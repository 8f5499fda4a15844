//! The workspace every toolset works in: the jail opened from the session's
//! roots, paths resolved and shown relative to the cwd, the deny rules checked again
//! on real paths, "did you mean" for a path that does not exist, and the optimistic
//! lock (a file must be unchanged since the agent last read it). The file tools,
//! the search tools, `bash` and `message` reach the workspace through [`workspace`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_core::error_chain;
use toolbelt_core::sync::lock;
use toolbelt_core::{Authorizer, Decision, Request};
use toolbelt_core::{ErrorCode, FileStamps, Stamp, ToolContext, ToolError};
use toolbelt_fs::{FsError, Jail, TempJournal, WorkPath, content_hash};

/// The permission that marks a request as a file-system one for the policy.
const FS_PERMISSION: &str = "fs:read";
/// What a tool that writes a path is checked as, on its real path.
const WRITE_PERMISSION: &str = "fs:write";

/// Lines of "what changed" shown in a conflict.
const MAX_CONFLICT_DIFF_LINES: usize = 40;

/// How many "did you mean" names a not-found error offers.
const MAX_SUGGESTIONS: usize = 3;

/// The workspace as one call sees it.
#[derive(Debug)]
pub(crate) struct Workspace {
    /// The roots, as directory handles.
    pub jail: Arc<Jail>,
    /// The working directory relative paths start from.
    pub cwd: PathBuf,
    stamps: Arc<FileStamps>,
    authorizer: Option<Arc<dyn Authorizer>>,
    tool: String,
    /// Small operations may run on the calling thread ([`Workspace::run`]).
    inline: bool,
    /// The calls are a small model's ([`toolbelt_core::Session::small_model`]).
    pub small_model: bool,
}

/// Opens the session's roots for one call.
pub(crate) fn workspace(ctx: &ToolContext) -> Result<Workspace, ToolError> {
    let session = ctx.session();
    let jail = jail_for(session.roots(), session.temp_journal())?;
    let inline = session.inline_file_work()
        && !INLINE_TOO_SLOW.load(Ordering::Relaxed)
        && toolbelt_fs::mounts::on_local_filesystems(session.roots());
    Ok(Workspace {
        inline,
        small_model: session.small_model(),
        jail,
        cwd: session.cwd().to_path_buf(),
        stamps: Arc::clone(session.file_stamps()),
        authorizer: ctx.authorizer().cloned(),
        tool: ctx.tool().to_owned(),
    })
}

/// Jails kept between calls, by their roots: opening one resolves and opens every
/// root, which costs more than a small read. A kept jail serves only while
/// [`Jail::is_current`] (its roots were not removed, replaced or re-pointed).
static JAILS: LazyLock<Mutex<HashMap<Vec<PathBuf>, Arc<Jail>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Distinct root sets kept at most; past it, all are forgotten and opened again.
const MAX_KEPT_JAILS: usize = 16;

/// The journals of temporary files' directories, one per file for the process, so
/// that each directory is noted once however often its jail is opened again.
static JOURNALS: LazyLock<Mutex<HashMap<PathBuf, Arc<TempJournal>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Distinct journals kept at most; past it, all are forgotten.
const MAX_KEPT_JOURNALS: usize = 16;

/// The jail of `roots`, noting its temporary files' directories in `journal`: a
/// kept one while it is current, else newly opened.
fn jail_for(roots: &[PathBuf], journal: Option<&Path>) -> Result<Arc<Jail>, FsError> {
    let kept = lock(&JAILS).get(roots).cloned();
    let same_journal = |j: &Jail| j.journal().map(|j| j.path()) == journal;
    if let Some(jail) = kept.filter(|j| same_journal(j) && j.is_current()) {
        return Ok(jail);
    }
    let mut jail = Jail::open(roots)?;
    if let Some(path) = journal {
        jail = jail.with_journal(journal_at(path));
    }
    let jail = Arc::new(jail);
    let mut jails = lock(&JAILS);
    if jails.len() >= MAX_KEPT_JAILS {
        jails.clear();
    }
    jails.insert(roots.to_vec(), Arc::clone(&jail));
    Ok(jail)
}

/// The process's journal kept in the file `path`.
fn journal_at(path: &Path) -> Arc<TempJournal> {
    let mut journals = lock(&JOURNALS);
    if let Some(journal) = journals.get(path) {
        return Arc::clone(journal);
    }
    if journals.len() >= MAX_KEPT_JOURNALS {
        journals.clear();
    }
    let journal = Arc::new(TempJournal::new(path));
    journals.insert(path.to_path_buf(), Arc::clone(&journal));
    journal
}

impl Workspace {
    /// Resolves a path given by the model. The registry checked the permission
    /// rules against the path as given; where symlinks lead elsewhere, the deny
    /// rules (and the secret-file defaults) are checked again on the real path.
    pub fn resolve(&self, path: &str) -> Result<WorkPath, ToolError> {
        self.resolve_as(path, FS_PERMISSION)
    }

    /// [`Workspace::resolve`] for a path the tool writes: the rules that deny only
    /// writes (the workspace's configuration and hook scripts) are checked on the
    /// real path too, so a link or a patch does not get past them.
    pub fn resolve_write(&self, path: &str) -> Result<WorkPath, ToolError> {
        self.resolve_as(path, WRITE_PERMISSION)
    }

    fn resolve_as(&self, path: &str, permission: &str) -> Result<WorkPath, ToolError> {
        let p = self.jail.resolve(&self.cwd, path)?;
        if let Some(rule) = self.denied_as(&p, permission) {
            return Err(ToolError::new(
                ErrorCode::AccessDenied,
                format!("{path} leads to {}, which is denied by {rule}", self.display(&p)),
            )
            .hint("do not retry this call; choose another way or ask the user to change the permission rules"));
        }
        Ok(p)
    }

    /// The deny rule (or built-in default) that covers `p` for a request with
    /// `permission`, if any.
    fn denied_as(&self, p: &WorkPath, permission: &str) -> Option<String> {
        let authorizer = self.authorizer.as_ref()?;
        let subject = p.abs().to_string_lossy();
        let eval = authorizer.evaluate(&Request {
            tool: &self.tool,
            alias: None,
            subject: Some(&subject),
            permissions: &[permission.to_owned()],
        });
        (eval.decision == Decision::Deny).then(|| {
            eval.rule
                .map_or_else(|| "the policy".to_owned(), |r| format!("the rule `{r}`"))
        })
    }

    /// True when files the tool did not name itself (search results) must skip the
    /// built-in secret files.
    pub fn skips_secret_files(&self) -> bool {
        self.authorizer
            .as_ref()
            .is_some_and(|a| a.secret_defaults())
    }

    /// The path as the model should see it.
    pub fn display(&self, p: &WorkPath) -> String {
        p.display(&self.cwd)
    }

    /// NOT_FOUND for `p`, with the closest names in its directory as suggestions.
    pub fn not_found(&self, p: &WorkPath) -> ToolError {
        let shown = self.display(p);
        let suggestions = self.suggestions(p);
        let mut err = ToolError::new(ErrorCode::NotFound, format!("{shown} does not exist"));
        if let Some(first) = suggestions.first() {
            let others = if suggestions.len() > 1 {
                format!(" (or {})", suggestions[1..].join(", "))
            } else {
                String::new()
            };
            err = err.hint(format!("did you mean {first}?{others}"));
        } else if let Some(missing) = self.missing_ancestor(p) {
            err = err.hint(format!(
                "the directory {missing} does not exist either; list_dir shows what is there"
            ));
        }
        err.data(json!({ "path": shown, "suggestions": suggestions }))
    }

    /// Names near `p`'s file name in its directory, best first.
    fn suggestions(&self, p: &WorkPath) -> Vec<String> {
        let (Some(parent), Some(name)) = (p.abs().parent(), p.abs().file_name()) else {
            return Vec::new();
        };
        let name = name.to_string_lossy().to_lowercase();
        let Ok(dir) = self.jail.lexical(&self.cwd, &parent.to_string_lossy()) else {
            return Vec::new();
        };
        let Ok(entries) = self.jail.read_dir(&dir) else {
            return Vec::new();
        };
        let mut scored: Vec<(f64, String)> = entries
            .into_iter()
            .filter_map(|e| {
                let lower = e.name.to_lowercase();
                let contains = !name.is_empty() && (lower.contains(&name) || name.contains(&lower));
                // One typo (a swap, a missing, extra or wrong letter) counts even in
                // short names, where similarity scores are low (`scr` for `src`).
                let typo =
                    name.chars().count() >= 3 && strsim::damerau_levenshtein(&name, &lower) <= 1;
                let score = strsim::jaro_winkler(&name, &lower)
                    .max(if contains { 0.85 } else { 0.0 })
                    .max(if typo { 0.8 } else { 0.0 });
                (score >= 0.75).then_some((score, e.name))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(MAX_SUGGESTIONS)
            .map(|(_, n)| {
                let sibling = dir.abs().join(&n);
                match sibling.strip_prefix(&self.cwd) {
                    Ok(rel) => rel.display().to_string(),
                    Err(_) => sibling.display().to_string(),
                }
            })
            .collect()
    }

    /// The highest missing directory above `p`, as shown to the model.
    fn missing_ancestor(&self, p: &WorkPath) -> Option<String> {
        let mut missing = None;
        let mut at: Option<&Path> = p.abs().parent();
        while let Some(dir) = at {
            let Ok(wp) = self.jail.lexical(&self.cwd, &dir.to_string_lossy()) else {
                break;
            };
            if self.jail.exists(&wp) {
                break;
            }
            missing = Some(self.display(&wp));
            at = dir.parent();
        }
        missing
    }

    /// The optimistic lock. `current` is the file's content now, read while holding
    /// `jail.lock(p)`. Passes when it matches `expected_hash`, or, without one, the
    /// agent's last read of `p`.
    pub fn check_fresh(
        &self,
        p: &WorkPath,
        current: &[u8],
        expected_hash: Option<&str>,
    ) -> Result<(), ToolError> {
        let shown = self.display(p);
        let now = content_hash(current);
        if let Some(expected) = expected_hash.map(str::trim) {
            if expected.eq_ignore_ascii_case(&now) {
                return Ok(());
            }
            let what = match self.stamps.get(p.abs()) {
                Some(stamp) if stamp.hash.eq_ignore_ascii_case(expected) => {
                    what_changed(&stamp, current)
                }
                _ => format!("its content hash is now {now}"),
            };
            return Err(ToolError::new(
                ErrorCode::Conflict,
                format!("{shown} does not match expected_hash {expected}: {what}"),
            )
            .hint("read the file again and redo the change on its current content")
            .data(json!({ "path": shown, "expected_hash": expected, "current_hash": now })));
        }
        match self.stamps.get(p.abs()) {
            None => Err(ToolError::new(
                ErrorCode::Conflict,
                format!("{shown} exists and has not been read yet, so changing it could overwrite work you have not seen"),
            )
            .hint("read it first with read_file (or pass expected_hash), then retry")
            .data(json!({ "path": shown, "current_hash": now }))),
            Some(stamp) if stamp.hash == now => Ok(()),
            Some(stamp) => Err(ToolError::new(
                ErrorCode::Conflict,
                format!(
                    "{shown} changed since you last read it: {}",
                    what_changed(&stamp, current)
                ),
            )
            .hint("read the file again and redo the change on its current content")
            .data(json!({ "path": shown, "read_hash": stamp.hash, "current_hash": now }))),
        }
    }

    /// Takes what other replicas of the server last saw of `paths` (when the stamps
    /// are shared), so that the optimistic lock of a write knows of a read another
    /// replica answered. A path that does not resolve is left to the write to
    /// report.
    pub async fn refresh_stamps<'a>(&self, paths: impl IntoIterator<Item = &'a str>) {
        if !self.stamps.is_shared() {
            return;
        }
        for path in paths {
            if let Ok(p) = self.resolve(path) {
                self.stamps.refresh(p.abs()).await;
            }
        }
    }

    /// Records `bytes` as the agent's view of `p`; returns the content hash.
    pub fn record(&self, p: &WorkPath, bytes: &[u8]) -> String {
        let hash = content_hash(bytes);
        self.stamps.record(p.abs(), Stamp::new(hash.clone(), bytes));
        hash
    }

    /// Records `bytes` as what the agent has just read of `p`; returns the content
    /// hash. Unlike [`Workspace::record`], `p` counts as read
    /// ([`Workspace::was_read`]).
    pub fn record_read(&self, p: &WorkPath, bytes: &[u8]) -> String {
        let hash = content_hash(bytes);
        self.stamps
            .record_read(p.abs(), Stamp::new(hash.clone(), bytes));
        hash
    }

    /// Whether the agent read `p` in this session ([`Workspace::record_read`]).
    pub fn was_read(&self, p: &WorkPath) -> bool {
        self.stamps.was_read(p.abs())
    }

    /// Forgets the agent's view of `p` (after a delete).
    pub fn forget(&self, p: &WorkPath) {
        self.stamps.forget(p.abs());
    }
}

/// "what changed" between a stamp and the current content: a short diff when the
/// stamp kept the old content, sizes otherwise.
fn what_changed(stamp: &Stamp, current: &[u8]) -> String {
    let size = format!("{} -> {} bytes", stamp.size, current.len());
    let Some(old) = &stamp.snapshot else {
        return format!("{size} (read again to see the new content)");
    };
    let (Ok(old), Ok(new)) = (std::str::from_utf8(old), std::str::from_utf8(current)) else {
        return size;
    };
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(1)
        .header("as you read it", "now")
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut shown = lines
        .iter()
        .take(MAX_CONFLICT_DIFF_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    if lines.len() > MAX_CONFLICT_DIFF_LINES {
        shown.push_str(&format!(
            "\n... {} more diff lines",
            lines.len() - MAX_CONFLICT_DIFF_LINES
        ));
    }
    format!("{size}\n{shown}")
}

/// Runs blocking file work off the async runtime.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(err) => Err(ToolError::new(
            ErrorCode::Internal,
            format!(
                "the file operation stopped unexpectedly: {}",
                error_chain(&err)
            ),
        )),
    }
}

/// An operation run inline that takes longer than this marks the filesystem as
/// too slow for it: from then on, every operation goes to a worker thread.
const INLINE_SLOW: Duration = Duration::from_secs(1);

/// Set once an inline operation took longer than [`INLINE_SLOW`].
static INLINE_TOO_SLOW: AtomicBool = AtomicBool::new(false);

impl Workspace {
    /// Runs a small file operation: on this thread when the session allows it and
    /// the roots are on local filesystems (no hand-over between threads, which costs
    /// more than the operation), else on a worker thread like [`blocking`].
    ///
    /// # Security
    /// Inline work is never done on a network or FUSE filesystem, where an operation
    /// can hang for as long as its server is away; one that still takes over
    /// [`INLINE_SLOW`] sends all later operations to worker threads.
    pub async fn run<T: Send + 'static>(
        self,
        f: impl FnOnce(&Workspace) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        if !self.inline {
            return blocking(move || f(&self)).await;
        }
        let started = Instant::now();
        let result = f(&self);
        if started.elapsed() > INLINE_SLOW && !INLINE_TOO_SLOW.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                tool = %self.tool,
                elapsed_ms = started.elapsed().as_millis(),
                "a file operation took over a second; file work moves to worker threads"
            );
        }
        result
    }
}
