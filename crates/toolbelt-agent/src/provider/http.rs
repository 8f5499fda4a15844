//! HTTP plumbing shared by the providers (in progress).
