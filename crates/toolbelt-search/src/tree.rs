//! The directory tree behind list_dir.
