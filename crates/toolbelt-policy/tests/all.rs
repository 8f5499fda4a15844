//! The integration tests of toolbelt-policy, in one binary.

mod suite;
