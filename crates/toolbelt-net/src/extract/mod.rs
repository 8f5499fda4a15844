//! Main-content extraction from HTML.
