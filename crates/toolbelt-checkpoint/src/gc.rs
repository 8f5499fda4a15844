//! Keeping the content store within its bounds: checkpoints past the age limit,
//! then the oldest while the content is over the total cap, are marked pruned,
//! and content nothing refers to any more is removed.

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;
use toolbelt_core::human::human_bytes;
use toolbelt_store::{checkpoint_ages, mark_pruned, referenced_hashes};

use crate::error::CheckpointError;
use crate::workspace::{Checkpoints, Inner};

/// What a collection did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Collected {
    /// The checkpoints marked pruned.
    pub pruned: Vec<String>,
    /// Kept contents removed.
    pub removed: usize,
    /// Bytes freed.
    pub freed_bytes: u64,
    /// Bytes still kept.
    pub kept_bytes: u64,
}

/// The file that counts the bytes stored since the last collection, across
/// processes (a command line call is one process per call).
const STORED_SINCE: &str = "stored-since-collection";

/// Counts `stored` new bytes and collects when enough was stored since the last
/// collection (an eighth of the cap): the call that crosses it pays for it.
pub(crate) async fn maybe_collect(inner: &Arc<Inner>, stored: u64) {
    if stored == 0 {
        return;
    }
    let path = inner.dir.join(STORED_SINCE);
    let before = std::fs::read(&path)
        .ok()
        .and_then(|b| b.get(..8).and_then(|b| b.try_into().ok()))
        .map_or(0, u64::from_le_bytes);
    let total = before.saturating_add(stored);
    let threshold = (inner.settings.max_total_bytes / 8).max(1);
    if total < threshold {
        let _ = std::fs::write(&path, total.to_le_bytes());
        return;
    }
    let _ = std::fs::write(&path, 0u64.to_le_bytes());
    let checkpoints = Checkpoints {
        inner: Arc::clone(inner),
    };
    if let Err(e) = checkpoints.collect().await {
        tracing::warn!(
            "checkpoints cannot be pruned: {}",
            toolbelt_core::error_chain(&e)
        );
    }
}

impl Checkpoints {
    /// Prunes checkpoints past the age limit, then the oldest while the kept
    /// content is over the total cap, and removes content nothing refers to.
    ///
    /// # Errors
    /// The store cannot be read or written.
    pub async fn collect(&self) -> Result<Collected, CheckpointError> {
        let inner = &self.inner;
        let store = inner.store.store().await?;
        let mut out = Collected::default();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let max_age_ms = i64::try_from(inner.settings.max_age.as_millis()).unwrap_or(i64::MAX);
        let mut ages = checkpoint_ages(store).await?;
        let expired: Vec<i64> = ages
            .iter()
            .filter(|(_, at, _)| now.saturating_sub(*at) > max_age_ms)
            .map(|(id, _, _)| *id)
            .collect();
        if !expired.is_empty() {
            mark_pruned(store, &expired, "pruned: older than the age limit").await?;
            out.pruned
                .extend(expired.iter().map(|id| crate::display_id(*id)));
            ages.retain(|(id, _, _)| !expired.contains(id));
        }
        let cap = inner.settings.max_total_bytes;
        let note = format!(
            "pruned: the content kept for checkpoints was over {}",
            human_bytes(cap)
        );
        let mut next = 0;
        loop {
            let mut referenced: HashSet<String> = referenced_hashes(store).await?;
            referenced.extend(inner.index_hashes());
            let blobs = self.blobs().clone();
            let (removed, freed, kept) = tokio::task::spawn_blocking(move || {
                let mut removed = 0;
                let mut freed = 0;
                let mut kept = 0;
                for (hash, size) in blobs.list() {
                    if referenced.contains(&hash) {
                        kept += size;
                    } else {
                        removed += 1;
                        freed += blobs.remove(&hash);
                    }
                }
                (removed, freed, kept)
            })
            .await?;
            out.removed += removed;
            out.freed_bytes += freed;
            out.kept_bytes = kept;
            if kept <= cap || next >= ages.len() {
                break;
            }
            // The oldest tenth (at least one) of what is left goes next.
            let take = ((ages.len() - next) / 10).max(1);
            let ids: Vec<i64> = ages[next..next + take]
                .iter()
                .map(|(id, _, _)| *id)
                .collect();
            next += take;
            mark_pruned(store, &ids, &note).await?;
            out.pruned
                .extend(ids.iter().map(|id| crate::display_id(*id)));
        }
        Ok(out)
    }
}
