//! A watch (inotify) on the directories of a root's index, in a process that runs
//! several shell commands: when nothing happened in any of them since the last
//! walk began, the index is still the disk, and the walk before the next command
//! is not needed. Anything seen (an event, an overflow, a directory it could not
//! watch, a new directory) means: walk.

use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::io::Errno;

use crate::index::Index;
use crate::observe::DIR;

/// The watch of one root.
pub(crate) struct Watch {
    fd: OwnedFd,
    /// The directories watched, relative to the root (`""` is the root).
    dirs: HashSet<String>,
    /// Nothing happened since the last walk began, and every directory of the
    /// index is watched.
    pub clean: bool,
}

impl Watch {
    /// A new watch, none of its directories watched yet; `None` where inotify is not
    /// to be had.
    pub(crate) fn new() -> Option<Watch> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
        Some(Watch {
            fd,
            dirs: HashSet::new(),
            clean: false,
        })
    }

    /// Whether anything happened since the last call (what happened is dropped).
    pub(crate) fn drain(&self) -> bool {
        let mut buf = [0u8; 8192];
        let mut any = false;
        loop {
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => return any,
                Ok(_) => any = true,
                Err(Errno::AGAIN) => return any,
                Err(Errno::INTR) => {}
                Err(_) => return true,
            }
        }
    }

    /// Watches every directory of `index` (and the root) not watched yet; returns
    /// how many were added, or `None` when one could not be (the watch limit).
    pub(crate) fn cover(&mut self, root: &Path, index: &Index) -> Option<usize> {
        let flags = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::MOVE_SELF
            | WatchFlags::DONT_FOLLOW
            | WatchFlags::ONLYDIR;
        let mut added = 0;
        let dirs = std::iter::once("").chain(
            index
                .entries
                .iter()
                .filter(|(_, e)| e.stat.kind == DIR)
                .map(|(rel, _)| rel.as_str()),
        );
        for rel in dirs {
            if self.dirs.contains(rel) {
                continue;
            }
            inotify::add_watch(&self.fd, root.join(rel), flags).ok()?;
            self.dirs.insert(rel.to_string());
            added += 1;
        }
        // Directories gone from the index are gone from the disk: their watches
        // went with them.
        self.dirs
            .retain(|rel| rel.is_empty() || index.entries.contains_key(rel));
        Some(added)
    }
}
