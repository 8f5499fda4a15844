//! The server process: finding its program, its root, starting it in its own
//! process group with a tree marker, draining its stderr, killing its tree.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};
use toolbelt_exec::tree::{MARKER_VAR, kill_tree};

use super::lock;

/// Lines of a server's stderr kept for the log when it stops.
pub(crate) const STDERR_TAIL_LINES: usize = 20;

/// The longest stderr line kept (longer ones are cut).
const STDERR_LINE_BYTES: usize = 1024;

/// Where `program` is: itself when it names a path, else the first executable
/// file of that name on `PATH`.
pub(crate) fn find_program(program: &str) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file someone may execute.
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The root of `file`: the nearest ancestor holding one of `markers` within one
/// of `roots`, else the first root that holds the file, else the file's folder.
pub(crate) fn root_of(file: &Path, markers: &[String], roots: &[PathBuf]) -> PathBuf {
    let within = |dir: &Path| roots.iter().any(|root| dir.starts_with(root));
    let mut dir = file.parent();
    while let Some(d) = dir {
        if !within(d) {
            break;
        }
        if markers.iter().any(|m| !m.is_empty() && d.join(m).exists()) {
            return d.to_path_buf();
        }
        dir = d.parent();
    }
    roots
        .iter()
        .find(|root| file.starts_with(root))
        .cloned()
        .or_else(|| file.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// A marker no other process tree carries.
pub(crate) fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "lsp-{}-{}-{nanos:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Starts `program` with `args` in `root`, in its own process group, its pipes
/// taken, its tree marked with `marker`, secret-looking variables removed from
/// its environment, killed when its handle is dropped.
///
/// # Security
/// The server runs with this process's rights and environment, minus variables
/// whose names look secret (`toolbelt_exec::looks_secret`).
pub(crate) fn spawn(
    program: &Path,
    args: &[String],
    root: &Path,
    marker: &str,
) -> io::Result<Child> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0)
        .env(MARKER_VAR, marker);
    for (name, _) in std::env::vars_os() {
        if toolbelt_exec::looks_secret(&name.to_string_lossy()) {
            cmd.env_remove(name);
        }
    }
    cmd.spawn()
}

/// Kills every process marked with `marker` (blocks briefly: call it off the
/// async threads, or where blocking is fine).
pub(crate) fn kill_marked(marker: &str) {
    let killed = kill_tree(None, marker);
    if !killed.survivors.is_empty() {
        tracing::warn!(survivors = ?killed.survivors, "language server processes survived SIGKILL");
    }
}

/// Kills the tree of `marker` from async code.
pub(crate) async fn kill_marked_async(marker: String) {
    let done = tokio::task::spawn_blocking(move || kill_marked(&marker)).await;
    if let Err(err) = done {
        tracing::warn!(%err, "killing a language server's processes failed");
    }
}

/// The last lines of a server's stderr.
pub(crate) type StderrTail = Arc<Mutex<VecDeque<String>>>;

/// Reads `stderr` until it closes, logging each line at debug level and keeping
/// the last [`STDERR_TAIL_LINES`] (each cut at 1 KiB) in `tail`: a chatty
/// server never blocks on a full pipe, and memory stays bounded.
pub(crate) async fn drain_stderr(program: String, mut stderr: ChildStderr, tail: StderrTail) {
    let mut buf = [0u8; 4096];
    let mut line = Vec::new();
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                keep_line(&program, &mut line, &tail);
            } else if line.len() < STDERR_LINE_BYTES {
                line.push(b);
            }
        }
    }
    if !line.is_empty() {
        keep_line(&program, &mut line, &tail);
    }
}

/// Logs one stderr line and keeps it in the tail.
fn keep_line(program: &str, line: &mut Vec<u8>, tail: &StderrTail) {
    let text = String::from_utf8_lossy(line).trim_end().to_string();
    line.clear();
    tracing::debug!(server = program, "{text}");
    let mut tail = lock(tail);
    if tail.len() == STDERR_TAIL_LINES {
        tail.pop_front();
    }
    tail.push_back(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_the_nearest_marked_ancestor_within_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().to_path_buf();
        std::fs::create_dir_all(top.join("a/b/c")).unwrap();
        std::fs::write(top.join("a/pyproject.toml"), "").unwrap();
        std::fs::write(top.join(".git"), "").unwrap();
        let markers = vec!["pyproject.toml".to_string(), ".git".to_string()];
        let file = top.join("a/b/c/x.py");
        assert_eq!(
            root_of(&file, &markers, std::slice::from_ref(&top)),
            top.join("a")
        );
        // A marker above the roots does not count: the root that holds the file.
        let inner = top.join("a/b");
        assert_eq!(
            root_of(&file, &markers, std::slice::from_ref(&inner)),
            inner
        );
        // Outside every root: the file's folder.
        assert_eq!(
            root_of(&file, &markers, &[PathBuf::from("/nowhere")]),
            top.join("a/b/c")
        );
    }

    #[test]
    fn programs_are_found_on_path_or_by_their_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("/bin/sh").is_some());
        assert!(find_program("no-such-program-toolbelt").is_none());
        assert!(find_program("/no/such/program").is_none());
        assert!(find_program("").is_none());
    }
}
