//! [`StoreHandle`]: the store behind the tools and the call log, opened on first use
//! (or up front by a server, to refuse a bad database at start) and shared.

use std::sync::Arc;

use crate::{Location, Store, StoreError};
use tokio::sync::OnceCell;
use toolbelt_core::{ErrorCode, ToolError};

/// A store opened on first use, shared by the tools of one registry. Cheap to clone.
#[derive(Debug, Clone)]
pub struct StoreHandle {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    location: Location,
    cell: OnceCell<Store>,
}

impl StoreHandle {
    /// A handle on the store at `location`, opened by the first call that needs it.
    pub fn lazy(location: Location) -> StoreHandle {
        StoreHandle {
            inner: Arc::new(Inner {
                location,
                cell: OnceCell::new(),
            }),
        }
    }

    /// A handle on a store already open.
    pub fn open(store: Store) -> StoreHandle {
        StoreHandle {
            inner: Arc::new(Inner {
                location: store.location().clone(),
                cell: OnceCell::new_with(Some(store)),
            }),
        }
    }

    /// Where the store lives.
    pub fn location(&self) -> &Location {
        &self.inner.location
    }

    /// The store, opened now if it is not yet. A failed open is tried again by the
    /// next call.
    ///
    /// # Errors
    /// The database cannot be opened (corrupt, foreign, newer, unreachable).
    pub async fn store(&self) -> Result<&Store, StoreError> {
        self.inner
            .cell
            .get_or_try_init(|| Store::open(&self.inner.location))
            .await
    }

    /// [`StoreHandle::store`] with its failure as a tool error.
    ///
    /// # Errors
    /// The database cannot be opened.
    pub async fn get(&self) -> Result<&Store, ToolError> {
        Ok(self.store().await?)
    }
}

impl From<Store> for StoreHandle {
    fn from(store: Store) -> StoreHandle {
        StoreHandle::open(store)
    }
}

impl From<StoreError> for ToolError {
    /// As [`store_error`].
    fn from(e: StoreError) -> ToolError {
        store_error(e)
    }
}

/// A store error as the model sees it: NOT_FOUND, INVALID_PARAMS and CONFLICT for
/// bad requests, DEPENDENCY_MISSING when the database cannot be opened, INTERNAL
/// for a failed query.
pub fn store_error(e: StoreError) -> ToolError {
    match e {
        StoreError::NotFound(m) => ToolError::new(ErrorCode::NotFound, m),
        StoreError::Invalid(m) => {
            ToolError::new(ErrorCode::InvalidParams, m).hint("fix the argument and call again")
        }
        StoreError::Conflict(m) => ToolError::new(ErrorCode::Conflict, m),
        e @ (StoreError::Open { .. }
        | StoreError::Corrupt { .. }
        | StoreError::Foreign { .. }
        | StoreError::Newer { .. }) => ToolError::new(ErrorCode::DependencyMissing, e.to_string())
            .hint("the store is unavailable; tell the user, who can fix the database or its URL"),
        e => {
            tracing::error!("store failure: {e}");
            ToolError::new(ErrorCode::Internal, e.to_string())
                .hint("the store failed; try again, and tell the user if it keeps failing")
        }
    }
}
