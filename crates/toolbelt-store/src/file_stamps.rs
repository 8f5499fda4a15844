//! [`StoreStamps`]: the file stamps of a workspace kept in the store, so that the
//! replicas of a server serving one workspace share what was read.

use std::path::Path;

use sqlx::Row;
use toolbelt_core::{BoxFuture, SharedStamp, SharedStamps, StampChange};

use crate::error::StoreResult;
use crate::handle::StoreHandle;
use crate::store::Store;

/// Stamps of one workspace in the `file_stamps` table. A failure to reach the
/// store is logged: the process's own stamps still apply.
#[derive(Debug, Clone)]
pub struct StoreStamps {
    store: StoreHandle,
    workspace: String,
}

impl StoreStamps {
    /// The stamps of `workspace` (the key of the workspace, as the call log has it).
    pub fn new(store: impl Into<StoreHandle>, workspace: impl Into<String>) -> StoreStamps {
        StoreStamps {
            store: store.into(),
            workspace: workspace.into(),
        }
    }

    async fn load_row(&self, path: &Path) -> StoreResult<Option<SharedStamp>> {
        let store = self.store.store().await?;
        let row = sqlx::query(
            "SELECT hash, size, seen_ms FROM file_stamps WHERE workspace = $1 AND path = $2",
        )
        .bind(&self.workspace)
        .bind(path.to_string_lossy().into_owned())
        .fetch_optional(store.pool())
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(SharedStamp {
            hash: row.try_get("hash")?,
            size: u64::try_from(row.try_get::<i64, _>("size")?).unwrap_or(0),
            seen_ms: row.try_get("seen_ms")?,
        }))
    }

    async fn save_rows(&self, changes: Vec<StampChange>) -> StoreResult<()> {
        let store: &Store = self.store.store().await?;
        let mut tx = store.begin_write().await?;
        for change in changes {
            match change {
                StampChange::Seen(path, seen) => {
                    // A newer stamp already there (another replica, later) wins.
                    sqlx::query(
                        "INSERT INTO file_stamps (workspace, path, hash, size, seen_ms) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (workspace, path) DO UPDATE SET \
                         hash = excluded.hash, size = excluded.size, seen_ms = excluded.seen_ms \
                         WHERE file_stamps.seen_ms <= excluded.seen_ms",
                    )
                    .bind(&self.workspace)
                    .bind(path.to_string_lossy().into_owned())
                    .bind(seen.hash)
                    .bind(i64::try_from(seen.size).unwrap_or(i64::MAX))
                    .bind(seen.seen_ms)
                    .execute(&mut *tx)
                    .await?;
                }
                StampChange::Forgotten(path) => {
                    sqlx::query("DELETE FROM file_stamps WHERE workspace = $1 AND path = $2")
                        .bind(&self.workspace)
                        .bind(path.to_string_lossy().into_owned())
                        .execute(&mut *tx)
                        .await?;
                }
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

impl SharedStamps for StoreStamps {
    fn load<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<SharedStamp>> {
        Box::pin(async move {
            match self.load_row(path).await {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(
                        "could not read what other replicas saw of {}: {}",
                        path.display(),
                        toolbelt_core::error_chain(&e)
                    );
                    None
                }
            }
        })
    }

    fn save(&self, changes: Vec<StampChange>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let count = changes.len();
            if let Err(e) = self.save_rows(changes).await {
                tracing::warn!(
                    stamps = count,
                    "could not share what was read with other replicas: {}",
                    toolbelt_core::error_chain(&e)
                );
            }
        })
    }
}
