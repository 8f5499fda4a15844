//! Integration tests of toolbelt-net, one binary.

mod suite;
