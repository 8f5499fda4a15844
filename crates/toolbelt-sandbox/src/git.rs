//! The git files a writable workspace must not change: what runs code the next
//! time the user runs git (hooks, and the config that could point `core.hooksPath`
//! or a filter elsewhere).
//!
//! For every git directory of a root (`<root>/.git`, the directory a `.git` file
//! points to when it lies in a writable root, and submodules' directories under
//! `modules/`), the helper binds the directory onto itself so that it cannot be
//! renamed or replaced, and binds its `hooks` and `config` read-only. A `.git`
//! file is bound read-only itself, so it cannot be pointed elsewhere.

use std::path::{Path, PathBuf};

/// How deep submodule git directories are looked for under `modules/`.
const MAX_MODULE_DEPTH: usize = 4;

/// What to protect in one git repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitGuard {
    /// `.git` files to bind read-only.
    pub(crate) files: Vec<PathBuf>,
    /// Git directories: each bound onto itself, its `hooks` and `config` read-only.
    pub(crate) dirs: Vec<PathBuf>,
}

/// The git files and directories of `roots` that lie inside `writable`.
pub(crate) fn guard(roots: &[PathBuf], writable: &[PathBuf]) -> GitGuard {
    let inside = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut out = GitGuard {
        files: Vec::new(),
        dirs: Vec::new(),
    };
    for root in roots {
        let dot_git = root.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let gitdir = if meta.is_dir() {
            Some(dot_git)
        } else if meta.is_file() {
            out.files.push(dot_git.clone());
            pointed_gitdir(&dot_git)
        } else {
            None
        };
        let Some(gitdir) = gitdir else { continue };
        let mut dirs = vec![gitdir.clone()];
        if let Some(common) = common_dir(&gitdir) {
            dirs.push(common);
        }
        for dir in dirs {
            if inside(&dir) && !out.dirs.contains(&dir) {
                let modules = dir.join("modules");
                out.dirs.push(dir);
                submodule_dirs(&modules, MAX_MODULE_DEPTH, &mut out.dirs);
            }
        }
    }
    out.dirs.retain(|d| inside(d));
    out
}

/// The directory a `.git` file (`gitdir: <path>`) points to.
fn pointed_gitdir(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let base = file.parent()?;
    std::fs::canonicalize(base.join(target)).ok()
}

/// The common directory of a linked worktree's git directory (`commondir`).
fn common_dir(gitdir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(gitdir.join("commondir")).ok()?;
    std::fs::canonicalize(gitdir.join(text.trim())).ok()
}

/// Submodules' git directories under `dir` (`modules/<name>/...`): directories
/// holding a `HEAD` file.
fn submodule_dirs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        if path.join("HEAD").is_file() {
            let modules = path.join("modules");
            out.push(path);
            submodule_dirs(&modules, depth - 1, out);
        } else {
            submodule_dirs(&path, depth - 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_repository_its_worktree_file_and_submodules_are_found() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join(".git/modules/lib/modules/deep")).unwrap();
        std::fs::write(repo.join(".git/modules/lib/HEAD"), "ref: x\n").unwrap();
        std::fs::write(repo.join(".git/modules/lib/modules/deep/HEAD"), "ref: x\n").unwrap();
        // A linked worktree whose git directory is inside the repository.
        let wt = base.join("wt");
        std::fs::create_dir_all(repo.join(".git/worktrees/wt")).unwrap();
        std::fs::write(repo.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();
        let plain = base.join("plain");
        std::fs::create_dir_all(&plain).unwrap();

        let g = guard(
            &[repo.clone(), wt.clone(), plain.clone()],
            &[repo.clone(), wt.clone(), plain],
        );
        assert_eq!(g.files, vec![wt.join(".git")]);
        assert_eq!(
            g.dirs,
            vec![
                repo.join(".git"),
                repo.join(".git/modules/lib"),
                repo.join(".git/modules/lib/modules/deep"),
                repo.join(".git/worktrees/wt"),
            ]
        );

        // Only the worktree writable: its git directory lies outside, nothing to bind.
        let g = guard(std::slice::from_ref(&wt), std::slice::from_ref(&wt));
        assert_eq!(g.files, vec![wt.join(".git")]);
        assert!(g.dirs.is_empty());
    }
}
