//! Which other MCP servers a workspace uses: `[mcp_servers]` of the user's config
//! (`$XDG_CONFIG_HOME/toolbelt/toolbelt.toml`), a `.mcp.json` in the first root,
//! and `[mcp_servers]` of the workspace's `toolbelt.toml` — a later one replaces
//! an earlier server of the same name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;
use toolbelt_upstream::{DEFAULT_SEPARATOR, McpJson, ServerConfig, ServerSpec};

use crate::config::FileConfig;

/// The servers a workspace uses, checked, and the separator of their tools' names.
#[derive(Debug, Clone, Default)]
pub struct Servers {
    /// The enabled servers.
    pub specs: Vec<ServerSpec>,
    /// What joins a server's name and its tools' names.
    pub separator: String,
    /// Servers the workspace's own files declare (`.mcp.json`, `[mcp_servers]` of
    /// a config inside the workspace) that are not trusted yet: not started
    /// until `toolbelt hooks trust` records them.
    pub untrusted: Vec<UntrustedServer>,
}

/// A server a workspace declares and the user has not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntrustedServer {
    /// `MCP server`, or `checker` for a `[format]`, `[lint]` or `[lsp]` command.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// The file that declares it.
    pub origin: String,
    /// What it would run (`npx -y pkg`, or its URL).
    pub runs: String,
    /// The hash `toolbelt hooks trust` records.
    pub hash: String,
    /// The workspace it belongs to (its first root), as the trust file names it.
    pub workspace: String,
}

impl UntrustedServer {
    /// Records it in `store` as trusted: it starts from now on, as it is now.
    ///
    /// # Errors
    /// The trust file cannot be read or written.
    pub fn trust(
        &self,
        store: &toolbelt_hooks::TrustStore,
    ) -> Result<(), toolbelt_hooks::TrustError> {
        store.trust(
            &self.hash,
            toolbelt_hooks::Trusted {
                workspace: self.workspace.clone(),
                what: format!("{} {}", self.kind, self.name),
                at_ms: toolbelt_store::now_ms(),
            },
        )
    }
}

/// The hash a workspace's server is trusted by: its name, what it runs, with
/// which arguments, environment, directory, address and headers.
fn server_hash(workspace: &Path, name: &str, c: &ServerConfig) -> String {
    let definition = format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        c.command, c.args, c.env, c.cwd, c.url, c.headers
    );
    toolbelt_hooks::definition_hash(
        &workspace.display().to_string(),
        &format!("MCP server {name}"),
        &definition,
        None,
    )
}

/// Only `[mcp_servers]` is read from the user's config.
#[derive(Debug, Default, Deserialize)]
struct UserConfig {
    #[serde(default)]
    mcp_servers: BTreeMap<String, ServerConfig>,
}

/// The user's config file: `$XDG_CONFIG_HOME/toolbelt/toolbelt.toml`, else
/// `~/.config/toolbelt/toolbelt.toml`.
pub fn user_config_path() -> Option<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = var("XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| h.join(".config")))?;
    Some(base.join("toolbelt").join("toolbelt.toml"))
}

/// The user's trust file, beside the user's config (none without a home): the
/// hashes of the workspaces' hooks and servers the user trusted.
pub fn trust_store() -> Option<toolbelt_hooks::TrustStore> {
    let config = user_config_path()?;
    Some(toolbelt_hooks::TrustStore::new(
        config.with_file_name(toolbelt_hooks::TRUST_FILE),
    ))
}

/// The servers of the user's config, `first_root/.mcp.json` and `file`.
///
/// # Errors
/// A file that cannot be read or parsed, or a server entry that is wrong (the
/// message names the server, the file and the key).
pub fn servers(file: &FileConfig, first_root: &Path) -> Result<Servers> {
    let separator = file
        .mcp
        .tool_separator
        .clone()
        .unwrap_or_else(|| DEFAULT_SEPARATOR.to_string());
    if separator.is_empty()
        || !separator
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        anyhow::bail!(
            "invalid [mcp] tool_separator {separator:?}: use letters, digits, '_' or '-' (default \"__\")"
        );
    }
    if let Some(outer) = std::env::var_os(toolbelt_upstream::NESTED_VAR) {
        tracing::info!(
            "started as MCP server {} of another toolbelt: no MCP servers of its own are started",
            outer.to_string_lossy()
        );
        return Ok(Servers {
            specs: Vec::new(),
            separator,
            untrusted: Vec::new(),
        });
    }
    let env = |name: &str| std::env::var(name).ok();
    // Each entry with the file it came from, the directory its paths start at,
    // and whether the workspace's own files declare it.
    let mut all: BTreeMap<String, (ServerConfig, String, PathBuf, bool)> = BTreeMap::new();
    if let Some(path) = user_config_path().filter(|p| p.is_file()) {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let user: UserConfig =
            toml::from_str(&text).with_context(|| format!("invalid {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        for (name, c) in user.mcp_servers {
            all.insert(name, (c, path.display().to_string(), base.clone(), false));
        }
    }
    let json = first_root.join(".mcp.json");
    if json.is_file() {
        for (name, c) in McpJson::load(&json, &env)? {
            all.insert(
                name,
                (
                    c,
                    json.display().to_string(),
                    first_root.to_path_buf(),
                    true,
                ),
            );
        }
    }
    let (origin, base) = match &file.path {
        Some(p) => (
            p.display().to_string(),
            p.parent().unwrap_or(first_root).to_path_buf(),
        ),
        None => ("toolbelt.toml".to_string(), first_root.to_path_buf()),
    };
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let workspace_file = file
        .path
        .as_deref()
        .is_none_or(|p| real(p).starts_with(real(first_root)));
    for (name, c) in &file.mcp_servers {
        all.insert(
            name.clone(),
            (c.clone(), origin.clone(), base.clone(), workspace_file),
        );
    }
    let trust = trust_store();
    let mut specs = Vec::new();
    let mut untrusted = Vec::new();
    for (name, (config, origin, base, declared_here)) in all {
        if !config.is_enabled() {
            continue;
        }
        // Checked whether trusted or not: a wrong entry is named at once.
        let mut spec = config.resolve(&name, &origin, &base, &separator, &env)?;
        if declared_here {
            let hash = server_hash(first_root, &name, &config);
            if !trust.as_ref().is_some_and(|t| t.is_trusted(&hash)) {
                let runs = match (&config.command, &config.url) {
                    (Some(c), _) => std::iter::once(c.as_str())
                        .chain(config.args.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join(" "),
                    (None, Some(u)) => u.clone(),
                    (None, None) => String::new(),
                };
                untrusted.push(UntrustedServer {
                    kind: "MCP server".to_owned(),
                    name,
                    origin,
                    runs,
                    hash,
                    workspace: first_root.display().to_string(),
                });
                continue;
            }
        }
        // A stdio server without a `cwd` starts in the first root.
        if let toolbelt_upstream::Transport::Stdio { cwd, .. } = &mut spec.transport
            && cwd.is_none()
        {
            *cwd = Some(first_root.to_path_buf());
        }
        specs.push(spec);
    }
    Ok(Servers {
        specs,
        separator,
        untrusted,
    })
}
