//! The temporary files of interrupted writes: [`TempJournal`] notes the directories
//! where a jail creates them, and [`TempJournal::sweep`] removes what a killed
//! process left there.
//!
//! Every atomic write stages the new content in a temporary file beside its target
//! (`.tb-<32 hex digits>.tmp`; a commit also keeps the old content as `….bak`) and
//! renames it into place. A process killed in between leaves the file behind. A
//! jail given a journal ([`Jail::with_journal`]) appends the directory to it before
//! its first temporary file there, once per directory per process; the next start
//! sweeps those directories and compacts the journal.
//!
//! The journal is a text file of lines `<pid> <start ticks> <directory>`: the
//! writing process (its id and start time, so that a reused pid is not taken for
//! it) and the absolute directory. It is locked (`flock`) while it is appended to or
//! rewritten, so that several processes can share it, and holds at most
//! [`MAX_JOURNAL_BYTES`].
//!
//! ```
//! use std::sync::Arc;
//! use std::time::{Duration, SystemTime};
//! use toolbelt_fs::{Jail, TempJournal, WriteOptions};
//!
//! let work = tempfile::tempdir().unwrap();
//! let state = tempfile::tempdir().unwrap();
//! let journal = Arc::new(TempJournal::new(state.path().join("temp-dirs")));
//! let jail = Jail::open(&[work.path().to_path_buf()]).unwrap().with_journal(journal.clone());
//! let file = jail.resolve(work.path(), "notes.txt").unwrap();
//! jail.write(&file, b"kept\n", WriteOptions::default()).unwrap();
//!
//! // The journal names the directory, once however many writes go there.
//! let text = std::fs::read_to_string(journal.path()).unwrap();
//! assert_eq!(text.lines().count(), 1);
//!
//! // A sweep leaves the directories of a process still running (this one) alone.
//! let swept = journal.sweep(&jail, SystemTime::now(), Duration::ZERO).unwrap();
//! assert!(swept.removed.is_empty());
//! assert_eq!(swept.entries_after, 1);
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant, SystemTime};
use toolbelt_core::sync::lock;

use cap_std::fs::Dir;

use super::{EntryKind, Jail, is_temp_name};
use crate::error::{Failed, FsError};

/// The largest journal, in bytes: a directory is not noted past it (its leftovers
/// are then not found), and compaction drops the oldest lines to get under it.
pub const MAX_JOURNAL_BYTES: u64 = 64 * 1024;

/// How long taking the journal's lock waits for another process.
pub const JOURNAL_LOCK_WAIT_MS: u64 = 2_000;

/// The journal of the directories where temporary files were created, and the
/// sweep that removes those a killed process left behind. One per journal file per
/// process: it remembers which directories it noted.
#[derive(Debug)]
pub struct TempJournal {
    path: PathBuf,
    /// Directories noted (or that could not be) by this process.
    noted: Mutex<HashSet<PathBuf>>,
    /// A failure to note was logged: later ones are not.
    warned: AtomicBool,
}

impl TempJournal {
    /// A journal kept in the file `path` (made, with its directory, on the first
    /// note). Nothing is read or written yet.
    pub fn new(path: impl Into<PathBuf>) -> TempJournal {
        TempJournal {
            path: path.into(),
            noted: Mutex::new(HashSet::new()),
            warned: AtomicBool::new(false),
        }
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends the absolute directory `dir` to the journal, unless this journal
    /// noted it (or failed to) before: the first call for a directory writes a
    /// line, the next ones only look it up. Concurrent callers for the same
    /// directory return after the line is written.
    ///
    /// # Errors
    /// [`FsError::InvalidPath`] for a relative path or one with a line break (not
    /// noted), [`FsError::TooLarge`] when the journal holds [`MAX_JOURNAL_BYTES`],
    /// [`FsError::Busy`] when its lock is held past [`JOURNAL_LOCK_WAIT_MS`], and
    /// I/O errors. A directory is tried once per process, whatever the outcome.
    pub fn record(&self, dir: &Path) -> Result<(), FsError> {
        let mut noted = lock(&self.noted);
        if noted.contains(dir) {
            return Ok(());
        }
        noted.insert(dir.to_path_buf());
        // The lock is held while the line is written: no other thread creates a
        // temporary file in `dir` before the journal names it.
        self.append(dir)
    }

    /// [`TempJournal::record`], logging the first failure as a warning: the write
    /// that notes the directory goes on either way.
    pub(crate) fn record_or_warn(&self, dir: &Path) {
        if let Err(err) = self.record(dir)
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(
                "cannot note {} in {}; temporary files a killed write leaves there will \
                 not be cleaned up: {}",
                dir.display(),
                self.path.display(),
                toolbelt_core::error_chain(&err)
            );
        }
    }

    fn append(&self, dir: &Path) -> Result<(), FsError> {
        self.append_line(dir)
            .map_err(|failed| self.failed("append to", failed))
    }

    fn append_line(&self, dir: &Path) -> Result<(), Failed> {
        let bytes = dir.as_os_str().as_bytes();
        if !dir.is_absolute() || bytes.contains(&b'\n') {
            return Err(FsError::InvalidPath {
                path: dir.display().to_string(),
                reason: "only absolute paths without line breaks are noted".into(),
            }
            .into());
        }
        let line = Entry {
            writer: this_process(),
            dir: dir.to_path_buf(),
        }
        .line();
        if let Some(parent) = self.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&self.path)?;
        self.lock(&file)?;
        let size = file.metadata()?.len();
        if size + line.len() as u64 > MAX_JOURNAL_BYTES {
            return Err(FsError::TooLarge {
                path: self.path.display().to_string(),
                size,
                limit_bytes: MAX_JOURNAL_BYTES,
            }
            .into());
        }
        Ok(file.write_all(&line)?)
    }

    /// Removes the temporary files interrupted writes left in the journal's
    /// directories, then compacts the journal. A file is removed only when all of
    /// these hold:
    /// - its name is exactly one the jail makes (`.tb-` + 32 lowercase hex digits +
    ///   `.tmp` or `.bak`);
    /// - it is a regular file (not followed: a symlink so named is left), owned by
    ///   this process's effective uid;
    /// - it was last modified more than `min_age` before `started` (this process's
    ///   start) and its inode last changed before `started` (a backup is a hard
    ///   link to the old content, whose modification time may be old);
    /// - its directory lies in a root of `jail` (opened beneath it, not through a
    ///   symlink in its place) and no writer holds the directory's lock
    ///   ([`Jail::lock`]) at the time: a busy directory is left for the next start.
    ///
    /// Directories noted only by processes still running are not swept: they are
    /// swept once their writer has ended. The journal then drops the directories
    /// that are gone, and those swept clean whose writers have ended; directories
    /// outside the roots, busy, or still holding a temporary file (too young) stay,
    /// as do lines appended meanwhile. Past [`MAX_JOURNAL_BYTES`] the oldest lines
    /// go.
    ///
    /// # Errors
    /// The journal cannot be read, locked or rewritten. A missing journal is an
    /// empty one. Problems in one directory do not stop the sweep: they are listed
    /// in [`Swept::problems`].
    ///
    /// # Security
    /// Every directory is opened beneath a root of `jail` and every file looked at
    /// without following symlinks; names, type, owner and age are all checked, so
    /// a journal naming a directory elsewhere, or a user's look-alike file, removes
    /// nothing.
    pub fn sweep(
        &self,
        jail: &Jail,
        started: SystemTime,
        min_age: Duration,
    ) -> Result<Swept, FsError> {
        let Some(text) = self.read()? else {
            return Ok(Swept::default());
        };
        let entries = parse(&text);
        let mut swept = Swept {
            entries_before: entries.len(),
            ..Swept::default()
        };
        let rules = Rules {
            uid: rustix::process::geteuid().as_raw(),
            modified_before: started.checked_sub(min_age).unwrap_or(started),
            changed_before: started,
        };
        // A directory is swept when a writer that noted it has ended.
        let mut verdicts: BTreeMap<PathBuf, Verdict> = BTreeMap::new();
        for entry in &entries {
            if verdicts.contains_key(&entry.dir) || entry.writer.is_some_and(is_alive) {
                continue;
            }
            let verdict = sweep_dir(jail, &entry.dir, &rules, &mut swept);
            verdicts.insert(entry.dir.clone(), verdict);
        }
        swept.entries_after = self.compact(&verdicts)?;
        Ok(swept)
    }

    /// The journal's text, read under its lock; `None` when there is none.
    fn read(&self) -> Result<Option<Vec<u8>>, FsError> {
        self.read_locked()
            .map_err(|failed| self.failed("read", failed))
    }

    fn read_locked(&self) -> Result<Option<Vec<u8>>, Failed> {
        let file = match open_nofollow(&self.path, false) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err.into()),
        };
        self.lock(&file)?;
        let mut text = Vec::new();
        (&file).take(2 * MAX_JOURNAL_BYTES).read_to_end(&mut text)?;
        Ok(Some(text))
    }

    /// Rewrites the journal without the lines `verdicts` let go, under its lock,
    /// keeping what was appended since it was read. Returns the lines kept.
    fn compact(&self, verdicts: &BTreeMap<PathBuf, Verdict>) -> Result<usize, FsError> {
        self.rewrite(verdicts)
            .map_err(|failed| self.failed("rewrite", failed))
    }

    fn rewrite(&self, verdicts: &BTreeMap<PathBuf, Verdict>) -> Result<usize, Failed> {
        let file = match open_nofollow(&self.path, true) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(err) => return Err(err.into()),
        };
        self.lock(&file)?;
        let mut text = Vec::new();
        (&file).take(2 * MAX_JOURNAL_BYTES).read_to_end(&mut text)?;
        let mut seen_lines: HashSet<Vec<u8>> = HashSet::new();
        let mut kept_ended: HashSet<PathBuf> = HashSet::new();
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for entry in parse(&text) {
            let line = entry.line();
            if seen_lines.contains(&line) {
                continue;
            }
            let keep = if entry.writer.is_some_and(is_alive) {
                // Its writer may still leave something there.
                verdicts.get(&entry.dir) != Some(&Verdict::Gone)
            } else {
                let wanted = verdicts.get(&entry.dir).is_none_or(Verdict::keeps);
                // One line per directory is enough once its writers have ended.
                wanted && kept_ended.insert(entry.dir.clone())
            };
            if keep {
                seen_lines.insert(line.clone());
                kept.push(line);
            }
        }
        let mut size: usize = kept.iter().map(Vec::len).sum();
        let mut first = 0;
        while size as u64 > MAX_JOURNAL_BYTES && first < kept.len() {
            size -= kept[first].len();
            first += 1;
        }
        let out: Vec<u8> = kept[first..].concat();
        if out != text {
            file.set_len(0)?;
            file.write_all_at(&out, 0)?;
        }
        Ok(kept.len() - first)
    }

    /// Takes the journal's lock on `file`, waiting up to [`JOURNAL_LOCK_WAIT_MS`];
    /// it is released when `file` is closed.
    fn lock(&self, file: &File) -> Result<(), FsError> {
        let deadline = Instant::now() + Duration::from_millis(JOURNAL_LOCK_WAIT_MS);
        loop {
            match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(()),
                Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    return Err(FsError::Busy {
                        path: self.path.display().to_string(),
                    });
                }
                Err(err) => return Err(self.io_error("lock", err.into())),
            }
        }
    }

    fn io_error(&self, op: &'static str, err: io::Error) -> FsError {
        FsError::from_io(op, &self.path.display().to_string(), err)
    }

    /// `failed` as the error of operation `op` on the journal.
    fn failed(&self, op: &'static str, failed: Failed) -> FsError {
        match failed {
            Failed::Io(err) => self.io_error(op, err),
            Failed::Refused(err) => err,
        }
    }
}

/// What [`TempJournal::sweep`] did.
#[derive(Debug, Default)]
pub struct Swept {
    /// The temporary files removed.
    pub removed: Vec<PathBuf>,
    /// Temporary files left because they are too young to be a killed write's;
    /// the next start looks again.
    pub too_young: Vec<PathBuf>,
    /// Directories left because a writer held their lock.
    pub busy: Vec<PathBuf>,
    /// Directories swept.
    pub dirs_swept: usize,
    /// What went wrong on the way (a directory that could not be listed, a file
    /// that could not be removed); the rest was swept.
    pub problems: Vec<FsError>,
    /// Lines in the journal before.
    pub entries_before: usize,
    /// Lines in the journal after compaction.
    pub entries_after: usize,
}

/// A process that noted directories: its id and start time (clock ticks since
/// boot, field 22 of `/proc/<pid>/stat`), so that a reused pid is not taken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Writer {
    pid: u32,
    start_ticks: u64,
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// `None` when the process could not be told (written as `0 0`).
    writer: Option<Writer>,
    dir: PathBuf,
}

impl Entry {
    fn line(&self) -> Vec<u8> {
        let (pid, start) = self.writer.map_or((0, 0), |w| (w.pid, w.start_ticks));
        let mut line = format!("{pid} {start} ").into_bytes();
        line.extend_from_slice(self.dir.as_os_str().as_bytes());
        line.push(b'\n');
        line
    }
}

/// The well-formed lines of a journal, in order; others are dropped, and so is an
/// unfinished last line (a torn write, or the end of a journal read only in part).
fn parse(text: &[u8]) -> Vec<Entry> {
    let field = |bytes: &[u8]| std::str::from_utf8(bytes).ok()?.parse::<u64>().ok();
    let finished = text
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(&text[..0], |end| &text[..end]);
    finished
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let mut parts = line.splitn(3, |&b| b == b' ');
            let pid = u32::try_from(field(parts.next()?)?).ok()?;
            let start_ticks = field(parts.next()?)?;
            let dir = PathBuf::from(std::ffi::OsStr::from_bytes(parts.next()?));
            if !dir.is_absolute() {
                return None;
            }
            let writer = (pid != 0).then_some(Writer { pid, start_ticks });
            Some(Entry { writer, dir })
        })
        .collect()
}

/// The start time of process `pid` in clock ticks since boot, from `/proc`.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid ... : starttime is field 22, the 20th after `) `.
    let rest = stat.rsplit_once(") ")?.1;
    rest.split(' ').nth(19)?.parse().ok()
}

/// This process, as journal lines name it (read once).
fn this_process() -> Option<Writer> {
    static THIS: LazyLock<Option<Writer>> = LazyLock::new(|| {
        let pid = std::process::id();
        start_ticks(pid).map(|start_ticks| Writer { pid, start_ticks })
    });
    *THIS
}

/// True while the process that wrote a line runs.
fn is_alive(writer: Writer) -> bool {
    start_ticks(writer.pid) == Some(writer.start_ticks)
}

/// Opens the journal without following a symlink in its place.
fn open_nofollow(path: &Path, write: bool) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// What the sweep found of one journaled directory.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// In no root of the jail: not ours to judge.
    Outside,
    /// Missing, or no longer a directory.
    Gone,
    /// A writer held its lock.
    Busy,
    /// It could not be swept.
    Failed,
    /// Swept; this many temporary files of ours are left (too young, or their
    /// removal failed).
    Swept { left: usize },
}

impl Verdict {
    /// Whether the journal keeps the directory once its writers have ended.
    fn keeps(&self) -> bool {
        match self {
            Verdict::Outside | Verdict::Busy | Verdict::Failed => true,
            Verdict::Gone => false,
            Verdict::Swept { left } => *left > 0,
        }
    }
}

/// When a temporary file is old enough, and whose, to be removed.
#[derive(Debug, Clone, Copy)]
struct Rules {
    uid: u32,
    modified_before: SystemTime,
    changed_before: SystemTime,
}

/// What the sweep decides about a file with a temporary file's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judgement {
    /// A killed write's: removed.
    Remove,
    /// Ours but too young: left for the next start.
    TooYoung,
    /// Not a regular file, or not ours: never touched.
    NotOurs,
}

/// What the sweep knows of a file, as `lstat` tells it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    kind: EntryKind,
    uid: u32,
    modified: Option<SystemTime>,
    changed: Option<SystemTime>,
}

fn judge(seen: &Seen, rules: &Rules) -> Judgement {
    if seen.kind != EntryKind::File || seen.uid != rules.uid {
        return Judgement::NotOurs;
    }
    let old = seen.modified.is_some_and(|t| t < rules.modified_before)
        && seen.changed.is_some_and(|t| t < rules.changed_before);
    if old {
        Judgement::Remove
    } else {
        Judgement::TooYoung
    }
}

/// `lstat` of `name` in `dir`.
fn look(dir: &Dir, name: &std::ffi::OsStr) -> io::Result<Seen> {
    use cap_std::fs::MetadataExt as _;
    let meta = dir.symlink_metadata(name)?;
    let time = |secs: i64, nanos: i64| {
        let secs = u64::try_from(secs).ok()?;
        let nanos = u32::try_from(nanos).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
    };
    Ok(Seen {
        kind: EntryKind::of(meta.file_type()),
        uid: meta.uid(),
        modified: time(meta.mtime(), meta.mtime_nsec()),
        changed: time(meta.ctime(), meta.ctime_nsec()),
    })
}

/// Sweeps the journaled directory `abs`, adding what it did to `swept`.
fn sweep_dir(jail: &Jail, abs: &Path, rules: &Rules, swept: &mut Swept) -> Verdict {
    let shown = abs.display().to_string();
    let dir = match jail.open_dir_nofollow(abs) {
        None => return Verdict::Outside,
        Some(Ok(dir)) => dir,
        Some(Err(err)) if is_gone(&err) => return Verdict::Gone,
        Some(Err(err)) => {
            swept.problems.push(FsError::from_io("open", &shown, err));
            return Verdict::Failed;
        }
    };
    // The lock writers take (`Jail::lock`): a write under way is not swept under it.
    match rustix::fs::flock(&dir, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => {
            swept.busy.push(abs.to_path_buf());
            return Verdict::Busy;
        }
        Err(err) => {
            swept
                .problems
                .push(FsError::from_io("lock", &shown, err.into()));
            return Verdict::Failed;
        }
    }
    let entries = match dir.entries() {
        Ok(entries) => entries,
        Err(err) => {
            swept.problems.push(FsError::from_io("list", &shown, err));
            return Verdict::Failed;
        }
    };
    swept.dirs_swept += 1;
    let mut left = 0;
    for entry in entries {
        let name = match entry {
            Ok(entry) => entry.file_name(),
            Err(err) => {
                swept.problems.push(FsError::from_io("list", &shown, err));
                left += 1;
                continue;
            }
        };
        if !name.to_str().is_some_and(is_temp_name) {
            continue;
        }
        let path = abs.join(&name);
        let seen = match look(&dir, &name) {
            Ok(seen) => seen,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => {
                let err = FsError::from_io("stat", &path.display().to_string(), err);
                swept.problems.push(err);
                continue;
            }
        };
        match judge(&seen, rules) {
            Judgement::NotOurs => {}
            Judgement::TooYoung => {
                left += 1;
                swept.too_young.push(path);
            }
            Judgement::Remove => match dir.remove_file(&name) {
                Ok(()) => {
                    tracing::debug!("removed {}, left by an interrupted write", path.display());
                    swept.removed.push(path);
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => {
                    left += 1;
                    let err = FsError::from_io("remove", &path.display().to_string(), err);
                    swept.problems.push(err);
                }
            },
        }
    }
    Verdict::Swept { left }
}

/// True when `err` says a journaled directory is no longer one: missing, replaced
/// by a file, or by a symlink (not followed).
fn is_gone(err: &io::Error) -> bool {
    let errno = err.raw_os_error();
    err.kind() == io::ErrorKind::NotFound
        || errno == Some(rustix::io::Errno::NOTDIR.raw_os_error())
        || errno == Some(rustix::io::Errno::LOOP.raw_os_error())
}

#[cfg(test)]
#[path = "leftovers_tests.rs"]
mod tests;
