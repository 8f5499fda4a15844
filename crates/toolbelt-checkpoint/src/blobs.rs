//! The content kept for checkpoints: each distinct content once, named by its
//! SHA-256, compressed, in `<state>/checkpoints/objects/` (outside the workspace).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use sha2::{Digest, Sha256};

use crate::error::CheckpointError;

/// The SHA-256 of `bytes`, as 64 lowercase hex digits.
pub fn hash_bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The content store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The store in `dir` (made on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Blobs {
        Blobs { dir: dir.into() }
    }

    /// Where the store is.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, hash: &str) -> PathBuf {
        let (head, tail) = hash.split_at(2.min(hash.len()));
        self.dir.join(head).join(tail)
    }

    /// Whether `hash` is kept.
    pub fn contains(&self, hash: &str) -> bool {
        self.path_of(hash).is_file()
    }

    /// Keeps `bytes` (known to hash to `hash`); returns the bytes written on disk
    /// (0 when the content was already kept).
    ///
    /// # Errors
    /// The content cannot be written (no space, say); nothing partial is left.
    pub fn put(&self, hash: &str, bytes: &[u8]) -> Result<u64, CheckpointError> {
        let path = self.path_of(hash);
        if path.is_file() {
            return Ok(0);
        }
        let parent = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(parent).map_err(|e| CheckpointError::io("make", parent, e))?;
        let mut tmp =
            tempfile_in(parent).map_err(|e| CheckpointError::io("write in", parent, e))?;
        let write = || -> io::Result<u64> {
            let mut enc = DeflateEncoder::new(tmp.1.try_clone()?, Compression::fast());
            enc.write_all(bytes)?;
            let file = enc.finish()?;
            let len = file.metadata()?.len();
            Ok(len)
        };
        let written = match write() {
            Ok(n) => n,
            Err(e) => {
                let _ = fs::remove_file(&tmp.0);
                return Err(CheckpointError::io("write", &path, e));
            }
        };
        if let Err(e) = fs::rename(&tmp.0, &path) {
            let _ = fs::remove_file(&tmp.0);
            return Err(CheckpointError::io("write", &path, e));
        }
        tmp.0 = PathBuf::new();
        Ok(written)
    }

    /// The content named `hash`, checked against it.
    ///
    /// # Errors
    /// It is not kept, cannot be read, or does not match its hash.
    pub fn get(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.path_of(hash);
        let file = fs::File::open(&path).map_err(|e| CheckpointError::io("read", &path, e))?;
        let mut out = Vec::new();
        DeflateDecoder::new(file)
            .read_to_end(&mut out)
            .map_err(|e| CheckpointError::io("read", &path, e))?;
        if hash_bytes(&out) != hash {
            return Err(CheckpointError::Damaged { path });
        }
        Ok(out)
    }

    /// Every kept hash with its size on disk.
    pub fn list(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let Ok(heads) = fs::read_dir(&self.dir) else {
            return out;
        };
        for head in heads.flatten() {
            let Ok(tails) = fs::read_dir(head.path()) else {
                continue;
            };
            let head_name = head.file_name().to_string_lossy().into_owned();
            for tail in tails.flatten() {
                let name = tail.file_name().to_string_lossy().into_owned();
                if name.starts_with(".tmp") {
                    continue;
                }
                let size = tail.metadata().map(|m| m.len()).unwrap_or(0);
                out.push((format!("{head_name}{name}"), size));
            }
        }
        out
    }

    /// Removes the content named `hash`; returns the bytes freed.
    pub fn remove(&self, hash: &str) -> u64 {
        let path = self.path_of(hash);
        let size = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        match fs::remove_file(&path) {
            Ok(()) => size,
            Err(_) => 0,
        }
    }
}

/// A new temporary file in `dir`: its path (emptied once renamed away) and the
/// file. Dropped with its path set, it is removed.
fn tempfile_in(dir: &Path) -> io::Result<TempFile> {
    for _ in 0..8 {
        let path = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => return Ok(TempFile(path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free temporary name"))
}

struct TempFile(PathBuf, fs::File);

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.0);
        }
    }
}
