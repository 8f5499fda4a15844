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
    #[error("cannot open the store at {location}: {detail}")]
    Open {
        /// The file or the database URL (without its password).
        location: String,
        /// What the driver said.
        detail: String,
    },
    /// The file is not a readable SQLite database, or fails its integrity check.
    #[error(
        "the store file {location} is corrupt ({detail}); it was left untouched: restore it from a backup, or move it away to start a new store"
    )]
    Corrupt {
        /// The file.
        location: String,
        /// What SQLite reported.
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
    #[error("store query failed: {0}")]
    Query(#[from] sqlx::Error),
    /// The pattern analysis stopped before its end (it runs on a blocking thread).
    #[error("the analysis failed: {0}")]
    Analysis(#[from] tokio::task::JoinError),
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
