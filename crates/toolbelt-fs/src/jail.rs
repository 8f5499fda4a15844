//! [`Jail`]: the workspace roots as open directory handles.
//!
//! A path is first resolved lexically (joined to the cwd, `.` and `..` folded) and
//! must then lie in a root; symlinks on the way are followed by us, one component at
//! a time, and may not lead out of the roots. Every open, create, rename and remove
//! then goes through the root's directory handle with `cap-std`, which asks the
//! kernel to resolve beneath it (`openat2` with `RESOLVE_BENEATH`): a directory
//! swapped for a symlink between our check and the use cannot take the operation
//! outside.

pub(crate) mod leftovers;

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cap_fs_ext::{OpenOptionsFollowExt, OpenOptionsMaybeDirExt, OpenOptionsSyncExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, FileTypeExt, MetadataExt, OpenOptions, OpenOptionsExt, PermissionsExt};

use crate::error::{Failed, FsError, MAX_SYMLINK_HOPS};
use leftovers::TempJournal;

/// The longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// How long [`Jail::lock`] waits for another writer before giving up.
pub const LOCK_WAIT_MS: u64 = 30_000;

/// The [`EntryKind`] of a file type, for std's and cap-std's types alike (their
/// methods have the same names).
macro_rules! kind_of {
    ($ft:expr) => {{
        let ft = $ft;
        if ft.is_file() {
            EntryKind::File
        } else if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_symlink() {
            EntryKind::Symlink
        } else if ft.is_fifo() {
            EntryKind::Fifo
        } else if ft.is_socket() {
            EntryKind::Socket
        } else if ft.is_block_device() {
            EntryKind::BlockDevice
        } else if ft.is_char_device() {
            EntryKind::CharDevice
        } else {
            EntryKind::Other
        }
    }};
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO (named pipe).
    Fifo,
    /// A Unix socket.
    Socket,
    /// A block device.
    BlockDevice,
    /// A character device.
    CharDevice,
    /// Anything else.
    Other,
}

impl EntryKind {
    /// A short description: "regular file", "FIFO (named pipe)", ...
    pub fn describe(self) -> &'static str {
        match self {
            EntryKind::File => "regular file",
            EntryKind::Dir => "directory",
            EntryKind::Symlink => "symbolic link",
            EntryKind::Fifo => "FIFO (named pipe)",
            EntryKind::Socket => "socket",
            EntryKind::BlockDevice => "block device",
            EntryKind::CharDevice => "character device",
            EntryKind::Other => "special file",
        }
    }

    pub(crate) fn of(ft: cap_std::fs::FileType) -> EntryKind {
        kind_of!(ft)
    }

    fn of_std(ft: std::fs::FileType) -> EntryKind {
        use std::os::unix::fs::FileTypeExt as _;
        kind_of!(ft)
    }
}

/// What [`Jail::metadata`] tells about a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time, when the file system has one.
    pub modified: Option<SystemTime>,
    /// Permission bits (`0o644`).
    pub mode: u32,
}

impl Meta {
    fn of(m: &cap_std::fs::Metadata) -> Meta {
        Meta {
            kind: EntryKind::of(m.file_type()),
            size: m.len(),
            modified: m.modified().ok().map(cap_std::time::SystemTime::into_std),
            mode: m.mode() & 0o7777,
        }
    }

    fn of_std(m: &std::fs::Metadata) -> Meta {
        use std::os::unix::fs::MetadataExt as _;
        Meta {
            kind: EntryKind::of_std(m.file_type()),
            size: m.len(),
            modified: m.modified().ok(),
            mode: m.mode() & 0o7777,
        }
    }
}

/// One entry of [`Jail::read_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The name (lossily UTF-8).
    pub name: String,
    /// What it is (a symlink is reported as a symlink, not followed).
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time.
    pub modified: Option<SystemTime>,
}

/// How [`Jail::write`] writes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// Fail with [`FsError::Exists`] when the file exists (checked atomically).
    pub create_new: bool,
    /// Create missing parent directories (inside the jail).
    pub create_dirs: bool,
}

/// What [`Jail::write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// The file did not exist before.
    pub created: bool,
    /// Bytes written.
    pub bytes: u64,
}

/// One file change of an all-or-nothing [`Jail::commit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Write `bytes` to `path`, creating missing parent directories.
    Write {
        /// The file.
        path: WorkPath,
        /// Its new content.
        bytes: Vec<u8>,
        /// Fail when the file already exists.
        create_new: bool,
    },
    /// Delete the file at `path`.
    Delete {
        /// The file.
        path: WorkPath,
    },
}

impl Change {
    fn path(&self) -> &WorkPath {
        match self {
            Change::Write { path, .. } | Change::Delete { path } => path,
        }
    }
}

/// A path that lies in one of the jail's roots, with `.` and `..` folded and, when
/// it came from [`Jail::resolve`], every symlink on the way followed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkPath {
    root: usize,
    root_path: PathBuf,
    rel: PathBuf,
    abs: PathBuf,
}

impl WorkPath {
    /// The absolute path.
    pub fn abs(&self) -> &Path {
        &self.abs
    }

    /// The path relative to its root (empty for the root itself).
    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// The root it lies in.
    pub fn root(&self) -> &Path {
        &self.root_path
    }

    /// The path as shown to the model: relative to `cwd` when it lies beneath it,
    /// absolute otherwise.
    pub fn display(&self, cwd: &Path) -> String {
        match self.abs.strip_prefix(cwd) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => self.abs.display().to_string(),
        }
    }

    fn new(root: usize, root_path: &Path, rel: PathBuf) -> WorkPath {
        let abs = if rel.as_os_str().is_empty() {
            root_path.to_path_buf()
        } else {
            root_path.join(&rel)
        };
        WorkPath {
            root,
            root_path: root_path.to_path_buf(),
            rel,
            abs,
        }
    }

    fn shown(&self) -> String {
        self.abs.display().to_string()
    }
}

#[derive(Debug)]
struct Root {
    /// Canonical absolute path.
    path: PathBuf,
    /// The path as configured (may differ from `path` through symlinks).
    given: PathBuf,
    dir: Dir,
    /// Device and inode of the directory when it was opened.
    identity: (u64, u64),
}

impl Root {
    /// Opens the root configured as `given`.
    fn open(given: &Path) -> io::Result<Root> {
        let path = std::fs::canonicalize(given)?;
        let dir = Dir::open_ambient_dir(&path, ambient_authority())?;
        let identity = identity(&path)?;
        Ok(Root {
            given: normalize(given),
            path,
            dir,
            identity,
        })
    }
}

/// Device and inode of the directory `path` names (symlinks followed).
fn identity(path: &Path) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// The workspace roots as open directory handles. Every file operation of the
/// file tools goes through one.
///
/// # Security
/// Paths are resolved beneath a root by the kernel (`openat2` with
/// `RESOLVE_BENEATH` through `cap-std`); `..`, absolute paths elsewhere, prefix
/// look-alikes (`/r/work` vs `/r/work2`), symlinks leading out and races between a
/// check and the use are refused. FIFOs, sockets and devices are never opened.
#[derive(Debug)]
pub struct Jail {
    /// Deepest roots first, so a nested root wins over its parent.
    roots: Vec<Root>,
    /// Where the directories that get a temporary file are noted, if anywhere.
    journal: Option<Arc<TempJournal>>,
}

impl Jail {
    /// Opens `roots` as directory handles.
    ///
    /// # Errors
    /// [`FsError::RootUnavailable`] when a root does not exist or cannot be opened;
    /// [`FsError::InvalidPath`] when no root is given.
    pub fn open(roots: &[PathBuf]) -> Result<Jail, FsError> {
        if roots.is_empty() {
            return Err(FsError::InvalidPath {
                path: String::new(),
                reason: "no workspace root is configured".into(),
            });
        }
        let mut opened = Vec::with_capacity(roots.len());
        for given in roots {
            let root = Root::open(given).map_err(|source| FsError::RootUnavailable {
                root: given.clone(),
                source,
            })?;
            opened.push(root);
        }
        opened.sort_by_key(|r| std::cmp::Reverse(r.path.components().count()));
        Ok(Jail {
            roots: opened,
            journal: None,
        })
    }

    /// Notes in `journal` each directory where this jail is about to create the
    /// first temporary file of an atomic write, so that what a killed process
    /// leaves there can be found again ([`TempJournal::sweep`]). A journal shared
    /// by several jails notes a directory once for all of them.
    pub fn with_journal(mut self, journal: Arc<TempJournal>) -> Jail {
        self.journal = Some(journal);
        self
    }

    /// The journal given to [`Jail::with_journal`].
    pub fn journal(&self) -> Option<&Arc<TempJournal>> {
        self.journal.as_ref()
    }

    /// True while every root's configured path still names the directory this
    /// jail holds open (it was not removed, replaced or re-pointed by a symlink
    /// since): one `stat` per root, so that a jail can be kept between calls.
    pub fn is_current(&self) -> bool {
        self.roots
            .iter()
            .all(|r| identity(&r.given).is_ok_and(|id| id == r.identity))
    }

    /// The canonical absolute paths of the roots.
    pub fn roots(&self) -> Vec<&Path> {
        self.roots.iter().map(|r| r.path.as_path()).collect()
    }

    fn root_paths(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|r| r.path.clone()).collect()
    }

    /// Resolves `path` (relative to `cwd`, or absolute) to a path in a root, with
    /// every symlink on the way followed inside the roots. The last components may
    /// not exist yet.
    ///
    /// # Errors
    /// [`FsError::InvalidPath`] (empty, NUL byte, too long, `~`),
    /// [`FsError::Outside`], [`FsError::SymlinkEscape`], [`FsError::SymlinkLoop`],
    /// or an I/O error met while following symlinks.
    ///
    /// # Security
    /// The result is only a name; every later operation is still checked by the
    /// kernel beneath the root handle.
    pub fn resolve(&self, cwd: &Path, path: &str) -> Result<WorkPath, FsError> {
        let lexical = self.lexical(cwd, path)?;
        self.follow(lexical, path)
    }

    /// Like [`Jail::resolve`] without following symlinks: `.` and `..` are folded as
    /// text and the result must lie in a root.
    ///
    /// # Errors
    /// As [`Jail::resolve`], without the symlink errors.
    pub fn lexical(&self, cwd: &Path, path: &str) -> Result<WorkPath, FsError> {
        check_input(path)?;
        let joined = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            cwd.join(path)
        };
        let normal = normalize(&joined);
        self.locate(&normal).ok_or_else(|| FsError::Outside {
            path: path.to_owned(),
            roots: self.root_paths(),
        })
    }

    /// The root holding the absolute, normalised `path`, and the path within it.
    fn locate(&self, path: &Path) -> Option<WorkPath> {
        self.roots.iter().enumerate().find_map(|(i, root)| {
            let rel = path
                .strip_prefix(&root.path)
                .or_else(|_| path.strip_prefix(&root.given))
                .ok()?;
            Some(WorkPath::new(i, &root.path, rel.to_path_buf()))
        })
    }

    /// Follows the symlinks of `start`, one component at a time.
    fn follow(&self, start: WorkPath, input: &str) -> Result<WorkPath, FsError> {
        let mut root = start.root;
        let mut done = PathBuf::new();
        let mut todo: VecDeque<OsString> = start
            .rel
            .components()
            .map(|c| c.as_os_str().to_owned())
            .collect();
        let mut hops = 0usize;
        while let Some(name) = todo.pop_front() {
            if name == OsStr::new(".") {
                continue;
            }
            if name == OsStr::new("..") {
                if !done.pop() {
                    return Err(FsError::Outside {
                        path: input.to_owned(),
                        roots: self.root_paths(),
                    });
                }
                continue;
            }
            let candidate = done.join(&name);
            let dir = &self.roots[root].dir;
            match dir.symlink_metadata(&candidate) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(FsError::SymlinkLoop {
                            path: input.to_owned(),
                        });
                    }
                    let link = self.roots[root].path.join(&candidate);
                    let target = dir.read_link_contents(&candidate).map_err(|e| {
                        FsError::from_io("read the symlink", &link.display().to_string(), e)
                    })?;
                    let rest = std::mem::take(&mut todo);
                    if target.is_absolute() {
                        let Some(found) = self.locate(&normalize(&target)) else {
                            return Err(FsError::SymlinkEscape {
                                path: link.display().to_string(),
                                target,
                            });
                        };
                        root = found.root;
                        done = PathBuf::new();
                        todo.extend(found.rel.components().map(|c| c.as_os_str().to_owned()));
                    } else {
                        for c in target.components() {
                            match c {
                                Component::Normal(n) => todo.push_back(n.to_owned()),
                                Component::ParentDir => todo.push_back("..".into()),
                                _ => {}
                            }
                        }
                        // A relative target that climbs above the root escapes.
                        if climbs_out(&done, &target) {
                            return Err(FsError::SymlinkEscape {
                                path: link.display().to_string(),
                                target,
                            });
                        }
                    }
                    todo.extend(rest);
                }
                Ok(_) => done = candidate,
                Err(err) => {
                    let errno = err.raw_os_error();
                    let missing = err.kind() == io::ErrorKind::NotFound
                        || errno == Some(rustix::io::Errno::NOTDIR.raw_os_error());
                    if !missing {
                        let shown = self.roots[root].path.join(&candidate);
                        return Err(FsError::from_io("open", &shown.display().to_string(), err));
                    }
                    // The rest does not exist yet: fold it as text.
                    done = candidate;
                    for rest in todo.drain(..) {
                        if rest == OsStr::new("..") {
                            if !done.pop() {
                                return Err(FsError::Outside {
                                    path: input.to_owned(),
                                    roots: self.root_paths(),
                                });
                            }
                        } else if rest != OsStr::new(".") {
                            done.push(rest);
                        }
                    }
                }
            }
        }
        Ok(WorkPath::new(root, &self.roots[root].path, done))
    }

    fn root_of(&self, p: &WorkPath) -> Result<&Root, FsError> {
        self.roots
            .get(p.root)
            .filter(|r| r.path == p.root_path)
            .ok_or_else(|| FsError::Outside {
                path: p.shown(),
                roots: self.root_paths(),
            })
    }

    /// Metadata of `p`, following a final symlink inside the roots.
    ///
    /// # Errors
    /// [`FsError::NotFound`] and other I/O errors.
    pub fn metadata(&self, p: &WorkPath) -> Result<Meta, FsError> {
        self.stat(p, true)
    }

    /// Metadata of `p` itself: a symlink is reported as a symlink.
    ///
    /// # Errors
    /// [`FsError::NotFound`] and other I/O errors.
    pub fn symlink_metadata(&self, p: &WorkPath) -> Result<Meta, FsError> {
        self.stat(p, false)
    }

    /// Metadata of `p`, following a final symlink when `follow`.
    fn stat(&self, p: &WorkPath, follow: bool) -> Result<Meta, FsError> {
        let root = self.root_of(p)?;
        let meta = if p.rel.as_os_str().is_empty() {
            root.dir.dir_metadata()
        } else if follow {
            root.dir.metadata(&p.rel)
        } else {
            root.dir.symlink_metadata(&p.rel)
        };
        meta.map(|m| Meta::of(&m))
            .map_err(|e| self.io("stat", p, e))
    }

    /// True when something exists at `p`.
    pub fn exists(&self, p: &WorkPath) -> bool {
        self.symlink_metadata(p).is_ok()
    }

    /// Opens the regular file `p` for reading.
    ///
    /// # Errors
    /// [`FsError::IsADirectory`], [`FsError::NotAFile`] for FIFOs, sockets and
    /// devices (refused without opening them, so without blocking),
    /// [`FsError::NotFound`], and other I/O errors.
    pub fn open_file(&self, p: &WorkPath) -> Result<(std::fs::File, Meta), FsError> {
        let root = self.root_of(p)?;
        if p.rel.as_os_str().is_empty() {
            return Err(FsError::IsADirectory { path: p.shown() });
        }
        let file = open_regular(root, p)
            .map_err(|failed| self.failed("open", p, failed))?
            .into_std();
        let meta = file.metadata().map_err(|e| self.io("stat", p, e))?;
        let meta = Meta::of_std(&meta);
        refuse_non_file(p, meta.kind)?;
        Ok((file, meta))
    }

    /// Reads the whole regular file `p`.
    ///
    /// # Errors
    /// As [`Jail::open_file`], and [`FsError::TooLarge`] when it is over `max_bytes`.
    pub fn read(&self, p: &WorkPath, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        let (file, meta) = self.open_file(p)?;
        if meta.size > max_bytes {
            return Err(FsError::TooLarge {
                path: p.shown(),
                size: meta.size,
                limit_bytes: max_bytes,
            });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.size).unwrap_or(0));
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| self.io("read", p, e))?;
        let len = bytes.len() as u64;
        if len > max_bytes {
            return Err(FsError::TooLarge {
                path: p.shown(),
                size: len,
                limit_bytes: max_bytes,
            });
        }
        Ok(bytes)
    }

    /// Opens a file found by walking down from a resolved [`WorkPath`]: `abs` must lie
    /// in a root. One kernel-checked open beneath the root handle, non-blocking, no
    /// extra `stat`: the fast path for grep.
    ///
    /// # Errors
    /// `PermissionDenied` when `abs` is outside every root; any error of the open.
    pub fn open_walked(&self, abs: &Path) -> io::Result<std::fs::File> {
        let (root, rel) = self
            .roots
            .iter()
            .find_map(|r| beneath(abs, &r.path).map(|rel| (r, rel)))
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::PermissionDenied, "outside the workspace")
            })?;
        let mut opts = OpenOptions::new();
        opts.read(true).nonblock(true);
        Ok(root.dir.open_with(rel, &opts)?.into_std())
    }

    /// The entries of directory `p`, sorted by name. Symlinks are reported, not followed.
    ///
    /// # Errors
    /// [`FsError::NotFound`], [`FsError::NotADirectory`] and other I/O errors.
    pub fn read_dir(&self, p: &WorkPath) -> Result<Vec<DirEntry>, FsError> {
        let dir = self.open_dir(p)?;
        list(&dir).map_err(|e| self.io("list", p, e))
    }

    /// Opens directory `p` as a handle (a new open file description).
    fn open_dir(&self, p: &WorkPath) -> Result<Dir, FsError> {
        let root = self.root_of(p)?;
        let rel: &Path = if p.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &p.rel
        };
        root.dir.open_dir(rel).map_err(|e| self.io("open", p, e))
    }

    /// Creates directory `p` and its missing parents.
    ///
    /// # Errors
    /// [`FsError::NotADirectory`] when a file is in the way; other I/O errors.
    pub fn create_dir_all(&self, p: &WorkPath) -> Result<(), FsError> {
        let root = self.root_of(p)?;
        if p.rel.as_os_str().is_empty() {
            return Ok(());
        }
        root.dir
            .create_dir_all(&p.rel)
            .map_err(|e| self.io("create the directory", p, e))
    }

    /// Writes `bytes` to `p` atomically: a temporary file in the same directory is
    /// written, flushed to disk and renamed over the target, so a reader (or a crash)
    /// sees the old content or the new, never a mix. An existing file keeps its
    /// permission bits; a hard link is replaced, not written through.
    ///
    /// # Errors
    /// [`FsError::Exists`] with `create_new`, [`FsError::NotFound`] when the parent
    /// directory is missing and `create_dirs` is off, [`FsError::IsADirectory`],
    /// [`FsError::NotAFile`], and other I/O errors.
    ///
    /// # Security
    /// The temporary file is created and renamed through a handle of the parent
    /// directory opened beneath the root; a symlink in place of the target is
    /// replaced, never followed.
    pub fn write(
        &self,
        p: &WorkPath,
        bytes: &[u8],
        opts: WriteOptions,
    ) -> Result<Written, FsError> {
        let root = self.root_of(p)?;
        let (parent_rel, name) = split(p)?;
        if opts.create_dirs && !parent_rel.as_os_str().is_empty() {
            root.dir
                .create_dir_all(parent_rel)
                .map_err(|e| self.io("create the parent directory of", p, e))?;
        }
        let parent = self.open_parent(root, parent_rel, p)?;
        let existing = self.existing(&parent, name, p)?;
        if existing.is_some() && opts.create_new {
            return Err(FsError::Exists { path: p.shown() });
        }
        let tmp = self.stage(&parent, bytes, existing.as_ref(), p)?;
        let renamed = if opts.create_new || existing.is_none() {
            rename_noreplace(&parent, &tmp, name)
        } else {
            parent.rename(&tmp, &parent, name)
        };
        if let Err(err) = renamed {
            let _ = parent.remove_file(&tmp);
            return Err(self.io("write", p, err));
        }
        sync_dir(&parent);
        Ok(Written {
            created: existing.is_none(),
            bytes: bytes.len() as u64,
        })
    }

    /// Removes the file `p` (a symlink is removed, not followed).
    ///
    /// # Errors
    /// [`FsError::NotFound`], [`FsError::IsADirectory`] and other I/O errors.
    pub fn remove_file(&self, p: &WorkPath) -> Result<(), FsError> {
        let root = self.root_of(p)?;
        let (parent_rel, name) = split(p)?;
        let parent = self.open_parent(root, parent_rel, p)?;
        match self.existing(&parent, name, p)? {
            None => Err(FsError::NotFound { path: p.shown() }),
            Some(_) => parent
                .remove_file(name)
                .map_err(|e| self.io("remove", p, e)),
        }
    }

    /// Takes an exclusive lock for a read-check-write cycle on `p`; other callers of
    /// `lock` on files of the same directory, in this process or another, wait until
    /// the returned guard is dropped.
    ///
    /// # Errors
    /// [`FsError::Busy`] after waiting [`LOCK_WAIT_MS`]; I/O errors.
    pub fn lock(&self, p: &WorkPath) -> Result<FileLock, FsError> {
        self.lock_all(std::slice::from_ref(p))
    }

    /// Like [`Jail::lock`] for several files at once, without deadlocks: each
    /// directory is locked once, in a fixed order.
    ///
    /// # Errors
    /// As [`Jail::lock`].
    pub fn lock_all(&self, paths: &[WorkPath]) -> Result<FileLock, FsError> {
        let mut dirs: Vec<((u64, u64), std::fs::File, &WorkPath)> = Vec::new();
        for p in paths {
            let (id, dir) = self.nearest_dir(p)?;
            if !dirs.iter().any(|(seen, _, _)| *seen == id) {
                dirs.push((id, dir, p));
            }
        }
        dirs.sort_by_key(|(id, _, _)| *id);
        let deadline = Instant::now() + Duration::from_millis(LOCK_WAIT_MS);
        let mut held = Vec::with_capacity(dirs.len());
        for (_, dir, p) in dirs {
            loop {
                match rustix::fs::flock(&dir, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                {
                    Ok(()) => break,
                    Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(rustix::io::Errno::WOULDBLOCK) => {
                        return Err(FsError::Busy { path: p.shown() });
                    }
                    Err(err) => return Err(self.io("lock", p, err.into())),
                }
            }
            held.push(dir);
        }
        Ok(FileLock { _dirs: held })
    }

    /// The deepest existing directory holding `p`, opened for reading (a lock needs
    /// a real descriptor, not an `O_PATH` one) as a new open file description, with
    /// its device and inode numbers.
    fn nearest_dir(&self, p: &WorkPath) -> Result<((u64, u64), std::fs::File), FsError> {
        let root = self.root_of(p)?;
        let mut at = p.rel.parent();
        loop {
            let rel = match at {
                Some(r) if !r.as_os_str().is_empty() => r,
                _ => Path::new("."),
            };
            let mut opts = OpenOptions::new();
            opts.read(true).maybe_dir(true);
            match root.dir.open_with(rel, &opts) {
                Ok(dir) => {
                    if let Ok(meta) = dir.metadata()
                        && meta.is_dir()
                    {
                        return Ok(((meta.dev(), meta.ino()), dir.into_std()));
                    }
                    return Err(FsError::NotADirectory {
                        path: root.path.join(rel).display().to_string(),
                    });
                }
                Err(err)
                    if rel != Path::new(".")
                        && (err.kind() == io::ErrorKind::NotFound
                            || err.raw_os_error()
                                == Some(rustix::io::Errno::NOTDIR.raw_os_error())) =>
                {
                    at = rel.parent();
                }
                Err(err) => return Err(self.io("lock", p, err)),
            }
        }
    }

    /// Applies every change or none: all files are staged (written and flushed as
    /// temporary files beside their targets) first, then renamed into place; if any
    /// step fails, the changes already made are undone.
    ///
    /// # Errors
    /// The first error met; the files are then as they were (directories created
    /// for new files are removed again when empty).
    pub fn commit(&self, changes: &[Change]) -> Result<(), FsError> {
        for (i, change) in changes.iter().enumerate() {
            if changes[..i].iter().any(|c| c.path() == change.path()) {
                return Err(FsError::InvalidPath {
                    path: change.path().shown(),
                    reason: "the same file is changed twice in one commit".into(),
                });
            }
        }
        let mut tx = Transaction {
            jail: self,
            staged: Vec::new(),
            created_dirs: Vec::new(),
        };
        match tx.run(changes) {
            Ok(()) => Ok(()),
            Err(err) => {
                tx.roll_back();
                Err(err)
            }
        }
    }

    fn open_parent(&self, root: &Root, parent_rel: &Path, p: &WorkPath) -> Result<Dir, FsError> {
        let rel: &Path = if parent_rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent_rel
        };
        root.dir
            .open_dir(rel)
            .map_err(|e| match FsError::from_io("open", "", e) {
                FsError::NotFound { .. } => FsError::NotFound {
                    path: root.path.join(parent_rel).display().to_string(),
                },
                FsError::NotADirectory { .. } => FsError::NotADirectory {
                    path: root.path.join(parent_rel).display().to_string(),
                },
                other => self.reword(other, p),
            })
    }

    /// What is at `name` in `parent` now: `None` when nothing, the metadata of a
    /// regular file, or an error for anything else.
    fn existing(
        &self,
        parent: &Dir,
        name: &OsStr,
        p: &WorkPath,
    ) -> Result<Option<cap_std::fs::Metadata>, FsError> {
        match parent.symlink_metadata(name) {
            Ok(m) => match EntryKind::of(m.file_type()) {
                EntryKind::File => Ok(Some(m)),
                EntryKind::Dir => Err(FsError::IsADirectory { path: p.shown() }),
                EntryKind::Symlink => Err(FsError::Io {
                    op: "write",
                    path: p.shown(),
                    source: io::Error::other(
                        "it was replaced by a symbolic link after it was resolved; try again",
                    ),
                }),
                kind => Err(FsError::NotAFile {
                    path: p.shown(),
                    kind,
                }),
            },
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(self.io("stat", p, err)),
        }
    }

    /// Writes `bytes` to a new temporary file in `parent`, flushed to disk, with the
    /// permission bits (and, where allowed, the owner) of `existing`.
    fn stage(
        &self,
        parent: &Dir,
        bytes: &[u8],
        existing: Option<&cap_std::fs::Metadata>,
        p: &WorkPath,
    ) -> Result<String, FsError> {
        self.note_temp_dir(p);
        let tmp = temp_name(TempKind::Staged);
        let mut opts = OpenOptions::new();
        opts.write(true)
            .create_new(true)
            .follow(cap_fs_ext::FollowSymlinks::No)
            .mode(existing.map_or(0o666, |m| m.mode() & 0o7777));
        let mut file = parent
            .open_with(&tmp, &opts)
            .map_err(|e| self.io("write", p, e))?;
        let result = (|| {
            file.write_all(bytes)?;
            if let Some(m) = existing {
                file.set_permissions(cap_std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
                if m.uid() != rustix::process::geteuid().as_raw()
                    || m.gid() != rustix::process::getegid().as_raw()
                {
                    // Keeping the owner needs privileges; without them the new file is ours.
                    let _ = rustix::fs::fchown(
                        &file,
                        Some(rustix::fs::Uid::from_raw(m.uid())),
                        Some(rustix::fs::Gid::from_raw(m.gid())),
                    );
                }
            }
            file.sync_all()
        })();
        if let Err(err) = result {
            drop(file);
            let _ = parent.remove_file(&tmp);
            return Err(self.io("write", p, err));
        }
        Ok(tmp)
    }

    /// Notes the directory of `p` in the journal before a temporary file is
    /// created there: after the first time in a process, a set look-up.
    fn note_temp_dir(&self, p: &WorkPath) {
        if let (Some(journal), Some(dir)) = (&self.journal, p.abs.parent()) {
            journal.record_or_warn(dir);
        }
    }

    /// Opens the directory `abs` for a sweep of leftovers, beneath the root that
    /// holds it and without following a symlink in its place: `None` when it lies
    /// in no root. Nothing but a directory is opened (looked at first, then opened
    /// non-blocking and checked again).
    pub(crate) fn open_dir_nofollow(&self, abs: &Path) -> Option<io::Result<Dir>> {
        let found = self.locate(&normalize(abs))?;
        let root = self.roots.get(found.root)?;
        let rel: &Path = if found.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &found.rel
        };
        let not_dir = || io::Error::from(rustix::io::Errno::NOTDIR);
        let open = || {
            if !root.dir.symlink_metadata(rel)?.is_dir() {
                return Err(not_dir());
            }
            let mut opts = OpenOptions::new();
            opts.read(true)
                .maybe_dir(true)
                .nonblock(true)
                .follow(cap_fs_ext::FollowSymlinks::No);
            let file = root.dir.open_with(rel, &opts)?;
            if !file.metadata()?.is_dir() {
                return Err(not_dir());
            }
            Ok(Dir::from_std_file(file.into_std()))
        };
        Some(open())
    }

    fn io(&self, op: &'static str, p: &WorkPath, err: io::Error) -> FsError {
        self.reword(FsError::from_io(op, &p.shown(), err), p)
    }

    /// `failed` as the error of operation `op` on `p`.
    fn failed(&self, op: &'static str, p: &WorkPath, failed: Failed) -> FsError {
        match failed {
            Failed::Io(err) => self.io(op, p, err),
            Failed::Refused(err) => err,
        }
    }

    /// Fills in the roots of an [`FsError::Outside`] made without them.
    fn reword(&self, err: FsError, p: &WorkPath) -> FsError {
        match err {
            FsError::Outside { roots, .. } if roots.is_empty() => FsError::Outside {
                path: p.shown(),
                roots: self.root_paths(),
            },
            other => other,
        }
    }
}

/// An exclusive lock taken by [`Jail::lock`]; released when dropped.
#[derive(Debug)]
pub struct FileLock {
    _dirs: Vec<std::fs::File>,
}

/// One staged change of a [`Jail::commit`].
struct Staged {
    parent: Dir,
    name: OsString,
    path: WorkPath,
    /// The temporary file holding the new content (writes only).
    tmp: Option<String>,
    /// Where the old content was kept once applied.
    backup: Option<String>,
    existed: bool,
    create_new: bool,
    applied: bool,
}

struct Transaction<'a> {
    jail: &'a Jail,
    staged: Vec<Staged>,
    created_dirs: Vec<WorkPath>,
}

impl Transaction<'_> {
    fn run(&mut self, changes: &[Change]) -> Result<(), FsError> {
        for change in changes {
            self.stage(change)?;
        }
        for i in 0..self.staged.len() {
            self.apply(i)?;
        }
        // Done: drop the backups.
        for s in &self.staged {
            if let Some(backup) = &s.backup {
                let _ = s.parent.remove_file(backup);
            }
            sync_dir(&s.parent);
        }
        self.staged.clear();
        self.created_dirs.clear();
        Ok(())
    }

    fn stage(&mut self, change: &Change) -> Result<(), FsError> {
        let jail = self.jail;
        let p = change.path();
        let root = jail.root_of(p)?;
        let (parent_rel, name) = split(p)?;
        if let Change::Write { .. } = change {
            self.create_parents(root, p, parent_rel)?;
        }
        let parent = jail.open_parent(root, parent_rel, p)?;
        let existing = jail.existing(&parent, name, p)?;
        let (tmp, create_new) = match change {
            Change::Write {
                bytes, create_new, ..
            } => {
                if existing.is_some() && *create_new {
                    return Err(FsError::Exists { path: p.shown() });
                }
                (
                    Some(jail.stage(&parent, bytes, existing.as_ref(), p)?),
                    *create_new,
                )
            }
            Change::Delete { .. } => {
                if existing.is_none() {
                    return Err(FsError::NotFound { path: p.shown() });
                }
                (None, false)
            }
        };
        self.staged.push(Staged {
            parent,
            name: name.to_owned(),
            path: p.clone(),
            tmp,
            backup: None,
            existed: existing.is_some(),
            create_new,
            applied: false,
        });
        Ok(())
    }

    /// Creates the missing parents of `p`, remembering them for a roll-back.
    fn create_parents(
        &mut self,
        root: &Root,
        p: &WorkPath,
        parent_rel: &Path,
    ) -> Result<(), FsError> {
        let jail = self.jail;
        create_missing_dirs(root, p, parent_rel, &mut self.created_dirs)
            .map_err(|e| jail.io("create the parent directory of", p, e))
    }

    fn apply(&mut self, i: usize) -> Result<(), FsError> {
        let jail = self.jail;
        let s = &mut self.staged[i];
        let name = s.name.clone();
        let name = name.as_os_str();
        let result = match s.tmp.clone() {
            Some(tmp) if s.existed => {
                // Keep the old content under a second name, then replace atomically.
                jail.note_temp_dir(&s.path);
                let backup = temp_name(TempKind::Backup);
                let linked = s
                    .parent
                    .hard_link(name, &s.parent, &backup)
                    .or_else(|_| s.parent.copy(name, &s.parent, &backup).map(|_| ()));
                linked.and_then(|()| {
                    s.backup = Some(backup);
                    s.parent.rename(&tmp, &s.parent, name)
                })
            }
            Some(tmp) => rename_noreplace(&s.parent, &tmp, name),
            None => {
                jail.note_temp_dir(&s.path);
                let backup = temp_name(TempKind::Backup);
                s.parent.rename(name, &s.parent, &backup).map(|()| {
                    s.backup = Some(backup);
                })
            }
        };
        match result {
            Ok(()) => {
                s.applied = true;
                if s.tmp.is_some() {
                    s.tmp = None;
                }
                Ok(())
            }
            Err(err) => {
                let err = if s.create_new && err.kind() == io::ErrorKind::AlreadyExists {
                    FsError::Exists {
                        path: s.path.shown(),
                    }
                } else {
                    jail.io("write", &s.path, err)
                };
                Err(err)
            }
        }
    }

    /// Undoes what was applied, newest first, and removes what was staged.
    fn roll_back(&mut self) {
        for s in self.staged.iter_mut().rev() {
            let name = s.name.as_os_str();
            if s.applied {
                match (&s.backup, s.existed) {
                    (Some(backup), _) => {
                        let _ = s.parent.rename(backup, &s.parent, name);
                    }
                    (None, false) => {
                        let _ = s.parent.remove_file(name);
                    }
                    (None, true) => {}
                }
            } else if let Some(backup) = &s.backup {
                let _ = s.parent.remove_file(backup);
            }
            if let Some(tmp) = &s.tmp {
                let _ = s.parent.remove_file(tmp);
            }
            sync_dir(&s.parent);
        }
        self.staged.clear();
        for dir in self.created_dirs.drain(..).rev() {
            if let Ok(root) = self.jail.root_of(&dir) {
                let _ = root.dir.remove_dir(&dir.rel);
            }
        }
    }
}

/// `path` relative to `root` when it lies strictly beneath it: a byte comparison,
/// cheaper than [`Path::strip_prefix`] for the many files of a walk.
fn beneath<'a>(path: &'a Path, root: &Path) -> Option<&'a Path> {
    use std::os::unix::ffi::OsStrExt;
    let path = path.as_os_str().as_bytes();
    let root = root.as_os_str().as_bytes();
    let rest = path.strip_prefix(root)?;
    let rest = if root.ends_with(b"/") {
        rest
    } else {
        rest.strip_prefix(b"/")?
    };
    (!rest.is_empty()).then(|| Path::new(OsStr::from_bytes(rest)))
}

/// Refuses anything but a regular file.
fn refuse_non_file(p: &WorkPath, kind: EntryKind) -> Result<(), FsError> {
    match kind {
        EntryKind::File => Ok(()),
        EntryKind::Dir => Err(FsError::IsADirectory { path: p.shown() }),
        kind => Err(FsError::NotAFile {
            path: p.shown(),
            kind,
        }),
    }
}

/// Creates the directories of `parent_rel` that do not exist yet, outermost
/// first, pushing each one made onto `created` (as a path of `p`'s root).
fn create_missing_dirs(
    root: &Root,
    p: &WorkPath,
    parent_rel: &Path,
    created: &mut Vec<WorkPath>,
) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(parent_rel);
    while let Some(dir) = at.filter(|d| !d.as_os_str().is_empty()) {
        match root.dir.symlink_metadata(dir) {
            Ok(_) => break,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                missing.push(dir.to_path_buf());
                at = dir.parent();
            }
            Err(err) => return Err(err),
        }
    }
    for dir in missing.into_iter().rev() {
        root.dir.create_dir(&dir)?;
        created.push(WorkPath::new(p.root, &p.root_path, dir));
    }
    Ok(())
}

/// Opens the regular file `p` in `root` for reading. It is looked at first, so
/// that a FIFO or a device is never opened, and opened non-blocking, so that one
/// swapped in after the look does not hang the open.
fn open_regular(root: &Root, p: &WorkPath) -> Result<cap_std::fs::File, Failed> {
    let seen = root.dir.metadata(&p.rel)?;
    refuse_non_file(p, EntryKind::of(seen.file_type()))?;
    let mut opts = OpenOptions::new();
    opts.read(true).nonblock(true);
    Ok(root.dir.open_with(&p.rel, &opts)?)
}

/// The parent (relative to the root) and the file name of `p`.
fn split(p: &WorkPath) -> Result<(&Path, &OsStr), FsError> {
    match (p.rel.parent(), p.rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(FsError::IsADirectory { path: p.shown() }),
    }
}

/// How the name of every temporary file of a write begins.
const TEMP_PREFIX: &str = ".tb-";
/// Hex digits in the name of a temporary file (a UUID, `simple` format).
const TEMP_ID_DIGITS: usize = 32;

/// What a temporary file beside a target holds; its name ends with the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TempKind {
    /// The new content, renamed over the target (`.tmp`).
    Staged,
    /// The old content of a file while a commit replaces or deletes it (`.bak`).
    Backup,
}

impl TempKind {
    /// Every kind there is.
    const ALL: [TempKind; 2] = [TempKind::Staged, TempKind::Backup];

    fn extension(self) -> &'static str {
        match self {
            TempKind::Staged => "tmp",
            TempKind::Backup => "bak",
        }
    }
}

/// A fresh hidden name for a temporary file beside the target:
/// `.tb-<32 lowercase hex digits>.<kind>`.
fn temp_name(kind: TempKind) -> String {
    format!(
        "{TEMP_PREFIX}{}.{}",
        uuid::Uuid::new_v4().simple(),
        kind.extension()
    )
}

/// True when `name` is exactly what [`temp_name`] makes: `.tb-`, 32 lowercase hex
/// digits, `.` and one of the kinds. A user's `.tb-notes.txt` is not.
pub(crate) fn is_temp_name(name: &str) -> bool {
    let Some((id, kind)) = name
        .strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.split_once('.'))
    else {
        return false;
    };
    id.len() == TEMP_ID_DIGITS
        && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && TempKind::ALL.iter().any(|k| k.extension() == kind)
}

/// The entries of the directory `dir`, sorted by name. Symlinks are reported, not followed.
fn list(dir: &Dir) -> io::Result<Vec<DirEntry>> {
    let mut out = Vec::new();
    for entry in dir.entries()? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let (kind, size, modified) = match entry.metadata() {
            Ok(m) => {
                let m = Meta::of(&m);
                (m.kind, m.size, m.modified)
            }
            Err(_) => (
                entry
                    .file_type()
                    .map(EntryKind::of)
                    .unwrap_or(EntryKind::Other),
                0,
                None,
            ),
        };
        out.push(DirEntry {
            name,
            kind,
            size,
            modified,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Renames `from` to `to` in `dir`, failing if `to` exists.
fn rename_noreplace(dir: &Dir, from: &str, to: &OsStr) -> io::Result<()> {
    rustix::fs::renameat_with(dir, from, dir, to, rustix::fs::RenameFlags::NOREPLACE)?;
    Ok(())
}

/// Flushes a directory's entries to disk; best effort. (Directory handles are
/// `O_PATH` descriptors, which cannot be synced, so the directory is opened again.)
fn sync_dir(dir: &Dir) {
    let mut opts = OpenOptions::new();
    opts.read(true).maybe_dir(true);
    if let Ok(d) = dir.open_with(".", &opts) {
        let _ = d.sync_all();
    }
}

/// Rejects inputs no file system path should be.
fn check_input(path: &str) -> Result<(), FsError> {
    let invalid = |reason: &str| FsError::InvalidPath {
        path: path.chars().take(200).collect(),
        reason: reason.to_owned(),
    };
    if path.is_empty() {
        return Err(invalid("the path is empty"));
    }
    if path.contains('\0') {
        return Err(invalid("it contains a NUL byte"));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid(&format!(
            "it is {} bytes long; paths are limited to {MAX_PATH_BYTES} bytes",
            path.len()
        )));
    }
    if path == "~" || path.starts_with("~/") {
        return Err(invalid(
            "`~` is not expanded; give a path inside the workspace, relative or absolute",
        ));
    }
    Ok(())
}

/// Folds `.` and `..` as text; the result is absolute when `path` is.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

/// True when the relative symlink `target`, read in directory `base`, climbs above the root.
fn climbs_out(base: &Path, target: &Path) -> bool {
    let mut depth = base.components().count() as isize;
    for c in target.components() {
        match c {
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
#[path = "jail_tests.rs"]
mod tests;
