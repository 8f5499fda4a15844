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
        });
    }
    let env = |name: &str| std::env::var(name).ok();
    // Each entry with the file it came from and the directory its paths start at.
    let mut all: BTreeMap<String, (ServerConfig, String, PathBuf)> = BTreeMap::new();
    if let Some(path) = user_config_path().filter(|p| p.is_file()) {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let user: UserConfig =
            toml::from_str(&text).with_context(|| format!("invalid {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        for (name, c) in user.mcp_servers {
            all.insert(name, (c, path.display().to_string(), base.clone()));
        }
    }
    let json = first_root.join(".mcp.json");
    if json.is_file() {
        for (name, c) in McpJson::load(&json, &env)? {
            all.insert(
                name,
                (c, json.display().to_string(), first_root.to_path_buf()),
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
    for (name, c) in &file.mcp_servers {
        all.insert(name.clone(), (c.clone(), origin.clone(), base.clone()));
    }
    let mut specs = Vec::new();
    for (name, (config, origin, base)) in all {
        if !config.is_enabled() {
            continue;
        }
        let mut spec = config.resolve(&name, &origin, &base, &separator, &env)?;
        // A stdio server without a `cwd` starts in the first root.
        if let toolbelt_upstream::Transport::Stdio { cwd, .. } = &mut spec.transport
            && cwd.is_none()
        {
            *cwd = Some(first_root.to_path_buf());
        }
        specs.push(spec);
    }
    Ok(Servers { specs, separator })
}
