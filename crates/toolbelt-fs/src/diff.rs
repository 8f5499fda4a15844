//! Unified diffs of text changes.
