//! [`StoreHandle`]: the store behind the tools and the call log, opened on first use
//! (or up front by a server, to refuse a bad database at start) and shared.

use std::sync::Arc;

use crate::{Location, Store, StoreError};
use tokio::sync::OnceCell;
use toolbelt_core::ToolError;

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
