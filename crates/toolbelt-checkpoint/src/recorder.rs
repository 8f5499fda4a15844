//! The registry's [`Checkpointer`]: before a call, the bytes of the paths it
//! names (or a walk of the workspace, for a shell command); after it, what
//! changed, as one checkpoint in the store.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolbelt_core::checkpoint::RevertFailed;
use toolbelt_core::hooks::ChangedFile;
use toolbelt_core::{
    BoxFuture, Changes, CheckpointCall, CheckpointNote, CheckpointRefused, Checkpointer, Envelope,
    Origin, PendingCheckpoint, error_chain,
};
use toolbelt_store::{CheckpointRecord, FileChange, FileState, insert_checkpoint, mark_reverted};

use crate::rewind::RewindRequest;

use crate::error::CheckpointError;
use crate::index::{Entry, Index, index_path, walk};
use crate::observe::{Captured, DIR, FILE, Stat, capture, same_state, stat};
use crate::workspace::{Checkpoints, Inner};

/// Where a call came from and what it was, for its record.
#[derive(Clone)]
struct CallMeta {
    tool: String,
    call_id: String,
    origin: String,
    at_ms: i64,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What a capture before a call gives: a problem when it went wrong.
fn problem_of(e: &CheckpointError) -> String {
    if e.is_no_space() {
        "checkpoint not taken: no space left on the device".to_string()
    } else {
        format!("checkpoint partial: {}", error_chain(e))
    }
}

impl Checkpointer for Checkpoints {
    fn before<'a>(
        &'a self,
        call: CheckpointCall<'a>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn PendingCheckpoint>>, CheckpointRefused>> {
        Box::pin(async move {
            if !self.inner.settings.enabled {
                return Ok(None);
            }
            let meta = CallMeta {
                tool: call.tool.to_string(),
                call_id: call.call_id.to_string(),
                origin: serde_json::to_string(call.origin).unwrap_or_default(),
                at_ms: now_ms(),
            };
            let inner = Arc::clone(&self.inner);
            let required = self.inner.settings.required;
            let failed = |e: tokio::task::JoinError| CheckpointRefused {
                reason: format!("the checkpoint task failed: {e}"),
            };
            let (pending, refusal): (Box<dyn PendingCheckpoint>, Option<String>) = match call
                .changes
            {
                Changes::Nothing => return Ok(None),
                Changes::Paths(paths) => {
                    let cwd = call.cwd.to_path_buf();
                    let paths = paths.clone();
                    let taken = tokio::task::spawn_blocking(move || {
                        PathsPending::take(inner, meta, &cwd, &paths)
                    })
                    .await
                    .map_err(failed)?;
                    let refusal = taken.not_taken.then(|| taken.problem.clone()).flatten();
                    (Box::new(taken), refusal)
                }
                Changes::Unknown => {
                    let taken = tokio::task::spawn_blocking(move || WalkPending::take(inner, meta))
                        .await
                        .map_err(failed)?;
                    let refusal = taken.not_taken.then(|| taken.problem.clone()).flatten();
                    (Box::new(taken), refusal)
                }
            };
            if required && let Some(reason) = refusal {
                return Err(CheckpointRefused { reason });
            }
            Ok(Some(pending))
        })
    }

    fn revert<'a>(
        &'a self,
        id: &'a str,
        origin: &'a Origin,
    ) -> BoxFuture<'a, Result<usize, RevertFailed>> {
        Box::pin(async move {
            let failed = |e: CheckpointError| RevertFailed(Box::new(e));
            let number = crate::parse_id(id).map_err(failed)?;
            let outcome = self
                .rewind(&RewindRequest {
                    to: number,
                    only: true,
                    origin: origin.clone(),
                    ..RewindRequest::default()
                })
                .await
                .map_err(failed)?;
            let store = self
                .inner
                .store
                .store()
                .await
                .map_err(|e| failed(e.into()))?;
            mark_reverted(store, number, "undone by a hook after the call")
                .await
                .map_err(|e| failed(e.into()))?;
            Ok(outcome.restored)
        })
    }
}

/// The paths a file tool named, with their state before the call.
struct PathsPending {
    inner: Arc<Inner>,
    meta: CallMeta,
    /// Root, path in it, absolute path, state before.
    items: Vec<(PathBuf, String, PathBuf, Captured)>,
    problem: Option<String>,
    not_taken: bool,
    stored: u64,
}

impl PathsPending {
    fn take(inner: Arc<Inner>, meta: CallMeta, cwd: &Path, paths: &[PathBuf]) -> PathsPending {
        let mut out = PathsPending {
            inner: Arc::clone(&inner),
            meta,
            items: Vec::new(),
            problem: None,
            not_taken: false,
            stored: 0,
        };
        for p in paths {
            let abs = toolbelt_core::checkpoint::absolute_path(cwd, p);
            let Some((root, rel)) = inner.locate(&abs) else {
                continue;
            };
            if out.items.iter().any(|(_, _, a, _)| *a == abs) {
                continue;
            }
            // Directories the tool may make on the way (`create_dirs`) are
            // recorded too, so that a rewind removes them again.
            let mut missing = abs.parent();
            while let Some(dir) = missing {
                if dir.exists() || !dir.starts_with(&root) || dir == root {
                    break;
                }
                if let Some((dir_root, dir_rel)) = inner.locate(dir)
                    && !out.items.iter().any(|(_, _, a, _)| a == dir)
                {
                    out.items.push((
                        dir_root,
                        dir_rel,
                        dir.to_path_buf(),
                        Captured {
                            state: FileState::absent(),
                            captured: true,
                            note: None,
                            stored: 0,
                        },
                    ));
                }
                missing = dir.parent();
            }
            let captured = stat(&abs)
                .map_err(|e| CheckpointError::io("read", &abs, e))
                .and_then(|st| {
                    capture(
                        &abs,
                        st.as_ref(),
                        &inner.blobs,
                        inner.settings.max_file_bytes,
                        true,
                    )
                });
            match captured {
                Ok(c) => {
                    out.stored += c.stored;
                    out.items.push((root, rel, abs, c));
                }
                Err(e) => {
                    out.not_taken |= e.is_no_space();
                    out.problem = Some(problem_of(&e));
                    if e.is_no_space() {
                        out.items.clear();
                        break;
                    }
                }
            }
        }
        out
    }

    fn finish(self) -> (Vec<FileChange>, Option<String>, u64, Arc<Inner>, CallMeta) {
        let mut changes = Vec::new();
        let mut stored = self.stored;
        for (root, rel, abs, before) in &self.items {
            // The content after is kept too: the checkpoint's diff shows it.
            let after = stat(abs).ok().and_then(|st| {
                capture(
                    abs,
                    st.as_ref(),
                    &self.inner.blobs,
                    self.inner.settings.max_file_bytes,
                    true,
                )
                .ok()
            });
            let Some(after) = after else {
                continue;
            };
            stored += after.stored;
            self.inner.forget(root, rel);
            if same_state(&before.state, &after.state) && before.captured {
                continue;
            }
            changes.push(FileChange {
                path: self.inner.record_path(root, rel),
                change: change_kind(&before.state, &after.state).to_string(),
                renamed_from: None,
                before: before.state.clone(),
                after: after.state,
                captured: before.captured,
                note: before.note.clone(),
            });
        }
        pair_renames_by_hash(&mut changes);
        (changes, self.problem, stored, self.inner, self.meta)
    }
}

impl PendingCheckpoint for PathsPending {
    fn after(self: Box<Self>, _envelope: &Envelope) -> BoxFuture<'static, CheckpointNote> {
        Box::pin(async move {
            if self.not_taken {
                return CheckpointNote {
                    id: None,
                    files: 0,
                    changed: Vec::new(),
                    problem: self.problem,
                };
            }
            let finished = tokio::task::spawn_blocking(move || self.finish()).await;
            let Ok((changes, problem, stored, inner, meta)) = finished else {
                return CheckpointNote {
                    id: None,
                    files: 0,
                    changed: Vec::new(),
                    problem: Some("checkpoint partial: the checkpoint task failed".into()),
                };
            };
            keep(&inner, meta, changes, problem, stored).await
        })
    }
}

/// The roots walked before a shell command (their indexes are the state before).
struct WalkPending {
    inner: Arc<Inner>,
    meta: CallMeta,
    problem: Option<String>,
    not_taken: bool,
    stored: u64,
    /// Roots whose walk before was cut short: their deletions are not known.
    cut: Vec<PathBuf>,
}

impl WalkPending {
    fn take(inner: Arc<Inner>, meta: CallMeta) -> WalkPending {
        let mut out = WalkPending {
            inner: Arc::clone(&inner),
            meta,
            problem: None,
            not_taken: false,
            stored: 0,
            cut: Vec::new(),
        };
        let deadline = Instant::now() + inner.settings.walk_budget;
        for root in &inner.roots {
            let index = inner.index(root);
            let mut index = toolbelt_core::sync::lock(&index);
            // Nothing happened in the workspace since the last walk began: the
            // index is the disk as it is.
            let unchanged = toolbelt_core::sync::lock(&inner.watches)
                .get_mut(root)
                .is_some_and(|w| {
                    let seen = w.drain();
                    let unchanged = w.clean && !seen;
                    w.clean = false;
                    unchanged
                });
            if unchanged && index.complete {
                continue;
            }
            match refresh(&inner, root, &mut index, deadline) {
                Ok(r) => {
                    out.stored += r.stored;
                    if r.cut || r.uncaptured > 0 {
                        out.cut.push(root.clone());
                        out.problem = Some(partial_note(&inner, r.uncaptured));
                    }
                }
                Err(e) => {
                    out.not_taken |= e.is_no_space();
                    out.problem = Some(problem_of(&e));
                }
            }
        }
        out
    }

    fn finish(self) -> (Vec<FileChange>, Option<String>, u64, Arc<Inner>, CallMeta) {
        let deadline = Instant::now() + self.inner.settings.walk_budget;
        let mut changes = Vec::new();
        let mut problem = self.problem.clone();
        let mut stored = self.stored;
        for root in &self.inner.roots {
            let index = self.inner.index(root);
            let mut index = toolbelt_core::sync::lock(&index);
            // What the command did is found by the walk, which begins after this.
            if let Some(w) = toolbelt_core::sync::lock(&self.inner.watches).get_mut(root) {
                w.drain();
                w.clean = false;
            }
            let mut whole = false;
            match diff(&self.inner, root, &mut index, deadline) {
                Ok(d) => {
                    stored += d.stored;
                    if d.cut {
                        problem = Some(partial_note(&self.inner, 0));
                    }
                    whole = !d.cut;
                    changes.extend(d.changes);
                }
                Err(e) => problem = Some(problem_of(&e)),
            }
            self.watch_after(root, &index, whole);
            let t = Instant::now();
            let saved = index.save(&index_path(&self.inner.dir, root));
            timing("save", t);
            if let Err(e) = saved {
                tracing::warn!("the checkpoint index cannot be saved: {e}");
            }
        }
        (changes, problem, stored, self.inner, self.meta)
    }
}

impl WalkPending {
    /// After the walk that followed a command: the root's directories watched (from
    /// this process's second walk on), and the watch clean when nothing happened
    /// since the walk began and no directory was new to it.
    fn watch_after(&self, root: &Path, index: &Index, whole: bool) {
        let walks = self
            .inner
            .walks_after
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut watches = toolbelt_core::sync::lock(&self.inner.watches);
        if !watches.contains_key(root) {
            if walks == 0 {
                return;
            }
            let Some(w) = crate::watch::Watch::new() else {
                return;
            };
            watches.insert(root.to_path_buf(), w);
        }
        let Some(w) = watches.get_mut(root) else {
            return;
        };
        match w.cover(root, index) {
            // A directory new to the watch may have changed before it was watched.
            Some(0) => w.clean = whole && !w.drain(),
            Some(_) => {
                w.drain();
                w.clean = false;
            }
            // Past the watch limit: no use; every call walks.
            None => {
                watches.remove(root);
            }
        }
    }
}

impl PendingCheckpoint for WalkPending {
    fn after(self: Box<Self>, _envelope: &Envelope) -> BoxFuture<'static, CheckpointNote> {
        Box::pin(async move {
            let finished = tokio::task::spawn_blocking(move || self.finish()).await;
            let Ok((changes, problem, stored, inner, meta)) = finished else {
                return CheckpointNote {
                    id: None,
                    files: 0,
                    changed: Vec::new(),
                    problem: Some("checkpoint partial: the checkpoint task failed".into()),
                };
            };
            keep(&inner, meta, changes, problem, stored).await
        })
    }
}

fn partial_note(inner: &Inner, uncaptured: usize) -> String {
    if uncaptured > 0 {
        format!(
            "checkpoint partial: {uncaptured} files were not yet read within the walk's {} s",
            inner.settings.walk_budget.as_secs_f64()
        )
    } else {
        format!(
            "checkpoint partial: the workspace was not walked whole within {} s",
            inner.settings.walk_budget.as_secs_f64()
        )
    }
}

/// Records `changes` as one checkpoint (none when nothing changed).
async fn keep(
    inner: &Arc<Inner>,
    meta: CallMeta,
    changes: Vec<FileChange>,
    problem: Option<String>,
    stored: u64,
) -> CheckpointNote {
    if changes.is_empty() {
        crate::gc::maybe_collect(inner, stored).await;
        return CheckpointNote {
            id: None,
            files: 0,
            changed: Vec::new(),
            problem,
        };
    }
    let files = changes.len();
    let changed: Vec<ChangedFile> = changes
        .iter()
        .map(|c| ChangedFile {
            path: c.path.clone(),
            change: c.change.clone(),
        })
        .collect();
    let record = CheckpointRecord {
        id: 0,
        workspace: inner.workspace.clone(),
        at_ms: meta.at_ms,
        call_id: meta.call_id,
        tool: meta.tool,
        origin: meta.origin,
        status: if problem.is_some() {
            "partial".into()
        } else {
            "complete".into()
        },
        problem: problem.clone(),
        rewind_of: None,
        bytes: i64::try_from(stored).unwrap_or(i64::MAX),
        file_count: 0,
        files: changes,
    };
    let t = Instant::now();
    let inserted = match inner.store.store().await {
        Ok(store) => insert_checkpoint(store, &record).await,
        Err(e) => Err(e),
    };
    timing("insert", t);
    let note = match inserted {
        Ok(id) => CheckpointNote {
            id: Some(crate::display_id(id)),
            files,
            changed,
            problem,
        },
        Err(e) => CheckpointNote {
            id: None,
            files,
            changed,
            problem: Some(format!("checkpoint not kept: {}", error_chain(&e))),
        },
    };
    crate::gc::maybe_collect(inner, stored).await;
    note
}

/// What [`refresh`] did.
struct Refreshed {
    stored: u64,
    cut: bool,
    /// Files that could be kept but were not read within the budget.
    uncaptured: usize,
}

/// Brings `root`'s index up to the disk before a call: changed entries read
/// again and their content kept. The index is then the state before the call.
fn refresh(
    inner: &Inner,
    root: &Path,
    index: &mut Index,
    deadline: Instant,
) -> Result<Refreshed, CheckpointError> {
    let t = Instant::now();
    let walked = walk(root, &inner.skip, deadline);
    timing("pre walk", t);
    let t = Instant::now();
    let mut out = Refreshed {
        stored: 0,
        cut: walked.cut,
        uncaptured: 0,
    };
    let mut next: HashMap<String, Entry> = HashMap::with_capacity(walked.entries.len());
    for (rel, st) in walked.entries {
        let old = index.entries.remove(&rel);
        let fresh = match old {
            Some(e) if !e.stat.differs(&st) && (e.hash.is_some() || !inner.capturable(&st)) => e,
            _ if Instant::now() > deadline && inner.capturable(&st) => {
                out.uncaptured += 1;
                index.dirty.insert(rel.clone());
                Entry {
                    stat: st,
                    hash: None,
                    link: None,
                }
            }
            _ => {
                let abs = root.join(&rel);
                match capture(
                    &abs,
                    Some(&st),
                    &inner.blobs,
                    inner.settings.max_file_bytes,
                    true,
                ) {
                    Ok(c) => {
                        out.stored += c.stored;
                        index.dirty.insert(rel.clone());
                        Entry {
                            stat: st,
                            hash: c.state.hash,
                            link: c.state.link,
                        }
                    }
                    Err(e) if e.is_no_space() => return Err(e),
                    // Gone or unreadable since the walk: the walk after sees it.
                    Err(_) => continue,
                }
            }
        };
        next.insert(rel, fresh);
    }
    if walked.cut {
        // What the walk did not reach is kept as it was.
        next.extend(index.entries.drain());
    } else {
        let gone: Vec<String> = index.entries.drain().map(|(rel, _)| rel).collect();
        index.dirty.extend(gone);
    }
    index.entries = next;
    index.complete = !walked.cut;
    timing("pre index", t);
    Ok(out)
}

/// How long a step took, for `RUST_LOG=toolbelt::checkpoint=trace`.
fn timing(what: &str, since: Instant) {
    tracing::trace!(
        target: "toolbelt::checkpoint",
        "{what}: {:.3} ms",
        since.elapsed().as_secs_f64() * 1e3
    );
}

/// What [`diff`] found.
struct Diffed {
    changes: Vec<FileChange>,
    stored: u64,
    cut: bool,
}

/// Walks `root` after a call and compares it with its index (the state before):
/// every entry created, modified, deleted, renamed (same inode) or changed in mode.
/// The index becomes the state after.
fn diff(
    inner: &Inner,
    root: &Path,
    index: &mut Index,
    deadline: Instant,
) -> Result<Diffed, CheckpointError> {
    let t = Instant::now();
    let walked = walk(root, &inner.skip, deadline);
    timing("post walk", t);
    let t = Instant::now();
    let mut out = Diffed {
        changes: Vec::new(),
        stored: 0,
        cut: walked.cut,
    };
    let mut next: HashMap<String, Entry> = HashMap::with_capacity(walked.entries.len());
    let mut created: Vec<(String, Stat, FileState)> = Vec::new();
    for (rel, st) in walked.entries {
        let old = index.entries.remove(&rel);
        let old = match old {
            Some(e) if !e.stat.differs(&st) => {
                next.insert(rel, e);
                continue;
            }
            other => other,
        };
        let abs = root.join(&rel);
        let after = match capture(
            &abs,
            Some(&st),
            &inner.blobs,
            inner.settings.max_file_bytes,
            true,
        ) {
            Ok(c) => {
                out.stored += c.stored;
                c.state
            }
            Err(e) if e.is_no_space() => return Err(e),
            Err(_) => continue,
        };
        index.dirty.insert(rel.clone());
        next.insert(
            rel.clone(),
            Entry {
                stat: st,
                hash: after.hash.clone(),
                link: after.link.clone(),
            },
        );
        match old {
            None => created.push((rel, st, after)),
            Some(e) => {
                let before = entry_state(&e);
                let size_or_time = e.stat.size != st.size || e.stat.mtime_ns != st.mtime_ns;
                let uncaptured = e.hash.is_none() && e.stat.kind == FILE;
                if same_state(&before, &after) && !(uncaptured && size_or_time) {
                    continue;
                }
                out.changes.push(FileChange {
                    path: inner.record_path(root, &rel),
                    change: change_kind(&before, &after).to_string(),
                    renamed_from: None,
                    captured: !uncaptured,
                    note: uncaptured.then(|| uncaptured_note(inner, &e.stat)),
                    before,
                    after,
                });
            }
        }
    }
    // What the index had and the walk did not see was deleted (unless the walk
    // was cut short, when it is kept as it was).
    let mut deleted: Vec<(String, Entry)> = index.entries.drain().collect();
    if walked.cut {
        next.extend(deleted.drain(..));
    }
    index
        .dirty
        .extend(deleted.iter().map(|(rel, _)| rel.clone()));
    for (rel, st, after) in created {
        let renamed = (st.kind != DIR)
            .then(|| deleted.iter().position(|(_, e)| same_inode(&e.stat, &st)))
            .flatten();
        let renamed_from = renamed.map(|i| {
            let (from, e) = deleted.remove(i);
            let before = entry_state(&e);
            let uncaptured = e.hash.is_none() && e.stat.kind == FILE;
            out.changes.push(FileChange {
                path: inner.record_path(root, &from),
                change: "deleted".into(),
                renamed_from: None,
                before,
                after: FileState::absent(),
                captured: !uncaptured,
                note: uncaptured.then(|| uncaptured_note(inner, &e.stat)),
            });
            inner.record_path(root, &from)
        });
        out.changes.push(FileChange {
            path: inner.record_path(root, &rel),
            change: if renamed_from.is_some() {
                "renamed"
            } else {
                "created"
            }
            .into(),
            renamed_from,
            before: FileState::absent(),
            after,
            captured: true,
            note: None,
        });
    }
    for (rel, e) in deleted {
        let uncaptured = e.hash.is_none() && e.stat.kind == FILE;
        out.changes.push(FileChange {
            path: inner.record_path(root, &rel),
            change: "deleted".into(),
            renamed_from: None,
            before: entry_state(&e),
            after: FileState::absent(),
            captured: !uncaptured,
            note: uncaptured.then(|| uncaptured_note(inner, &e.stat)),
        });
    }
    index.entries = next;
    index.complete = !walked.cut;
    out.changes.sort_by(|a, b| a.path.cmp(&b.path));
    timing("post index", t);
    Ok(out)
}

/// Whether `after` is the entry `before` was, under another name: the same inode,
/// and the size and modification time a rename keeps (an inode number freed by a
/// deletion and given to a new file in the same call is not a rename).
fn same_inode(before: &Stat, after: &Stat) -> bool {
    before.ino == after.ino
        && before.dev == after.dev
        && before.kind == after.kind
        && before.size == after.size
        && before.mtime_ns == after.mtime_ns
}

fn uncaptured_note(inner: &Inner, st: &Stat) -> String {
    crate::observe::not_capturable(st, inner.settings.max_file_bytes)
        .unwrap_or_else(|| "not captured: it was not read before the call".into())
}

/// The state an index entry records.
fn entry_state(e: &Entry) -> FileState {
    FileState {
        kind: e.stat.kind.to_string(),
        hash: e.hash.clone(),
        mode: (e.stat.kind != crate::observe::SYMLINK).then_some(i64::from(e.stat.mode)),
        size: (e.stat.kind == FILE).then_some(i64::try_from(e.stat.size).unwrap_or(i64::MAX)),
        link: e.link.clone(),
    }
}

/// How an entry went from `before` to `after`.
fn change_kind(before: &FileState, after: &FileState) -> &'static str {
    let absent = crate::observe::ABSENT;
    if before.kind == absent {
        "created"
    } else if after.kind == absent {
        "deleted"
    } else if before.kind == after.kind
        && before.hash == after.hash
        && before.link == after.link
        && before.mode != after.mode
    {
        "mode"
    } else {
        "modified"
    }
}

/// A file deleted and another created with the same content in one call (a move
/// by a file tool): the created one is recorded as renamed from the other.
fn pair_renames_by_hash(changes: &mut [FileChange]) {
    let deleted: Vec<(String, String)> = changes
        .iter()
        .filter(|c| c.change == "deleted")
        .filter_map(|c| Some((c.path.clone(), c.before.hash.clone()?)))
        .collect();
    for c in changes.iter_mut().filter(|c| c.change == "created") {
        if let Some((from, _)) = deleted
            .iter()
            .find(|(_, h)| c.after.hash.as_deref() == Some(h.as_str()))
        {
            c.change = "renamed".into();
            c.renamed_from = Some(from.clone());
        }
    }
}

/// The default walk budget.
pub(crate) const DEFAULT_WALK_BUDGET: Duration = Duration::from_secs(5);
