//! What a checkpoint changed, as unified diffs from the kept content.

use serde::Serialize;
use similar::TextDiff;
use toolbelt_store::{CheckpointRecord, FileState, get_checkpoint};

use crate::error::CheckpointError;
use crate::workspace::Checkpoints;

/// Lines of context around each change.
const CONTEXT_LINES: usize = 3;

/// One path of a checkpoint, with its diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    /// The path as recorded.
    pub path: String,
    /// `created`, `modified`, `deleted`, `renamed` or `mode`.
    pub change: String,
    /// Where a renamed path was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// Whether its content before the call is kept.
    pub captured: bool,
    /// Why not, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The unified diff from before to after (`None`: binary, not kept, or not a
    /// file on either side).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Checkpoint `id` of the workspace with a diff per path (paths matching `only`
/// when given).
///
/// # Errors
/// No such checkpoint in this workspace; the store cannot be read.
pub async fn checkpoint_diff(
    checkpoints: &Checkpoints,
    id: i64,
) -> Result<(CheckpointRecord, Vec<FileDiff>), CheckpointError> {
    let store = checkpoints.inner.store.store().await?;
    let record = get_checkpoint(store, id)
        .await?
        .filter(|r| r.workspace == checkpoints.workspace())
        .ok_or_else(|| CheckpointError::NotFound(crate::display_id(id)))?;
    let blobs = checkpoints.blobs().clone();
    let files = record.files.clone();
    let diffs = tokio::task::spawn_blocking(move || {
        // A renamed path's content before is its source's.
        let source_of = |f: &toolbelt_store::FileChange| -> FileState {
            f.renamed_from
                .as_ref()
                .and_then(|from| files.iter().find(|g| &g.path == from))
                .map_or_else(|| f.before.clone(), |g| g.before.clone())
        };
        files
            .iter()
            .map(|f| FileDiff {
                path: f.path.clone(),
                change: f.change.clone(),
                renamed_from: f.renamed_from.clone(),
                captured: f.captured,
                note: f.note.clone(),
                diff: text_diff(
                    &blobs,
                    f.renamed_from.as_deref().unwrap_or(&f.path),
                    &f.path,
                    &source_of(f),
                    &f.after,
                ),
            })
            .collect::<Vec<_>>()
    })
    .await?;
    Ok((record, diffs))
}

/// The text of a file state: empty for an absent entry, `None` when it is not a
/// file with kept UTF-8 content.
fn text_of(blobs: &crate::Blobs, state: &FileState) -> Option<String> {
    match state.kind.as_str() {
        crate::observe::ABSENT => Some(String::new()),
        crate::observe::FILE => {
            let bytes = blobs.get(state.hash.as_deref()?).ok()?;
            String::from_utf8(bytes).ok()
        }
        _ => None,
    }
}

/// A unified diff from `before` (at `old_path`) to `after` (at `new_path`).
pub(crate) fn text_diff(
    blobs: &crate::Blobs,
    old_path: &str,
    new_path: &str,
    before: &FileState,
    after: &FileState,
) -> Option<String> {
    let old = text_of(blobs, before)?;
    let new = text_of(blobs, after)?;
    if old == new {
        return None;
    }
    let diff = TextDiff::from_lines(&old, &new);
    let out = diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(
            &if before.kind == crate::observe::ABSENT {
                "/dev/null".to_string()
            } else {
                format!("a/{old_path}")
            },
            &if after.kind == crate::observe::ABSENT {
                "/dev/null".to_string()
            } else {
                format!("b/{new_path}")
            },
        )
        .to_string();
    Some(out)
}
