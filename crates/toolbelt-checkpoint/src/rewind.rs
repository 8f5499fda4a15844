//! Rewind: every path changed from a checkpoint on goes back to how it was before
//! it. Planned first (what each path becomes, what is a conflict), then done all
//! or nothing through a journal: the new content is staged next to each path,
//! then renamed over it; a rewind cut short (a kill) is finished by
//! [`Checkpoints::recover`], so each file is either as it was or as it is to be,
//! and no staged file is left.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use toolbelt_core::Origin;
use toolbelt_store::{
    CheckpointRecord, FileChange, FileState, checkpoints_from, insert_checkpoint, last_rewind,
};

use crate::error::CheckpointError;
use crate::observe::{ABSENT, DIR, FILE, SYMLINK, capture, same_state, stat};
use crate::workspace::{Checkpoints, Inner};

/// The journal of a rewind under way, in the checkpoints directory.
const JOURNAL: &str = "rewind.journal";
/// What staged files are called (after a dot and the file's name).
const STAGED_MARK: &str = ".toolbelt-rewind-";

/// What to rewind.
#[derive(Debug, Clone, Default)]
pub struct RewindRequest {
    /// The checkpoint to go back to (its number).
    pub to: i64,
    /// Only paths matching one of these globs (all when empty).
    pub files: Vec<String>,
    /// Leave conflicting paths alone and rewind the others.
    pub skip_conflicts: bool,
    /// Overwrite conflicting paths too.
    pub force: bool,
    /// Plan only; change nothing.
    pub dry_run: bool,
    /// Undo checkpoint `to` alone, not the ones after it (a hook reverting the
    /// call it just saw).
    pub only: bool,
    /// Who asked, for the rewind's own checkpoint.
    pub origin: Origin,
}

/// One path of a rewind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindItem {
    /// The path as recorded (relative to the workspace's first root).
    pub path: String,
    /// What happens to it: `restore`, `remove`, `recreate`, `relink`, `chmod`,
    /// or `none` when it is already as it was.
    pub action: String,
    /// How it was before the checkpoint, and will be.
    pub to: FileState,
    /// How it is now.
    pub now: FileState,
    /// It changed outside toolbelt since toolbelt last wrote it.
    pub conflict: bool,
    /// Why it is left alone, when it is (not captured, a hard link, a conflict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// What a rewind would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindPlan {
    /// The checkpoint gone back to (`cp-12`).
    pub to: String,
    /// The checkpoints undone, oldest first.
    pub undoes: Vec<String>,
    /// Every path they changed.
    pub items: Vec<RewindItem>,
}

impl RewindPlan {
    /// The paths in conflict (those left alone anyway, as not captured, are not).
    pub fn conflicts(&self) -> Vec<String> {
        self.items
            .iter()
            .filter(|i| i.conflict && i.skipped.is_none())
            .map(|i| i.path.clone())
            .collect()
    }
}

/// Paths in conflict, for a caller that shows them.
pub type Conflicts = Vec<String>;

/// What a rewind did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RewindOutcome {
    /// The plan it followed (conflicts skipped or forced as asked).
    pub plan: RewindPlan,
    /// Paths put back.
    pub restored: usize,
    /// Paths left alone, with why.
    pub skipped: Vec<(String, String)>,
    /// The rewind's own checkpoint (`toolbelt rewind --undo` goes back to it).
    pub checkpoint: Option<String>,
    /// Nothing was changed (a dry run).
    pub dry_run: bool,
}

/// One step of the journal: the path, what it becomes, and where its new content
/// is staged.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Step {
    abs: PathBuf,
    to: FileState,
    staged: Option<PathBuf>,
}

impl Checkpoints {
    /// What rewinding to `request.to` would do, changing nothing.
    ///
    /// # Errors
    /// No such checkpoint in this workspace; one of those to undo was pruned; the
    /// store cannot be read; a glob is invalid.
    pub async fn plan_rewind(
        &self,
        request: &RewindRequest,
    ) -> Result<RewindPlan, CheckpointError> {
        let inner = &self.inner;
        let store = inner.store.store().await?;
        let mut records = checkpoints_from(store, &inner.workspace, request.to).await?;
        if request.only {
            records.truncate(1);
        }
        let id = crate::display_id(request.to);
        if records.first().is_none_or(|r| r.id != request.to) {
            return Err(CheckpointError::NotFound(id));
        }
        if let Some(pruned) = records.iter().find(|r| r.status == "pruned") {
            return Err(CheckpointError::Pruned(crate::display_id(pruned.id)));
        }
        let filter = if request.files.is_empty() {
            None
        } else {
            let mut b = GlobSetBuilder::new();
            for g in &request.files {
                b.add(Glob::new(g).map_err(|e| CheckpointError::BadGlob {
                    glob: g.clone(),
                    source: e,
                })?);
            }
            Some(b.build().map_err(|e| CheckpointError::BadGlob {
                glob: request.files.join(" "),
                source: e,
            })?)
        };
        // Per path: how it was before the first checkpoint that changed it, and
        // how the last one left it.
        let mut paths: BTreeMap<String, (FileChange, FileState)> = BTreeMap::new();
        for r in &records {
            for f in &r.files {
                paths
                    .entry(f.path.clone())
                    .and_modify(|(_, last)| *last = f.after.clone())
                    .or_insert_with(|| (f.clone(), f.after.clone()));
            }
        }
        let inner2 = std::sync::Arc::clone(inner);
        let items = tokio::task::spawn_blocking(move || {
            paths
                .into_iter()
                .filter(|(p, _)| filter.as_ref().is_none_or(|f| f.is_match(p)))
                .map(|(path, (first, last))| plan_item(&inner2, path, &first, &last))
                .collect::<Vec<_>>()
        })
        .await?;
        Ok(RewindPlan {
            to: id,
            undoes: records.iter().map(|r| crate::display_id(r.id)).collect(),
            items,
        })
    }

    /// Rewinds to `request.to`: see the [crate documentation](crate).
    ///
    /// # Errors
    /// As [`Checkpoints::plan_rewind`]; [`CheckpointError::Conflicts`] when paths
    /// changed outside toolbelt and neither `skip_conflicts` nor `force` is set
    /// (nothing is changed then); a file cannot be written (what was done is
    /// finished by [`Checkpoints::recover`]).
    pub async fn rewind(&self, request: &RewindRequest) -> Result<RewindOutcome, CheckpointError> {
        // One rewind of the workspace at a time, across processes: held to the end.
        let dir = self.inner.dir.clone();
        let _lock = tokio::task::spawn_blocking(move || RewindLock::take(&dir)).await??;
        self.recover_locked()?;
        let mut plan = self.plan_rewind(request).await?;
        let conflicts = plan.conflicts();
        if !conflicts.is_empty() && !request.skip_conflicts && !request.force {
            return Err(CheckpointError::Conflicts(conflicts));
        }
        for item in &mut plan.items {
            if item.conflict && !request.force && item.skipped.is_none() {
                item.skipped = Some("changed outside toolbelt since it last wrote it".into());
            }
        }
        let skipped: Vec<(String, String)> = plan
            .items
            .iter()
            .filter_map(|i| Some((i.path.clone(), i.skipped.clone()?)))
            .collect();
        let todo: Vec<RewindItem> = plan
            .items
            .iter()
            .filter(|i| i.skipped.is_none() && i.action != "none")
            .cloned()
            .collect();
        if request.dry_run || todo.is_empty() {
            return Ok(RewindOutcome {
                restored: if request.dry_run { todo.len() } else { 0 },
                plan,
                skipped,
                checkpoint: None,
                dry_run: request.dry_run,
            });
        }
        // The rewind's own checkpoint: what each path is now, kept first.
        let inner = std::sync::Arc::clone(&self.inner);
        let todo2 = todo.clone();
        let (changes, stored) =
            tokio::task::spawn_blocking(move || own_checkpoint(&inner, &todo2)).await??;
        let store = self.inner.store.store().await?;
        let own = insert_checkpoint(
            store,
            &CheckpointRecord {
                id: 0,
                workspace: self.inner.workspace.clone(),
                at_ms: now_ms(),
                call_id: format!("rewind-{}", uuid::Uuid::new_v4().simple()),
                tool: "rewind".into(),
                origin: serde_json::to_string(&request.origin).unwrap_or_default(),
                status: "complete".into(),
                problem: None,
                rewind_of: Some(request.to),
                bytes: i64::try_from(stored).unwrap_or(i64::MAX),
                file_count: 0,
                files: changes,
            },
        )
        .await?;
        let inner = std::sync::Arc::clone(&self.inner);
        let restored = todo.len();
        tokio::task::spawn_blocking(move || execute(&inner, &todo)).await??;
        Ok(RewindOutcome {
            plan,
            restored,
            skipped,
            checkpoint: Some(crate::display_id(own)),
            dry_run: false,
        })
    }

    /// Undoes the last rewind of this workspace: rewinds to its own checkpoint.
    ///
    /// # Errors
    /// There was no rewind; as [`Checkpoints::rewind`].
    pub async fn undo_rewind(
        &self,
        request: &RewindRequest,
    ) -> Result<RewindOutcome, CheckpointError> {
        let store = self.inner.store.store().await?;
        let Some(last) = last_rewind(store, &self.inner.workspace).await? else {
            return Err(CheckpointError::NoRewind);
        };
        let mut request = request.clone();
        request.to = last.id;
        self.rewind(&request).await
    }

    /// Finishes a rewind a kill cut short: every path of its journal is brought
    /// to what it was to become, staged files are removed, the journal deleted.
    /// Does nothing when no rewind was under way.
    ///
    /// # Errors
    /// A path cannot be written (the journal is kept for the next try).
    pub fn recover(&self) -> Result<bool, CheckpointError> {
        if !self.inner.dir.join(JOURNAL).exists() {
            return Ok(false);
        }
        let _lock = RewindLock::take(&self.inner.dir)?;
        self.recover_locked()
    }

    /// [`Checkpoints::recover`], the rewind lock already held.
    fn recover_locked(&self) -> Result<bool, CheckpointError> {
        let path = self.inner.dir.join(JOURNAL);
        let text = match fs::read(&path) {
            Ok(t) => t,
            Err(_) => return Ok(false),
        };
        let steps: Vec<Step> = match serde_json::from_slice(&text) {
            Ok(s) => s,
            Err(e) => {
                // A journal cut off while it was written: nothing was changed yet.
                tracing::warn!("an unfinished rewind journal is unreadable ({e}); it is dropped");
                let _ = fs::remove_file(&path);
                return Ok(false);
            }
        };
        tracing::info!(
            "finishing a rewind that was cut short ({} paths)",
            steps.len()
        );
        apply(&self.inner, &steps)?;
        let _ = fs::remove_file(&path);
        Ok(true)
    }
}

/// The lock of the workspace's rewinds (`rewind.lock`, `flock`ed), held while alive.
struct RewindLock(#[allow(dead_code)] fs::File);

impl RewindLock {
    /// Waits for the lock.
    fn take(dir: &Path) -> Result<RewindLock, CheckpointError> {
        fs::create_dir_all(dir).map_err(|e| CheckpointError::io("make", dir, e))?;
        let path = dir.join("rewind.lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| CheckpointError::io("open", &path, e))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| CheckpointError::io("lock", &path, e.into()))?;
        Ok(RewindLock(file))
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// One path's plan: `first` is the first change of it (its `before` is what it
/// goes back to), `last` how the last checkpoint left it.
fn plan_item(inner: &Inner, path: String, first: &FileChange, last: &FileState) -> RewindItem {
    let abs = inner.absolute(&path);
    let now_stat = stat(&abs).ok().flatten();
    let now = capture(
        &abs,
        now_stat.as_ref(),
        &inner.blobs,
        inner.settings.max_file_bytes,
        false,
    )
    .map(|c| c.state)
    .unwrap_or_else(|_| FileState {
        kind: "unreadable".into(),
        ..FileState::default()
    });
    let to = first.before.clone();
    let conflict = !same_state(&now, last);
    let mut item = RewindItem {
        path,
        action: action(&now, &to).into(),
        to,
        now,
        conflict,
        skipped: None,
    };
    if same_state(&item.now, &item.to) {
        item.action = "none".into();
        item.conflict = false;
    } else if !first.captured {
        item.skipped =
            Some(first.note.clone().unwrap_or_else(|| "not captured".into()) + "; left alone");
    } else if now_stat.is_some_and(|s| s.kind == FILE && s.nlink > 1) {
        item.skipped = Some("a hard link now: skipped".into());
    } else if inner.locate(&abs).is_none() || !inside(inner, &abs) {
        item.skipped = Some("outside the workspace or behind a symbolic link: skipped".into());
    }
    item
}

fn action(now: &FileState, to: &FileState) -> &'static str {
    match to.kind.as_str() {
        ABSENT => "remove",
        DIR if now.kind == DIR => "chmod",
        DIR => "recreate",
        SYMLINK => "relink",
        _ if now.kind == to.kind && now.hash == to.hash => "chmod",
        _ => "restore",
    }
}

/// Whether every directory between `abs`'s root and `abs` is a real directory (or
/// not there yet): a write to `abs` cannot leave the workspace through a link.
fn inside(inner: &Inner, abs: &Path) -> bool {
    let Some((root, rel)) = inner.locate(abs) else {
        return false;
    };
    let mut dir = root;
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        dir.push(part);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => return false,
            Err(_) => return true,
        }
    }
    true
}

/// The rewind's own checkpoint: each path from how it is now to how it will be,
/// its present content kept.
fn own_checkpoint(
    inner: &Inner,
    todo: &[RewindItem],
) -> Result<(Vec<FileChange>, u64), CheckpointError> {
    let mut stored = 0;
    let mut changes = Vec::with_capacity(todo.len());
    for item in todo {
        let abs = inner.absolute(&item.path);
        let st = stat(&abs).map_err(|e| CheckpointError::io("read", &abs, e))?;
        let now = capture(
            &abs,
            st.as_ref(),
            &inner.blobs,
            inner.settings.max_file_bytes,
            true,
        )?;
        stored += now.stored;
        changes.push(FileChange {
            path: item.path.clone(),
            change: match (now.state.kind.as_str(), item.to.kind.as_str()) {
                (ABSENT, _) => "created",
                (_, ABSENT) => "deleted",
                _ if item.action == "chmod" => "mode",
                _ => "modified",
            }
            .into(),
            renamed_from: None,
            before: now.state,
            after: item.to.clone(),
            captured: now.captured,
            note: now.note,
        });
    }
    Ok((changes, stored))
}

/// Journals and applies `todo`.
fn execute(inner: &Inner, todo: &[RewindItem]) -> Result<(), CheckpointError> {
    let steps: Vec<Step> = todo
        .iter()
        .map(|item| {
            let abs = inner.absolute(&item.path);
            let staged = matches!(item.to.kind.as_str(), FILE | SYMLINK).then(|| staged_path(&abs));
            Step {
                abs,
                to: item.to.clone(),
                staged,
            }
        })
        .collect();
    fs::create_dir_all(&inner.dir).map_err(|e| CheckpointError::io("make", &inner.dir, e))?;
    let journal = inner.dir.join(JOURNAL);
    let write_journal = || -> std::io::Result<()> {
        let tmp = journal.with_extension("tmp");
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec(&steps).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        fs::rename(&tmp, &journal)
    };
    write_journal().map_err(|e| CheckpointError::io("write", &journal, e))?;
    apply(inner, &steps)?;
    let _ = fs::remove_file(&journal);
    Ok(())
}

fn staged_path(abs: &Path) -> PathBuf {
    let name = abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    abs.with_file_name(format!(
        ".{name}{STAGED_MARK}{}",
        uuid::Uuid::new_v4().simple()
    ))
}

/// Brings each path to its state; idempotent, so that a journal can be applied
/// again after a kill. Directories are made first (shallowest first), files and
/// links are staged and renamed over their paths, and what is to be absent is
/// removed last (deepest first).
fn apply(inner: &Inner, steps: &[Step]) -> Result<(), CheckpointError> {
    let mut dirs: Vec<&Step> = steps.iter().filter(|s| s.to.kind == DIR).collect();
    dirs.sort_by_key(|s| s.abs.components().count());
    for s in dirs {
        if !inside(inner, &s.abs) {
            continue;
        }
        match fs::symlink_metadata(&s.abs) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                fs::remove_file(&s.abs).map_err(|e| CheckpointError::io("remove", &s.abs, e))?;
                fs::create_dir_all(&s.abs).map_err(|e| CheckpointError::io("make", &s.abs, e))?;
            }
            Err(_) => {
                fs::create_dir_all(&s.abs).map_err(|e| CheckpointError::io("make", &s.abs, e))?;
            }
        }
        if let Some(mode) = s.to.mode {
            let _ = fs::set_permissions(&s.abs, fs::Permissions::from_mode(mode as u32));
        }
    }
    for s in steps
        .iter()
        .filter(|s| matches!(s.to.kind.as_str(), FILE | SYMLINK))
    {
        if !inside(inner, &s.abs) {
            continue;
        }
        let Some(staged) = &s.staged else { continue };
        let now = stat(&s.abs).ok().flatten();
        let already = capture(&s.abs, now.as_ref(), &inner.blobs, u64::MAX, false)
            .is_ok_and(|c| same_state(&c.state, &s.to));
        if already {
            let _ = fs::remove_file(staged);
            continue;
        }
        if let Some(parent) = s.abs.parent() {
            fs::create_dir_all(parent).map_err(|e| CheckpointError::io("make", parent, e))?;
        }
        let _ = fs::remove_file(staged);
        if s.to.kind == FILE {
            let hash = s.to.hash.as_deref().unwrap_or_default();
            let bytes = inner.blobs.get(hash)?;
            let write = || -> std::io::Result<()> {
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(staged)?;
                f.write_all(&bytes)?;
                if let Some(mode) = s.to.mode {
                    f.set_permissions(fs::Permissions::from_mode(mode as u32))?;
                }
                f.sync_all()
            };
            if let Err(e) = write() {
                let _ = fs::remove_file(staged);
                return Err(CheckpointError::io("write", staged, e));
            }
        } else {
            let target = s.to.link.clone().unwrap_or_default();
            std::os::unix::fs::symlink(&target, staged)
                .map_err(|e| CheckpointError::io("link", staged, e))?;
        }
        if matches!(now, Some(st) if st.kind == DIR) {
            // A directory where a file was: it goes (with what is in it) only
            // when it is empty; otherwise the file cannot come back.
            if fs::remove_dir(&s.abs).is_err() {
                let _ = fs::remove_file(staged);
                continue;
            }
        }
        fs::rename(staged, &s.abs).map_err(|e| {
            let _ = fs::remove_file(staged);
            CheckpointError::io("write", &s.abs, e)
        })?;
    }
    let mut gone: Vec<&Step> = steps.iter().filter(|s| s.to.kind == ABSENT).collect();
    gone.sort_by_key(|s| std::cmp::Reverse(s.abs.components().count()));
    for s in gone {
        if !inside(inner, &s.abs) {
            continue;
        }
        match fs::symlink_metadata(&s.abs) {
            Ok(m) if m.file_type().is_dir() => {
                // Only when empty: what is left in it was not made by the calls.
                let _ = fs::remove_dir(&s.abs);
            }
            Ok(_) => {
                fs::remove_file(&s.abs).map_err(|e| CheckpointError::io("remove", &s.abs, e))?;
            }
            Err(_) => {}
        }
    }
    // Modes of files whose content was already right.
    for s in steps.iter().filter(|s| s.to.kind == FILE) {
        if let (Some(mode), Ok(m)) = (s.to.mode, fs::symlink_metadata(&s.abs))
            && m.file_type().is_file()
            && m.permissions().mode() & 0o7777 != mode as u32
        {
            let _ = fs::set_permissions(&s.abs, fs::Permissions::from_mode(mode as u32));
        }
    }
    Ok(())
}
