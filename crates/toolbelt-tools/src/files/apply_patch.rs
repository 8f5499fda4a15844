//! `apply_patch`: the `*** Begin Patch` envelope GPT models write. Every hunk of
//! every file is checked first; then all files are committed at once, or none.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::DiagnosticsReport;
use toolbelt_core::{
    Category, ErrorCode, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_fs::patch::{self, Action, FileOp, MatchTier, PathScope};
use toolbelt_fs::text::{self, Encoding, Sniffed};
use toolbelt_fs::{Change, FsError, WorkPath, content_hash};

use crate::files::after::{self, After, Wrote};
use crate::files::{MAX_EDIT_BYTES, WRITE_HINTS};
use crate::workspace::{Workspace, blocking, workspace};

/// Context lines around each change in a dry run's diff.
const DIFF_CONTEXT_LINES: usize = 3;

/// Arguments of `apply_patch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchParams {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`.
    #[schemars(length(min = 1))]
    pub patch: String,
    /// Check the patch and return the diff of every file without writing anything.
    #[serde(default)]
    pub dry_run: bool,
}

/// What a file section did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PatchAction {
    /// A new file.
    Add,
    /// Changed in place.
    Update,
    /// Removed.
    Delete,
    /// Renamed, and possibly changed.
    Move,
}

impl From<Action> for PatchAction {
    fn from(action: Action) -> Self {
        match action {
            Action::Add => PatchAction::Add,
            Action::Update => PatchAction::Update,
            Action::Delete => PatchAction::Delete,
            Action::Move => PatchAction::Move,
        }
    }
}

/// One file section of the patch, in patch order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PatchedFile {
    /// The file (for a move, where it is now), relative to the cwd when beneath it.
    pub path: String,
    /// `add`, `update`, `delete` or `move`.
    pub action: PatchAction,
    /// For a move: where the file was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The file's content hash once the patch is applied (absent when no file is left there); later writes can pass it as `expected_hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
}

/// A hunk found only after its lines were compared loosely.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LooseMatch {
    /// The file.
    pub path: String,
    /// The hunk's number in its file section, from 1.
    pub hunk: usize,
    /// The line of the file where it matched, from 1.
    pub line: usize,
    /// What was ignored: `trailing whitespace`, `whitespace` or `typographic punctuation`.
    pub ignored: String,
}

/// Result of `apply_patch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApplyPatchOutput {
    /// Every file section, in patch order.
    pub files: Vec<PatchedFile>,
    /// True when nothing was written.
    pub dry_run: bool,
    /// The unified diff of every file (dry runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Hunks that matched only after ignoring whitespace or punctuation; check them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loose_matches: Vec<LooseMatch>,
    /// The problems of the files after the patch (`diagnostics`, `diagnostics_summary`),
    /// when checks are set up.
    #[serde(flatten)]
    pub checks: DiagnosticsReport,
}

/// The `apply_patch` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ApplyPatch;

impl TypedTool for ApplyPatch {
    type Params = ApplyPatchParams;
    type Output = ApplyPatchOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("apply_patch", include_str!("apply_patch.md"))
            .title("Apply Patch")
            .category(Category::Files)
            .permission("fs:write")
            .hints(WRITE_HINTS)
            .example(
                "Create a file",
                json!({"patch": "*** Begin Patch\n*** Add File: hello.txt\n+Hello, world!\n*** End Patch\n"}),
                json!({
                    "files": [{
                        "path": "hello.txt",
                        "action": "add",
                        "added": 1,
                        "removed": 0,
                        "content_hash": content_hash(b"Hello, world!\n"),
                    }],
                    "dry_run": false,
                }),
            )
    }

    /// Every file the patch adds, updates or deletes, and both ends of a move, as
    /// written (nothing for a dry run); every file when the patch does not parse
    /// (the call then fails, and the walk is the safe side).
    fn changes(&self, args: &serde_json::Value) -> Option<toolbelt_core::Changes> {
        if crate::files::dry_run(args) {
            return Some(toolbelt_core::Changes::Nothing);
        }
        let text = args.get("patch")?.as_str()?;
        Some(
            patch::parse(text).map_or(toolbelt_core::Changes::Unknown, |parsed| {
                toolbelt_core::Changes::Paths(patch_paths(&parsed))
            }),
        )
    }

    async fn call(&self, ctx: &ToolContext, p: ApplyPatchParams) -> ToolResult<ApplyPatchOutput> {
        let ws = workspace(ctx)?;
        let scope_roots: Vec<PathBuf> = ctx.session().roots().to_vec();
        let after = after::of(ctx);
        let staged_after = after.clone();
        let paths: Vec<String> = patch::parse(&p.patch)
            .map(|parsed| {
                patch_paths(&parsed)
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        ws.refresh_stamps(paths.iter().map(String::as_str)).await;
        let done =
            blocking(move || run(&ws, &staged_after, scope_roots, &p.patch, p.dry_run)).await?;
        let mut reply = done.reply;
        reply.data.checks = after::collect(&after, &done.wrote, &done.notes).await;
        reply.data.checks.append_to(&mut reply.text);
        Ok(reply)
    }
}

/// The paths of `parsed` as written, each once, in patch order: every section's
/// path and every move's destination.
fn patch_paths(parsed: &patch::Patch) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::with_capacity(parsed.ops.len());
    let mut add = |path: &str| {
        let path = PathBuf::from(path);
        if !paths.contains(&path) {
            paths.push(path);
        }
    };
    for op in &parsed.ops {
        add(op.path());
        if let FileOp::Update {
            move_to: Some(dest),
            ..
        } = op
        {
            add(dest);
        }
    }
    paths
}

/// A file the patch touches, as found on disk.
struct OnDisk {
    path: WorkPath,
    /// `None`: the file does not exist.
    bytes: Option<Vec<u8>>,
    /// Set once decoded.
    encoding: Option<Encoding>,
}

/// What a patch did, before its files' problems are collected.
struct Done {
    reply: Reply<ApplyPatchOutput>,
    wrote: Vec<Wrote>,
    notes: Vec<String>,
}

fn run(
    ws: &Workspace,
    after: &After,
    mut roots: Vec<PathBuf>,
    patch_text: &str,
    dry_run: bool,
) -> Result<Done, ToolError> {
    let parsed = patch::parse(patch_text)?;
    roots.extend(ws.jail.roots().into_iter().map(Path::to_path_buf));
    let scope = PathScope::new(ws.cwd.clone(), roots);

    // Resolve every path through the jail; one file named two ways is refused.
    let keys = parsed.paths(&scope)?;
    let mut files: HashMap<PathBuf, OnDisk> = HashMap::with_capacity(keys.len());
    let mut seen: HashMap<WorkPath, PathBuf> = HashMap::with_capacity(keys.len());
    for key in &keys {
        let wp = ws.resolve_write(&key.to_string_lossy())?;
        if let Some(other) = seen.insert(wp.clone(), key.clone()) {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!(
                    "{} and {} are the same file (through a symbolic link)",
                    scope.display(&other),
                    scope.display(key)
                ),
            )
            .hint("name each file one way only in the patch"));
        }
        files.insert(
            key.clone(),
            OnDisk {
                path: wp,
                bytes: None,
                encoding: None,
            },
        );
    }

    // Lock them all, then read them.
    let mut locked: Vec<WorkPath> = files.values().map(|f| f.path.clone()).collect();
    locked.sort();
    let _guard = ws.jail.lock_all(&locked)?;
    for file in files.values_mut() {
        file.bytes = match ws.jail.read(&file.path, MAX_EDIT_BYTES) {
            Ok(bytes) => Some(bytes),
            Err(FsError::NotFound { .. }) => None,
            Err(err) => return Err(err.into()),
        };
    }

    // Optimistic lock: every existing file the patch updates or deletes must be
    // unchanged since the agent last read it.
    for op in &parsed.ops {
        if let FileOp::Update { path, line, .. } | FileOp::Delete { path, line } = op {
            let key = scope.resolve_at(path, *line)?;
            if let Some(OnDisk {
                path: wp,
                bytes: Some(bytes),
                ..
            }) = files.get(&key)
            {
                ws.check_fresh(wp, bytes, None)?;
            }
        }
    }

    // Plan on the decoded texts; nothing is written yet.
    let only_deleted = only_deleted(&parsed, &scope);
    let mut plan = patch::plan(&parsed, &scope, |key: &Path| -> Result<_, ToolError> {
        let Some(file) = files.get_mut(key) else {
            return Ok(None);
        };
        let Some(bytes) = &file.bytes else {
            return Ok(None);
        };
        match decode(ws, file, bytes) {
            Ok((text, encoding)) => {
                file.encoding = Some(encoding);
                Ok(Some(text))
            }
            // A file that is only deleted need not be text.
            Err(_) if only_deleted.contains(key) => Ok(Some(String::new())),
            Err(err) => Err(err),
        }
    })?;

    // Every new text through the formatter and the syntax check.
    let mut notes = Vec::new();
    for effect in &mut plan.files {
        let Some(text) = effect.after.take() else {
            continue;
        };
        let Some(file) = files.get(&effect.path) else {
            return Err(internal(&effect.path));
        };
        let shown = ws.display(&file.path);
        let staged = after::stage(
            after,
            file.path.abs(),
            &shown,
            effect.before.as_deref(),
            text,
        )?;
        notes.extend(staged.notes);
        effect.after = Some(staged.text);
    }

    // The new bytes of every file, in its original encoding.
    let mut changes: Vec<Change> = Vec::with_capacity(plan.files.len());
    let mut hashes: HashMap<PathBuf, String> = HashMap::new();
    for effect in &plan.files {
        let Some(file) = files.get(&effect.path) else {
            return Err(internal(&effect.path));
        };
        match &effect.after {
            Some(text) => {
                let encoding = effect
                    .derived_from
                    .as_ref()
                    .and_then(|from| files.get(from))
                    .and_then(|f| f.encoding)
                    .unwrap_or(Encoding::Utf8);
                let bytes = text::encode(text, encoding);
                hashes.insert(effect.path.clone(), content_hash(&bytes));
                changes.push(Change::Write {
                    path: file.path.clone(),
                    bytes,
                    create_new: effect.before.is_none(),
                });
            }
            None => changes.push(Change::Delete {
                path: file.path.clone(),
            }),
        }
    }

    let diff = if dry_run {
        Some(unified_diffs(&plan, &files, ws))
    } else {
        ws.jail.commit(&changes)?;
        for change in &changes {
            match change {
                Change::Write { path, bytes, .. } => {
                    ws.record(path, bytes);
                }
                Change::Delete { path } => ws.forget(path),
            }
        }
        None
    };

    let shown = |key: &Path| {
        files
            .get(key)
            .map_or_else(|| scope.display(key), |f| ws.display(&f.path))
    };
    let final_hash = |key: &Path| -> Option<String> {
        match plan.files.iter().find(|e| e.path == key) {
            Some(effect) => hashes.get(&effect.path).cloned(),
            // Unchanged by the patch: its hash as it is.
            None => files
                .get(key)
                .and_then(|f| f.bytes.as_deref())
                .map(content_hash),
        }
    };
    let out_files: Vec<PatchedFile> = plan
        .ops
        .iter()
        .map(|op| PatchedFile {
            path: shown(&op.path),
            action: op.action.into(),
            moved_from: op.moved_from.as_deref().map(shown),
            added: op.added,
            removed: op.removed,
            content_hash: final_hash(&op.path),
        })
        .collect();
    let loose_matches: Vec<LooseMatch> = plan
        .ops
        .iter()
        .flat_map(|op| {
            op.matches
                .iter()
                .filter(|m| m.tier != MatchTier::Exact)
                .map(|m| LooseMatch {
                    path: shown(&op.path),
                    hunk: m.hunk,
                    line: m.line,
                    ignored: ignored(m.tier).to_string(),
                })
        })
        .collect();

    let text = summary(&out_files, &loose_matches, diff.as_deref(), dry_run);
    let (added, removed) = out_files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    let files_changed = plan.files.len();
    let wrote = if dry_run {
        Vec::new()
    } else {
        plan.files
            .iter()
            .filter_map(|effect| {
                let file = files.get(&effect.path)?;
                Some(Wrote {
                    file: file.path.abs().to_path_buf(),
                    shown: ws.display(&file.path),
                    old: effect.before.clone(),
                    new: effect.after.clone()?,
                })
            })
            .collect()
    };
    let reply = Reply::new(
        ApplyPatchOutput {
            files: out_files,
            dry_run,
            diff,
            loose_matches,
            checks: DiagnosticsReport::default(),
        },
        text,
    )
    .stat("files", files_changed)
    .stat("added", added)
    .stat("removed", removed);
    Ok(Done {
        reply,
        wrote,
        notes,
    })
}

/// Paths whose every section is `*** Delete File`.
fn only_deleted(parsed: &patch::Patch, scope: &PathScope) -> HashSet<PathBuf> {
    let mut deleted = HashSet::new();
    let mut other = HashSet::new();
    for op in &parsed.ops {
        let Ok(key) = scope.locate(op.path()) else {
            continue;
        };
        match op {
            FileOp::Delete { .. } => deleted.insert(key),
            FileOp::Add { .. } | FileOp::Update { .. } => other.insert(key),
        };
        if let FileOp::Update {
            move_to: Some(dest),
            ..
        } = op
            && let Ok(dest) = scope.locate(dest)
        {
            other.insert(dest);
        }
    }
    deleted.retain(|k| !other.contains(k));
    deleted
}

/// The text of a file the patch changes; binary and undecodable files are refused.
fn decode(ws: &Workspace, file: &OnDisk, bytes: &[u8]) -> Result<(String, Encoding), ToolError> {
    let shown = ws.display(&file.path);
    let refuse = |what: String| {
        ToolError::new(
            ErrorCode::BinaryFile,
            format!("{shown} is {what}; apply_patch only changes text files"),
        )
        .hint("delete or replace it with a shell command, or leave it out of the patch")
        .data(json!({ "path": shown }))
    };
    match text::sniff(bytes) {
        Sniffed::Text => {}
        Sniffed::Image { mime } => return Err(refuse(format!("an image ({mime})"))),
        Sniffed::Binary { description } => return Err(refuse(description)),
    }
    let decoded = text::decode(bytes);
    if decoded.lossy {
        return Err(refuse(
            "not valid UTF-8 or UTF-16, so changing it would alter bytes it cannot show"
                .to_string(),
        ));
    }
    Ok((decoded.text, decoded.encoding))
}

fn internal(path: &Path) -> ToolError {
    ToolError::new(
        ErrorCode::Internal,
        format!("{} was planned but never resolved", path.display()),
    )
}

fn ignored(tier: MatchTier) -> &'static str {
    match tier {
        MatchTier::Exact => "nothing",
        MatchTier::TrailingWhitespace => "trailing whitespace",
        MatchTier::Whitespace => "whitespace",
        MatchTier::Punctuation => "typographic punctuation",
    }
}

/// Unified diffs of the planned files; a move is shown as one diff from the old
/// path to the new one.
fn unified_diffs(plan: &patch::Plan, files: &HashMap<PathBuf, OnDisk>, ws: &Workspace) -> String {
    let shown = |key: &Path| {
        files
            .get(key)
            .map_or_else(|| key.display().to_string(), |f| ws.display(&f.path))
    };
    let moved_sources: HashSet<&Path> = plan
        .files
        .iter()
        .filter(|e| e.before.is_none() && e.after.is_some())
        .filter_map(|e| e.derived_from.as_deref())
        .collect();
    let mut out = String::new();
    for effect in &plan.files {
        if effect.after.is_none() && moved_sources.contains(effect.path.as_path()) {
            continue;
        }
        let moved = effect.before.is_none() && effect.derived_from.is_some();
        let (old_label, old_text) = match (&effect.before, &effect.derived_from) {
            (Some(before), _) => (format!("a/{}", shown(&effect.path)), before.as_str()),
            (None, Some(from)) => {
                let before = plan
                    .files
                    .iter()
                    .find(|e| e.path == *from)
                    .and_then(|e| e.before.as_deref())
                    .unwrap_or_default();
                (format!("a/{}", shown(from)), before)
            }
            (None, None) => ("/dev/null".to_string(), ""),
        };
        let new_label = match &effect.after {
            Some(_) => format!("b/{}", shown(&effect.path)),
            None => "/dev/null".to_string(),
        };
        let new_text = effect.after.as_deref().unwrap_or_default();
        let diff = similar::TextDiff::from_lines(old_text, new_text)
            .unified_diff()
            .context_radius(DIFF_CONTEXT_LINES)
            .header(&old_label, &new_label)
            .to_string();
        if diff.is_empty() {
            let note = if moved {
                "renamed, content unchanged"
            } else {
                "empty file"
            };
            let _ = writeln!(out, "--- {old_label}\n+++ {new_label}\n({note})");
        } else {
            out.push_str(&diff);
        }
    }
    out
}

/// `A path` / `M path` / `D path` lines, as Codex prints them.
fn summary(
    files: &[PatchedFile],
    loose: &[LooseMatch],
    diff: Option<&str>,
    dry_run: bool,
) -> String {
    let mut out = String::from(if dry_run {
        "Dry run: the patch applies cleanly; nothing was written. It would update:"
    } else {
        "Success. Updated the following files:"
    });
    for f in files {
        let letter = match f.action {
            PatchAction::Add => 'A',
            PatchAction::Update | PatchAction::Move => 'M',
            PatchAction::Delete => 'D',
        };
        let _ = write!(out, "\n{letter} {}", f.path);
        if let Some(from) = &f.moved_from {
            let _ = write!(out, " (moved from {from})");
        }
    }
    for m in loose {
        let _ = write!(
            out,
            "\nNote: hunk {} of {} matched at line {} only when ignoring {}; check the result.",
            m.hunk, m.path, m.line, m.ignored
        );
    }
    if let Some(diff) = diff.filter(|d| !d.is_empty()) {
        let _ = write!(out, "\n\n{}", diff.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn summary_lists_sections_like_codex() {
        let file = |path: &str, action, moved_from: Option<&str>| PatchedFile {
            path: path.into(),
            action,
            moved_from: moved_from.map(str::to_string),
            added: 0,
            removed: 0,
            content_hash: None,
        };
        let files = [
            file("new.txt", PatchAction::Add, None),
            file("u.txt", PatchAction::Update, None),
            file("gone.txt", PatchAction::Delete, None),
            file("b.rs", PatchAction::Move, Some("a.rs")),
        ];
        let loose = [LooseMatch {
            path: "u.txt".into(),
            hunk: 2,
            line: 14,
            ignored: "whitespace".into(),
        }];
        assert_eq!(
            summary(&files, &loose, None, false),
            "Success. Updated the following files:\nA new.txt\nM u.txt\nD gone.txt\nM b.rs (moved from a.rs)\nNote: hunk 2 of u.txt matched at line 14 only when ignoring whitespace; check the result."
        );
    }
}
