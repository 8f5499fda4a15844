//! Telling whether a path a linter printed is the file asked about: made
//! absolute against the working directory, compared as written (`.` and `..`
//! folded), then by canonical path.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Compares the paths of a linter's output with one file, remembering answers.
#[derive(Debug)]
pub(crate) struct FileMatcher {
    /// The file, folded.
    file: PathBuf,
    /// Its canonical path, looked up when first needed (`None`: it has none).
    canonical: Option<Option<PathBuf>>,
    /// Paths in the output are relative to it.
    cwd: PathBuf,
    /// Answers so far, by the path as printed.
    seen: HashMap<String, bool>,
}

impl FileMatcher {
    /// A matcher for `file` (absolute, or relative to `cwd`).
    pub(crate) fn new(file: &Path, cwd: &Path) -> FileMatcher {
        FileMatcher {
            file: fold(&cwd.join(file)),
            canonical: None,
            cwd: cwd.to_path_buf(),
            seen: HashMap::new(),
        }
    }

    /// Whether `printed` (a path as a linter prints it) names the file.
    pub(crate) fn is_file(&mut self, printed: &str) -> bool {
        if let Some(&known) = self.seen.get(printed) {
            return known;
        }
        let absolute = fold(&self.cwd.join(printed));
        let answer = self.same(&absolute);
        self.seen.insert(printed.to_string(), answer);
        answer
    }

    /// Whether `uri` (a `file://` URI, or a percent-encoded relative reference,
    /// relative to `base` when given, else to the working directory) names the
    /// file: SARIF's `artifactLocation`.
    pub(crate) fn is_file_uri(&mut self, uri: &str, base: Option<&Path>) -> bool {
        let path = uri_path(uri);
        let absolute = match base {
            Some(base) => fold(&self.cwd.join(base).join(path)),
            None => fold(&self.cwd.join(path)),
        };
        self.same(&absolute)
    }

    fn same(&mut self, absolute: &Path) -> bool {
        if absolute == self.file {
            return true;
        }
        let file = &self.file;
        let canonical = self
            .canonical
            .get_or_insert_with(|| std::fs::canonicalize(file).ok());
        match canonical {
            Some(canonical) => std::fs::canonicalize(absolute).is_ok_and(|c| &c == canonical),
            None => false,
        }
    }
}

/// The path of a `file://` URI or of a relative URI reference, percent-decoded.
pub(crate) fn uri_path(uri: &str) -> PathBuf {
    let rest = match uri.strip_prefix("file://") {
        Some(rest) => rest.strip_prefix("localhost").unwrap_or(rest),
        None => uri.strip_prefix("file:").unwrap_or(uri),
    };
    PathBuf::from(percent_decode(rest))
}

/// `text` with `%XX` escapes decoded (invalid ones kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// `path` with `.` dropped and `..` folded into its parent, without looking at
/// the filesystem.
pub(crate) fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(part);
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_and_uris_name_the_file() {
        let mut m = FileMatcher::new(Path::new("/w/src/a b.py"), Path::new("/w"));
        assert!(m.is_file("/w/src/a b.py"));
        assert!(m.is_file("src/a b.py"));
        assert!(m.is_file("./src/../src/a b.py"));
        assert!(m.is_file_uri("file:///w/src/a%20b.py", None));
        assert!(m.is_file_uri("src/a%20b.py", None));
        assert!(m.is_file_uri("a%20b.py", Some(Path::new("/w/src/"))));
        assert!(!m.is_file("src/a%20b.py"));
        assert!(!m.is_file("/w/src/other.py"));
        assert!(!m.is_file("/w/src/a b.pyi"));
    }

    #[test]
    fn a_symlinked_directory_names_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("a.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let mut m = FileMatcher::new(&real.join("a.py"), dir.path());
        assert!(m.is_file("link/a.py"));
        assert!(!m.is_file("link/b.py"));
    }

    #[test]
    fn percent_decode_keeps_invalid_escapes() {
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("a%zz"), "a%zz");
        assert_eq!(percent_decode("%C3%A9"), "é");
    }
}
