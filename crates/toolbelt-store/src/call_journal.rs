//! The call journal: the file to which a process appends each call's record, one
//! JSON line, before the call's answer leaves, and from which the call log's writer
//! copies the records into the store.
//!
//! - [`Journal`]: this process's journal, one file at a time,
//!   `<dir>/<store>-<id>-<n>.journal`, locked (`flock`) for as long as the process
//!   has it open. Once all a file holds is committed and it has grown past
//!   [`CALL_JOURNAL_ROTATE_BYTES`], the journal goes on in the next file (`n + 1`)
//!   and the old one is removed; the last is removed when its writer ends with
//!   nothing left in it. `<store>` tells the stores apart (a hash of the store's
//!   location), `<id>` the journals (a UUIDv7: in time order); a record's key is
//!   `<id>:<seq>`, its sequence running on across the files.
//! - [`dead_journals`]: the files of the processes that ended before their records
//!   were all written (no longer locked), read back by [`DeadJournal`] and removed.
//!
//! # Durability
//! A record is in the journal once `write(2)` has returned: in the kernel's page
//! cache, so it survives the process being killed (`kill -9`, a crash, the OOM
//! killer), not a power loss or a crash of the machine before the kernel wrote the
//! page out (the journal is not `fsync`ed).

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{FlockOperation, flock};
use toolbelt_core::sync::lock;

use crate::call_rows::CallRow;
use crate::error::StoreError;
use crate::store::Location;

/// The end of a journal's file name.
const EXTENSION: &str = ".journal";
/// The end of the name a journal is created under, before it is locked.
const NEW_SUFFIX: &str = ".new";
/// What [`Journal::read_batch`] reads at first (doubled until a whole line fits).
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Tries at creating a journal (another process may remove a new file it takes
/// for a dead one's in the moment before it is locked).
const CREATE_TRIES: usize = 3;
/// A journal whose records are all committed goes on in a new file once its file
/// holds this much (a few thousand records).
pub const CALL_JOURNAL_ROTATE_BYTES: u64 = 1024 * 1024;

/// The part of journal names that tells the store they belong to: a process
/// replays only the journals of its own store. FNV-1a of the location as
/// [`Location::describe`] gives it (no password), stable across builds.
pub(crate) fn store_tag(location: &Location) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in location.describe().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn journal_error(path: &Path, source: io::Error) -> StoreError {
    StoreError::Journal {
        path: path.to_path_buf(),
        source,
    }
}

/// This process's journal: appended to by the calls, read and rotated by the
/// writer. See the module's overview.
#[derive(Debug)]
pub(crate) struct Journal {
    dir: PathBuf,
    store_tag: String,
    /// The journal's id, in every record key (its files follow one another).
    id: String,
    seq: AtomicU64,
    state: Mutex<State>,
}

/// One file of a journal: `<store>-<id>-<generation>.journal`, readable by its
/// owner only.
#[derive(Debug)]
struct JournalFile {
    path: PathBuf,
    /// Locked (`flock`, exclusive) while open: the mark of a live journal.
    file: File,
}

#[derive(Debug)]
struct State {
    /// The file appended to. Shared with a reader, which reads outside the lock.
    file: Arc<JournalFile>,
    /// Its number: 0 for the first file, one more at each rotation.
    generation: u64,
    /// Bytes of whole lines in the file.
    len: u64,
    /// Lines appended since the journal was created (rotation keeps counting).
    lines: u64,
    /// Of `len`, the bytes whose records are committed to the store.
    committed_len: u64,
    /// Of `lines`, those committed.
    committed_lines: u64,
}

/// Lines read from a journal, not yet committed.
#[derive(Debug)]
pub(crate) struct Batch {
    /// The records of the lines (a line that cannot be read is left out).
    pub(crate) rows: Vec<CallRow>,
    /// How many lines.
    pub(crate) lines: u64,
    /// Where in the file the last of them ends.
    pub(crate) end: u64,
}

impl JournalFile {
    /// Creates and locks `<dir>/<store_tag>-<id>-<generation>.journal`. The file is
    /// created under a name [`dead_journals`] only removes when it is unlocked,
    /// locked, and only then given its journal's name: no other process ever sees
    /// a live journal unlocked.
    fn create(dir: &Path, store_tag: &str, id: &str, generation: u64) -> io::Result<JournalFile> {
        let name = format!("{store_tag}-{id}-{generation:06}{EXTENSION}");
        let path = dir.join(&name);
        let new = dir.join(format!(".{name}{NEW_SUFFIX}"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&new)?;
        let named = flock(&file, FlockOperation::NonBlockingLockExclusive)
            .map_err(io::Error::from)
            .and_then(|()| std::fs::rename(&new, &path));
        if let Err(e) = named {
            let _ = std::fs::remove_file(&new);
            return Err(e);
        }
        Ok(JournalFile { path, file })
    }

    /// Removes the file (it is unlocked when the last handle on it closes).
    fn remove(&self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!(journal = %self.path.display(), "cannot remove a call journal: {e}");
        }
    }
}

impl Journal {
    /// Creates and locks a new journal in `dir` (created if missing) for the store
    /// named by `store_tag`.
    ///
    /// # Errors
    /// [`StoreError::Journal`]: the directory or the file cannot be created, or the
    /// file cannot be locked.
    pub(crate) fn create(dir: &Path, store_tag: &str) -> Result<Journal, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| journal_error(dir, e))?;
        let mut tries = 0;
        let (id, file) = loop {
            tries += 1;
            let id = uuid::Uuid::now_v7().simple().to_string();
            match JournalFile::create(dir, store_tag, &id, 0) {
                Ok(file) => break (id, file),
                Err(_) if tries < CREATE_TRIES => {}
                Err(e) => return Err(journal_error(dir, e)),
            }
        };
        Ok(Journal {
            dir: dir.to_path_buf(),
            store_tag: store_tag.to_string(),
            id,
            seq: AtomicU64::new(0),
            state: Mutex::new(State {
                file: Arc::new(file),
                generation: 0,
                len: 0,
                lines: 0,
                committed_len: 0,
                committed_lines: 0,
            }),
        })
    }

    /// The file appended to now.
    pub(crate) fn path(&self) -> PathBuf {
        lock(&self.state).file.path.clone()
    }

    /// A new record key: `<journal id>:<seq>`.
    pub(crate) fn next_key(&self) -> String {
        format!("{}:{}", self.id, self.seq.fetch_add(1, Ordering::Relaxed))
    }

    /// Appends `row` as one line, in one `write(2)`: a reader never sees a line
    /// before it is whole. Returns how many lines are now waiting to be committed.
    ///
    /// # Errors
    /// The file cannot be written (a full disk...): nothing of the line is kept.
    pub(crate) fn append(&self, row: &CallRow) -> io::Result<u64> {
        let mut line = serde_json::to_vec(row)?;
        line.push(b'\n');
        let mut state = lock(&self.state);
        if let Err(e) = state.file.file.write_all_at(&line, state.len) {
            // What part of the line reached the file lies past `len`, where the next
            // line goes; cut it off all the same, for a reader after a crash.
            let _ = state.file.file.set_len(state.len);
            return Err(e);
        }
        state.len += line.len() as u64;
        state.lines += 1;
        Ok(state.lines - state.committed_lines)
    }

    /// Lines appended since the journal was created.
    pub(crate) fn appended(&self) -> u64 {
        lock(&self.state).lines
    }

    /// Lines appended and not yet committed.
    pub(crate) fn pending(&self) -> u64 {
        let state = lock(&self.state);
        state.lines - state.committed_lines
    }

    /// The first `max` lines (or fewer) after what is committed. `buf` is kept by
    /// the caller for the next read.
    ///
    /// # Errors
    /// The file cannot be read.
    pub(crate) fn read_batch(&self, max: usize, buf: &mut Vec<u8>) -> io::Result<Batch> {
        let (file, from, to) = {
            let state = lock(&self.state);
            (Arc::clone(&state.file), state.committed_len, state.len)
        };
        let mut batch = Batch {
            rows: Vec::new(),
            lines: 0,
            end: from,
        };
        let available = usize::try_from(to - from).unwrap_or(usize::MAX);
        let mut want = READ_CHUNK_BYTES;
        loop {
            let size = want.min(available);
            buf.resize(size, 0);
            file.file.read_exact_at(buf, from)?;
            let mut start = 0;
            while batch.lines < max as u64 {
                let Some(newline) = newline_in(&buf[start..]) else {
                    break;
                };
                let line = &buf[start..start + newline];
                if let Some(row) = parse_line(line, &file.path) {
                    batch.rows.push(row);
                }
                batch.lines += 1;
                start += newline + 1;
            }
            batch.end = from + start as u64;
            // Everything up to `len` is whole lines, so reading all of it finds one.
            if batch.lines > 0 || size == available {
                return Ok(batch);
            }
            want = want.saturating_mul(2);
        }
    }

    /// Marks the lines of a batch committed. Once everything in the file is, and
    /// it holds [`CALL_JOURNAL_ROTATE_BYTES`] or more, the journal goes on in a new
    /// file and the old one is removed: the calls never wait for a file to be
    /// emptied (a truncation can take milliseconds), and a crash leaves little
    /// that is already written to be read again.
    pub(crate) fn commit(&self, lines: u64, end: u64) {
        let generation = {
            let mut state = lock(&self.state);
            state.committed_len = end;
            state.committed_lines += lines;
            if state.committed_len < state.len || state.len < CALL_JOURNAL_ROTATE_BYTES {
                return;
            }
            state.generation + 1
        };
        let next = match JournalFile::create(&self.dir, &self.store_tag, &self.id, generation) {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!(
                    journal = %self.dir.display(),
                    "cannot start a new call journal file; the current one goes on growing: {e}"
                );
                return;
            }
        };
        let old = {
            let mut state = lock(&self.state);
            if state.committed_len < state.len {
                // A call came in meanwhile: another time.
                drop(state);
                next.remove();
                return;
            }
            state.generation = generation;
            state.len = 0;
            state.committed_len = 0;
            std::mem::replace(&mut state.file, Arc::new(next))
        };
        old.remove();
    }
}

impl Drop for Journal {
    /// A journal with nothing left to write is removed (then unlocked, as its file
    /// closes); one with records stays for the next start.
    fn drop(&mut self) {
        let state = lock(&self.state);
        if state.committed_len == state.len {
            let _ = std::fs::remove_file(&state.file.path);
        }
    }
}

fn newline_in(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// The record of one line, or `None` (with a warning) when it cannot be read: a
/// line torn by a crash of the machine, or not a journal's.
fn parse_line(line: &[u8], journal: &Path) -> Option<CallRow> {
    match serde_json::from_slice(line) {
        Ok(row) => Some(row),
        Err(e) => {
            tracing::warn!(
                journal = %journal.display(),
                "a line of the call journal cannot be read and is left out: {e}"
            );
            None
        }
    }
}

/// The journal of a process that ended with records in it: locked by this
/// process while it is read.
#[derive(Debug)]
pub(crate) struct DeadJournal {
    path: PathBuf,
    reader: BufReader<File>,
    line: Vec<u8>,
}

impl DeadJournal {
    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The records of the next `max` lines (fewer when some cannot be read), or
    /// `None` at the end. An unfinished last line (the process died in its write,
    /// or the machine lost the page) is left out.
    ///
    /// # Errors
    /// The file cannot be read.
    pub(crate) fn next_batch(&mut self, max: usize) -> io::Result<Option<Vec<CallRow>>> {
        let mut rows = Vec::new();
        let mut lines = 0;
        while lines < max {
            self.line.clear();
            if self.reader.read_until(b'\n', &mut self.line)? == 0 {
                break;
            }
            lines += 1;
            let Some(line) = self.line.strip_suffix(b"\n") else {
                tracing::warn!(
                    journal = %self.path.display(),
                    "the call journal ends in an unfinished line, left out"
                );
                break;
            };
            if let Some(row) = parse_line(line, &self.path) {
                rows.push(row);
            }
        }
        Ok((lines > 0).then_some(rows))
    }

    /// Removes the file, once its records are committed (then unlocks it).
    pub(crate) fn remove(self) {
        if let Err(e) = std::fs::remove_file(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(
                journal = %self.path.display(),
                "cannot remove a replayed call journal (its records, already written, would be skipped if read again): {e}"
            );
        }
    }
}

/// The journals in `dir` of the store named by `store_tag` that no live process
/// holds (unlocked), oldest first, each now locked by this process; `own` is
/// skipped. A new file whose process died before naming it is removed (it holds
/// nothing). A missing directory has none.
pub(crate) fn dead_journals(dir: &Path, store_tag: &str, own: Option<&Path>) -> Vec<DeadJournal> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = format!("{store_tag}-");
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let unnamed = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(NEW_SUFFIX))
            .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(EXTENSION));
        let journal = name.starts_with(&prefix) && name.ends_with(EXTENSION);
        if !(journal || unnamed) || own == Some(path.as_path()) {
            continue;
        }
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                tracing::warn!(journal = %path.display(), "cannot open a call journal: {e}");
                continue;
            }
        };
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            // A live process's.
            Err(rustix::io::Errno::WOULDBLOCK) => continue,
            Err(e) => {
                tracing::warn!(journal = %path.display(), "cannot lock a call journal: {e}");
                continue;
            }
        }
        if unnamed {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        found.push(DeadJournal {
            path,
            reader: BufReader::new(file),
            line: Vec::new(),
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

#[cfg(test)]
#[path = "call_journal_tests.rs"]
mod tests;
