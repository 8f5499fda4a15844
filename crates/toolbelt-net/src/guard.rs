//! The SSRF guard.
