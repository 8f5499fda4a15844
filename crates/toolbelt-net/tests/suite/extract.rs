//! Tests of `extract`.
