//! The parallel, .gitignore-aware walk shared by grep and glob.
