//! The token file: the generated bearer token kept in the state directory.

use std::io;
use std::path::{Path, PathBuf};

use super::{TOKEN_BYTES, TOKEN_FILE_NAME};

/// The token in `<state_dir>/serve-token`, created on first use: [`TOKEN_BYTES`]
/// random bytes as hex, in a file only the owner can read (mode 0600).
///
/// # Errors
/// When the directory or the file cannot be created or read, the system has no
/// randomness source, or the file holds no token.
pub fn load_or_create_token(state_dir: &Path) -> io::Result<String> {
    let path = state_dir.join(TOKEN_FILE_NAME);
    match read_token(&path) {
        Ok(token) => return Ok(token),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(state_dir)?;
    let token = crate::random_hex(TOKEN_BYTES).map_err(|e| io::Error::other(NoRandomness(e)))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(&path) {
        Ok(mut file) => {
            io::Write::write_all(&mut file, format!("{token}\n").as_bytes())?;
            file.sync_all()?;
            Ok(token)
        }
        // Another process created it first: use that one.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_token(&path),
        Err(e) => Err(e),
    }
}

/// The system has no randomness source for a new token (the cause of an
/// `io::Error` of [`load_or_create_token`]).
#[derive(Debug, thiserror::Error)]
#[error("no randomness for the token")]
struct NoRandomness(#[source] getrandom::Error);

/// The token in the file at `path`; a file open to others is made private first.
fn read_token(path: &PathBuf) -> io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    let token = text.trim();
    if token.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is empty; delete it to get a new token", path.display()),
        ));
    }
    Ok(token.to_string())
}
