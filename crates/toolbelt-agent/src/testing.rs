//! A scripted model provider on 127.0.0.1 (in progress).
