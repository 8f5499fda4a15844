//! Integration tests of toolbelt-sandbox, one binary.

mod suite;
