//! Integration tests of the jail on real files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod escapes;
mod leftovers;
mod writes;
