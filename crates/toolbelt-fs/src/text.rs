//! Encodings, binary and image sniffing, and numbered line rendering.
