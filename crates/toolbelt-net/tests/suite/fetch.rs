//! Tests of `fetch`.
