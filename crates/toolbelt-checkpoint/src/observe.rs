//! What is at a path, read without following a symbolic link, and its content
//! kept when it is a file small enough.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use toolbelt_core::human::human_bytes;
use toolbelt_store::FileState;

use crate::blobs::{Blobs, hash_bytes};
use crate::error::CheckpointError;

/// The kinds of entry, as the records name them.
pub(crate) const ABSENT: &str = "absent";
pub(crate) const FILE: &str = "file";
pub(crate) const DIR: &str = "dir";
pub(crate) const SYMLINK: &str = "symlink";
pub(crate) const OTHER: &str = "other";

/// What `lstat` says of an entry: enough to see that it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub kind: &'static str,
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub dev: u64,
    pub nlink: u64,
}

impl Stat {
    pub(crate) fn from_metadata(m: &fs::Metadata) -> Stat {
        let ft = m.file_type();
        let kind = if ft.is_symlink() {
            SYMLINK
        } else if ft.is_dir() {
            DIR
        } else if ft.is_file() {
            FILE
        } else {
            OTHER
        };
        Stat {
            kind,
            size: if ft.is_file() { m.len() } else { 0 },
            mode: m.mode() & 0o7777,
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
            ctime_ns: m.ctime() * 1_000_000_000 + m.ctime_nsec(),
            ino: m.ino(),
            dev: m.dev(),
            nlink: m.nlink(),
        }
    }

    /// Whether the entry may have changed since `self` was taken.
    pub(crate) fn differs(&self, now: &Stat) -> bool {
        self != now
    }
}

/// The entry at `path` (`None`: nothing there).
///
/// # Errors
/// It cannot be read (a permission, an I/O error).
pub(crate) fn stat(path: &Path) -> io::Result<Option<Stat>> {
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(Stat::from_metadata(&m))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(20) => Ok(None), // ENOTDIR: a parent is a file
        Err(e) => Err(e),
    }
}

/// An entry as kept: its state, and whether its content is kept (a file's bytes,
/// a link's target) so that it can be put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    pub state: FileState,
    pub captured: bool,
    /// Why it is not, when it is not.
    pub note: Option<String>,
    /// Bytes written to the content store for it.
    pub stored: u64,
}

/// The state of the entry at `path` (its `lstat`: `stat`), its content kept in
/// `blobs` when it is a file of at most `max_bytes` with one link. `keep`: false
/// hashes without keeping (for the state after a call).
///
/// # Errors
/// The file cannot be read, or its content cannot be kept.
pub(crate) fn capture(
    path: &Path,
    stat: Option<&Stat>,
    blobs: &Blobs,
    max_bytes: u64,
    keep: bool,
) -> Result<Captured, CheckpointError> {
    let Some(stat) = stat else {
        return Ok(Captured {
            state: FileState::absent(),
            captured: true,
            note: None,
            stored: 0,
        });
    };
    let mut state = FileState {
        kind: stat.kind.to_string(),
        hash: None,
        mode: Some(i64::from(stat.mode)),
        size: None,
        link: None,
    };
    let mut out = Captured {
        state: FileState::absent(),
        captured: true,
        note: None,
        stored: 0,
    };
    match stat.kind {
        FILE => {
            state.size = Some(i64::try_from(stat.size).unwrap_or(i64::MAX));
            if let Some(why) = not_capturable(stat, max_bytes) {
                out.captured = false;
                out.note = Some(why);
            } else {
                let bytes = fs::read(path).map_err(|e| CheckpointError::io("read", path, e))?;
                let hash = hash_bytes(&bytes);
                if keep {
                    out.stored = blobs.put(&hash, &bytes)?;
                }
                state.size = Some(i64::try_from(bytes.len()).unwrap_or(i64::MAX));
                state.hash = Some(hash);
            }
        }
        SYMLINK => {
            let target = fs::read_link(path).map_err(|e| CheckpointError::io("read", path, e))?;
            state.link = Some(target.to_string_lossy().into_owned());
            state.mode = None;
        }
        DIR => {}
        _ => {
            out.captured = false;
            out.note = Some("not captured: not a file, directory or link".into());
        }
    }
    out.state = state;
    Ok(out)
}

/// Why a file's content is not kept (over `max_bytes`, or a hard link), if it is not.
pub(crate) fn not_capturable(stat: &Stat, max_bytes: u64) -> Option<String> {
    if stat.size > max_bytes {
        Some(format!(
            "not captured: {} is over the {} a file may have",
            human_bytes(stat.size),
            human_bytes(max_bytes)
        ))
    } else if stat.nlink > 1 {
        Some("not captured: a hard link (another name shares its content)".into())
    } else {
        None
    }
}

/// Whether two states are the same content, kind, mode and link target. A file
/// whose content was not hashed (too large) is the same when its size is.
pub(crate) fn same_state(a: &FileState, b: &FileState) -> bool {
    a.kind == b.kind
        && a.mode == b.mode
        && a.link == b.link
        && match (&a.hash, &b.hash) {
            (Some(x), Some(y)) => x == y,
            (None, None) => a.size == b.size,
            _ => false,
        }
}
