//! Keeping the history inside the context window (in progress).
