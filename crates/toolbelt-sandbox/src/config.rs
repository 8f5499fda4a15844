//! What a writable workspace keeps read-only besides git's files: toolbelt's own
//! configuration, so that a command cannot rewrite the rules and hooks of the
//! agent that runs it, and the paths a sandbox is told to protect
//! ([`crate::Sandbox::protecting`]: hook scripts kept elsewhere).
//!
//! For every writable root, `<root>/toolbelt.toml` and `<root>/.toolbelt/hooks`
//! are protected when they exist, and so is every protected path that exists
//! inside a writable root (one outside is read-only to commands already). A
//! protected path is bound read-only onto itself; each directory between its root
//! and it is bound onto itself (still writable) so that it cannot be renamed away
//! and replaced: a mount point can be neither renamed nor removed.
//!
//! A protected path reached through a symbolic link inside a writable root is
//! refused: a command could replace the link, which a bind cannot cover.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// toolbelt's configuration in a workspace root: the file and the directory of
/// hook scripts.
pub(crate) const CONFIG_PATHS: [&str; 2] = ["toolbelt.toml", ".toolbelt/hooks"];

/// A protected path lies behind a symbolic link a command could replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThroughLink {
    /// The protected path.
    pub(crate) path: PathBuf,
    /// The link on the way to it (maybe the path itself).
    pub(crate) link: PathBuf,
}

/// The binds that keep the protected paths of `writable` (real roots) and
/// `protected` (absolute paths) read-only: each path with whether it is bound
/// read-only (else onto itself only, so that it cannot be renamed), outer ones
/// first. Empty when none of them exists.
pub(crate) fn binds(
    writable: &[PathBuf],
    protected: &[PathBuf],
) -> Result<Vec<(PathBuf, bool)>, ThroughLink> {
    let config = writable
        .iter()
        .flat_map(|root| CONFIG_PATHS.iter().map(move |c| root.join(c)));
    let mut out: BTreeMap<PathBuf, bool> = BTreeMap::new();
    for path in config.chain(protected.iter().cloned()) {
        let Some(real) = locate(&path, writable)? else {
            continue;
        };
        // The outermost root holding it: its parent is not writable, so it
        // cannot be renamed itself.
        let Some(root) = writable
            .iter()
            .filter(|w| real.starts_with(w))
            .min_by_key(|w| w.components().count())
        else {
            continue;
        };
        for dir in real.ancestors().skip(1) {
            if dir == root.as_path() || !dir.starts_with(root) {
                break;
            }
            out.entry(dir.to_path_buf()).or_insert(false);
        }
        out.insert(real, true);
    }
    let mut binds: Vec<(PathBuf, bool)> = out.into_iter().collect();
    binds.sort_by_key(|(p, _)| p.components().count());
    Ok(binds)
}

/// Where the absolute `path` really is, when it exists and lies inside one of
/// `writable`; refused when a symbolic link inside a writable root is on the way.
fn locate(path: &Path, writable: &[PathBuf]) -> Result<Option<PathBuf>, ThroughLink> {
    if !path.is_absolute() || std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let inside = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut real = PathBuf::from("/");
    for component in path.components() {
        let name = match component {
            Component::Normal(name) => name,
            Component::ParentDir => {
                real.pop();
                continue;
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
        };
        let next = real.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&next) else {
            return Ok(None);
        };
        if !meta.file_type().is_symlink() {
            real = next;
        } else if inside(&real) {
            return Err(ThroughLink {
                path: path.to_path_buf(),
                link: next,
            });
        } else {
            // A link outside the writable roots cannot be replaced: follow it.
            let Ok(target) = std::fs::canonicalize(&next) else {
                return Ok(None);
            };
            real = target;
        }
    }
    Ok(inside(&real).then_some(real))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn configuration_and_protected_paths_are_bound_with_the_directories_above_them() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("ws");
        std::fs::create_dir_all(root.join(".toolbelt/hooks")).unwrap();
        std::fs::write(root.join("toolbelt.toml"), "").unwrap();
        std::fs::create_dir_all(root.join("scripts/hooks")).unwrap();
        std::fs::write(root.join("scripts/hooks/check.sh"), "").unwrap();
        // Outside the writable roots, and missing: nothing to bind.
        std::fs::write(base.join("outside.sh"), "").unwrap();
        let protected = [
            root.join("scripts/hooks/check.sh"),
            root.join("scripts/./hooks/../hooks/check.sh"),
            root.join("missing.sh"),
            base.join("outside.sh"),
        ];
        let got = binds(std::slice::from_ref(&root), &protected).unwrap();
        assert_eq!(
            got,
            vec![
                (root.join(".toolbelt"), false),
                (root.join("scripts"), false),
                (root.join("toolbelt.toml"), true),
                (root.join(".toolbelt/hooks"), true),
                (root.join("scripts/hooks"), false),
                (root.join("scripts/hooks/check.sh"), true),
            ]
        );
        // A `.toolbelt` without hooks, and no `toolbelt.toml`: nothing.
        let plain = base.join("plain");
        std::fs::create_dir_all(plain.join(".toolbelt/agents")).unwrap();
        assert_eq!(binds(&[plain], &[]).unwrap(), vec![]);
    }

    #[test]
    fn a_protected_path_behind_a_link_inside_a_root_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("ws");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(base.join("real.toml"), "").unwrap();
        std::os::unix::fs::symlink(base.join("real.toml"), root.join("toolbelt.toml")).unwrap();
        assert_eq!(
            binds(std::slice::from_ref(&root), &[]).unwrap_err(),
            ThroughLink {
                path: root.join("toolbelt.toml"),
                link: root.join("toolbelt.toml"),
            }
        );
        // A link to the root from outside it is followed.
        let other = base.join("other");
        std::fs::create_dir_all(other.join("hooks")).unwrap();
        std::fs::write(other.join("hooks/h.sh"), "").unwrap();
        std::os::unix::fs::symlink(&other, base.join("via")).unwrap();
        let got = binds(std::slice::from_ref(&other), &[base.join("via/hooks/h.sh")]).unwrap();
        assert_eq!(
            got,
            vec![
                (other.join("hooks"), false),
                (other.join("hooks/h.sh"), true)
            ]
        );
        // A directory link inside the root on the way.
        std::os::unix::fs::symlink(other.join("hooks"), other.join("linked")).unwrap();
        assert_eq!(
            binds(std::slice::from_ref(&other), &[other.join("linked/h.sh")])
                .unwrap_err()
                .link,
            other.join("linked")
        );
    }
}
