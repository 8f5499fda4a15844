//! [`plan`]: every section of a patch run against the current files (read
//! through a closure), every resulting file returned before anything is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::apply::{HunkMatch, apply_hunks};
use super::error::PatchError;
use super::format::{FileOp, Patch};
use super::scope::PathScope;
#[cfg(doc)]
use super::scope::ScopeError;

/// What a file section does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A new file.
    Add,
    /// Changed in place.
    Update,
    /// Removed.
    Delete,
    /// Renamed (and possibly changed).
    Move,
}

impl Action {
    /// The lowercase name: `add`, `update`, `delete`, `move`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Add => "add",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::Move => "move",
        }
    }
}

/// One file section, as planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpResult {
    /// What the section does.
    pub action: Action,
    /// The file's absolute path (the destination for a move).
    pub path: PathBuf,
    /// `path` for people: relative to the cwd when beneath it.
    pub display: String,
    /// For a move: the source's absolute path.
    pub moved_from: Option<PathBuf>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// Where each hunk went (updates and moves).
    pub matches: Vec<HunkMatch>,
}

/// The net effect of a patch on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEffect {
    /// The absolute path.
    pub path: PathBuf,
    /// `path` for people: relative to the cwd when beneath it.
    pub display: String,
    /// The text before the patch (`None`: the file did not exist).
    pub before: Option<String>,
    /// The text after the patch (`None`: the file is deleted).
    pub after: Option<String>,
    /// The existing file whose text `after` derives from: the file itself when
    /// updated, the source of a move; `None` for new text from `*** Add File`.
    /// A caller keeps that file's encoding and BOM.
    pub derived_from: Option<PathBuf>,
}

/// Every change a patch makes, computed before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// One entry per file section, in patch order.
    pub ops: Vec<OpResult>,
    /// The net change per file (files the patch leaves as they were are left
    /// out), sorted by path.
    pub files: Vec<FileEffect>,
}

/// Why [`plan`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError<E> {
    /// The patch does not fit the files.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// Reading a file failed: the reader's error, as it is.
    #[error(transparent)]
    Read(E),
}

impl Patch {
    /// Every distinct file the patch touches (sources and move destinations),
    /// resolved in `scope`, sorted.
    ///
    /// # Errors
    /// [`PatchError::PathRefused`] for a path that is empty or outside the scope.
    pub fn paths(&self, scope: &PathScope) -> Result<Vec<PathBuf>, PatchError> {
        let mut out = Vec::new();
        for op in &self.ops {
            out.push(scope.resolve_at(op.path(), op.line())?);
            if let FileOp::Update {
                move_to: Some(dest),
                line,
                ..
            } = op
            {
                out.push(scope.resolve_at(dest, *line)?);
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

impl PathScope {
    /// [`PathScope::locate`] for the path `raw` written on patch line `line`.
    ///
    /// # Errors
    /// [`PatchError::PathRefused`] with the [`ScopeError`] as its source.
    pub fn resolve_at(&self, raw: &str, line: usize) -> Result<PathBuf, PatchError> {
        self.locate(raw).map_err(|source| PatchError::PathRefused {
            path: raw.to_string(),
            line,
            source,
        })
    }
}

#[derive(Debug)]
struct Slot {
    display: String,
    before: Option<String>,
    after: Option<String>,
    derived_from: Option<PathBuf>,
}

fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// Plans a patch against the current files: every section is applied in order to
/// an in-memory view (a later section sees the earlier ones' results), so every
/// hunk of every file is checked before anything is written.
///
/// `read` returns a file's current text, `None` when it does not exist; it is
/// called at most once per path, with the resolved absolute path.
///
/// # Errors
/// [`PlanError::Patch`]: a path outside `scope`, `*** Add File` of an existing
/// file, an update or delete of a missing file, a move onto an existing file, or
/// hunks that do not match ([`PatchError::Mismatch`]). [`PlanError::Read`]: `read`
/// failed.
pub fn plan<E>(
    patch: &Patch,
    scope: &PathScope,
    mut read: impl FnMut(&Path) -> Result<Option<String>, E>,
) -> Result<Plan, PlanError<E>> {
    let mut slots: BTreeMap<PathBuf, Slot> = BTreeMap::new();
    let mut load = |slots: &mut BTreeMap<PathBuf, Slot>, path: &Path| -> Result<(), PlanError<E>> {
        if !slots.contains_key(path) {
            let before = read(path).map_err(PlanError::Read)?;
            slots.insert(
                path.to_path_buf(),
                Slot {
                    display: scope.display(path),
                    derived_from: before.as_ref().map(|_| path.to_path_buf()),
                    after: before.clone(),
                    before,
                },
            );
        }
        Ok(())
    };

    let mut ops = Vec::with_capacity(patch.ops.len());
    for op in &patch.ops {
        let path = scope.resolve_at(op.path(), op.line())?;
        load(&mut slots, &path)?;
        let display = scope.display(&path);
        let current = slots.get(&path).and_then(|s| s.after.clone());
        let result = match op {
            FileOp::Add { contents, line, .. } => {
                if current.is_some() {
                    return Err(PatchError::AlreadyExists {
                        path: display,
                        line: *line,
                    }
                    .into());
                }
                set(&mut slots, &path, Some(contents.clone()), None);
                OpResult {
                    action: Action::Add,
                    path,
                    display,
                    moved_from: None,
                    added: line_count(contents),
                    removed: 0,
                    matches: Vec::new(),
                }
            }
            FileOp::Delete { line, .. } => {
                let Some(current) = current else {
                    return Err(PatchError::Missing {
                        path: display,
                        line: *line,
                        hint: "There is nothing to delete: remove this section.",
                    }
                    .into());
                };
                set(&mut slots, &path, None, None);
                OpResult {
                    action: Action::Delete,
                    path,
                    display,
                    moved_from: None,
                    added: 0,
                    removed: line_count(&current),
                    matches: Vec::new(),
                }
            }
            FileOp::Update {
                move_to,
                hunks,
                line,
                ..
            } => {
                let Some(current) = current else {
                    return Err(PatchError::Missing {
                        path: display,
                        line: *line,
                        hint: "To create it, use `*** Add File: <path>` with every line prefixed by '+'.",
                    }
                    .into());
                };
                let applied = apply_hunks(&display, &current, hunks)?;
                let derived = slots.get(&path).and_then(|s| s.derived_from.clone());
                let dest = match move_to {
                    Some(dest) => Some(scope.resolve_at(dest, *line)?).filter(|d| *d != path),
                    None => None,
                };
                match dest {
                    Some(dest) => {
                        load(&mut slots, &dest)?;
                        let dest_display = scope.display(&dest);
                        if slots.get(&dest).is_some_and(|s| s.after.is_some()) {
                            return Err(PatchError::DestinationExists {
                                path: dest_display,
                                line: *line,
                            }
                            .into());
                        }
                        set(&mut slots, &path, None, None);
                        set(&mut slots, &dest, Some(applied.text), derived);
                        OpResult {
                            action: Action::Move,
                            path: dest,
                            display: dest_display,
                            moved_from: Some(path),
                            added: applied.added,
                            removed: applied.removed,
                            matches: applied.matches,
                        }
                    }
                    None => {
                        set(&mut slots, &path, Some(applied.text), derived);
                        OpResult {
                            action: Action::Update,
                            path,
                            display,
                            moved_from: None,
                            added: applied.added,
                            removed: applied.removed,
                            matches: applied.matches,
                        }
                    }
                }
            }
        };
        ops.push(result);
    }

    let files = slots
        .into_iter()
        .filter(|(_, s)| s.before != s.after)
        .map(|(path, s)| FileEffect {
            path,
            display: s.display,
            before: s.before,
            after: s.after,
            derived_from: s.derived_from,
        })
        .collect();
    Ok(Plan { ops, files })
}

fn set(
    slots: &mut BTreeMap<PathBuf, Slot>,
    path: &Path,
    after: Option<String>,
    derived_from: Option<PathBuf>,
) {
    if let Some(slot) = slots.get_mut(path) {
        slot.after = after;
        slot.derived_from = derived_from;
    }
}
