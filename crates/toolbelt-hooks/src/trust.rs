//! Trust by hash: a command a workspace's own files make toolbelt run (its hooks,
//! its MCP servers) runs only once the person recorded the hash of its
//! definition and script in a file outside the workspace. A change of one byte
//! stops it again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The trust file's name, in the user's configuration directory.
pub const TRUST_FILE: &str = "trusted.json";

/// A problem with the trust file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// It cannot be read or written.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// `read` or `write`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It is not the JSON toolbelt writes.
    #[error("{} is not a trust file toolbelt wrote", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// One trusted definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trusted {
    /// The workspace it belongs to.
    pub workspace: String,
    /// What it is (`hook pre_tool_use 'no-touch'`, `MCP server files`).
    pub what: String,
    /// When it was trusted, in milliseconds since the epoch.
    pub at_ms: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    /// Trusted hashes.
    #[serde(default)]
    trusted: BTreeMap<String, Trusted>,
}

/// The trust file, re-read when it changes on disk (a `toolbelt hooks trust` in
/// another process is seen by a running server at its next check).
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    cache: Mutex<(Option<SystemTime>, TrustFile)>,
}

impl TrustStore {
    /// The trust file at `path` (read when first asked).
    pub fn new(path: impl Into<PathBuf>) -> TrustStore {
        TrustStore {
            path: path.into(),
            cache: Mutex::new((None, TrustFile::default())),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `hash` is trusted. A file that cannot be read trusts nothing.
    pub fn is_trusted(&self, hash: &str) -> bool {
        let mtime = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        let mut cache = toolbelt_core::sync::lock(&self.cache);
        if cache.0 != mtime || mtime.is_none() {
            cache.1 = self.read().unwrap_or_default();
            cache.0 = mtime;
        }
        cache.1.trusted.contains_key(hash)
    }

    /// Records `hash` as trusted.
    ///
    /// # Errors
    /// The file cannot be read or written.
    pub fn trust(&self, hash: &str, entry: Trusted) -> Result<(), TrustError> {
        let mut file = self.read()?;
        file.trusted.insert(hash.to_string(), entry);
        self.write(&file)
    }

    /// Forgets every hash of `workspace`; returns how many there were.
    ///
    /// # Errors
    /// The file cannot be read or written.
    pub fn forget_workspace(&self, workspace: &str) -> Result<usize, TrustError> {
        let mut file = self.read()?;
        let before = file.trusted.len();
        file.trusted.retain(|_, t| t.workspace != workspace);
        let gone = before - file.trusted.len();
        self.write(&file)?;
        Ok(gone)
    }

    fn read(&self) -> Result<TrustFile, TrustError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| TrustError::Format {
                path: self.path.clone(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
            Err(source) => Err(TrustError::Io {
                what: "read",
                path: self.path.clone(),
                source,
            }),
        }
    }

    fn write(&self, file: &TrustFile) -> Result<(), TrustError> {
        let io = |source| TrustError::Io {
            what: "write",
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_vec_pretty(file).unwrap_or_default();
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)
    }
}

/// The hash of a definition in `workspace`: the workspace, what it is, its
/// definition as JSON and the bytes of the script it runs (when it runs one
/// that exists).
pub fn definition_hash(
    workspace: &str,
    what: &str,
    definition: &str,
    script: Option<&Path>,
) -> String {
    let mut h = Sha256::new();
    for part in [workspace, what, definition] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    match script.map(std::fs::read) {
        Some(Ok(bytes)) => {
            h.update(b"script");
            h.update(&bytes);
        }
        Some(Err(_)) => h.update(b"script missing"),
        None => h.update(b"no script"),
    }
    let digest = h.finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
