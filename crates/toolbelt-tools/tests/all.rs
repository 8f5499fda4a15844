//! The integration tests of toolbelt-tools, in one binary.

mod suite;
