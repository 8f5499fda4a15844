//! What a rule is matched against: hosts, domain and path patterns, the forms of a
//! path subject, and the built-in secret files.

use std::cell::OnceCell;
use std::net::IpAddr;
use std::path::Path;
use std::sync::LazyLock;

use globset::{GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use toolbelt_core::Request;

use crate::command::normalize_command;
use crate::error::PolicyError;

/// A host: a lowercase domain without a trailing dot, or an IP address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostName {
    Domain(String),
    Ip(IpAddr),
}

impl HostName {
    pub(crate) fn from_url_host<S: AsRef<str>>(host: url::Host<S>) -> HostName {
        match host {
            url::Host::Domain(d) => {
                HostName::Domain(d.as_ref().trim_end_matches('.').to_ascii_lowercase())
            }
            url::Host::Ipv4(ip) => HostName::Ip(IpAddr::V4(ip)),
            url::Host::Ipv6(ip) => HostName::Ip(IpAddr::V6(ip)),
        }
    }
}

/// `domain:example.com` or `domain:*.example.com`.
#[derive(Debug, Clone)]
pub(crate) struct DomainPattern {
    pub(crate) host: HostName,
    pub(crate) subdomains_only: bool,
}

impl DomainPattern {
    pub(crate) fn parse(rule: &str, domain: &str) -> Result<DomainPattern, PolicyError> {
        let bad = |reason: &str| PolicyError::BadDomain {
            rule: rule.to_string(),
            domain: domain.to_string(),
            reason: reason.to_string(),
        };
        let (subdomains_only, host) = match domain.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, domain),
        };
        let host = host.trim_end_matches('.');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let host = match bare.parse::<IpAddr>() {
            Ok(ip) => HostName::Ip(ip),
            Err(_) if host.contains("://") => return Err(bad("a URL, not a host")),
            Err(_) if host.contains('/') => return Err(bad("a path is not part of a host")),
            Err(_) if host.contains(':') => return Err(bad("a port is not part of a host")),
            Err(_) if host.contains('@') || host.contains(char::is_whitespace) => {
                return Err(bad("not a host name"));
            }
            Err(_) => {
                let host = url::Host::parse(host).map_err(|source| PolicyError::BadHost {
                    rule: rule.to_string(),
                    domain: domain.to_string(),
                    source,
                })?;
                HostName::from_url_host(host)
            }
        };
        if subdomains_only && matches!(host, HostName::Ip(_)) {
            return Err(bad("an IP address has no subdomains"));
        }
        Ok(DomainPattern {
            host,
            subdomains_only,
        })
    }

    pub(crate) fn matches(&self, host: &HostName) -> bool {
        match (&self.host, host) {
            (HostName::Ip(rule), HostName::Ip(ip)) => rule == ip,
            (HostName::Domain(rule), HostName::Domain(name)) => {
                let sub = name
                    .strip_suffix(rule.as_str())
                    .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.'));
                sub || (!self.subdomains_only && name == rule)
            }
            _ => false,
        }
    }
}

/// The host of a URL subject (`https://a.example.com/x`, or `a.example.com/x`
/// without a scheme), parsed the way an HTTP client parses it.
pub(crate) fn url_host(subject: &str) -> Option<HostName> {
    let subject = subject.trim();
    let parsed = if subject.contains("://") {
        url::Url::parse(subject)
    } else {
        url::Url::parse(&format!("https://{subject}"))
    };
    parsed.ok()?.host().map(HostName::from_url_host)
}

/// Where a path pattern is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Workspace,
    Absolute,
    Home,
    Anywhere,
}

/// A compiled gitignore-style path pattern.
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    pub(crate) anchor: Anchor,
    pub(crate) matcher: GlobMatcher,
}

impl PathPattern {
    pub(crate) fn parse(spec: &str) -> Result<PathPattern, globset::Error> {
        let (anchor, glob) = if let Some(rest) = spec.strip_prefix('/') {
            let body = clean_absolute(rest);
            let glob = if body == "/" { "/**".to_string() } else { body };
            (Anchor::Absolute, glob)
        } else if spec == "~" || spec.starts_with("~/") {
            (Anchor::Home, or_everything(clean_relative(&spec[1..])))
        } else if let Some(rest) = spec.strip_prefix("./") {
            (Anchor::Workspace, or_everything(clean_relative(rest)))
        } else {
            let body = clean_relative(spec);
            if body.is_empty() {
                (Anchor::Workspace, "**".to_string())
            } else if body.starts_with("**/") || body == "**" {
                (Anchor::Anywhere, body)
            } else if !body.contains('/') {
                (Anchor::Anywhere, format!("**/{body}"))
            } else {
                (Anchor::Workspace, body)
            }
        };
        Ok(PathPattern {
            anchor,
            matcher: compile_glob(&glob)?,
        })
    }

    pub(crate) fn matches(&self, forms: &PathForms) -> bool {
        let candidates = match self.anchor {
            Anchor::Workspace => [forms.workspace.as_deref(), None, None],
            Anchor::Absolute => [None, forms.absolute.as_deref(), None],
            Anchor::Home => [None, None, forms.home.as_deref()],
            Anchor::Anywhere => [forms.preferred(), None, None],
        };
        candidates
            .into_iter()
            .flatten()
            .any(|path| ancestors(path).any(|p| self.matcher.is_match(p)))
    }
}

pub(crate) fn or_everything(glob: String) -> String {
    if glob.is_empty() {
        "**".to_string()
    } else {
        glob
    }
}

pub(crate) fn compile_glob(glob: &str) -> Result<GlobMatcher, globset::Error> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
}

/// `path` and each of its parent directories, longest first (`a/b/c`, `a/b`, `a`;
/// `/a/b`, `/a`).
pub(crate) fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(path), |p| {
        p.rfind('/').filter(|&i| i > 0).and_then(|i| p.get(..i))
    })
}

/// Joins the segments of a `/`-separated path, dropping empty and `.` segments and
/// resolving `..` against the segment before it; `..` that climbs above the start
/// is kept for relative paths and dropped for absolute ones (`/..` is `/`).
pub(crate) fn clean_segments(path: &str, absolute: bool) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    parts.join("/")
}

pub(crate) fn clean_relative(path: &str) -> String {
    clean_segments(path, false)
}

/// `rest` is the path after its leading `/`.
pub(crate) fn clean_absolute(rest: &str) -> String {
    format!("/{}", clean_segments(rest, true))
}

/// `abs` relative to `base` (both clean and absolute), `""` when they are equal.
pub(crate) fn relative_to(abs: &str, base: &str) -> Option<String> {
    if base == "/" {
        return abs.strip_prefix('/').map(str::to_string);
    }
    let rest = abs.strip_prefix(base)?;
    if rest.is_empty() {
        Some(String::new())
    } else {
        rest.strip_prefix('/').map(str::to_string)
    }
}

pub(crate) fn absolute_path_string(path: &Path) -> Option<String> {
    path.to_str()?.strip_prefix('/').map(clean_absolute)
}

/// A path subject in the forms patterns are matched against.
#[derive(Debug, Default)]
pub(crate) struct PathForms {
    /// Relative to the workspace root.
    pub(crate) workspace: Option<String>,
    /// Absolute.
    pub(crate) absolute: Option<String>,
    /// Relative to the home directory.
    pub(crate) home: Option<String>,
}

impl PathForms {
    pub(crate) fn new(subject: &str, roots: &[String], home: Option<&str>) -> PathForms {
        let mut forms = PathForms::default();
        if let Some(rest) = subject.strip_prefix('/') {
            forms.absolute = Some(clean_absolute(rest));
        } else if subject == "~" || subject.starts_with("~/") {
            let rest = &subject[1..];
            forms.home = Some(clean_relative(rest));
            forms.absolute = home.map(|h| clean_absolute(&format!("{h}/{rest}")));
        } else {
            forms.workspace = Some(clean_relative(subject));
            forms.absolute = roots
                .first()
                .map(|root| clean_absolute(&format!("{root}/{subject}")));
        }
        if let Some(abs) = forms.absolute.as_deref() {
            if forms.workspace.is_none() {
                forms.workspace = roots.iter().find_map(|root| relative_to(abs, root));
            }
            if forms.home.is_none() {
                forms.home = home.and_then(|h| relative_to(abs, h));
            }
        }
        forms
    }

    /// The form a pattern that matches at any depth is checked against: the
    /// workspace form for paths inside the workspace, so that the directories above
    /// the root never match, else the absolute form, else whatever is known.
    pub(crate) fn preferred(&self) -> Option<&str> {
        let inside = self
            .workspace
            .as_deref()
            .filter(|w| *w != ".." && !w.starts_with("../"));
        inside
            .or(self.absolute.as_deref())
            .or(self.home.as_deref())
            .or(self.workspace.as_deref())
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &str> {
        [&self.workspace, &self.absolute, &self.home]
            .into_iter()
            .filter_map(|f| f.as_deref())
    }
}

/// A request's subject, with its interpretations computed on first use.
pub(crate) struct Subject<'a> {
    pub(crate) raw: Option<&'a str>,
    pub(crate) is_fs: bool,
    pub(crate) roots: &'a [String],
    pub(crate) home: Option<&'a str>,
    pub(crate) command: OnceCell<String>,
    pub(crate) host: OnceCell<Option<HostName>>,
    pub(crate) paths: OnceCell<PathForms>,
}

impl<'a> Subject<'a> {
    /// The subject of `req`, with relative paths taken from the first of `roots`
    /// and `~/` from `home`.
    pub(crate) fn new(
        req: &Request<'a>,
        roots: &'a [String],
        home: Option<&'a str>,
    ) -> Subject<'a> {
        Subject {
            raw: req.subject,
            is_fs: req.permissions.iter().any(|p| p.starts_with("fs:")),
            roots,
            home,
            command: OnceCell::new(),
            host: OnceCell::new(),
            paths: OnceCell::new(),
        }
    }

    pub(crate) fn command(&self) -> &str {
        self.command
            .get_or_init(|| normalize_command(self.raw.unwrap_or_default()))
    }

    pub(crate) fn host(&self) -> Option<&HostName> {
        self.host
            .get_or_init(|| self.raw.and_then(url_host))
            .as_ref()
    }

    pub(crate) fn paths(&self) -> &PathForms {
        self.paths.get_or_init(|| {
            self.raw.map_or_else(PathForms::default, |raw| {
                PathForms::new(raw, self.roots, self.home)
            })
        })
    }
}

/// The built-in secret files: a gitignore-style name matched at any depth, and the
/// file names it does not cover.
pub(crate) const SECRET_FILES: &[(&str, &[&str])] = &[
    (".env", &[]),
    (".env.*", &[".env.example", ".env.sample", ".env.template"]),
    ("*.pem", &[]),
    ("*.key", &[]),
    ("id_rsa*", &["*.pub"]),
    ("id_ed25519*", &["*.pub"]),
    ("id_ecdsa*", &["*.pub"]),
    ("id_dsa*", &["*.pub"]),
    (".aws/credentials", &[]),
    (".aws/config", &[]),
    (".config/gcloud/**", &[]),
    (".azure/**", &[]),
    (".docker/config.json", &[]),
    (".kube/config", &[]),
    (".netrc", &[]),
    (".npmrc", &[]),
    (".pypirc", &[]),
    (".git-credentials", &[]),
    ("*.p12", &[]),
    ("*.pfx", &[]),
    ("*.keystore", &[]),
    (".ssh/**", &["*.pub", "known_hosts"]),
];

pub(crate) struct SecretFile {
    pub(crate) label: &'static str,
    pub(crate) except: Vec<GlobMatcher>,
}

/// The built-in secret files, all in one matcher (built once, matched in one pass:
/// the fast path for tools that look at many files).
pub(crate) struct Secrets {
    pub(crate) set: GlobSet,
    /// For each glob of `set`, its secret file.
    pub(crate) files: Vec<SecretFile>,
}

pub(crate) static SECRETS: LazyLock<Secrets> = LazyLock::new(|| {
    let mut builder = GlobSetBuilder::new();
    let mut files = Vec::new();
    for &(label, except) in SECRET_FILES {
        let Ok(glob) = GlobBuilder::new(&format!("**/{label}"))
            .literal_separator(true)
            .backslash_escape(true)
            .build()
        else {
            continue;
        };
        builder.add(glob);
        files.push(SecretFile {
            label,
            except: except.iter().filter_map(|e| compile_glob(e).ok()).collect(),
        });
    }
    let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
    Secrets { set, files }
});

/// The label of the built-in secret file (`.env`, `*.pem`, `.ssh/**`, ...) that
/// `path` is, if any. `path` uses `/` separators, relative to the workspace or
/// absolute. Tools that open many files (a search) skip these while the policy's
/// [secret defaults](crate::Policy::secret_defaults) are on.
///
/// ```
/// use toolbelt_policy::secret_file_label;
///
/// assert_eq!(secret_file_label("app/.env"), Some(".env"));
/// assert_eq!(secret_file_label("app/.env.example"), None);
/// assert_eq!(secret_file_label("src/main.rs"), None);
/// ```
pub fn secret_file_label(path: &str) -> Option<&'static str> {
    if !might_be_secret(path) {
        return None;
    }
    let secrets = &*SECRETS;
    if !secrets.set.is_match(path) {
        return None;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    secrets.set.matches(path).into_iter().find_map(|i| {
        let secret = secrets.files.get(i)?;
        (!secret.except.iter().any(|e| e.is_match(name))).then_some(secret.label)
    })
}

/// File name endings of the built-in secret files that are not hidden names.
pub(crate) const SECRET_SUFFIXES: [&str; 5] = [".pem", ".key", ".p12", ".pfx", ".keystore"];

/// A cheap test that is true for every built-in secret file (and for few others):
/// a hidden component (`.env`, `.ssh/...`), an `id_*` key, or a key-file ending.
/// It spares a search the full match on almost every file.
pub(crate) fn might_be_secret(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.starts_with('.')
        || path.contains("/.")
        || name.starts_with("id_")
        || SECRET_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// The label of the built-in secret file `forms` names, if any.
pub(crate) fn secret_file(forms: &PathForms) -> Option<&'static str> {
    forms.all().find_map(secret_file_label)
}
