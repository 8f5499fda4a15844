//! The confined filesystem of toolbelt.
//!
//! - [`Jail`]: the workspace roots as open directory handles; every path is resolved
//!   by the kernel beneath one of them (`openat2` with `RESOLVE_BENEATH`, through
//!   `cap-std`), so `..`, symlinks, absolute paths elsewhere and check-then-use races
//!   cannot leave the workspace.
//! - [`text`]: encodings, binary and image sniffing, numbered line rendering.
//! - [`edit`] and [`diff`]: the string-replacement engine and unified diffs.
//! - [`patch`]: the `*** Begin Patch` envelope, parsed and applied.

pub mod diff;
pub mod edit;
pub mod patch;
pub mod text;
