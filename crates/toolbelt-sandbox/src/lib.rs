//! The sandbox of toolbelt's shell commands.
