//! `toolbelt mcp-servers`: the other MCP servers whose tools toolbelt offers — list
//! them, test one, add one to a config file or remove it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use toolbelt_upstream::{ServerConfig, ServerState, Upstreams};

use super::{exit_code, out, out_json};
use crate::cli::{AddServerArgs, Global, McpServersAction};
use crate::runtime::{self, Threads};
use crate::settings::Settings;
use crate::upstream::user_config_path;

/// Runs `action`.
///
/// # Errors
/// Bad settings, a server that is not configured, a config file that cannot be
/// read or written, or standard output cannot be written.
pub fn run(action: McpServersAction, g: &Global) -> Result<ExitCode> {
    match action {
        McpServersAction::List { json } => list(&Settings::new(g)?, json),
        McpServersAction::Test { name, json } => test(&Settings::new(g)?, &name, json),
        McpServersAction::Add(args) => add(g, args),
        McpServersAction::Remove { name, user } => remove(g, &name, user),
    }
}

/// The configured servers, without starting them.
fn list(settings: &Settings, json: bool) -> Result<ExitCode> {
    let specs = &settings.mcp_servers.specs;
    if json {
        let servers: Vec<Value> = specs
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "transport": s.transport.describe(),
                    "origin": s.origin,
                    "startup": format!("{:?}", s.startup).to_lowercase(),
                    "tool_timeout_s": s.tool_timeout.as_secs_f64(),
                    "tools": s.allow,
                    "disable": s.disable,
                })
            })
            .collect();
        out_json(&servers)?;
    } else if specs.is_empty() {
        out(&format!(
            "No MCP servers are configured. Add one with `toolbelt mcp-servers add NAME -- COMMAND ARGS...`\n\
             (or --url URL), or under [mcp_servers.NAME] in toolbelt.toml{}.\n",
            user_config_path()
                .map(|p| format!(" or {}", p.display()))
                .unwrap_or_default()
        ))?;
    } else {
        let mut text = String::new();
        for s in specs {
            text.push_str(&format!(
                "{}  {}  (from {})\n",
                s.name,
                s.transport.describe(),
                s.origin
            ));
        }
        out(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts server `name`, lists its tools, stops it; 1 when it does not answer.
fn test(settings: &Settings, name: &str, json: bool) -> Result<ExitCode> {
    let Some(spec) = settings
        .mcp_servers
        .specs
        .iter()
        .find(|s| s.name == name)
        .cloned()
    else {
        let names: Vec<&str> = settings
            .mcp_servers
            .specs
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        bail!(
            "no MCP server named {name:?} is configured{}",
            if names.is_empty() {
                String::new()
            } else {
                format!("; configured: {}", names.join(", "))
            }
        );
    };
    let mut spec = spec;
    // A test starts it now, lazy or not.
    spec.startup = toolbelt_upstream::Startup::Eager;
    let upstreams = Arc::new(Upstreams::new(
        vec![spec],
        &settings.mcp_servers.separator,
        None,
    ));
    let rt = runtime::start(Threads::One)?;
    rt.block_on(upstreams.start());
    let status = upstreams.status().remove(0);
    // Its own tools (not the shared mcp_resource).
    let prefix = format!("{name}{}", settings.mcp_servers.separator);
    let tools: Vec<String> = toolbelt_core::ToolSource::tools(upstreams.as_ref())
        .iter()
        .map(|t| t.spec().name.clone())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    let ok = matches!(status.state, ServerState::Running { .. });
    if json {
        let reason = match &status.state {
            ServerState::Failed { reason, .. } => Some(reason.clone()),
            _ => None,
        };
        out_json(&json!({
            "name": status.name,
            "transport": status.transport,
            "ok": ok,
            "tools": tools,
            "reason": reason,
        }))?;
    } else if let ServerState::Failed { reason, .. } = &status.state {
        out(&format!(
            "✗ {} ({}) is unavailable: {reason}\n",
            status.name, status.transport
        ))?;
    } else {
        let n = tools.len();
        let mut text = format!(
            "✓ {} ({}) answers, with {n} {}:\n",
            status.name,
            status.transport,
            toolbelt_core::human::plural(n as u64, "tool")
        );
        for t in &tools {
            text.push_str(&format!("  {t}\n"));
        }
        out(&text)?;
    }
    drop(upstreams);
    drop(rt);
    Ok(exit_code(ok))
}

/// The config file `add` and `remove` edit: the user's with `user`, else the one
/// the command line names, else `toolbelt.toml` in the first root.
fn config_file(g: &Global, user: bool) -> Result<PathBuf> {
    if user {
        return user_config_path()
            .context("there is no user config directory (set HOME or XDG_CONFIG_HOME)");
    }
    if let Some(path) = &g.config {
        return Ok(path.clone());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let first = g.roots.first().map_or(cwd.clone(), |r| cwd.join(r));
    Ok(first.join("toolbelt.toml"))
}

/// Reads `path` as an editable TOML document (empty when it does not exist).
fn read_doc(path: &Path) -> Result<toml_edit::DocumentMut> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    text.parse()
        .with_context(|| format!("invalid TOML in {}", path.display()))
}

/// Writes `doc` to `path` (its directory made when missing).
fn write_doc(path: &Path, doc: &toml_edit::DocumentMut) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, doc.to_string())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `KEY=VALUE` pairs.
fn pairs(items: &[String], what: &str) -> Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| {
            let (k, v) = item
                .split_once('=')
                .with_context(|| format!("{what} {item:?} is not KEY=VALUE"))?;
            Ok((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

/// Adds server `args.name` to the config file, after checking it as it will be read.
fn add(g: &Global, args: AddServerArgs) -> Result<ExitCode> {
    let path = config_file(g, args.user)?;
    let (command, rest) = match args.command.split_first() {
        Some((c, rest)) => (Some(c.clone()), rest.to_vec()),
        None => (None, Vec::new()),
    };
    let config = ServerConfig {
        command,
        args: rest,
        env: pairs(&args.env, "--env")?,
        url: args.url.clone(),
        headers: pairs(&args.headers, "--header")?,
        bearer_token_env: args.bearer_token_env.clone(),
        ..ServerConfig::default()
    };
    // The checks of every start, now: a wrong entry is never written.
    let base = path.parent().unwrap_or(Path::new("."));
    let env = |name: &str| std::env::var(name).ok();
    config.resolve(
        &args.name,
        &path.display().to_string(),
        base,
        toolbelt_upstream::DEFAULT_SEPARATOR,
        &env,
    )?;
    let mut doc = read_doc(&path)?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .with_context(|| format!("mcp_servers in {} is not a table", path.display()))?;
    if servers.contains_key(&args.name) {
        bail!(
            "an MCP server named {:?} is already in {}; remove it first (`toolbelt mcp-servers remove {}`)",
            args.name,
            path.display(),
            args.name
        );
    }
    let mut entry = toml_edit::Table::new();
    if let Some(command) = &config.command {
        entry["command"] = toml_edit::value(command.as_str());
        let mut list = toml_edit::Array::new();
        for a in &config.args {
            list.push(a.as_str());
        }
        entry["args"] = toml_edit::value(list);
    }
    if let Some(url) = &config.url {
        entry["url"] = toml_edit::value(url.as_str());
    }
    if let Some(var) = &config.bearer_token_env {
        entry["bearer_token_env"] = toml_edit::value(var.as_str());
    }
    for (key, map) in [("env", &config.env), ("headers", &config.headers)] {
        if !map.is_empty() {
            let mut inline = toml_edit::InlineTable::new();
            for (k, v) in map {
                inline.insert(k, v.as_str().into());
            }
            entry[key] = toml_edit::value(inline);
        }
    }
    servers.insert(&args.name, toml_edit::Item::Table(entry));
    write_doc(&path, &doc)?;
    trust_added(g, &args.name)?;
    out(&format!(
        "Added MCP server {} to {}; its tools are {}{}*. Check it with `toolbelt mcp-servers test {}`.\n",
        args.name,
        path.display(),
        args.name,
        toolbelt_upstream::DEFAULT_SEPARATOR,
        args.name
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Trusts server `name` as just added by the person (in a workspace's config a
/// server runs only once trusted: adding it here is that choice).
fn trust_added(g: &Global, name: &str) -> Result<()> {
    let Ok(settings) = crate::settings::Settings::new(g) else {
        return Ok(());
    };
    let Some(store) = crate::upstream::trust_store() else {
        return Ok(());
    };
    for s in settings
        .mcp_servers
        .untrusted
        .iter()
        .filter(|s| s.name == name)
    {
        s.trust(&store)
            .context("cannot record the new server as trusted")?;
    }
    Ok(())
}

/// Removes server `name` from the config file.
fn remove(g: &Global, name: &str, user: bool) -> Result<ExitCode> {
    let path = config_file(g, user)?;
    let mut doc = read_doc(&path)?;
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(toml_edit::Item::as_table_like_mut)
        .and_then(|t| t.remove(name))
        .is_some();
    if !removed {
        bail!(
            "there is no MCP server named {name:?} in {}{}",
            path.display(),
            if user {
                ""
            } else {
                " (use --user for the user's config; a server of .mcp.json is removed by editing that file)"
            }
        );
    }
    write_doc(&path, &doc)?;
    out(&format!(
        "Removed MCP server {name} from {}.\n",
        path.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}
