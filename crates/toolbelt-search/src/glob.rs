//! glob: file names matching a pattern.
