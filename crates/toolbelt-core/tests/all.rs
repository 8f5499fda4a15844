//! The integration tests of toolbelt-core, in one binary.

mod suite;
