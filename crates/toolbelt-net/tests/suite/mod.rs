//! Real HTTP servers on 127.0.0.1, real pages and fixtures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod extract;
mod fetch;
mod guard;
mod proxy;
mod search;
mod servers;
