//! grep: file contents matching a pattern.
