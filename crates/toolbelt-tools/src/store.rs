//! The store behind the todo and planner tools (see [`toolbelt_store::StoreHandle`]).

pub use toolbelt_store::{StoreHandle, store_error};
