//! What tools that write files may not change, so that an agent cannot rewrite
//! its own rules or hooks: the workspace's configuration (the built-in
//! [`CONFIG_PATHS`]) and the hook scripts a policy is told about
//! ([`crate::Policy::with_protected_paths`]).

use std::path::Path;

use toolbelt_core::Request;

use super::Policy;
use crate::error::PolicyError;
use crate::subject::{PathForms, Subject, ancestors, clean_absolute, clean_relative, relative_to};

/// The permission of a tool that writes files: only its requests are checked.
pub(crate) const WRITE_PERMISSION: &str = "fs:write";

/// toolbelt's own configuration, relative to a workspace root: the
/// configuration file and the directory of hook scripts (with everything in it).
pub(crate) const CONFIG_PATHS: [&str; 2] = ["toolbelt.toml", ".toolbelt/hooks"];

/// The entry of [`CONFIG_PATHS`] that the path of `forms` is or lies under, if
/// any, at one of `roots` (relative forms: at the workspace root). Compared
/// without regard to ASCII case (`Toolbelt.toml` is the same file on a
/// case-insensitive file system).
pub(crate) fn config_path(forms: &PathForms, roots: &[String]) -> Option<&'static str> {
    // `../proj/toolbelt.toml` from the root `/work/proj` is its `toolbelt.toml`.
    let from_roots = forms
        .absolute
        .iter()
        .flat_map(|abs| roots.iter().filter_map(|root| relative_to(abs, root)));
    forms
        .workspace
        .clone()
        .into_iter()
        .chain(from_roots)
        .find_map(|relative| {
            let relative = relative.to_ascii_lowercase();
            ancestors(&relative).find_map(|a| CONFIG_PATHS.into_iter().find(|c| *c == a))
        })
}

/// A path a policy denies to tools that write: a file, or a directory with
/// everything beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtectedPath {
    /// As given, for the rule's label.
    pub(crate) given: String,
    /// Normalised like a subject: absolute (`/a/b`), under the home directory
    /// (`~/a`) or relative to the workspace root (`a/b`).
    pub(crate) normal: String,
}

impl ProtectedPath {
    /// `path` as a protected path.
    ///
    /// # Errors
    ///
    /// [`PolicyError::BadProtectedPath`] when `path` is empty or not UTF-8.
    pub(crate) fn new(path: &Path) -> Result<ProtectedPath, PolicyError> {
        let bad = |reason| PolicyError::BadProtectedPath {
            path: path.to_path_buf(),
            reason,
        };
        let given = path.to_str().ok_or_else(|| bad("not valid UTF-8"))?;
        if given.trim().is_empty() {
            return Err(bad("empty"));
        }
        let normal = if let Some(rest) = given.strip_prefix('/') {
            clean_absolute(rest)
        } else if given == "~" || given.starts_with("~/") {
            format!("~/{}", clean_relative(&given[1..]))
        } else {
            clean_relative(given)
        };
        Ok(ProtectedPath {
            given: given.to_string(),
            normal,
        })
    }

    /// Whether the path of `forms` is this path or lies beneath it; relative
    /// forms are taken from the first of `roots`, `~/` from `home`.
    pub(crate) fn covers(&self, forms: &PathForms, roots: &[String], home: Option<&str>) -> bool {
        let mine = PathForms::new(&self.normal, roots, home);
        let pairs = [
            (&mine.workspace, &forms.workspace),
            (&mine.absolute, &forms.absolute),
            (&mine.home, &forms.home),
        ];
        pairs
            .into_iter()
            .any(|(mine, theirs)| match (mine, theirs) {
                (Some(mine), Some(theirs)) => beneath(theirs, mine),
                _ => false,
            })
    }
}

impl Policy {
    /// Turns the built-in protection of toolbelt's configuration off: tools that
    /// write files may then change the workspace's `toolbelt.toml` and
    /// `.toolbelt/hooks/` (the paths given to [`Policy::with_protected_paths`]
    /// stay protected).
    pub fn without_config_defaults(mut self) -> Policy {
        self.config_defaults = false;
        self
    }

    /// Whether the built-in protection of toolbelt's configuration is on: tools
    /// that write files (their requests carry the permission `fs:write`) may not
    /// change `toolbelt.toml` at a workspace root nor anything under
    /// `.toolbelt/hooks/` there. Reading them stays allowed.
    pub fn config_defaults(&self) -> bool {
        self.config_defaults
    }

    /// Also denies to tools that write files (permission `fs:write`) each of
    /// `paths` and, for a directory, everything beneath it: the hook scripts that
    /// live outside `.toolbelt/hooks/`. A relative path is taken from the
    /// workspace root ([`Policy::with_roots`]), `~/` from the home directory; the
    /// match is on the path as written, after `.` and `..` are resolved (as for
    /// rules). A call is denied with the rule `deny hook script <path> (built-in)`.
    ///
    /// ```
    /// use toolbelt_policy::{Decision, Policy, Request};
    ///
    /// let policy = Policy::default()
    ///     .with_roots(["/work/proj"])
    ///     .with_protected_paths(["scripts/check.sh", "/etc/toolbelt/hooks"])
    ///     .unwrap();
    /// let write = ["fs:write".to_string()];
    /// let denied = policy.evaluate(&Request {
    ///     tool: "edit_file",
    ///     alias: None,
    ///     subject: Some("/work/proj/scripts/check.sh"),
    ///     permissions: &write,
    /// });
    /// assert_eq!(denied.decision, Decision::Deny);
    /// assert_eq!(denied.rule.as_deref(), Some("deny hook script scripts/check.sh (built-in)"));
    /// ```
    ///
    /// # Errors
    ///
    /// [`PolicyError::BadProtectedPath`] for an empty path or one that is not
    /// UTF-8 (nothing is added then).
    ///
    /// # Security
    ///
    /// Paths compare as strings, as rules do: symbolic links are not resolved.
    pub fn with_protected_paths<P: AsRef<Path>>(
        mut self,
        paths: impl IntoIterator<Item = P>,
    ) -> Result<Policy, PolicyError> {
        let added = paths
            .into_iter()
            .map(|p| ProtectedPath::new(p.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        for path in added {
            if !self.protected.contains(&path) {
                self.protected.push(path);
            }
        }
        Ok(self)
    }

    /// The paths given to [`Policy::with_protected_paths`], as given.
    pub fn protected_paths(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.protected.iter().map(|p| p.given.as_str())
    }

    /// The built-in deny of a shell command line `command` that names one of the
    /// protected paths as a target it writes (a redirection, `tee`, `sed -i`,
    /// `cp`...; see [`crate::write_targets`]): the configuration is not rewritten
    /// through the shell either. A write that cannot be read from the line
    /// (`python3 -c ...`) is left to the sandbox, which keeps the paths read-only.
    pub(crate) fn shell_protection(
        &self,
        req: &Request<'_>,
        command: &str,
    ) -> Option<crate::Evaluation> {
        if !self.config_defaults && self.protected.is_empty() {
            return None;
        }
        // The line is parsed only when it mentions one of the paths at all.
        let mentions = (self.config_defaults && command.to_ascii_lowercase().contains("toolbelt"))
            || self.protected.iter().any(|p| {
                Path::new(&p.given)
                    .file_name()
                    .is_some_and(|name| command.contains(&*name.to_string_lossy()))
            });
        if !mentions {
            return None;
        }
        let permissions = [WRITE_PERMISSION.to_string()];
        crate::write_targets(command).paths.iter().find_map(|path| {
            let write = Request {
                subject: Some(path),
                permissions: &permissions,
                ..*req
            };
            let subject = Subject::new(&write, &self.roots, self.home.as_deref());
            self.protection(&write, &subject)
                .map(|rule| crate::Evaluation {
                    decision: crate::Decision::Deny,
                    rule: Some(rule),
                })
        })
    }

    /// The label of the built-in rule that denies `req` because it writes
    /// toolbelt's configuration or a protected path, if any.
    pub(crate) fn protection(&self, req: &Request<'_>, subject: &Subject<'_>) -> Option<String> {
        let writes = req.permissions.iter().any(|p| p == WRITE_PERMISSION);
        if !writes || subject.raw.is_none() {
            return None;
        }
        let forms = subject.paths();
        if self.config_defaults
            && let Some(path) = config_path(forms, &self.roots)
        {
            return Some(format!("deny toolbelt configuration {path} (built-in)"));
        }
        self.protected
            .iter()
            .find(|p| p.covers(forms, &self.roots, self.home.as_deref()))
            .map(|p| format!("deny hook script {} (built-in)", p.given))
    }
}

/// Whether `path` is `dir` or lies beneath it (both clean, of the same form; an
/// empty `dir` is the root everything relative lies under, but not `..`).
fn beneath(path: &str, dir: &str) -> bool {
    match dir {
        "" => path != ".." && !path.starts_with("../"),
        "/" => true,
        _ => ancestors(path).any(|a| a == dir),
    }
}

#[cfg(test)]
#[path = "protected_tests.rs"]
mod tests;
