//! The environment a command gets.
//!
//! By default a command inherits a core set of the server's variables (the path,
//! the user, the locale, the terminal, the temporary directory and the usual
//! toolchain homes), never a variable whose name looks secret (`*KEY*`,
//! `*SECRET*`, `*TOKEN*`, `*PASSWORD*`, ...), then the non-interactive settings
//! (`GIT_TERMINAL_PROMPT=0`, `DEBIAN_FRONTEND=noninteractive`, `PAGER=cat`), then
//! the variables the call sets. [`EnvPolicy`] changes each step.

use std::collections::BTreeMap;

/// Which of the server's variables a command inherits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Inherit {
    /// The core set ([`CORE_VARS`], `LC_*` and `XDG_*`).
    #[default]
    Core,
    /// All of them (secret-looking names still removed unless `scrub_secrets` is off).
    All,
    /// None.
    None,
}

/// Names inherited under [`Inherit::Core`] (besides every `LC_*` and `XDG_*`).
pub const CORE_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "USERNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_ROOT",
    "NVM_DIR",
    "NODE_PATH",
    "PNPM_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Parts of a name (compared in upper case) that make a variable look secret.
pub const SECRET_NAME_PARTS: &[&str] = &[
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "PRIVATE",
    "SESSION_ID",
    "COOKIE",
    "AUTH",
];

/// Set for every command: nothing waits for a terminal that is not there.
pub const NON_INTERACTIVE: &[(&str, &str)] = &[
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("NO_COLOR", "1"),
    ("CI", "1"),
];

/// What a command's environment is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Which variables are inherited.
    pub inherit: Inherit,
    /// Remove inherited variables whose names look secret ([`SECRET_NAME_PARTS`]).
    pub scrub_secrets: bool,
    /// More names to inherit (exact, or a prefix ending in `*`), even secret-looking.
    pub include: Vec<String>,
    /// Names never inherited (exact, or a prefix ending in `*`).
    pub exclude: Vec<String>,
    /// Variables always set.
    pub set: BTreeMap<String, String>,
}

impl Default for EnvPolicy {
    fn default() -> EnvPolicy {
        EnvPolicy {
            inherit: Inherit::Core,
            scrub_secrets: true,
            include: Vec::new(),
            exclude: Vec::new(),
            set: BTreeMap::new(),
        }
    }
}

/// Whether `name` looks like it holds a secret.
#[must_use]
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

fn matches_any(name: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == p,
    })
}

impl EnvPolicy {
    /// The environment of a command: `server` (the server's variables) filtered by
    /// the policy, then [`NON_INTERACTIVE`], then `set`, then `call` (what the call
    /// asked for, which wins).
    pub fn build<I, K, V>(
        &self,
        server: I,
        call: &BTreeMap<String, String>,
    ) -> Vec<(String, String)>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in server {
            let name = name.into();
            let included = matches_any(&name, &self.include);
            let inherited = included
                || match self.inherit {
                    Inherit::None => false,
                    Inherit::All => true,
                    Inherit::Core => {
                        CORE_VARS.contains(&name.as_str())
                            || name.starts_with("LC_")
                            || name.starts_with("XDG_")
                    }
                };
            let dropped = matches_any(&name, &self.exclude)
                || (self.scrub_secrets && !included && looks_secret(&name));
            if inherited && !dropped {
                env.insert(name, value.into());
            }
        }
        for (name, value) in NON_INTERACTIVE {
            env.insert((*name).to_string(), (*value).to_string());
        }
        for (name, value) in self.set.iter().chain(call) {
            env.insert(name.clone(), value.clone());
        }
        env.into_iter().collect()
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
