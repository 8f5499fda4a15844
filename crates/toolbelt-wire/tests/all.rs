//! The integration tests of toolbelt-wire, in one binary.

mod suite;
