//! The integration tests of toolbelt-fs, in one binary.

mod suite;
