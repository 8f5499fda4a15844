//! [`Store`]: one connection pool over SQLite or PostgreSQL, opened with its checks
//! and migrations.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyPool, ConnectOptions, Connection, Executor, Row, Transaction};

use crate::error::{DbError, StoreError, StoreResult};
use crate::schema::{LATEST_VERSION, SQLITE_APPLICATION_ID, migrations};

/// How long a SQLite connection waits for another writer before giving up.
pub const SQLITE_BUSY_TIMEOUT_MS: u64 = 60_000;
/// SQLite files up to this size get a `quick_check` of their schema and of every
/// table but the call log when opened.
pub const QUICK_CHECK_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// The name of the SQLite file in the state directory.
pub const DEFAULT_FILE_NAME: &str = "toolbelt.db";
/// An advisory lock key that serialises migrations of PostgreSQL instances ("TBLT").
const PG_MIGRATION_LOCK: i64 = 0x5442_4C54;

/// Where the store lives.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file, created on first use.
    Sqlite(PathBuf),
    /// A PostgreSQL database (`postgres://...`).
    Postgres(String),
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Location {
    /// The store of a state directory: `<state>/toolbelt.db`.
    pub fn in_state_dir(state_dir: &Path) -> Location {
        Location::Sqlite(state_dir.join(DEFAULT_FILE_NAME))
    }

    /// A location from a URL: `postgres://` / `postgresql://` for PostgreSQL,
    /// `sqlite://<path>` or a plain path for SQLite.
    ///
    /// # Errors
    /// Another URL scheme.
    pub fn parse(url: &str) -> StoreResult<Location> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Location::Postgres(url.to_string()));
        }
        if let Some(path) = url.strip_prefix("sqlite://") {
            let path = path.split('?').next().unwrap_or(path);
            if path.is_empty() {
                return Err(StoreError::invalid("a sqlite:// URL needs a file path"));
            }
            return Ok(Location::Sqlite(PathBuf::from(path)));
        }
        if url.contains("://") {
            return Err(StoreError::invalid(format!(
                "unsupported database URL {:?}: use postgres://user:password@host/database or a SQLite file path",
                redact_url(url)
            )));
        }
        if url.is_empty() {
            return Err(StoreError::invalid("the database URL is empty"));
        }
        Ok(Location::Sqlite(PathBuf::from(url)))
    }

    /// The location for messages, without a password.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(url) => redact_url(url),
        }
    }
}

/// `postgres://user:secret@host/db` -> `postgres://user:***@host/db`.
fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or("");
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}{tail}")
            } else {
                format!("{scheme}://{user}@{host}{tail}")
            }
        }
        None => url.to_string(),
    }
}

/// Which database a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite, one file.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// The store: todos, the planner, the call log. Cheap to clone (one pool).
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    location: Location,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the store at `location`: creates a missing SQLite file (and its
    /// directory), refuses a corrupt, foreign or newer database without writing to
    /// it, and migrates an older one.
    ///
    /// # Errors
    /// [`StoreError::Open`], [`StoreError::Corrupt`], [`StoreError::Foreign`],
    /// [`StoreError::Newer`], or a failed migration.
    pub async fn open(location: &Location) -> StoreResult<Store> {
        sqlx::any::install_default_drivers();
        match location {
            Location::Sqlite(path) => open_sqlite(path, location).await,
            Location::Postgres(url) => open_postgres(url, location).await,
        }
    }

    /// The database this store runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Where the store lives.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The pool, for reads.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Starts a write transaction. On SQLite it takes the write lock up front
    /// (`BEGIN IMMEDIATE`, waiting up to [`SQLITE_BUSY_TIMEOUT_MS`] for other
    /// writers), so a read followed by a write inside it never fails with
    /// `SQLITE_BUSY`. On PostgreSQL, read rows that the write depends on with
    /// [`Store::for_update`].
    ///
    /// # Errors
    /// The database cannot start a transaction.
    pub async fn begin_write(&self) -> StoreResult<Transaction<'static, Any>> {
        let tx = match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool.begin().await?,
        };
        Ok(tx)
    }

    /// `" FOR UPDATE"` on PostgreSQL (row locks for read-then-write), nothing on
    /// SQLite (whose write transactions lock the whole file).
    pub fn for_update(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE",
        }
    }

    /// The schema version of the open database.
    ///
    /// # Errors
    /// The query fails.
    pub async fn schema_version(&self) -> StoreResult<i64> {
        match self.backend {
            Backend::Sqlite => {
                let row = sqlx::query("PRAGMA user_version")
                    .fetch_one(&self.pool)
                    .await?;
                Ok(row.try_get::<i64, _>(0)?)
            }
            Backend::Postgres => {
                let row = sqlx::query("SELECT MAX(version) FROM toolbelt_schema")
                    .fetch_one(&self.pool)
                    .await?;
                Ok(row.try_get::<Option<i64>, _>(0)?.unwrap_or(0))
            }
        }
    }

    /// Asks the database for the smallest answer (`SELECT 1`): whether it can be
    /// reached now. Callers bound the wait (a pool waits for a free connection).
    ///
    /// # Errors
    /// The database cannot be reached or does not answer.
    pub async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes the pool, waiting for connections in use.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

fn open_error(
    location: &Location,
    e: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
) -> StoreError {
    StoreError::Open {
        location: location.describe(),
        source: e.into(),
    }
}

/// Tells a corrupt file from other failures: SQLite says "not a database" or "malformed".
fn sqlite_error(location: &Location, e: sqlx::Error) -> StoreError {
    let text = e.to_string();
    if text.contains("not a database")
        || text.contains("malformed")
        || text.contains("corrupt")
        || text.contains("disk image")
    {
        StoreError::Corrupt {
            location: location.describe(),
            detail: text,
        }
    } else {
        open_error(location, DbError(e))
    }
}

fn sqlite_url(path: &Path, mode: &str) -> String {
    // Percent-encode what a URL would misread in a path.
    let mut encoded = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => encoded.push_str("%25"),
            '?' => encoded.push_str("%3F"),
            '#' => encoded.push_str("%23"),
            ' ' => encoded.push_str("%20"),
            c => encoded.push(c),
        }
    }
    format!("sqlite://{encoded}?mode={mode}")
}

/// What a SQLite file holds, read without writing to it.
struct SqliteHeader {
    application_id: i64,
    user_version: i64,
    foreign_tables: Vec<String>,
}

async fn inspect_sqlite(path: &Path, location: &Location) -> StoreResult<SqliteHeader> {
    // Without a write-ahead log beside it, the file alone is the database: read it
    // as immutable, which takes no lock and creates no -shm or -wal file next to a
    // file that may be refused. With a log, committed pages may live in it, so the
    // file is opened normally (read-only).
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let has_wal = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    let url = if has_wal {
        sqlite_url(path, "ro")
    } else {
        format!("{}&immutable=1", sqlite_url(path, "ro"))
    };
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let (header, problems) = read_header(&url, size <= QUICK_CHECK_MAX_BYTES)
        .await
        .map_err(|e| sqlite_error(location, e))?;
    if !problems.is_empty() {
        return Err(StoreError::Corrupt {
            location: location.describe(),
            detail: format!("integrity check: {}", problems.join("; ")),
        });
    }
    Ok(header)
}

/// The header of the SQLite file `url` opens, and up to three problems its
/// integrity check found (checked only when `check`).
async fn read_header(url: &str, check: bool) -> Result<(SqliteHeader, Vec<String>), sqlx::Error> {
    let mut conn = AnyConnectOptions::from_str(url)?
        .disable_statement_logging()
        .connect()
        .await?;
    let application_id: i64 = sqlx::query("PRAGMA application_id")
        .fetch_one(&mut conn)
        .await?
        .try_get(0)?;
    let user_version: i64 = sqlx::query("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await?
        .try_get(0)?;
    let tables = sqlx::query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .fetch_all(&mut conn)
    .await?;
    let mut foreign_tables = Vec::new();
    let mut checked = vec!["sqlite_master".to_string()];
    for row in tables {
        let name: String = row.try_get(0)?;
        if !KNOWN_TABLES.contains(&name.as_str()) {
            foreign_tables.push(name);
        } else if !UNCHECKED_TABLES.contains(&name.as_str()) {
            checked.push(name);
        }
    }
    let mut problems = Vec::new();
    if check {
        for table in &checked {
            // The names are toolbelt's own (KNOWN_TABLES): nothing to quote.
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA quick_check({table})")))
                .fetch_all(&mut conn)
                .await?;
            for row in rows {
                let line: String = row.try_get(0)?;
                if line != "ok" {
                    problems.push(line);
                }
            }
        }
        problems.truncate(3);
    }
    let _ = conn.close().await;
    let header = SqliteHeader {
        application_id,
        user_version,
        foreign_tables,
    };
    Ok((header, problems))
}

/// Tables not checked when the store is opened: the call log, the cron claims and
/// the files of checkpoints, which grow with every call, firing or file changed
/// and would make each start slower (a 9 MB log took 16 ms to check, the rest
/// of the store under 1 ms). A damaged page in it is found when it is read or
/// written.
const UNCHECKED_TABLES: &[&str] = &["calls", "cron_firings", "checkpoint_files"];

/// The tables of every schema version, to recognise a store created by an older build.
const KNOWN_TABLES: &[&str] = &[
    "todo_lists",
    "todos",
    "goals",
    "projects",
    "project_goals",
    "tasks",
    "reviews",
    "review_tags",
    "review_projects",
    "calls",
    "cron_jobs",
    "cron_firings",
    "outbox",
    "subagent_tasks",
    "checkpoints",
    "checkpoint_files",
];

async fn open_sqlite(path: &Path, location: &Location) -> StoreResult<Store> {
    let exists = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(open_error(location, "it is a directory, not a file"));
        }
        Ok(m) => m.len() > 0,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(open_error(location, e)),
    };
    if exists {
        let header = inspect_sqlite(path, location).await?;
        if header.application_id != 0 && header.application_id != SQLITE_APPLICATION_ID {
            return Err(StoreError::Foreign {
                location: location.describe(),
                detail: format!(
                    "its application id is {:#x}, a toolbelt store's is {SQLITE_APPLICATION_ID:#x}",
                    header.application_id
                ),
            });
        }
        if header.application_id == 0 && !header.foreign_tables.is_empty() {
            let mut names = header.foreign_tables.clone();
            names.truncate(5);
            return Err(StoreError::Foreign {
                location: location.describe(),
                detail: format!("it holds other tables: {}", names.join(", ")),
            });
        }
        if header.user_version > LATEST_VERSION {
            return Err(StoreError::Newer {
                location: location.describe(),
                found: header.user_version,
                supported: LATEST_VERSION,
            });
        }
    } else if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir).map_err(|e| open_error(location, e))?;
    }

    let pool = connect_sqlite(&sqlite_url(path, "rwc"))
        .await
        .map_err(|e| sqlite_error(location, e))?;
    let store = Store {
        pool,
        backend: Backend::Sqlite,
        location: location.clone(),
    };
    migrate_sqlite(&store).await?;
    Ok(store)
}

/// The pool of read-write connections to the SQLite file `url` names, each set up
/// with [`SQLITE_PRAGMAS`].
async fn connect_sqlite(url: &str) -> Result<AnyPool, sqlx::Error> {
    let opts = AnyConnectOptions::from_str(url)?.disable_statement_logging();
    AnyPoolOptions::new()
        .max_connections(8)
        .min_connections(0)
        .acquire_timeout(Duration::from_millis(SQLITE_BUSY_TIMEOUT_MS))
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                conn.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(SQLITE_PRAGMAS.as_str())))
                    .await?;
                Ok(())
            })
        })
        .connect_with(opts)
        .await
}

/// Set on every SQLite connection: WAL, the busy timeout, foreign keys, and
/// `synchronous = NORMAL` (durable across a crash of the process; WAL keeps the
/// file consistent across a power loss).
static SQLITE_PRAGMAS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}; PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;"
    )
});

async fn migrate_sqlite(store: &Store) -> StoreResult<()> {
    let location = &store.location;
    let mut tx = store
        .begin_write()
        .await
        .map_err(|e| open_error(location, e))?;
    let version: i64 = sqlx::query("PRAGMA user_version")
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
    if version > LATEST_VERSION {
        return Err(StoreError::Newer {
            location: location.describe(),
            found: version,
            supported: LATEST_VERSION,
        });
    }
    for (m, sql, _) in migrations() {
        if m.version <= version {
            continue;
        }
        tracing::info!(version = m.version, name = m.name, "migrating the store");
        tx.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(sql))).await?;
        tx.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "PRAGMA user_version = {}; PRAGMA application_id = {SQLITE_APPLICATION_ID};",
            m.version
        ))))
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

async fn open_postgres(url: &str, location: &Location) -> StoreResult<Store> {
    let connect = async {
        let opts = AnyConnectOptions::from_str(url)?.disable_statement_logging();
        AnyPoolOptions::new()
            .max_connections(16)
            .min_connections(0)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(opts)
            .await
    };
    let pool = connect.await.map_err(|e| open_error(location, e))?;
    let store = Store {
        pool,
        backend: Backend::Postgres,
        location: location.clone(),
    };
    migrate_postgres(&store).await?;
    Ok(store)
}

async fn migrate_postgres(store: &Store) -> StoreResult<()> {
    let location = &store.location;
    let mut tx = store.pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(PG_MIGRATION_LOCK)
        .execute(&mut *tx)
        .await?;
    let has_schema: bool = sqlx::query(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'toolbelt_schema'",
    )
    .fetch_one(&mut *tx)
    .await?
    .try_get::<i64, _>(0)?
        > 0;
    let version = if has_schema {
        sqlx::query("SELECT MAX(version) FROM toolbelt_schema")
            .fetch_one(&mut *tx)
            .await?
            .try_get::<Option<i64>, _>(0)?
            .unwrap_or(0)
    } else {
        let clash = sqlx::query(
            sqlx::AssertSqlSafe(format!(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ({}) ORDER BY 1",
                KNOWN_TABLES
                    .iter()
                    .map(|t| format!("'{t}'"))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        )
        .fetch_all(&mut *tx)
        .await?;
        if !clash.is_empty() {
            let names: Vec<String> = clash
                .iter()
                .filter_map(|r| r.try_get::<String, _>(0).ok())
                .collect();
            return Err(StoreError::Foreign {
                location: location.describe(),
                detail: format!(
                    "it has tables named like toolbelt's ({}) but no toolbelt_schema table",
                    names.join(", ")
                ),
            });
        }
        tx.execute("CREATE TABLE toolbelt_schema (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)")
            .await?;
        0
    };
    if version > LATEST_VERSION {
        return Err(StoreError::Newer {
            location: location.describe(),
            found: version,
            supported: LATEST_VERSION,
        });
    }
    for (m, _, sql) in migrations() {
        if m.version <= version {
            continue;
        }
        tracing::info!(version = m.version, name = m.name, "migrating the store");
        tx.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(sql))).await?;
        sqlx::query("INSERT INTO toolbelt_schema (version, name, applied_at) VALUES ($1, $2, $3)")
            .bind(m.version)
            .bind(m.name)
            .bind(crate::now_ms())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_and_passwords_hidden() {
        assert_eq!(
            Location::parse("postgres://u:pw@h:5432/db").ok(),
            Some(Location::Postgres("postgres://u:pw@h:5432/db".into()))
        );
        assert_eq!(
            Location::parse("postgres://u:pw@h:5432/db")
                .map(|l| l.describe())
                .ok(),
            Some("postgres://u:***@h:5432/db".into())
        );
        assert_eq!(
            Location::parse("sqlite:///tmp/x.db").ok(),
            Some(Location::Sqlite("/tmp/x.db".into()))
        );
        assert_eq!(
            Location::parse("/tmp/y.db").ok(),
            Some(Location::Sqlite("/tmp/y.db".into()))
        );
        assert!(Location::parse("mysql://h/db").is_err());
        assert!(Location::parse("  ").is_err());
    }
}
