//! Fetching one URL behind the guard.
