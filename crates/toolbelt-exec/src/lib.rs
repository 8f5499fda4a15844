//! Running shell commands for toolbelt's shell tools.
