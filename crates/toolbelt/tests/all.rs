//! The integration tests of the `toolbelt` command, in one binary.

mod suite;
