//! Tests of `guard`.
