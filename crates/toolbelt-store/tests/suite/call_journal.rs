//! The call journal: nothing recorded is lost when the store falls behind, is
//! locked, unreachable, or the process is killed; each record is written once
//! however often its journal is replayed; live journals are left to their process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use sqlx::Row;
use toolbelt_core::{CallLog, CallRecord};
use toolbelt_store::{
    Backend, CALL_JOURNAL_ROTATE_BYTES, CALL_LOG_QUEUE_CAPACITY, CallLogWriter, Location, Store,
    StoreHandle, testing,
};

fn record(n: usize) -> CallRecord {
    CallRecord {
        at_ms: toolbelt_store::now_ms(),
        tool: "think".into(),
        call_id: format!("call-{n}"),
        args: format!(r#"{{"n":{n}}}"#),
        status: "success".into(),
        duration_ms: 1,
        bytes_out: 10,
        ..CallRecord::default()
    }
}

/// Rows, distinct call ids and distinct record keys in the log.
async fn counts(store: &Store) -> (i64, i64, i64) {
    let row = sqlx::query(
        "SELECT CAST(COUNT(*) AS BIGINT), CAST(COUNT(DISTINCT call_id) AS BIGINT), CAST(COUNT(DISTINCT record_key) AS BIGINT) FROM calls",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    (
        row.try_get(0).unwrap(),
        row.try_get(1).unwrap(),
        row.try_get(2).unwrap(),
    )
}

/// The call ids in the log.
async fn call_ids(store: &Store) -> Vec<String> {
    sqlx::query("SELECT call_id FROM calls ORDER BY id")
        .fetch_all(store.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get(0).unwrap())
        .collect()
}

async fn flush(writer: &CallLogWriter) {
    tokio::time::timeout(Duration::from_secs(120), writer.flush())
        .await
        .expect("the flush ended");
}

/// Another connection keeps the `calls` table from being written for `hold`:
/// `LOCK TABLE calls IN ACCESS EXCLUSIVE MODE` on PostgreSQL, a write transaction
/// on SQLite. Returns once the lock is held; the task ends when it is released.
async fn lock_calls(location: &Location, hold: Duration) -> tokio::task::JoinHandle<()> {
    let other = Store::open(location).await.unwrap();
    let (held, is_held) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut tx = other.begin_write().await.unwrap();
        if other.backend() == Backend::Postgres {
            sqlx::query("LOCK TABLE calls IN ACCESS EXCLUSIVE MODE")
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        held.send(()).unwrap();
        tokio::time::sleep(hold).await;
        tx.rollback().await.unwrap();
        other.close().await;
    });
    is_held.await.unwrap();
    task
}

/// Waits until `path` is gone (a writer's task removes its empty journal as it ends).
async fn gone(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while path.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !path.exists()
}

/// Far more records than the in-memory queue holds, recorded while another
/// connection holds the table for 2 s: every call returns at once, and once the
/// lock is released and the writer flushed, every record is there once. The
/// journal is emptied once all it held is written, and removed with its writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_held_up_by_a_locked_table_loses_nothing() {
    // Far more than the queue, and more than a journal file holds before the
    // journal goes on in a new one.
    const RECORDS: usize = CALL_LOG_QUEUE_CAPACITY + 2000 + 2904;
    const HOLD: Duration = Duration::from_secs(2);
    for t in testing::both().await.unwrap() {
        let dir = tempfile::tempdir().unwrap();
        let writer = CallLogWriter::start_journaled(t.store.clone(), "/w", dir.path()).unwrap();
        let journal = writer.journal_path().unwrap();
        let size_of = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
        let lock = lock_calls(&t.location, HOLD).await;
        let held = Instant::now();
        // Four callers at once, as a busy server's calls.
        let callers: Vec<_> = (0..4)
            .map(|c| {
                let w = writer.clone();
                tokio::spawn(async move {
                    for n in (c..RECORDS).step_by(4) {
                        w.record(record(n));
                    }
                })
            })
            .collect();
        for c in callers {
            c.await.unwrap();
        }
        let recording = held.elapsed();
        assert!(
            recording < HOLD,
            "{:?}: recording waited for the store ({recording:?})",
            t.location
        );
        // Every record waits in the journal, which has outgrown a file's size.
        assert!(size_of(&journal) >= CALL_JOURNAL_ROTATE_BYTES);
        lock.await.unwrap();
        flush(&writer).await;

        let n = RECORDS as i64;
        assert_eq!(counts(&t.store).await, (n, n, n), "{:?}", t.location);
        // All written, past the size of a file: the journal went on in a new file,
        // the old one removed.
        assert!(!journal.exists(), "{} stayed", journal.display());
        let current = writer.journal_path().unwrap();
        assert_ne!(current, journal);
        assert_eq!(std::fs::metadata(&current).unwrap().len(), 0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(writer);
        assert!(gone(&current).await, "{} stayed", current.display());
    }
}

/// A writer whose store cannot be written keeps the records in its journal when it
/// ends; the next writer on the directory writes them and removes the journal, and
/// a replay of the same journal again (its removal lost) writes nothing twice.
#[test]
fn records_left_in_a_journal_are_written_once_however_often_it_is_replayed() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(testing::both()).unwrap() {
        let dir = tempfile::tempdir().unwrap();
        // A writer on a closed store, on a runtime of its own that then ends.
        let closed = t.store.clone();
        let journal_dir = dir.path().to_path_buf();
        let journal = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                closed.close().await;
                let writer = CallLogWriter::start_journaled(closed, "/w", &journal_dir).unwrap();
                for n in 0..100 {
                    writer.record(record(n));
                }
                flush(&writer).await;
                writer.journal_path().unwrap()
            })
        })
        .join()
        .unwrap();
        assert!(journal.exists(), "the records' journal was removed");
        let kept = std::fs::read(&journal).unwrap();
        assert_eq!(kept.iter().filter(|b| **b == b'\n').count(), 100);

        rt.block_on(async {
            let store = Store::open(&t.location).await.unwrap();
            let expected: Vec<String> = (0..100).map(|n| format!("call-{n}")).collect();
            let next = CallLogWriter::start_journaled(store.clone(), "/w", dir.path()).unwrap();
            flush(&next).await;
            assert!(!journal.exists(), "the replayed journal stayed");
            assert_eq!(call_ids(&store).await, expected, "{:?}", t.location);

            // The same journal again, as if its removal had been lost.
            std::fs::write(&journal, &kept).unwrap();
            let again = CallLogWriter::start_journaled(store.clone(), "/w", dir.path()).unwrap();
            flush(&again).await;
            assert!(!journal.exists());
            assert_eq!(counts(&store).await, (100, 100, 100), "{:?}", t.location);
            store.close().await;
        });
    }
}

/// Two writers on one directory: the second leaves the first's live journal alone
/// (it neither writes nor removes it) while the first's records wait on a locked
/// table; each writes its own, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_sharing_a_directory_leave_each_others_journal_alone() {
    for t in testing::both().await.unwrap() {
        let dir = tempfile::tempdir().unwrap();
        let first = CallLogWriter::start_journaled(t.store.clone(), "/w", dir.path()).unwrap();
        let lock = lock_calls(&t.location, Duration::from_secs(1)).await;
        for n in 0..100 {
            first.record(record(n));
        }
        let second = CallLogWriter::start_journaled(t.store.clone(), "/w", dir.path()).unwrap();
        // The second has nothing of its own and no journal to replay: its flush
        // ends without waiting for the table.
        tokio::time::timeout(Duration::from_millis(900), second.flush())
            .await
            .expect("the second writer waited for the first's records");
        let first_journal = first.journal_path().unwrap();
        assert_ne!(Some(&first_journal), second.journal_path().as_ref());
        assert!(first_journal.exists(), "the live journal was taken");
        assert_eq!(
            std::fs::read(&first_journal)
                .unwrap()
                .iter()
                .filter(|b| **b == b'\n')
                .count(),
            100
        );
        lock.await.unwrap();
        for n in 100..200 {
            second.record(record(n));
            first.record(record(n + 100));
        }
        flush(&first).await;
        flush(&second).await;
        assert_eq!(counts(&t.store).await, (300, 300, 300), "{:?}", t.location);
        let journals: Vec<PathBuf> = [first.journal_path(), second.journal_path()]
            .into_iter()
            .map(Option::unwrap)
            .collect();
        drop((first, second));
        for journal in journals {
            assert!(gone(&journal).await, "{} stayed", journal.display());
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

/// The child side of `calls_journalled_by_a_killed_process_are_written_at_the_next_start`:
/// records calls in a loop on a multi-threaded runtime (the writer commits as it
/// goes) and prints each call's number once `record` has returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by its parent test as a child process"]
async fn journal_child() {
    let (Ok(location), Ok(dir)) = (
        std::env::var("TOOLBELT_JOURNAL_CHILD_STORE"),
        std::env::var("TOOLBELT_JOURNAL_CHILD_DIR"),
    ) else {
        return;
    };
    let store = StoreHandle::lazy(Location::parse(&location).unwrap());
    let writer = CallLogWriter::start_journaled(store, "/w", dir).unwrap();
    let mut stdout = std::io::stdout();
    for n in 0.. {
        writer.record(record(n));
        use std::io::Write;
        writeln!(stdout, "{n}").unwrap();
        stdout.flush().unwrap();
        if n % 5 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// A process SIGKILLed while it records calls, three times over on one journal
/// directory: each next start writes what the killed one had not, and every call
/// the killed processes reported recorded is in the log exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_journalled_by_a_killed_process_are_written_at_the_next_start() {
    for t in testing::both().await.unwrap() {
        let dir = tempfile::tempdir().unwrap();
        let location = match &t.location {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => url.clone(),
        };
        let exe = std::env::current_exe().unwrap();
        let mut recorded: Vec<String> = Vec::new();
        for round in 0..3u64 {
            let mut child = Command::new(&exe)
                .args([
                    "--exact",
                    "suite::call_journal::journal_child",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TOOLBELT_JOURNAL_CHILD_STORE", &location)
                .env("TOOLBELT_JOURNAL_CHILD_DIR", dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let reader = std::thread::spawn(move || {
                BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                    // The first number shares its line with the harness's
                    // `test ... ` (printed with --nocapture).
                    .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                    .collect::<Vec<u64>>()
            });
            tokio::time::sleep(Duration::from_millis(700 + round * 150)).await;
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            let numbers = reader.join().unwrap();
            assert!(!numbers.is_empty(), "round {round}: nothing recorded");
            recorded.extend(numbers.into_iter().map(|n| format!("call-{n}")));
        }
        let before = counts(&t.store).await.0;
        let writer = CallLogWriter::start_journaled(t.store.clone(), "/w", dir.path()).unwrap();
        flush(&writer).await;
        let ids = call_ids(&t.store).await;
        // Every round numbers its calls from 0: each call id once per round.
        let mut expected_counts = std::collections::BTreeMap::<String, usize>::new();
        for id in &recorded {
            *expected_counts.entry(id.clone()).or_default() += 1;
        }
        let mut found_counts = std::collections::BTreeMap::<String, usize>::new();
        for id in &ids {
            *found_counts.entry(id.clone()).or_default() += 1;
        }
        let missing: Vec<&String> = expected_counts
            .iter()
            .filter(|(id, n)| found_counts.get(*id).copied().unwrap_or(0) < **n)
            .map(|(id, _)| id)
            .collect();
        assert!(
            missing.is_empty(),
            "{:?}: {} of {} recorded calls missing, e.g. {:?}",
            t.location,
            missing.len(),
            recorded.len(),
            &missing[..missing.len().min(5)]
        );
        // Exactly once: a killed process may have journalled one call it did not
        // live to report, no more.
        let rounds = 3;
        assert!(
            found_counts.values().all(|n| *n <= rounds),
            "a record written twice"
        );
        let (rows, _, _) = counts(&t.store).await;
        assert!(
            (recorded.len()..=recorded.len() + rounds).contains(&(rows as usize)),
            "{:?}: {rows} rows for {} calls recorded",
            t.location,
            recorded.len()
        );
        assert!(
            rows > before,
            "{:?}: the last start wrote nothing ({before} rows before it)",
            t.location
        );
        drop(writer);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.len() <= 1, "journals left: {left:?}");
    }
}

/// A record the database refuses for what it holds (PostgreSQL takes no NUL in
/// text) is left out, alone: it does not hold up the records after it, which a
/// retry of the whole batch would do forever.
#[tokio::test]
async fn a_record_the_database_refuses_does_not_hold_up_the_others() {
    for t in testing::both().await.unwrap() {
        let dir = tempfile::tempdir().unwrap();
        let writer = CallLogWriter::start_journaled(t.store.clone(), "/w", dir.path()).unwrap();
        let mut refused = record(1);
        refused.call_id = "call-\u{0}-1".into();
        writer.record(record(0));
        writer.record(refused);
        writer.record(record(2));
        flush(&writer).await;
        let expected: &[&str] = match t.store.backend() {
            Backend::Postgres => &["call-0", "call-2"],
            Backend::Sqlite => &["call-0", "call-\u{0}-1", "call-2"],
        };
        assert_eq!(call_ids(&t.store).await, expected, "{:?}", t.location);
        // The writer is not stuck trying the refused one again.
        writer.record(record(3));
        flush(&writer).await;
        assert_eq!(
            call_ids(&t.store).await.last().map(String::as_str),
            Some("call-3")
        );
    }
}
