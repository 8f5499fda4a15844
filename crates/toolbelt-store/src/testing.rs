//! Stores for tests: a fresh SQLite file, or a fresh database on the PostgreSQL
//! server that `TOOLBELT_TEST_DATABASE_URL` points at (`.ci/postgres start` gives
//! one). Not part of the stable API.

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

/// The URL of the tests' PostgreSQL server.
///
/// # Panics
/// When `TOOLBELT_TEST_DATABASE_URL` is unset: the PostgreSQL half of the suite
/// must not pass by not running. Start one with `.ci/postgres start DIR`.
#[allow(clippy::panic)]
pub fn postgres_url() -> String {
    match std::env::var(TEST_DATABASE_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!(
            "{TEST_DATABASE_URL_VAR} is not set: the store tests run on PostgreSQL too; start a server with `export {TEST_DATABASE_URL_VAR}=$(.ci/postgres start /tmp/toolbelt-pg)`"
        ),
    }
}

/// A new, empty SQLite store in a temporary directory.
///
/// # Errors
/// The store cannot be opened.
pub async fn sqlite() -> StoreResult<TestStore> {
    let dir = tempfile::tempdir().map_err(|e| crate::StoreError::Open {
        location: "a temporary directory".into(),
        detail: e.to_string(),
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
