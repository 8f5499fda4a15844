//! Saved outputs in the store, on both backends: every page read from the store
//! is the page of the file byte for byte, reads are held to the workspace, the
//! expiry keeps the newest within the limits, and a 10 MB output is saved and
//! paged in bounded memory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pretty_assertions::assert_eq;
use sqlx::Row;
use toolbelt_core::output::{
    LineChunks, SAVED_CHUNK_BYTES, SaveError, SavedOutputLimits, SavedOutputs, SpillError,
    SpilledPage, read_spilled_within,
};
use toolbelt_store::{ExpiredOutputs, Store, StoreOutputs, expire_saved_outputs, now_ms, testing};

const TIMEOUT: Duration = Duration::from_secs(300);

fn new_id() -> String {
    format!("out_{}", uuid::Uuid::now_v7().simple())
}

/// Writes `bytes` as the spill file of a new output in `dir`: its id and path.
fn spill(dir: &Path, bytes: &[u8]) -> (String, PathBuf) {
    let id = new_id();
    let path = dir.join(format!("{id}.txt"));
    std::fs::write(&path, bytes).unwrap();
    (id, path)
}

async fn count(store: &Store, sql: &str) -> i64 {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(store.pool())
        .await
        .unwrap()
        .try_get::<i64, _>(0)
        .unwrap()
}

/// The outputs the tests page: long lines over the chunk size, no line end at the
/// end, CRLF, empty, a line of exactly one chunk, many short lines.
fn contents() -> Vec<(&'static str, Vec<u8>)> {
    let long = "x".repeat(SAVED_CHUNK_BYTES * 2 + 1_000);
    let mut short = String::new();
    for i in 0..40_000 {
        short.push_str(&format!("line {i}: {}\n", "ab".repeat(i % 17)));
    }
    let mut crlf = String::new();
    for i in 0..30_000 {
        crlf.push_str(&format!("crlf line {i}\r\n"));
    }
    vec![
        ("empty", Vec::new()),
        ("one line without a line end", b"only this".to_vec()),
        (
            "long lines over the chunk size",
            format!("head\n{long}\nmiddle\n{long}é{long}\ntail\n{long}").into_bytes(),
        ),
        ("crlf", crlf.into_bytes()),
        (
            "a line of exactly one chunk",
            format!(
                "{}\n{}\nend",
                "y".repeat(SAVED_CHUNK_BYTES - 1),
                "z".repeat(SAVED_CHUNK_BYTES)
            )
            .into_bytes(),
        ),
        ("many short lines, no line end", {
            let mut s = short.into_bytes();
            s.extend_from_slice(b"the last one");
            s
        }),
    ]
}

/// The offsets to try on `bytes`: the edges, past the end, counted from the end,
/// and the lines on both sides of every chunk boundary.
fn offsets(bytes: &[u8]) -> Vec<i64> {
    let mut chunks = LineChunks::new(bytes);
    let mut out = vec![0, 1, 2, 3, -1, -2, -200, -1_000_000];
    while let Some(c) = chunks.next_chunk().unwrap() {
        let line = c.first_line as i64;
        out.extend([line - 1, line, line + 1, line + c.lines as i64]);
    }
    let total = chunks.totals().1 as i64;
    out.extend([total - 1, total, total + 1, total + 1_000]);
    out.retain(|&o| o >= -1_000_000);
    out.sort_unstable();
    out.dedup();
    out
}

async fn both_pages(
    outputs: &StoreOutputs,
    dir: &Path,
    id: &str,
    offset: i64,
    limit: usize,
    max_page_bytes: usize,
) -> (SpilledPage, SpilledPage) {
    let from_store = outputs
        .page(id, offset, limit, max_page_bytes)
        .await
        .unwrap();
    let from_file = read_spilled_within(dir, id, offset, limit, max_page_bytes).unwrap();
    (from_store, from_file)
}

#[tokio::test]
async fn pages_from_the_store_are_the_pages_of_the_file() {
    tokio::time::timeout(TIMEOUT, async {
        for t in testing::both().await.unwrap() {
            let dir = tempfile::tempdir().unwrap();
            let outputs = StoreOutputs::new(t.store.clone(), "/work/a");
            for (name, bytes) in contents() {
                let (id, path) = spill(dir.path(), &bytes);
                outputs.save(&id, &path).await.unwrap();
                for offset in offsets(&bytes) {
                    for (limit, max_page_bytes) in [(1, 30_000), (7, 1_024), (2_000, 30_000)] {
                        let (store, file) =
                            both_pages(&outputs, dir.path(), &id, offset, limit, max_page_bytes)
                                .await;
                        assert_eq!(
                            store, file,
                            "{name}: offset {offset}, limit {limit}, {max_page_bytes} bytes"
                        );
                    }
                }
                // Every page of the whole output, as a model reads it.
                let mut offset = 1;
                let mut pages = 0;
                loop {
                    let (store, file) =
                        both_pages(&outputs, dir.path(), &id, offset, 2_000, 30_000).await;
                    assert_eq!(store, file, "{name}: offset {offset}");
                    pages += 1;
                    match store.next_offset {
                        Some(next) => offset = i64::try_from(next).unwrap(),
                        None => break,
                    }
                }
                assert!(pages >= 1, "{name}");
            }
            let chunk_max = count(
                &t.store,
                "SELECT CAST(COALESCE(MAX(length(data)), 0) AS BIGINT) FROM saved_output_chunks",
            )
            .await;
            assert_eq!(chunk_max, SAVED_CHUNK_BYTES as i64);
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn reads_are_held_to_the_workspace_and_a_second_save_replaces_the_first() {
    tokio::time::timeout(TIMEOUT, async {
        for t in testing::both().await.unwrap() {
            let dir = tempfile::tempdir().unwrap();
            let a = StoreOutputs::new(t.store.clone(), "/work/a");
            let b = StoreOutputs::new(t.store.clone(), "/work/b");
            let (id, path) = spill(dir.path(), b"one\ntwo\n");
            a.save(&id, &path).await.unwrap();
            assert!(matches!(
                b.page(&id, 1, 10, 30_000).await,
                Err(SpillError::NotFound(ref got)) if *got == id
            ));
            let unknown = new_id();
            assert!(matches!(
                a.page(&unknown, 1, 10, 30_000).await,
                Err(SpillError::NotFound(_))
            ));
            assert!(matches!(
                a.page("../etc/passwd", 1, 10, 30_000).await,
                Err(SpillError::InvalidId(_))
            ));

            std::fs::write(&path, b"three\n").unwrap();
            a.save(&id, &path).await.unwrap();
            let page = a.page(&id, 1, 10, 30_000).await.unwrap();
            assert_eq!(page.text, "     1\tthree\n[lines 1-1 of 1; end of output]");
            assert_eq!(
                count(&t.store, "SELECT COUNT(*) FROM saved_output_chunks").await,
                1
            );

            // A spill file that is gone is not saved, and says which file.
            let missing = dir.path().join(format!("{}.txt", new_id()));
            let err = a.save(&new_id(), &missing).await.unwrap_err();
            assert!(
                matches!(err, SaveError::Read { ref path, .. } if *path == missing),
                "{err:?}"
            );
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn expiry_removes_the_old_then_the_oldest_past_the_total_of_one_workspace() {
    tokio::time::timeout(TIMEOUT, async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            let dir = tempfile::tempdir().unwrap();
            let limits = SavedOutputLimits {
                max_age: Duration::from_secs(3_600),
                max_total_bytes: 1_000,
            };
            let a = StoreOutputs::new(s.clone(), "/work/a").with_limits(limits);
            let b = StoreOutputs::new(s.clone(), "/work/b").with_limits(limits);
            // Saved at (seconds ago, bytes), oldest first.
            let now = now_ms();
            let mut ids = Vec::new();
            for (ago_s, bytes) in [(7_200, 10), (1_000, 400), (900, 300), (800, 500), (10, 100)] {
                let (id, path) = spill(dir.path(), &vec![b'x'; bytes]);
                a.save(&id, &path).await.unwrap();
                sqlx::query("UPDATE saved_outputs SET created_ms = $1 WHERE output_id = $2")
                    .bind(now - ago_s * 1_000)
                    .bind(&id)
                    .execute(s.pool())
                    .await
                    .unwrap();
                ids.push(id);
            }
            let (other, path) = spill(dir.path(), &vec![b'x'; 2_000 - 1_001]);
            b.save(&other, &path).await.unwrap();
            sqlx::query("UPDATE saved_outputs SET created_ms = 0 WHERE output_id = $1")
                .bind(&other)
                .execute(s.pool())
                .await
                .unwrap();

            let expired = expire_saved_outputs(s, "/work/a", &limits, now)
                .await
                .unwrap();
            // The first is too old; newest first 100 + 500 + 300 = 900, then 400 passes 1,000.
            assert_eq!(
                expired,
                ExpiredOutputs {
                    outputs: 2,
                    bytes: 410
                }
            );
            for (i, id) in ids.iter().enumerate() {
                let found = a.page(id, 1, 1, 30_000).await;
                assert_eq!(found.is_ok(), i >= 2, "output {i}: {found:?}");
            }
            assert!(b.page(&other, 1, 1, 30_000).await.is_ok());
            assert_eq!(
                count(s, "SELECT COUNT(*) FROM saved_output_chunks").await,
                4
            );

            // Over the total on its own: not kept at all.
            let (big, path) = spill(dir.path(), &vec![b'x'; 1_001]);
            let err = a.save(&big, &path).await.unwrap_err();
            assert!(matches!(
                err,
                SaveError::TooLarge {
                    bytes: 1_001,
                    max_bytes: 1_000
                }
            ));
            assert!(matches!(
                a.page(&big, 1, 1, 30_000).await,
                Err(SpillError::NotFound(_))
            ));
        }
    })
    .await
    .unwrap();
}

// ---------------------------------------------------------------------------
// 10 MB in bounded memory, measured in a child process

/// Where the child finds its directory; set only on the child's command.
const CHILD_DIR_ENV: &str = "TOOLBELT_TEST_OUTPUTS_10MB_DIR";
const CHILD_TEST: &str = "suite::outputs::saved_10mb_child";
const GROWTH_MARKER: &str = "OUTPUTS_CHILD_GROWTH_KB=";
/// Bytes of the outputs: 10 MiB, and four times that to show that what is used
/// does not grow with the output.
const BIG_BYTES: [usize; 2] = [10 * 1024 * 1024, 40 * 1024 * 1024];
/// How much the peak resident memory may grow while saving and paging one: a few
/// chunks and the database client's buffers, below the smaller output.
const MAX_GROWTH_BYTES: u64 = 8 * 1024 * 1024;

fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// A log of `bytes` written a line at a time, a 300 KB line every 5,000: its
/// line count.
fn write_big(path: &Path, bytes: usize) -> u64 {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let (mut written, mut lines) = (0usize, 0u64);
    while written < bytes {
        lines += 1;
        let line = if lines % 5_000 == 0 {
            format!("{}\n", "w".repeat(300_000))
        } else {
            format!(
                "2026-11-28T06:00:00Z INFO worker[{}] processed batch {lines}\n",
                lines % 8
            )
        };
        out.write_all(line.as_bytes()).unwrap();
        written += line.len();
    }
    out.flush().unwrap();
    lines
}

/// Runs only when re-executed by [`saved_10mb_in_bounded_memory`]: saves each
/// output of [`BIG_BYTES`] to PostgreSQL and pages all of it, then reports how
/// much its peak resident memory grew meanwhile.
#[tokio::test]
async fn saved_10mb_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR_ENV) else {
        return;
    };
    tokio::time::timeout(TIMEOUT, async {
        let dir = Path::new(&dir);
        let t = testing::postgres().await.unwrap();
        let outputs = StoreOutputs::new(t.store.clone(), "/work/big");
        // Warm up: the pool's connections, the runtime's blocking thread.
        let (small, path) = spill(dir, b"warm\nup\n");
        outputs.save(&small, &path).await.unwrap();
        outputs.page(&small, 1, 10, 30_000).await.unwrap();

        for bytes in BIG_BYTES {
            let id = new_id();
            let path = dir.join(format!("{id}.txt"));
            let lines = write_big(&path, bytes);
            // Resets the peak resident memory to the current one.
            std::fs::write("/proc/self/clear_refs", "5").unwrap();
            let before = status_kb("VmRSS:");
            outputs.save(&id, &path).await.unwrap();
            let mut offset = 1;
            loop {
                let page = outputs.page(&id, offset, 2_000, 30_000).await.unwrap();
                assert_eq!(page.total_lines, lines);
                match page.next_offset {
                    Some(next) => offset = i64::try_from(next).unwrap(),
                    None => break,
                }
            }
            let growth = status_kb("VmHWM:").saturating_sub(before);
            let last = outputs.page(&id, -1, 1, 30_000).await.unwrap();
            assert_eq!(last, read_spilled_within(dir, &id, -1, 1, 30_000).unwrap());
            let chunks = sqlx::query("SELECT chunks FROM saved_outputs WHERE output_id = $1")
                .bind(&id)
                .fetch_one(t.store.pool())
                .await
                .unwrap()
                .try_get::<i64, _>(0)
                .unwrap();
            assert!(chunks >= (bytes / SAVED_CHUNK_BYTES) as i64, "{chunks}");
            println!("\n{GROWTH_MARKER}{bytes}:{growth}");
        }
    })
    .await
    .unwrap();
}

/// Outputs of 10 MiB and 40 MiB (lines of 300 KB among short ones) saved to
/// PostgreSQL in chunks and paged whole: the peak resident memory grows by less
/// than 8 MiB for either (measured in a child process, so that other tests do
/// not count).
#[cfg(target_os = "linux")]
#[test]
fn saved_10mb_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR_ENV, dir.path())
        .env(testing::TEST_DATABASE_URL_VAR, testing::postgres_url())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the child failed:\n{stdout}\n{stderr}"
    );
    let growth: Vec<(usize, u64)> = stdout
        .lines()
        .filter_map(|l| l.split_once(GROWTH_MARKER))
        .map(|(_, rest)| {
            let (bytes, kb) = rest.split_once(':').unwrap();
            (bytes.parse().unwrap(), kb.trim().parse().unwrap())
        })
        .collect();
    assert_eq!(
        growth.iter().map(|(b, _)| *b).collect::<Vec<_>>(),
        BIG_BYTES,
        "the child did not report its memory:\n{stdout}\n{stderr}"
    );
    for (bytes, kb) in growth {
        assert!(
            kb * 1024 < MAX_GROWTH_BYTES,
            "peak resident memory grew by {kb} kB saving and paging {bytes} bytes"
        );
    }
}
