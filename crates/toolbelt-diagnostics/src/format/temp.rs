//! The temporary file a formatter rewrites: beside the real file, named
//! `.<stem>.fmt-<random>.<ext>`, mode 0600, removed when dropped.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Names tried before giving up on a directory full of our names.
const ATTEMPTS: usize = 8;

/// Told apart the names made in one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A failure, with the temporary file's path.
type TempError = (PathBuf, io::Error);

/// A temporary copy of a staged text, removed when dropped.
#[derive(Debug)]
pub(super) struct TempFile {
    path: PathBuf,
}

impl TempFile {
    /// Creates `.<stem>.fmt-<random>.<ext>` (for `file`'s stem and extension) in
    /// `dir` holding `text`.
    pub(super) async fn create(dir: &Path, file: &Path, text: &str) -> Result<TempFile, TempError> {
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let path = dir.join(name(file));
            let mut options = tokio::fs::OpenOptions::new();
            options.write(true).create_new(true).mode(0o600);
            match options.open(&path).await {
                Ok(mut handle) => {
                    // From here on, dropping it removes it.
                    let temp = TempFile { path };
                    let written = async {
                        handle.write_all(text.as_bytes()).await?;
                        handle.flush().await
                    };
                    return match written.await {
                        Ok(()) => Ok(temp),
                        Err(e) => Err((temp.path.clone(), e)),
                    };
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some((path, e)),
                Err(e) => return Err((path, e)),
            }
        }
        Err(last.unwrap_or_else(|| (dir.to_path_buf(), io::Error::other("no name was free"))))
    }

    /// Its path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Its content, when at most `max_bytes` (`None`: more).
    pub(super) async fn read(&self, max_bytes: usize) -> Result<Option<Vec<u8>>, TempError> {
        let failed = |e| (self.path.clone(), e);
        let handle = tokio::fs::File::open(&self.path).await.map_err(failed)?;
        let mut bytes = Vec::new();
        let limit = u64::try_from(max_bytes)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        handle
            .take(limit)
            .read_to_end(&mut bytes)
            .await
            .map_err(failed)?;
        Ok((bytes.len() <= max_bytes).then_some(bytes))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.path.display(), error = %e, "a formatter's temporary file could not be removed");
        }
    }
}

/// `.<stem>.fmt-<random>.<ext>`, or `.<name>.fmt-<random>` for a file without
/// an extension.
fn name(file: &Path) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let random = random_hex();
    match file.extension() {
        Some(ext) => format!(".{stem}.fmt-{random}.{}", ext.to_string_lossy()),
        None => format!(".{stem}.fmt-{random}"),
    }
}

/// 12 hex digits that differ from call to call and process to process.
fn random_hex() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.write_u128(nanos);
    format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_the_extension() {
        let n = name(Path::new("/w/src/main.py"));
        assert!(n.starts_with(".main.fmt-") && n.ends_with(".py"), "{n}");
        assert_eq!(n.len(), ".main.fmt-".len() + 12 + ".py".len());
        let n = name(Path::new("/w/Makefile"));
        assert!(n.starts_with(".Makefile.fmt-"), "{n}");
        assert_ne!(name(Path::new("a.py")), name(Path::new("a.py")));
    }

    #[tokio::test]
    async fn the_file_is_removed_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let temp = TempFile::create(dir.path(), &dir.path().join("a.rs"), "fn main() {}\n")
            .await
            .unwrap();
        let path = temp.path().to_path_buf();
        assert_eq!(temp.read(100).await.unwrap().unwrap(), b"fn main() {}\n");
        assert_eq!(temp.read(5).await.unwrap(), None);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        drop(temp);
        assert!(!path.exists());
    }
}
