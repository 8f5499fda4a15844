//! Tests of `search`.
