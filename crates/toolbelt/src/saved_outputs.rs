//! Where a workspace's saved outputs are kept, and for how long.
//!
//! Every process writes them to `<state>/tool-output/` and removes there, at
//! start, those past [`SavedOutputLimits`] (7 days, 1 GiB). On a PostgreSQL
//! store they are kept in the store too ([`StoreOutputs`]), so that `read_output`
//! answered by any replica of a server, each with its own state directory, pages
//! an output another one saved. A SQLite store is a file on one machine, so the
//! processes using it are on the machine of the spill files, and kept in the store
//! too, every long output would be written twice for little: with SQLite, saved
//! outputs are the spill files only.

use std::sync::Arc;
use std::time::SystemTime;

use toolbelt_core::Session;
use toolbelt_core::output::{SavedOutputLimits, SavedOutputs, expire_spilled};
use toolbelt_store::{Location, StoreHandle, StoreOutputs};

/// Returns `session` with its saved outputs kept in `store` when that is
/// PostgreSQL, having removed the spill files past the limits.
pub(crate) fn attach(session: Session, store: &StoreHandle) -> Session {
    expire_files(&session);
    if !matches!(store.location(), Location::Postgres(_)) {
        return session;
    }
    let outputs = StoreOutputs::new(store.clone(), toolbelt_store::workspace_key(&session));
    session.with_saved_outputs(Arc::new(outputs) as Arc<dyn SavedOutputs>)
}

fn expire_files(session: &Session) {
    let dir = session.spill_dir();
    let limits = SavedOutputLimits::default();
    match expire_spilled(&dir, &limits, SystemTime::now()) {
        Ok(expired) => {
            if expired.outputs > 0 {
                tracing::debug!(
                    outputs = expired.outputs,
                    bytes = expired.bytes,
                    "removed saved outputs past their limits from {}",
                    dir.display()
                );
            }
            for (path, err) in &expired.problems {
                tracing::warn!("cannot remove the saved output {}: {err}", path.display());
            }
        }
        Err(err) => tracing::warn!("cannot list the saved outputs in {}: {err}", dir.display()),
    }
}
