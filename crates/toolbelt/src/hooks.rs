//! The person's hooks, as the settings make them: the user's own (`[hooks]` of
//! `$XDG_CONFIG_HOME/toolbelt/toolbelt.toml`, trusted) and the workspace's
//! (`[hooks]` in its configuration, run once trusted), checked by the user's
//! trust file (`$XDG_CONFIG_HOME/toolbelt/trusted.json`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Deserialize;
use toolbelt_core::Registry;
use toolbelt_hooks::{HookEnv, Hooks, HooksConfig, Layer, Source};

use crate::settings::{Settings, real_path};
use crate::upstream::{trust_store, user_config_path};

/// Only `[hooks]` is read here from the user's config.
#[derive(Debug, Default, Deserialize)]
struct UserHooks {
    #[serde(default)]
    hooks: HooksConfig,
}

/// The `[hooks]` layers of these settings: the user's file, then the
/// configuration file's (the workspace's when it lies inside a root).
///
/// # Errors
/// The user's hooks file cannot be read or parsed.
pub fn layers(settings: &Settings) -> Result<Vec<Layer>> {
    let mut layers = Vec::new();
    if let Some(path) = user_config_path() {
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let file: UserHooks = toml::from_str(&text)
                    .with_context(|| format!("invalid hooks file {}", path.display()))?;
                layers.push(Layer {
                    config: file.hooks,
                    source: Source::User(path),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", path.display()));
            }
        }
    }
    if let Some(config) = &settings.file.hooks {
        let path = settings
            .file
            .path
            .clone()
            .unwrap_or_else(|| PathBuf::from("toolbelt.toml"));
        let inside = in_workspace(&path, &settings.roots);
        layers.push(Layer {
            config: config.clone(),
            source: if inside {
                Source::Workspace(path)
            } else {
                Source::User(path)
            },
        });
    }
    layers.retain(|l| !l.config.is_empty());
    Ok(layers)
}

/// Whether `path` lies in one of `roots` (a file the agent's tools can reach).
fn in_workspace(path: &Path, roots: &[PathBuf]) -> bool {
    let real = real_path(path);
    roots
        .iter()
        .any(|r| path.starts_with(r) || real.starts_with(real_path(r)))
}

/// The paths the agent may not rewrite beyond the built-in ones (`toolbelt.toml`
/// and `.toolbelt/hooks/` at each root): the scripts the hooks of `layers` run,
/// and the configuration file when it lies in the workspace.
pub fn protected_paths(settings: &Settings, layers: &[Layer]) -> Vec<PathBuf> {
    let Some(root) = settings.roots.first() else {
        return Vec::new();
    };
    let mut paths = toolbelt_hooks::script_paths(layers, root);
    if let Some(file) = &settings.file.path
        && in_workspace(file, &settings.roots)
        && file.is_file()
    {
        paths.push(file.clone());
    }
    paths.sort();
    paths.dedup();
    paths
}

/// The hooks of `layers` for `registry`'s tools (none when there are none).
///
/// # Errors
/// An invalid `[hooks]` table (an unknown event, a bad matcher...).
pub fn build(layers: &[Layer], registry: &Registry) -> Result<Option<Hooks>> {
    if layers.is_empty() {
        return Ok(None);
    }
    let hooks =
        Hooks::new(layers, env(registry)).context("invalid [hooks] in the configuration")?;
    Ok(Some(hooks))
}

/// What hooks need to know of `registry`.
fn env(registry: &Registry) -> HookEnv {
    let claude = toolbelt_tools::profiles::by_name("claude");
    let claude_names = registry
        .names()
        .iter()
        .filter_map(|name| registry.get(name))
        .map(|tool| {
            let canonical = tool.spec().name.clone();
            let exposed = claude
                .as_ref()
                .map_or_else(|| canonical.clone(), |p| p.exposed(&canonical).to_string());
            (canonical, exposed)
        })
        .collect();
    HookEnv {
        roots: registry.session().roots().to_vec(),
        kinds: toolbelt_tools::tool_kinds(registry),
        claude_names,
        trust: trust_store().map(Arc::new),
    }
}

/// One warning on standard error listing the workspace's hooks and MCP servers
/// that are not trusted (and so do not run), when there are any.
pub fn warn_untrusted(hooks: Option<&Hooks>, servers: &[crate::upstream::UntrustedServer]) {
    let mut names: Vec<String> = hooks
        .map(Hooks::list)
        .unwrap_or_default()
        .into_iter()
        .filter(|i| !i.trusted)
        .map(|i| format!("hook {} '{}'", i.event.as_str(), i.name))
        .collect();
    names.extend(servers.iter().map(|s| format!("{} {}", s.kind, s.name)));
    if !names.is_empty() {
        eprintln!(
            "toolbelt: warning: this workspace's {} not trusted and will not run until you review {} and run `toolbelt hooks trust`: {}",
            if names.len() == 1 {
                "entry is"
            } else {
                "entries are"
            },
            if names.len() == 1 { "it" } else { "them" },
            names.join(", ")
        );
    }
}
