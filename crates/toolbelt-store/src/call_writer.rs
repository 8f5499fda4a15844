//! [`CallLogWriter`]: the [`CallLog`] that keeps every call in the `calls` table,
//! through a journal on local disk, without making the call wait for the database.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use toolbelt_core::sync::lock;
use toolbelt_core::{CallLog, CallRecord};

use crate::call_journal::{Journal, dead_journals, store_tag};
use crate::call_rows::{CallRow, write_rows};
use crate::error::{StoreError, StoreResult};
use crate::handle::StoreHandle;

/// Records kept in memory while they wait to be written, when they are not
/// journalled (a writer without a journal, or a journal that cannot be written);
/// past this, new ones are dropped with a warning. Journalled records have no
/// such limit: they wait in the journal.
pub const CALL_LOG_QUEUE_CAPACITY: usize = 4096;
/// Most records written in one transaction. Small enough that a batch's work (on
/// SQLite's thread) ends before it delays the calls of a busy server much: 256-row
/// batches raised a saturated server's p99 by half.
pub const CALL_LOG_BATCH_MAX: usize = 32;
/// How long the first record of a batch waits for more before the batch is written.
pub const CALL_LOG_LINGER: Duration = Duration::from_millis(200);
/// The wait after a failed write before the next try; each failure in a row
/// doubles it, up to [`CALL_LOG_RETRY_MAX`]. A flush tries again at once.
pub const CALL_LOG_RETRY_MIN: Duration = Duration::from_millis(500);
/// The longest wait between two tries of a failing write.
pub const CALL_LOG_RETRY_MAX: Duration = Duration::from_secs(30);
/// The directory of the call journals inside a state directory.
pub const CALL_JOURNAL_DIR: &str = "call-journal";

/// A [`CallLog`] that writes to the `calls` table.
///
/// Started with [`CallLogWriter::start_journaled`], [`CallLog::record`] appends
/// the record to this process's journal (one line, one `write(2)`) before it
/// returns, so a call whose answer has left is on disk; a background task copies
/// the journal into the store in batches (what arrives within [`CALL_LOG_LINGER`]
/// of a batch's first record, at most [`CALL_LOG_BATCH_MAX`]), one transaction
/// each, reading it from where it last committed: however far the store falls
/// behind, nothing is dropped. What a process could not write (killed, or the store
/// unreachable until it stopped) is written by the next writer started on the same
/// directory and store, and each record once: it is keyed (`calls.record_key`).
/// The journal survives the process being killed, not a power loss (it is not
/// `fsync`ed). Once all a journal file holds is committed and it has passed
/// [`crate::CALL_JOURNAL_ROTATE_BYTES`], the journal goes on in a new file.
///
/// Started with [`CallLogWriter::start`], records wait in memory instead (at most
/// [`CALL_LOG_QUEUE_CAPACITY`]) and are lost if the process ends before they are
/// written.
///
/// A failed write is tried again (after [`CALL_LOG_RETRY_MIN`], doubling up to
/// [`CALL_LOG_RETRY_MAX`]); the log never fails a call. Cheap to clone (clones
/// share the journal). Call [`CallLogWriter::flush`] before the process exits.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use toolbelt_core::{CallLog, CallRecord};
/// use toolbelt_store::{CallFilter, CallLogWriter, Location, Store, recent_calls};
///
/// let state = tempfile::tempdir().unwrap();
/// let store = Store::open(&Location::in_state_dir(state.path())).await.unwrap();
/// let journal = state.path().join(toolbelt_store::CALL_JOURNAL_DIR);
/// let writer = CallLogWriter::start_journaled(store.clone(), "/work", &journal).unwrap();
/// writer.record(CallRecord { tool: "grep".into(), ..CallRecord::default() });
/// writer.flush().await;
/// let logged = recent_calls(&store, &CallFilter { tail: 10, tool: None }).await.unwrap();
/// assert_eq!(logged[0].tool, "grep");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct CallLogWriter {
    handle: Arc<Handle>,
}

/// Held by the writer's clones: when the last goes, the task writes what is left
/// and ends.
#[derive(Debug)]
struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.wake.notify_one();
    }
}

/// What the calls and the task share.
#[derive(Debug)]
struct Shared {
    workspace: String,
    journal: Option<Journal>,
    memory: Mutex<Memory>,
    /// False when records go nowhere (no journal and no task to write them).
    accepting: bool,
    /// Records arrived, a flush is waiting, or the writer was dropped.
    wake: Notify,
    /// Flushes waiting now (the task writes at once while there are any).
    flushing: AtomicUsize,
    /// Flushes ever asked for (a retry's wait ends at a new one).
    flush_requests: AtomicU64,
    closed: AtomicBool,
    /// The journal cannot be written (said once until it can again).
    journal_failing: AtomicBool,
    progress: watch::Receiver<Progress>,
}

/// Records not journalled, waiting to be written.
#[derive(Debug, Default)]
struct Memory {
    rows: VecDeque<CallRow>,
    /// Rows ever queued.
    pushed: u64,
    /// The queue is full (said once until it is not).
    full: bool,
}

/// What the task has done, for flushes to wait on.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    /// Journal lines committed.
    journal_lines: u64,
    /// Memory records handled (written or refused).
    memory_rows: u64,
    /// Writes that failed.
    failures: u64,
    /// The journals of ended processes have been replayed (or there are none).
    replayed: bool,
}

impl Progress {
    fn reached(&self, target: (u64, u64)) -> bool {
        self.replayed && self.journal_lines >= target.0 && self.memory_rows >= target.1
    }
}

impl Shared {
    fn urgent(&self) -> bool {
        self.flushing.load(Ordering::Acquire) > 0 || self.closed.load(Ordering::Acquire)
    }

    /// Records waiting to be written.
    fn pending(&self) -> u64 {
        let journal = self.journal.as_ref().map_or(0, Journal::pending);
        journal + lock(&self.memory).rows.len() as u64
    }

    /// What a flush started now waits for.
    fn targets(&self) -> (u64, u64) {
        let journal = self.journal.as_ref().map_or(0, Journal::appended);
        (journal, lock(&self.memory).pushed)
    }

    /// Queues a record in memory: how many wait there now (0 when it was dropped).
    fn remember(&self, row: CallRow) -> u64 {
        let mut memory = lock(&self.memory);
        if memory.rows.len() >= CALL_LOG_QUEUE_CAPACITY {
            if !std::mem::replace(&mut memory.full, true) {
                tracing::warn!("the call log is behind; call records are being dropped");
            }
            return 0;
        }
        memory.full = false;
        memory.rows.push_back(row);
        memory.pushed += 1;
        memory.rows.len() as u64
    }
}

impl CallLogWriter {
    /// Starts a writer on the current Tokio runtime that keeps its records in
    /// memory until they are written (see the type's overview); every row gets
    /// `workspace`. A [`StoreHandle`] not yet open is opened by the first batch.
    /// Outside a Tokio runtime the writer drops every record, with a warning now.
    pub fn start(store: impl Into<StoreHandle>, workspace: impl Into<String>) -> CallLogWriter {
        CallLogWriter::launch(store.into(), workspace.into(), None)
    }

    /// Starts a writer on the current Tokio runtime that journals each record in
    /// `dir` (created if missing) before [`CallLog::record`] returns; every row gets
    /// `workspace`. It first writes what the journals in `dir` of ended processes
    /// hold for the same store, then removes them; journals of live processes
    /// (locked) are left alone. Outside a Tokio runtime records are journalled,
    /// for the next writer started on `dir` to write.
    ///
    /// # Errors
    /// [`StoreError::Journal`]: `dir` or the journal's file cannot be created, or
    /// the file cannot be locked.
    ///
    /// # Security
    /// The journal holds what the log holds (arguments with secrets redacted): its
    /// files are created readable by their owner only, in `dir`, which should be
    /// as private as the store.
    pub fn start_journaled(
        store: impl Into<StoreHandle>,
        workspace: impl Into<String>,
        dir: impl AsRef<Path>,
    ) -> StoreResult<CallLogWriter> {
        let store = store.into();
        let dir = dir.as_ref();
        let journal = Journal::create(dir, &store_tag(store.location()))?;
        Ok(CallLogWriter::launch(
            store,
            workspace.into(),
            Some((journal, dir.to_path_buf())),
        ))
    }

    fn launch(
        store: StoreHandle,
        workspace: String,
        journal: Option<(Journal, PathBuf)>,
    ) -> CallLogWriter {
        let runtime = tokio::runtime::Handle::try_current().ok();
        let (replay, journal) = match journal {
            Some((journal, dir)) => (Some(dir), Some(journal)),
            None => (None, None),
        };
        let (progress, watched) = watch::channel(Progress {
            replayed: replay.is_none(),
            ..Progress::default()
        });
        let shared = Arc::new(Shared {
            workspace,
            accepting: runtime.is_some() || journal.is_some(),
            journal,
            memory: Mutex::new(Memory::default()),
            wake: Notify::new(),
            flushing: AtomicUsize::new(0),
            flush_requests: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            journal_failing: AtomicBool::new(false),
            progress: watched,
        });
        match runtime {
            Some(runtime) => {
                let writer = Writer {
                    tag: store_tag(store.location()),
                    shared: Arc::clone(&shared),
                    store,
                    progress,
                    workers: BackgroundWorkers::default(),
                    replay,
                    buf: Vec::new(),
                    retry: CALL_LOG_RETRY_MIN,
                    retry_flushes: 0,
                };
                runtime.spawn(writer.run());
            }
            None if shared.journal.is_some() => tracing::warn!(
                "the call log needs a Tokio runtime to write to the store; calls stay in the call journal until a later start"
            ),
            None => tracing::warn!("the call log needs a Tokio runtime; calls will not be logged"),
        }
        CallLogWriter {
            handle: Arc::new(Handle { shared }),
        }
    }

    /// The file this writer journals to now, if it has a journal.
    pub fn journal_path(&self) -> Option<PathBuf> {
        self.handle.shared.journal.as_ref().map(Journal::path)
    }

    /// Waits until every record handed over so far is written, and the journals of
    /// ended processes replayed. When a write fails the wait ends with a warning:
    /// journalled records stay in the journal for a later try (by this writer, or
    /// the next one started on its directory); records kept in memory are lost if
    /// the process ends.
    pub async fn flush(&self) {
        let shared = &self.handle.shared;
        let mut progress = shared.progress.clone();
        let failures = progress.borrow().failures;
        let target = shared.targets();
        let _waiting = FlushWait::new(shared);
        let reached = progress
            .wait_for(|p| p.reached(target) || p.failures > failures)
            .await
            .map(|p| p.reached(target));
        if reached.unwrap_or(false) {
            return;
        }
        let pending = shared.pending();
        if pending == 0 {
            return;
        }
        match &shared.journal {
            Some(journal) => tracing::warn!(
                records = pending,
                journal = %journal.path().display(),
                "the call log could not be written to the store; the records wait in the call journal, for this process to try again or the next one started on its directory"
            ),
            None => tracing::warn!(
                records = pending,
                "the call log could not be written to the store; the records are lost if the process ends now"
            ),
        }
    }
}

/// A flush waiting: the task writes at once, and a failed write is tried again
/// at once, while one is.
struct FlushWait<'a> {
    shared: &'a Shared,
}

impl<'a> FlushWait<'a> {
    fn new(shared: &'a Shared) -> FlushWait<'a> {
        shared.flushing.fetch_add(1, Ordering::AcqRel);
        shared.flush_requests.fetch_add(1, Ordering::AcqRel);
        shared.wake.notify_one();
        FlushWait { shared }
    }
}

impl Drop for FlushWait<'_> {
    fn drop(&mut self) {
        self.shared.flushing.fetch_sub(1, Ordering::AcqRel);
    }
}

impl CallLog for CallLogWriter {
    fn record(&self, record: CallRecord) {
        let shared = &self.handle.shared;
        if !shared.accepting {
            return;
        }
        let waiting = match &shared.journal {
            Some(journal) => {
                let row = CallRow::new(record, &shared.workspace, Some(journal.next_key()));
                match journal.append(&row) {
                    Ok(waiting) => {
                        if shared.journal_failing.swap(false, Ordering::AcqRel) {
                            tracing::info!("the call journal can be written again");
                        }
                        waiting
                    }
                    Err(e) => {
                        if !shared.journal_failing.swap(true, Ordering::AcqRel) {
                            tracing::warn!(
                                journal = %journal.path().display(),
                                "cannot write the call journal; call records wait in memory: {e}"
                            );
                        }
                        shared.remember(row)
                    }
                }
            }
            None => shared.remember(CallRow::new(record, &shared.workspace, None)),
        };
        // The task needs waking when it may be idle (the first record) and when a
        // batch is full; in between it is lingering for more anyway.
        if waiting == 1 || waiting >= CALL_LOG_BATCH_MAX as u64 {
            shared.wake.notify_one();
        }
    }
}

/// A batch read and not yet committed.
struct Inflight {
    rows: Vec<CallRow>,
    source: Source,
}

enum Source {
    /// Journal lines (more than rows when some could not be read), ending at `end`.
    Journal {
        lines: u64,
        end: u64,
    },
    Memory,
}

/// The background task.
struct Writer {
    shared: Arc<Shared>,
    store: StoreHandle,
    tag: String,
    progress: watch::Sender<Progress>,
    workers: BackgroundWorkers,
    /// The directory whose dead journals are still to be replayed.
    replay: Option<PathBuf>,
    buf: Vec<u8>,
    /// The wait after the next failure.
    retry: Duration,
    /// Flushes asked for when the last write failed.
    retry_flushes: u64,
}

impl Writer {
    async fn run(mut self) {
        let mut inflight: Option<Inflight> = None;
        loop {
            if self.replay.is_some() && !self.replay_dead().await {
                if self.shared.closed.load(Ordering::Acquire) {
                    return;
                }
                self.pause().await;
                continue;
            }
            let batch = match inflight.take() {
                Some(batch) => batch,
                None => {
                    if self.shared.pending() == 0 {
                        if self.shared.closed.load(Ordering::Acquire) {
                            return;
                        }
                        self.shared.wake.notified().await;
                        continue;
                    }
                    self.linger().await;
                    match self.take_batch() {
                        Ok(batch) => batch,
                        Err(e) => {
                            self.failed(&e, 0);
                            if self.shared.closed.load(Ordering::Acquire) {
                                return;
                            }
                            self.pause().await;
                            continue;
                        }
                    }
                }
            };
            match self.write(&batch.rows).await {
                Ok(()) => {
                    self.commit(batch);
                    self.retry = CALL_LOG_RETRY_MIN;
                }
                Err(e) => {
                    self.failed(&e, batch.rows.len());
                    inflight = Some(batch);
                    if self.shared.closed.load(Ordering::Acquire) {
                        return;
                    }
                    self.pause().await;
                }
            }
        }
    }

    /// Waits for a batch to fill: until [`CALL_LOG_BATCH_MAX`] records wait, a
    /// flush is asked for, or [`CALL_LOG_LINGER`] has passed.
    async fn linger(&self) {
        let deadline = Instant::now() + CALL_LOG_LINGER;
        while self.shared.pending() < CALL_LOG_BATCH_MAX as u64 && !self.shared.urgent() {
            if tokio::time::timeout_at(deadline, self.shared.wake.notified())
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// Waits before trying a failed write again: the retry delay, or less if a
    /// flush is asked for after the failure.
    async fn pause(&mut self) {
        let until = Instant::now() + self.retry;
        self.retry = (self.retry * 2).min(CALL_LOG_RETRY_MAX);
        loop {
            if self.shared.flush_requests.load(Ordering::Acquire) > self.retry_flushes
                || self.shared.closed.load(Ordering::Acquire)
            {
                return;
            }
            if tokio::time::timeout_at(until, self.shared.wake.notified())
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// The next batch: journal lines first, then records in memory.
    fn take_batch(&mut self) -> StoreResult<Inflight> {
        if let Some(journal) = &self.shared.journal
            && journal.pending() > 0
        {
            let batch = journal
                .read_batch(CALL_LOG_BATCH_MAX, &mut self.buf)
                .map_err(|source| StoreError::Journal {
                    path: journal.path().to_path_buf(),
                    source,
                })?;
            return Ok(Inflight {
                rows: batch.rows,
                source: Source::Journal {
                    lines: batch.lines,
                    end: batch.end,
                },
            });
        }
        let mut memory = lock(&self.shared.memory);
        let n = memory.rows.len().min(CALL_LOG_BATCH_MAX);
        Ok(Inflight {
            rows: memory.rows.drain(..n).collect(),
            source: Source::Memory,
        })
    }

    async fn write(&mut self, rows: &[CallRow]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let store = self.store.store().await?;
        self.workers.lower();
        write_rows(store, rows).await
    }

    fn commit(&self, batch: Inflight) {
        match batch.source {
            Source::Journal { lines, end } => {
                if let Some(journal) = &self.shared.journal {
                    journal.commit(lines, end);
                }
                self.progress.send_modify(|p| p.journal_lines += lines);
            }
            Source::Memory => {
                let rows = batch.rows.len() as u64;
                self.progress.send_modify(|p| p.memory_rows += rows);
            }
        }
    }

    fn failed(&mut self, e: &StoreError, records: usize) {
        self.retry_flushes = self.shared.flush_requests.load(Ordering::Acquire);
        self.progress.send_modify(|p| p.failures += 1);
        tracing::warn!(
            records,
            retry_ms = self.retry.as_millis() as u64,
            "could not write the call log, the records wait to be tried again: {}",
            toolbelt_core::error_chain(e)
        );
    }

    /// Writes the journals ended processes left in the directory, then removes
    /// them. False when the store failed (the rest is tried again later).
    async fn replay_dead(&mut self) -> bool {
        let Some(dir) = self.replay.clone() else {
            return true;
        };
        let own = self.shared.journal.as_ref().map(Journal::path);
        let own = own.as_deref();
        let store = match self.store.store().await {
            Ok(store) => store,
            Err(e) => {
                self.failed(&e, 0);
                return false;
            }
        };
        for mut dead in dead_journals(&dir, &self.tag, own) {
            let mut written = 0;
            loop {
                let rows = match dead.next_batch(CALL_LOG_BATCH_MAX) {
                    Ok(Some(rows)) => rows,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(
                            journal = %dead.path().display(),
                            "cannot read a call journal left by an ended process; it is left for a later start: {e}"
                        );
                        break;
                    }
                };
                self.workers.lower();
                if let Err(e) = write_rows(store, &rows).await {
                    self.failed(&e, rows.len());
                    return false;
                }
                written += rows.len();
            }
            tracing::info!(
                records = written,
                journal = %dead.path().display(),
                "wrote the call records an ended process left in its journal"
            );
            dead.remove();
        }
        self.replay = None;
        self.progress.send_modify(|p| p.replayed = true);
        true
    }
}

/// The store's SQLite worker threads, whose scheduling priority the call log
/// lowers: writing the log is background work, and on a busy machine the calls
/// themselves should not wait behind it (a saturating client's p99 rose by a third
/// while batches ran at the calls' priority). Other store work on those threads
/// yields the same way, only while the CPUs are contended.
#[derive(Default)]
struct BackgroundWorkers {
    /// Threads already looked at.
    #[cfg(target_os = "linux")]
    seen: std::collections::HashSet<i32>,
    /// When the threads were last looked for.
    #[cfg(target_os = "linux")]
    looked: Option<std::time::Instant>,
}

impl BackgroundWorkers {
    /// Nice value given to the workers.
    #[cfg(target_os = "linux")]
    const NICE: i32 = 10;

    /// Lowers the priority of the worker threads started since the last look (at
    /// most one look a second; connections, each with its thread, open lazily).
    fn lower(&mut self) {
        #[cfg(target_os = "linux")]
        {
            if self
                .looked
                .is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1))
            {
                return;
            }
            self.looked = Some(std::time::Instant::now());
            let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
                return;
            };
            for task in tasks.flatten() {
                let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                    continue;
                };
                if !self.seen.insert(tid) {
                    continue;
                }
                // sqlx names them `sqlx-sqlite-worker-N`; the kernel keeps 15 bytes.
                let is_worker = std::fs::read(task.path().join("comm"))
                    .is_ok_and(|name| name.starts_with(b"sqlx-sqlite-wor"));
                if let Some(pid) = rustix::process::Pid::from_raw(tid).filter(|_| is_worker) {
                    // On Linux a thread id names the thread alone.
                    let _ = rustix::process::setpriority_process(Some(pid), Self::NICE);
                }
            }
        }
    }
}
