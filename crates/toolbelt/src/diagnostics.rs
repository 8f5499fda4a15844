//! The post-edit pipeline of a workspace: `[diagnostics]`, `[format.*]`,
//! `[lint.*]` and `[lsp.*]` read from the config file, checked, and built into the
//! engine the write tools run. The commands a config file inside the workspace
//! names run once `toolbelt hooks trust` recorded them, like its hooks and MCP
//! servers: a cloned repository does not get to run programs on the first edit.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use toolbelt_diagnostics::config::Config;

use crate::config::FileConfig;
use crate::upstream::UntrustedServer;

/// What the person's config asks for, the commands of a workspace's own file
/// that are not trusted left out (and listed).
pub fn config(file: &FileConfig, first_root: &Path) -> (Config, Vec<UntrustedServer>) {
    let mut config = Config {
        settings: file.diagnostics.clone().unwrap_or_default(),
        format: file.format.clone(),
        lint: file.lint.clone(),
        lsp: file.lsp.clone(),
    };
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let inside = file
        .path
        .as_deref()
        .is_some_and(|p| real(p).starts_with(real(first_root)));
    if !inside {
        return (config, Vec::new());
    }
    let origin = file
        .path
        .as_deref()
        .map_or_else(String::new, |p| p.display().to_string());
    let trust = crate::upstream::trust_store();
    let mut untrusted = Vec::new();
    let workspace = first_root.display().to_string();
    let mut trusted = |kind: &str, lang: &str, command: &[String]| {
        let name = format!("{kind}.{lang}");
        let runs = command.join(" ");
        let hash =
            toolbelt_hooks::definition_hash(&workspace, &format!("checker {name}"), &runs, None);
        if trust.as_ref().is_some_and(|t| t.is_trusted(&hash)) {
            return true;
        }
        untrusted.push(UntrustedServer {
            kind: "checker".to_owned(),
            name,
            origin: origin.clone(),
            runs,
            hash,
            workspace: workspace.clone(),
        });
        false
    };
    config
        .format
        .retain(|l, s| trusted("format", l, &s.command));
    config.lint.retain(|l, s| trusted("lint", l, &s.command));
    config.lsp.retain(|l, s| trusted("lsp", l, &s.command));
    (config, untrusted)
}

/// The engine of `config` for `roots`.
///
/// # Errors
/// A table that cannot be used, named with its field.
pub fn build(
    config: Config,
    roots: Vec<std::path::PathBuf>,
) -> Result<Arc<toolbelt_diagnostics::Engine>> {
    let engine = toolbelt_diagnostics::Engine::new(config, roots)
        .context("invalid diagnostics configuration in the config file")?;
    Ok(Arc::new(engine))
}
