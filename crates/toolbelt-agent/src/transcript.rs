//! Transcripts (in progress).
