//! A model at work on the workspace's tools, as `toolbelt agent` and scheduled
//! jobs set it up: the options of a run (with the project's instructions), the
//! subagents (`task`, `spawn`), and runs nobody watches ([`run_unattended`], with
//! the [`Unattended`] approver).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolbelt_agent::transcript::TranscriptSink;
use toolbelt_agent::{
    Agent, AgentOptions, AgentTypes, Outcome, Provider, SubagentLimits, SubagentModel,
    SubagentSettings, Subagents, build_provider,
};
use toolbelt_core::{
    Approval, ApprovalRequest, Approver, BoxFuture, Origin, Registry, error_chain,
};
use toolbelt_store::StoreHandle;

use crate::config::{AgentConfig, SubagentsConfig};
use crate::settings::AgentSettings;

/// Project instructions read from the first workspace root, in this order.
const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];
/// The most of one instructions file put into the system prompt.
const MAX_INSTRUCTIONS_BYTES: usize = 64 * 1024;

/// The reason a non-interactive run gives the model for a call that needs approval.
pub const UNATTENDED_REASON: &str = "no one is there to approve it in a non-interactive run; \
     rerun with --yes or change the [permissions] rules";

/// The reason a scheduled job's run gives the model for a call that needs approval.
pub const JOB_REASON: &str = "no one is there to approve it in a scheduled job; \
     do without it, or say in the answer that the [permissions] rules must allow it";

/// The reason a run nobody watches gives the model for a call a guard holds (a
/// small model's destructive command), `--yes` or not.
pub const GUARDED_REASON: &str = "no one approves a small model's commands that destroy work \
     in a run nobody watches, not even with --yes; the user can run it, or allow it by name in \
     the [permissions] rules";

/// Approves every call an `ask` rule covers (`--yes`) or none, with a reason
/// ([`UNATTENDED_REASON`], [`JOB_REASON`]): for `-p` runs and scheduled jobs, where
/// nobody is there to answer. A call a guard holds is never approved
/// ([`GUARDED_REASON`]): `--yes` approves calls unseen, which is what the guard
/// is there to prevent.
#[derive(Debug, Clone, Copy)]
pub struct Unattended {
    /// `--yes`.
    pub approve_all: bool,
    /// Why a call is declined, for the model.
    pub reason: &'static str,
}

impl Approver for Unattended {
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        let answer = match request.guard {
            Some(_) => Approval::Decline {
                reason: Some(GUARDED_REASON.to_string()),
            },
            None if self.approve_all => Approval::Approve,
            None => Approval::Decline {
                reason: Some(self.reason.to_string()),
            },
        };
        Box::pin(std::future::ready(answer))
    }
}

/// The options of a run on `registry`, its transcript in `runs_dir`.
pub fn options(settings: &AgentSettings, registry: &Registry, runs_dir: PathBuf) -> AgentOptions {
    let first_root = registry
        .session()
        .roots()
        .first()
        .cloned()
        .unwrap_or_else(|| registry.session().cwd().to_path_buf());
    AgentOptions {
        protocol: settings.protocol,
        model_size: settings.model_size,
        constraint: settings.constraint,
        max_steps: settings.max_steps,
        repeat_warn: AgentOptions::default()
            .repeat_warn
            .min(settings.max_repeats - 1)
            .max(2),
        repeat_stop: settings.max_repeats,
        context_window: settings.context_window,
        instructions: instructions(&first_root),
        transcript_dir: Some(runs_dir),
        ..AgentOptions::default()
    }
}

/// Where the transcripts of the runs on `registry`'s workspace are kept.
pub fn runs_dir(registry: &Registry) -> PathBuf {
    registry.session().state_dir().join("agent").join("runs")
}

/// `AGENTS.md` and `CLAUDE.md` of `root`, as (name, text).
fn instructions(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in INSTRUCTION_FILES {
        let path = root.join(name);
        let Ok(mut text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        if text.len() > MAX_INSTRUCTIONS_BYTES {
            let mut cut = MAX_INSTRUCTIONS_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[... cut: the file is longer]");
        }
        out.push((name.to_string(), text));
    }
    out
}

/// The subagents of the agents of this workspace (`task`, `spawn`): the agent
/// types of `.toolbelt/agents/` in the roots and `agents/` in the user's config
/// directory, the limits of `[agent.subagents]`, background reports kept in
/// `store`. Their model is set later ([`configure_subagents`]).
pub fn subagents(config: &AgentConfig, roots: &[PathBuf], store: &StoreHandle) -> Subagents {
    let config_home = toolbelt_core::state::user_config_home_from_env();
    let types = AgentTypes::load(&AgentTypes::dirs(roots, config_home.as_deref()));
    let limits = subagent_limits(&config.subagents);
    let mut settings = SubagentSettings::new(types);
    settings.limits = limits;
    settings.store = Some(store.clone());
    Subagents::new(settings)
}

/// `[agent.subagents]` over the defaults.
fn subagent_limits(c: &SubagentsConfig) -> SubagentLimits {
    let d = SubagentLimits::default();
    SubagentLimits {
        max_depth: c.max_depth.unwrap_or(d.max_depth),
        max_running: c.max_running.unwrap_or(d.max_running),
        max_steps: c.max_steps.unwrap_or(d.max_steps),
        timeout: c.timeout_secs.map_or(d.timeout, Duration::from_secs),
        background_timeout: c
            .background_timeout_secs
            .map_or(d.background_timeout, Duration::from_secs),
        token_budget: c.token_budget.or(d.token_budget),
    }
}

/// Gives `subagents` the model of `settings` (its provider already built), their
/// options derived from the parent's `options`.
pub fn configure_subagents(
    subagents: &Subagents,
    settings: &AgentSettings,
    options: &AgentOptions,
    provider: Arc<dyn Provider>,
) {
    let mut options = options.clone();
    options.system_prompt = None;
    subagents.configure(SubagentModel {
        provider,
        provider_config: Some(settings.provider.clone()),
        options,
    });
}

/// Gives `subagents` the model that scheduled jobs use (`[agent]` and the
/// environment); false when none is set.
pub fn configure_subagents_for_jobs(
    subagents: &Subagents,
    file: &AgentConfig,
    registry: &Registry,
) -> bool {
    let Ok(settings) = AgentSettings::for_jobs(file) else {
        return false;
    };
    let Ok(provider) = build_provider(settings.provider.clone()) else {
        return false;
    };
    let options = options(&settings, registry, runs_dir(registry));
    configure_subagents(subagents, &settings, &options, provider);
    true
}

/// Runs `prompt` on `registry` to its end or until `cancel`, without anyone to
/// approve calls (its approver is the caller's: [`Unattended`]), its transcript in
/// `<state>/agent/runs` (and each of its lines handed to `transcripts`, when
/// given), its calls from `origin` (`cron` with the job; the run and turn are
/// added). Returns the outcome, the answer (or what ended the run) and the run's
/// id, which is put in `run_id` too as soon as the run has it (before its first
/// call).
pub async fn run_unattended(
    registry: Arc<Registry>,
    settings: &AgentSettings,
    prompt: &str,
    cancel: &CancellationToken,
    run_id: &OnceLock<String>,
    origin: Origin,
    transcripts: Option<Arc<dyn TranscriptSink>>,
) -> (Outcome, String, String) {
    let mut settings = settings.clone();
    for learnt in settings.ask_server().await {
        tracing::info!("{learnt}");
    }
    let settings = &settings;
    let mut options = options(settings, &registry, runs_dir(&registry));
    options.transcript_sink = transcripts;
    let provider = match build_provider(settings.provider.clone()) {
        Ok(p) => p,
        Err(e) => return (Outcome::Error, error_chain(&e), String::new()),
    };
    // Nobody watches the events: the transcript keeps the run.
    let (events_tx, _events_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::new(registry, provider, options, events_tx);
    agent.set_origin(origin);
    let _ = run_id.set(agent.run_id().to_string());
    let ended = agent.run(prompt, cancel).await;
    agent.end(ended.outcome.as_str()).await;
    (ended.outcome, ended.message, agent.run_id().to_string())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    use super::*;

    fn request(args: &Value) -> ApprovalRequest<'_> {
        ApprovalRequest {
            tool: "bash",
            subject: Some("echo hi"),
            arguments: args,
            rule: Some("bash(echo:*)"),
            guard: None,
        }
    }

    #[tokio::test]
    async fn unattended_declines_with_a_reason_unless_told_yes() {
        let args = json!({"command": "echo hi"});
        let no = Unattended {
            approve_all: false,
            reason: UNATTENDED_REASON,
        };
        assert_eq!(
            no.approve(request(&args)).await,
            Approval::Decline {
                reason: Some(UNATTENDED_REASON.into())
            }
        );
        let yes = Unattended {
            approve_all: true,
            reason: UNATTENDED_REASON,
        };
        assert_eq!(yes.approve(request(&args)).await, Approval::Approve);
        // A guarded call, never.
        let guard = toolbelt_core::Guard {
            rule: "ask before rm -r (built-in guard)".into(),
            danger: "it deletes build and everything in it".into(),
            instead: "delete single files".into(),
        };
        let guarded = ApprovalRequest {
            guard: Some(&guard),
            ..request(&args)
        };
        assert_eq!(
            yes.approve(guarded).await,
            Approval::Decline {
                reason: Some(GUARDED_REASON.into())
            }
        );
    }

    #[test]
    fn instructions_come_from_the_first_root() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(instructions(dir.path()), Vec::new());
        std::fs::write(dir.path().join("CLAUDE.md"), "Use tabs.\n").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Run cargo test.\n").unwrap();
        assert_eq!(
            instructions(dir.path()),
            vec![
                ("AGENTS.md".to_string(), "Run cargo test.\n".to_string()),
                ("CLAUDE.md".to_string(), "Use tabs.\n".to_string()),
            ]
        );
    }
}
