//! [`StoreError`]: everything the store can refuse or fail with.

/// What went wrong in the store.
///
/// Variants of a bad request ([`StoreError::NotFound`], [`StoreError::Invalid`],
/// [`StoreError::Conflict`]) carry a message written for the model; the others are
/// faults of the database itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database cannot be reached or opened.
    #[error("cannot open the store at {location}")]
    Open {
        /// The file or the database URL (without its password).
        location: String,
        /// Why: the driver's or the file system's error, or a sentence.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The file is not a readable SQLite database, or fails its integrity check.
    #[error(
        "the store file {location} is corrupt ({detail}); it was left untouched: restore it from a backup, or move it away to start a new store"
    )]
    Corrupt {
        /// The file.
        location: String,
        /// What SQLite reported. Text, not a source: the message says it inside
        /// the sentence, in parentheses, before what to do.
        detail: String,
    },
    /// The database belongs to another program.
    #[error(
        "{location} is not a toolbelt store ({detail}); it was left untouched: point the store at another file or database"
    )]
    Foreign {
        /// The file or the database URL.
        location: String,
        /// How it was recognised.
        detail: String,
    },
    /// The database was written by a newer toolbelt.
    #[error(
        "the store at {location} has schema version {found}, newer than the {supported} this toolbelt knows; it was left untouched: upgrade toolbelt, or point the store elsewhere"
    )]
    Newer {
        /// The file or the database URL.
        location: String,
        /// The schema version found.
        found: i64,
        /// The newest schema version this build knows.
        supported: i64,
    },
    /// A record the request names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request is not valid (a bad date, an empty name...).
    #[error("{0}")]
    Invalid(String),
    /// The request conflicts with the stored state (a project that still has tasks...).
    #[error("{0}")]
    Conflict(String),
    /// A fault inside the store's own code.
    #[error("{0}")]
    Internal(String),
    /// A query failed.
    #[error("store query failed")]
    Query(#[source] DbError),
    /// The call journal's directory or file cannot be used.
    #[error("cannot use the call journal {}", path.display())]
    Journal {
        /// The directory or the file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The pattern analysis stopped before its end (it runs on a blocking thread).
    #[error("the analysis failed")]
    Analysis(#[from] tokio::task::JoinError),
}

/// The database driver's error, as the driver words it.
///
/// sqlx already writes its error's cause into its message, so this is the last
/// link of a chain: its [`source`](std::error::Error::source) is `None`, and
/// the cause is said once.
#[derive(Debug)]
pub struct DbError(pub sqlx::Error);

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DbError {}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        StoreError::Query(DbError(e))
    }
}

impl StoreError {
    /// A [`StoreError::NotFound`] with `message`.
    pub fn not_found(message: impl Into<String>) -> StoreError {
        StoreError::NotFound(message.into())
    }

    /// A [`StoreError::Invalid`] with `message`.
    pub fn invalid(message: impl Into<String>) -> StoreError {
        StoreError::Invalid(message.into())
    }

    /// A [`StoreError::Conflict`] with `message`.
    pub fn conflict(message: impl Into<String>) -> StoreError {
        StoreError::Conflict(message.into())
    }
}

/// Results of the store.
pub type StoreResult<T> = Result<T, StoreError>;
