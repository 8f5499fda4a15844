//! What the store survives: many writers at once, a writer killed mid-transaction,
//! and files it must refuse without touching them.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use sqlx::Row;
use toolbelt_store::{Backend, LATEST_VERSION, Location, Store, StoreError, testing};

const WRITERS: usize = 8;
const OPERATIONS: usize = 500;

/// One read-then-write transaction: counts the goals, then inserts one titled by
/// the writer, its step, and the count it saw.
async fn read_then_write(store: &Store, writer: usize, step: usize) -> Result<(), StoreError> {
    let mut tx = store.begin_write().await?;
    let sql = format!(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM goals WHERE stage = 'quarter'{}",
        ""
    );
    let seen: i64 = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
    sqlx::query(
        "INSERT INTO goals (title, stage, created_at, updated_at) VALUES ($1, 'quarter', $2, $2)",
    )
    .bind(format!("w{writer}-s{step}-seen{seen}"))
    .bind(toolbelt_store::now_ms())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

async fn count(store: &Store, sql: &'static str) -> i64 {
    sqlx::query(sql)
        .fetch_one(store.pool())
        .await
        .unwrap()
        .try_get(0)
        .unwrap()
}

/// Eight writers, each with its own connection pool (as eight processes would
/// have), 500 read-then-write transactions each: none fails, none is lost, and
/// each saw a distinct count (the transactions were serialised).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_500_transactions_each_no_busy_no_loss() {
    for t in testing::both().await.unwrap() {
        let mut handles = Vec::new();
        for w in 0..WRITERS {
            let location = t.location.clone();
            handles.push(tokio::spawn(async move {
                let store = Store::open(&location).await.unwrap();
                for s in 0..OPERATIONS {
                    read_then_write(&store, w, s)
                        .await
                        .unwrap_or_else(|e| panic!("writer {w} step {s}: {e}"));
                }
                store.close().await;
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        let total = count(&t.store, "SELECT CAST(COUNT(*) AS BIGINT) FROM goals").await;
        assert_eq!(total, (WRITERS * OPERATIONS) as i64, "{:?}", t.location);
        if t.store.backend() != Backend::Sqlite {
            continue;
        }
        // SQLite's write lock taken up front serialises the transactions: the
        // counts seen are exactly 0..4000, each once.
        let rows = sqlx::query("SELECT title FROM goals")
            .fetch_all(t.store.pool())
            .await
            .unwrap();
        let mut seen: Vec<i64> = rows
            .iter()
            .map(|r| {
                let title: String = r.try_get(0).unwrap();
                title.rsplit("seen").next().unwrap().parse().unwrap()
            })
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(
            seen.len(),
            WRITERS * OPERATIONS,
            "two transactions saw the same count"
        );
        assert_eq!(seen.first(), Some(&0));
        assert_eq!(seen.last(), Some(&((WRITERS * OPERATIONS) as i64 - 1)));
    }
}

/// The child side of `a_writer_killed_mid_transaction_loses_nothing_committed`:
/// commits goals in a loop and prints each id once its transaction committed.
#[tokio::test]
#[ignore = "run by its parent test as a child process"]
async fn writer_child() {
    let Ok(path) = std::env::var("TOOLBELT_STORE_WRITER_CHILD") else {
        return;
    };
    let store = Store::open(&Location::Sqlite(path.into())).await.unwrap();
    let mut stdout = std::io::stdout();
    for step in 0.. {
        let mut tx = store.begin_write().await.unwrap();
        let id: i64 = sqlx::query(
            "INSERT INTO goals (title, description, stage, created_at, updated_at) VALUES ($1, $2, 'life', $3, $3) RETURNING id",
        )
        .bind(format!("step {step}"))
        .bind("x".repeat(2000))
        .bind(toolbelt_store::now_ms())
        .fetch_one(&mut *tx)
        .await
        .unwrap()
        .try_get(0)
        .unwrap();
        // A second statement in the same transaction: both or neither survive.
        sqlx::query("INSERT INTO projects (name, status, created_at, updated_at) VALUES ($1, 'active', 0, 0)")
            .bind(format!("step {step}"))
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        use std::io::Write;
        writeln!(stdout, "{id}").unwrap();
        stdout.flush().unwrap();
    }
}

/// A writer process SIGKILLed at random moments, ten times over: the file stays
/// intact, every id the writer reported committed is there, and every transaction
/// is whole (each goal has its project).
#[tokio::test]
async fn a_writer_killed_mid_transaction_loses_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    Store::open(&Location::Sqlite(path.clone()))
        .await
        .unwrap()
        .close()
        .await;
    let exe = std::env::current_exe().unwrap();
    let mut committed: Vec<i64> = Vec::new();
    for round in 0..10u64 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "suite::reliability::writer_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TOOLBELT_STORE_WRITER_CHILD", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| l.trim().parse::<i64>().ok())
                .collect::<Vec<i64>>()
        });
        // Let it commit for a while, a different while each round.
        std::thread::sleep(Duration::from_millis(150 + round * 37));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let ids = reader.join().unwrap();
        assert!(
            !ids.is_empty(),
            "round {round}: the writer committed nothing"
        );
        committed.extend(ids);
    }
    // Opening runs SQLite's integrity check; it must pass.
    let store = Store::open(&Location::Sqlite(path.clone())).await.unwrap();
    let rows = sqlx::query("SELECT id FROM goals ORDER BY id")
        .fetch_all(store.pool())
        .await
        .unwrap();
    let present: Vec<i64> = rows.iter().map(|r| r.try_get(0).unwrap()).collect();
    for id in &committed {
        assert!(
            present.binary_search(id).is_ok(),
            "committed goal {id} was lost"
        );
    }
    let check: String = sqlx::query("PRAGMA integrity_check")
        .fetch_one(store.pool())
        .await
        .unwrap()
        .try_get(0)
        .unwrap();
    assert_eq!(check, "ok");
    let goals = count(&store, "SELECT CAST(COUNT(*) AS BIGINT) FROM goals").await;
    let projects = count(&store, "SELECT CAST(COUNT(*) AS BIGINT) FROM projects").await;
    assert_eq!(goals, projects, "a transaction survived in part");
    assert!(goals >= committed.len() as i64);
}

/// Each file of `dir` with a digest of its bytes.
fn snapshot(dir: &Path) -> Vec<(String, u64, u64)> {
    use std::hash::{Hash, Hasher};
    let mut files: Vec<(String, u64, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = std::fs::read(e.path()).unwrap();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut h);
            (
                e.file_name().to_string_lossy().into_owned(),
                bytes.len() as u64,
                h.finish(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Refused files are left byte for byte as they were, with no journal beside them.
async fn refused_untouched(dir: &Path, path: &Path) -> StoreError {
    let before = snapshot(dir);
    let err = Store::open(&Location::Sqlite(path.to_path_buf()))
        .await
        .expect_err("the store should refuse this file");
    assert_eq!(snapshot(dir), before, "the refused file was touched");
    err
}

#[tokio::test]
async fn a_corrupt_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolbelt.db");
    std::fs::write(
        &path,
        b"these bytes are not a SQLite database at all, just text\n".repeat(100),
    )
    .unwrap();
    let err = refused_untouched(dir.path(), &path).await;
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("is corrupt") && text.contains("left untouched"),
        "{text}"
    );

    // A real store with damaged pages: cut in the middle and overwritten.
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = store_file(dir.path(), 0).await;
    assert!(std::fs::metadata(&path).unwrap().len() > 16 * 4096);
    overwrite(&path, 8192..16384);
    let err = refused_untouched(dir.path(), &path).await;
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
}

/// A SQLite store file with 300 goals and `calls` logged calls, its WAL folded into
/// the file (so that damage hits real pages); returns the file and the root page of
/// every table.
async fn store_file(dir: &Path, calls: i64) -> (std::path::PathBuf, Vec<(String, i64)>) {
    let path = dir.join("toolbelt.db");
    let store = Store::open(&Location::Sqlite(path.clone())).await.unwrap();
    for i in 0..300 {
        sqlx::query("INSERT INTO goals (title, description, stage, created_at, updated_at) VALUES ($1, $2, 'life', 0, 0)")
            .bind(format!("goal {i}"))
            .bind("d".repeat(500))
            .execute(store.pool())
            .await
            .unwrap();
    }
    for i in 0..calls {
        sqlx::query("INSERT INTO calls (at_ms, tool, call_id, args, status, duration_ms, bytes_out, workspace) VALUES ($1, 'read_file', $2, '{}', 'ok', 1, 10, '/w')")
            .bind(i)
            .bind(format!("c{i}"))
            .execute(store.pool())
            .await
            .unwrap();
    }
    let roots = sqlx::query(
        "SELECT name, CAST(rootpage AS BIGINT) FROM sqlite_master WHERE type = 'table'",
    )
    .fetch_all(store.pool())
    .await
    .unwrap()
    .iter()
    .map(|row| (row.get(0), row.get(1)))
    .collect();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(store.pool())
        .await
        .unwrap();
    store.close().await;
    for extra in ["toolbelt.db-wal", "toolbelt.db-shm"] {
        let _ = std::fs::remove_file(dir.join(extra));
    }
    (path, roots)
}

/// Overwrites `bytes` of the file at `path`.
fn overwrite(path: &Path, bytes: std::ops::Range<usize>) {
    let mut content = std::fs::read(path).unwrap();
    for b in &mut content[bytes] {
        *b = 0xA5;
    }
    std::fs::write(path, &content).unwrap();
}

/// A store with 300 goals and 3,000 logged calls whose root page of `table` is
/// overwritten (its 8-byte header kept); returns the file.
async fn store_with_a_damaged_table(dir: &Path, table: &str) -> std::path::PathBuf {
    let (path, roots) = store_file(dir, 3000).await;
    let root = roots.iter().find(|(name, _)| name == table).unwrap().1;
    let page = usize::try_from(root - 1).unwrap() * 4096;
    overwrite(&path, page + 8..page + 4096);
    path
}

#[tokio::test]
async fn opening_checks_every_table_but_the_call_log() {
    // Damage in a planner table is refused at open, untouched.
    let dir = tempfile::tempdir().unwrap();
    let path = store_with_a_damaged_table(dir.path(), "goals").await;
    let err = refused_untouched(dir.path(), &path).await;
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");

    // The call log is not checked at open (it grows with every call, and checking
    // it would make every start slower): the store opens, and the damage is
    // reported when the log is read.
    let dir = tempfile::tempdir().unwrap();
    let path = store_with_a_damaged_table(dir.path(), "calls").await;
    let store = Store::open(&Location::Sqlite(path)).await.unwrap();
    let read = toolbelt_store::recent_calls(
        &store,
        &toolbelt_store::CallFilter {
            tail: 10,
            tool: None,
        },
    )
    .await;
    assert!(read.is_err(), "{read:?}");
    store.close().await;
}

#[tokio::test]
async fn a_newer_or_foreign_file_is_refused_and_left_untouched() {
    sqlx::any::install_default_drivers();
    // Newer: a toolbelt store whose schema version is ahead of this build.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolbelt.db");
    {
        use sqlx::{ConnectOptions, Connection};
        Store::open(&Location::Sqlite(path.clone()))
            .await
            .unwrap()
            .close()
            .await;
        let opts: sqlx::any::AnyConnectOptions = format!("sqlite://{}?mode=rw", path.display())
            .parse()
            .unwrap();
        let mut conn = opts.connect().await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "PRAGMA journal_mode = DELETE; PRAGMA user_version = {};",
            LATEST_VERSION + 5
        )))
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
    let err = refused_untouched(dir.path(), &path).await;
    match &err {
        StoreError::Newer {
            found, supported, ..
        } => {
            assert_eq!((*found, *supported), (LATEST_VERSION + 5, LATEST_VERSION));
        }
        other => panic!("expected Newer, got {other}"),
    }
    assert!(err.to_string().contains("upgrade toolbelt"), "{err}");

    // Foreign: another program's SQLite database.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolbelt.db");
    {
        use sqlx::{ConnectOptions, Connection};
        let opts: sqlx::any::AnyConnectOptions = format!("sqlite://{}?mode=rwc", path.display())
            .parse()
            .unwrap();
        let mut conn = opts.connect().await.unwrap();
        sqlx::query("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let err = refused_untouched(dir.path(), &path).await;
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    assert!(err.to_string().contains("invoices"), "{err}");
}

/// The same on PostgreSQL: a database whose schema is ahead is refused, and one
/// holding another program's tables of the same names is refused.
#[tokio::test]
async fn postgres_refuses_a_newer_schema_and_foreign_tables() {
    let t = testing::postgres().await.unwrap();
    sqlx::query("INSERT INTO toolbelt_schema (version, name, applied_at) VALUES (99, 'future', 0)")
        .execute(t.store.pool())
        .await
        .unwrap();
    let err = Store::open(&t.location).await.unwrap_err();
    assert!(matches!(err, StoreError::Newer { found: 99, .. }), "{err}");
    assert!(!err.to_string().contains("password"));
    sqlx::query("DELETE FROM toolbelt_schema WHERE version = 99")
        .execute(t.store.pool())
        .await
        .unwrap();
    sqlx::query("DROP TABLE toolbelt_schema")
        .execute(t.store.pool())
        .await
        .unwrap();
    let err = Store::open(&t.location).await.unwrap_err();
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
}
