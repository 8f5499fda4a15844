//! The confined filesystem of toolbelt.
//!
//! - [`Jail`]: the workspace roots as open directory handles; every path is resolved
//!   by the kernel beneath one of them (`openat2` with `RESOLVE_BENEATH`, through
//!   `cap-std`), so `..`, symlinks, absolute paths elsewhere and check-then-use races
//!   cannot leave the workspace. Writes are atomic ([`Jail::write`]), multi-file
//!   changes all-or-nothing ([`Jail::commit`]).
//! - [`text`]: encodings, binary and image sniffing, numbered line rendering.
//! - [`edit`] and [`diff`]: the string-replacement engine and unified diffs.
//! - [`patch`]: the `*** Begin Patch` envelope, parsed and applied.
//! - [`TempJournal`]: the directories where writes made temporary files, so that
//!   what a killed process left there is removed at the next start
//!   ([`TempJournal::sweep`]).
//! - [`mounts`]: whether the roots are on local filesystems, where small operations
//!   may run inline.
//!
//! ```
//! use toolbelt_fs::{Jail, WriteOptions};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let jail = Jail::open(&[dir.path().to_path_buf()]).unwrap();
//! let file = jail.resolve(dir.path(), "notes/todo.txt").unwrap();
//! jail.write(&file, b"ship it\n", WriteOptions { create_dirs: true, ..Default::default() }).unwrap();
//! assert_eq!(jail.read(&file, 1024).unwrap(), b"ship it\n");
//! // `..` out of the root is refused before anything is touched.
//! assert!(jail.resolve(dir.path(), "../elsewhere").is_err());
//! ```

pub mod diff;
pub mod edit;
mod error;
mod jail;
pub mod mounts;
pub mod patch;
pub mod text;
mod tool_error;

pub use error::{FsError, MAX_SYMLINK_HOPS};
pub use jail::leftovers::{JOURNAL_LOCK_WAIT_MS, MAX_JOURNAL_BYTES, Swept, TempJournal};
pub use jail::{
    Change, DirEntry, EntryKind, FileLock, Jail, LOCK_WAIT_MS, MAX_PATH_BYTES, Meta, WorkPath,
    WriteOptions, Written,
};

use sha2::{Digest, Sha256};

/// The content hash of a file as the model sees it: the first 16 hex digits of the
/// SHA-256 of its bytes. read_file returns it; write tools accept it as
/// `expected_hash`.
pub fn content_hash(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(16);
    for b in digest.iter().take(8) {
        let _ = write!(out, "{b:02x}");
    }
    out
}
