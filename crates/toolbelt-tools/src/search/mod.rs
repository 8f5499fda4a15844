//! The search toolset: [`grep::Grep`] searches file contents (ripgrep's engine),
//! [`glob::Glob`] finds files by name; and what they share: the search root
//! resolved through the jail, the time budget, the secret files withheld, and the
//! watch that stops a search and reports its progress.

pub(crate) mod glob;
pub(crate) mod grep;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use toolbelt_core::human::noun;

use toolbelt_core::{ErrorCode, ToolContext, ToolError};
use toolbelt_fs::{EntryKind, FsError, WorkPath};
use toolbelt_policy::secret_file_label;
use toolbelt_search::{Budget, Withhold};

use crate::workspace::Workspace;

/// Default time budget of one search.
pub const DEFAULT_SEARCH_TIMEOUT_MS: u64 = 30_000;

/// Share of the call's own timeout a search may use, in percent, so that partial
/// results come back before the call is cut off.
const BUDGET_SHARE_PERCENT: u32 = 90;

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
                            "{what}: {now} {} walked in {:.1} s",
                            noun(now, "entry", "entries"),
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
