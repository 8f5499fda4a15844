//! The `*** Begin Patch` envelope: parsing and applying hunks.
