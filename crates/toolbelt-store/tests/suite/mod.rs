#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod open;
mod planner;
mod reliability;
mod reviews;
