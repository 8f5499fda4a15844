//! The tools of a workspace as the settings make them: the registry (roots,
//! profile, permission rules, sandbox, output budget, selection) and what its tools
//! share (the store, the channels and scheduler, subagents).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use toolbelt_agent::Subagents;
use toolbelt_checkpoint::Checkpoints;
use toolbelt_core::output::OutputBudget;
use toolbelt_core::{Registry, Session};
use toolbelt_net::search::Backend;
use toolbelt_sandbox::Sandbox;
use toolbelt_sched::Messaging;
use toolbelt_store::StoreHandle;
use toolbelt_tools::{BuiltinOptions, WebOptions};
use toolbelt_upstream::Upstreams;

use crate::config::FileConfig;
use crate::jobs::{self, AgentJobs};
use crate::settings::{AgentSettings, Settings, real_path, token_dir, user_state_home};
use crate::{leftovers, model, saved_outputs};

/// A registry and what its tools share.
#[derive(Debug)]
pub struct Workspace {
    /// The tools.
    pub registry: Registry,
    /// The store of the todos, the planner, the jobs and the call log (opened on
    /// first use).
    pub store: StoreHandle,
    /// Whether calls are recorded in the call log.
    pub call_log: bool,
    /// The channels, outbox and scheduler (`message`, `cron`, `toolbelt serve`).
    pub messaging: Messaging,
    /// What runs the prompts of jobs, when `[agent]` names a model.
    pub jobs: Option<Arc<AgentJobs>>,
    /// The subagent tools' runtime, when they are served (`toolbelt agent`, or a
    /// model set in `[agent]`); [`Subagents::attach`] it to the finished registry.
    pub subagents: Option<Subagents>,
    /// The other MCP servers whose tools the registry offers; started by
    /// [`Workspace::start_servers`] on the runtime that serves the calls.
    pub upstreams: Arc<Upstreams>,
    /// What is kept so that the calls' changes to the files can be undone (none
    /// when `[checkpoints] enabled = false`).
    pub checkpoints: Option<Checkpoints>,
    /// The person's hooks (none when none is configured).
    pub hooks: Option<Arc<toolbelt_hooks::Hooks>>,
    /// The post-edit pipeline (formatter, syntax check, linters, language servers).
    pub checks: Arc<toolbelt_diagnostics::Engine>,
}

impl Workspace {
    /// Builds the registry of the command line's tools. `for_agent`: the subagent
    /// tools are served (their model is set by `toolbelt agent`); otherwise they are
    /// when `[agent]` (or the environment) names a model.
    ///
    /// `inline_files`: small file operations run on the calling thread (see
    /// [`Session::with_inline_file_work`]): for `toolbelt mcp`, whose
    /// single-threaded runtime answers one request at a time.
    ///
    /// # Errors
    /// The sandbox cannot be set up; an unknown profile; invalid permission rules,
    /// web settings, channels or tool selection.
    pub fn build(settings: &Settings, for_agent: bool, inline_files: bool) -> Result<Workspace> {
        let Settings {
            roots,
            file,
            state_dir,
            sandbox,
            network,
            store,
            call_log,
            profile,
            allow_private_network,
            tool_selection,
            descriptions,
            mcp_servers,
            small_model,
            ..
        } = settings;
        // The hooks' definitions and scripts: the agent may not rewrite them.
        let hook_layers = crate::hooks::layers(settings)?;
        let protected = crate::hooks::protected_paths(settings, &hook_layers);
        let sandbox = Sandbox::new(*sandbox, *network, roots)
            .context("the shell sandbox cannot be set up (see `toolbelt doctor`)")?
            .map(|sandbox| hide_state(sandbox, roots, state_dir))
            .transpose()?
            .map(|sandbox| {
                sandbox
                    .protecting(&protected)
                    .context("the shell sandbox cannot keep the hooks read-only")
            })
            .transpose()?
            .map(Arc::new);
        let budget = file
            .output
            .max_bytes
            .map_or_else(OutputBudget::default, OutputBudget::with_max_bytes);
        let mut session = Session::new(roots[0].clone())
            .with_roots(roots.clone())
            .with_state_dir(state_dir)
            .with_budget(budget)
            .with_inline_file_work(inline_files)
            .with_small_model(*small_model);
        if let Some(ms) = file.timeout_ms {
            session = session.with_timeout(Duration::from_millis(ms));
        }
        let session = leftovers::sweep_at_start(session);
        let store = StoreHandle::lazy(store.clone());
        let session = saved_outputs::attach(session, &store);
        let mut registry = Registry::new(session);
        registry.set_descriptions(descriptions.unwrap_or_default());
        if let Some(name) = profile {
            let profile = toolbelt_tools::profiles::by_name(name).with_context(|| {
                format!(
                    "unknown profile {name:?}; choose one of: {}",
                    toolbelt_tools::profiles::NAMES.join(", ")
                )
            })?;
            registry.set_profile(profile);
        }
        let policy = file
            .permissions
            .as_ref()
            .map(|rules| {
                rules
                    .build()
                    .context("invalid [permissions] in the config file")
            })
            .transpose()?;
        let policy = if protected.is_empty() {
            policy
        } else {
            Some(
                policy
                    .unwrap_or_default()
                    .with_protected_paths(&protected)
                    .context("the hook scripts cannot be protected")?,
            )
        };
        // A small model's destructive commands wait for a person, even under
        // `--yes`, unless a rule names them.
        let policy = if *small_model {
            Some(
                policy
                    .unwrap_or_else(toolbelt_policy::Policy::permissive)
                    .with_destructive_guard(true),
            )
        } else {
            policy
        };
        let web = web_options(file, *allow_private_network)?;
        let (messaging, jobs) = jobs::messaging(
            &file.channels,
            &file.agent,
            registry.session().state_dir(),
            &store,
        )?;
        toolbelt_tools::register_builtins_with(
            &mut registry,
            BuiltinOptions {
                sandbox,
                web,
                store: Some(store.clone()),
                ..BuiltinOptions::default()
            },
        )?;
        if let Some(policy) = policy {
            toolbelt_tools::apply_policy(&mut registry, policy)
                .context("invalid [permissions] in the config file")?;
        }
        // After the rules: a rewind asks first unless one of them decides it.
        let checkpoints = checkpoints(&file.checkpoints, &registry, &store, state_dir);
        if let Some(checkpoints) = &checkpoints {
            toolbelt_tools::register_checkpoints(&mut registry, checkpoints)?;
        }
        let checks = crate::diagnostics::build(settings.checks.clone(), roots.clone())?;
        toolbelt_tools::register_diagnostics(
            &mut registry,
            Arc::clone(&checks) as Arc<dyn toolbelt_core::AfterWrite>,
        )?;
        toolbelt_tools::register_messaging(&mut registry, &messaging)?;
        let subagents = if for_agent || AgentSettings::for_jobs(&file.agent).is_ok() {
            let roots = registry.session().roots().to_vec();
            let subagents = model::subagents(&file.agent, &roots, &store);
            subagents.register(&mut registry)?;
            if !for_agent {
                model::configure_subagents_for_jobs(&subagents, &file.agent, &registry);
            }
            Some(subagents)
        } else {
            None
        };
        let upstreams = Arc::new(Upstreams::new(
            mcp_servers.specs.clone(),
            &mcp_servers.separator,
            Some(&state_dir.join("mcp-servers")),
        ));
        if !upstreams.is_empty() {
            registry.add_source(Arc::clone(&upstreams) as Arc<dyn toolbelt_core::ToolSource>);
        }
        let selection = file.tools.selection(tool_selection.as_deref());
        registry
            .select(&selection, toolbelt_tools::TOOLSETS)
            .context("invalid --tools, TOOLBELT_TOOLS or [tools]")?;
        registry.set_checkpointer(
            checkpoints
                .clone()
                .map(|c| Arc::new(c) as Arc<dyn toolbelt_core::Checkpointer>),
        );
        let hooks = crate::hooks::build(&hook_layers, &registry)?.map(Arc::new);
        registry.set_hooks(
            hooks
                .clone()
                .map(|h| h as Arc<dyn toolbelt_core::hooks::CallHooks>),
        );
        Ok(Workspace {
            registry,
            store,
            call_log: *call_log,
            messaging,
            jobs,
            subagents,
            upstreams,
            checkpoints,
            hooks,
            checks,
        })
    }

    /// Starts the other MCP servers (each within its startup timeout; one that
    /// fails is logged, and its calls say why). Call it on the runtime that runs
    /// the calls: their connections live there.
    pub async fn start_servers(&self) {
        self.upstreams.start().await;
    }

    /// Gives the subagents, if any, the finished registry's tools.
    pub fn attach_subagents(&self) {
        if let Some(subagents) = &self.subagents {
            subagents.attach(&self.registry);
        }
    }
}

/// `sandbox`, hiding from commands the state directory, the serve token's and
/// every workspace's state in the user's state directory (made first, so that
/// there is something to hide).
/// The workspace's checkpoints, a rewind a kill cut short finished first; none
/// when they are turned off.
fn checkpoints(
    config: &crate::config::CheckpointsConfig,
    registry: &Registry,
    store: &StoreHandle,
    state_dir: &Path,
) -> Option<Checkpoints> {
    let settings = config.settings();
    if !settings.enabled {
        return None;
    }
    let roots = registry.session().roots().to_vec();
    let checkpoints = Checkpoints::new(settings, store.clone(), state_dir, roots);
    if let Err(e) = checkpoints.recover() {
        tracing::warn!(
            "a rewind that was cut short cannot be finished yet: {}",
            toolbelt_core::error_chain(&e)
        );
    }
    Some(checkpoints)
}

fn hide_state(sandbox: Sandbox, roots: &[PathBuf], state_dir: &Path) -> Result<Sandbox> {
    let mut dirs = vec![state_dir.to_path_buf()];
    if let Some(home) = user_state_home() {
        dirs.push(home);
    }
    let probe = Session::new(&roots[0])
        .with_roots(roots.to_vec())
        .with_state_dir(state_dir);
    if let Ok(dir) = token_dir(&probe) {
        dirs.push(dir);
    }
    // A state directory holding a root (`--state-dir .`) cannot be hidden without
    // hiding the workspace.
    dirs.retain(|dir| {
        !roots
            .iter()
            .any(|r| real_path(r).starts_with(real_path(dir)))
    });
    for dir in &dirs {
        // The user's directories are made; a workspace's own is used only if there.
        if !roots.iter().any(|r| dir.starts_with(r)) {
            private_dir(dir)?;
        }
    }
    sandbox
        .hiding(&dirs)
        .context("the shell sandbox cannot be set up (see `toolbelt doctor`)")
}

/// Makes `dir` (and its parents) when missing, readable by this user only.
fn private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

/// The web tools' settings from `[web]` and `--allow-private-network`.
fn web_options(file: &FileConfig, allow_private_network: bool) -> Result<WebOptions> {
    let cfg = &file.web;
    let url = cfg
        .search_url
        .as_deref()
        .map(|u| url::Url::parse(u).with_context(|| format!("invalid [web] search_url {u:?}")))
        .transpose()?;
    let search = match cfg.search.as_deref().unwrap_or("duckduckgo") {
        "duckduckgo" => Backend::duckduckgo(),
        "brave" => Backend::brave(std::env::var("BRAVE_API_KEY").unwrap_or_default()),
        "searxng" => Backend::Searxng {
            base_url: url
                .clone()
                .context("[web] search = \"searxng\" needs search_url, the instance's address")?,
        },
        other => bail!("unknown [web] search {other:?}; choose one of: duckduckgo, brave, searxng"),
    };
    let search = match url {
        Some(url) => search.with_base_url(url),
        None => search,
    };
    Ok(WebOptions {
        allow_private_network: allow_private_network || cfg.allow_private_network.unwrap_or(false),
        user_agent: cfg.user_agent.clone(),
        proxy: cfg.proxy.clone(),
        search,
    })
}
