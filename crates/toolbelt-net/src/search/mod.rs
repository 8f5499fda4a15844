//! Web search backends.
