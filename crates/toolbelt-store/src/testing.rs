//! Stores for tests: a fresh SQLite file, or a fresh database on the PostgreSQL
//! server that `TOOLBELT_TEST_DATABASE_URL` points at — or, when it is unset, on a
//! throwaway server started for this test process (`.ci/postgres`, which installs
//! Debian's postgresql when missing) and stopped after it exits. Not part of the
//! stable API.

use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::{AnyConnection, ConnectOptions, Connection, Executor};

use crate::{Location, Store, StoreResult};

/// The environment variable naming the PostgreSQL server of the tests.
pub const TEST_DATABASE_URL_VAR: &str = "TOOLBELT_TEST_DATABASE_URL";

/// A store made for one test; its files or database go with it.
#[derive(Debug)]
pub struct TestStore {
    /// The store.
    pub store: Store,
    /// Where it lives (open it again to test a restart).
    pub location: Location,
    _dir: Option<tempfile::TempDir>,
}

/// Why no throwaway PostgreSQL server could be started.
#[derive(Debug, thiserror::Error)]
enum ServerError {
    #[error("cannot run {}", script.display())]
    Run {
        script: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} start failed ({status})", script.display())]
    Failed { script: PathBuf, status: ExitStatus },
    #[error("{} start printed {url:?}", script.display())]
    Printed { script: PathBuf, url: String },
    #[error("cannot start the server's watcher")]
    Watcher(#[from] std::io::Error),
}

/// The URL of the tests' PostgreSQL server: `TOOLBELT_TEST_DATABASE_URL`, else a
/// server started once for this process.
///
/// # Panics
/// When no server can be had: the PostgreSQL half of the suite must not pass by
/// not running.
#[allow(clippy::panic)]
pub fn postgres_url() -> String {
    static STARTED: OnceLock<Result<String, ServerError>> = OnceLock::new();
    if let Ok(url) = std::env::var(TEST_DATABASE_URL_VAR)
        && !url.trim().is_empty()
    {
        return url;
    }
    match STARTED.get_or_init(start_server) {
        Ok(url) => url.clone(),
        Err(e) => panic!(
            "no PostgreSQL server for the store tests: {}; set {TEST_DATABASE_URL_VAR} to one (`.ci/postgres start DIR` prints a URL)",
            toolbelt_core::error_chain(e)
        ),
    }
}

/// Starts a throwaway server with the repository's `.ci/postgres`, and a watcher
/// that stops it (and removes its files) once this process has exited.
fn start_server() -> Result<String, ServerError> {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = repo.join(".ci/postgres");
    let dir = std::env::temp_dir().join(format!("toolbelt-test-pg-{}", std::process::id()));
    let out = Command::new(&script)
        .arg("start")
        .arg(&dir)
        .current_dir(&repo)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| ServerError::Run {
            script: script.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(ServerError::Failed {
            script,
            status: out.status,
        });
    }
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !url.starts_with("postgres://") {
        return Err(ServerError::Printed { script, url });
    }
    let watcher = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; exec \"$0\" stop \"$1\"",
        pid = std::process::id()
    );
    Command::new("sh")
        .arg("-c")
        .arg(watcher)
        .arg(&script)
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(url)
}

/// A new, empty SQLite store in a temporary directory.
///
/// # Errors
/// The store cannot be opened.
pub async fn sqlite() -> StoreResult<TestStore> {
    let dir = tempfile::tempdir().map_err(|e| crate::StoreError::Open {
        location: "a temporary directory".into(),
        source: Box::new(e),
    })?;
    let location = Location::in_state_dir(dir.path());
    let store = Store::open(&location).await?;
    Ok(TestStore {
        store,
        location,
        _dir: Some(dir),
    })
}

/// A new, empty database on the tests' PostgreSQL server.
///
/// # Errors
/// The server cannot be reached or the database cannot be created.
pub async fn postgres() -> StoreResult<TestStore> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    sqlx::any::install_default_drivers();
    let admin = postgres_url();
    let name = format!(
        "t_{}_{}_{}",
        std::process::id(),
        crate::now_ms(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let opts: sqlx::any::AnyConnectOptions = admin.parse()?;
    let mut conn: AnyConnection = opts.disable_statement_logging().connect().await?;
    conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await?;
    let _ = conn.close().await;
    let url = match admin.rsplit_once('/') {
        Some((base, db)) if !db.contains('@') => {
            let query = db
                .split_once('?')
                .map(|(_, q)| format!("?{q}"))
                .unwrap_or_default();
            format!("{base}/{name}{query}")
        }
        _ => format!("{admin}/{name}"),
    };
    let location = Location::Postgres(url);
    let store = Store::open(&location).await?;
    Ok(TestStore {
        store,
        location,
        _dir: None,
    })
}

/// Both backends, for a test that runs on each.
///
/// # Errors
/// Either store cannot be opened.
pub async fn both() -> StoreResult<Vec<TestStore>> {
    Ok(vec![sqlite().await?, postgres().await?])
}
