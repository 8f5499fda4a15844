//! Integration tests: spill.
