//! Integration tests: calls.
