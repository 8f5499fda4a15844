//! Commands run through the `toolbelt-sandbox` helper, with real files, processes
//! and sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod enforce;
