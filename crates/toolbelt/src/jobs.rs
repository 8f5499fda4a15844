//! Channels and scheduled jobs: the [`Messaging`] (channels, outbox, scheduler)
//! of the `message` and `cron` tools, which `toolbelt serve` and `toolbelt cron run`
//! run in the background, and [`AgentJobs`], which runs the prompts of jobs with
//! the agent of `[agent]`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;
use toolbelt_agent::transcript::TranscriptSink;
use toolbelt_core::{
    Answers, Approval, ApprovalRequest, Approver, Asker, BoxFuture, Origin, Question,
    QuestionOption, Registry,
};
use toolbelt_sched::{ChannelConfig, Channels, Messaging, PromptRun, PromptRunner};
use toolbelt_server::PendingQuestions;
use toolbelt_store::{CronJob, RunEventWriter, StoreHandle};

use crate::config::AgentConfig;
use crate::model::{self, JOB_REASON, Unattended};
use crate::settings::AgentSettings;

/// The channels of the config file over `store`, secrets read from the
/// environment; jobs run prompts when `[agent]` (or the environment) names a model.
/// Returns the runner of prompts too, to [`AgentJobs::attach`] the tools to.
///
/// # Errors
/// Invalid `[channels]`.
pub fn messaging(
    channels: &BTreeMap<String, ChannelConfig>,
    agent: &AgentConfig,
    state_dir: &Path,
    store: &StoreHandle,
) -> Result<(Messaging, Option<Arc<AgentJobs>>)> {
    let env = |name: &str| std::env::var(name).ok();
    let channels = Channels::from_config(channels, &env, state_dir)
        .context("invalid [channels] in the config file")?;
    let messaging = Messaging::new(store.clone(), channels);
    // Without a usable [agent], `cron` refuses prompt jobs and says how to set one.
    let Ok(settings) = AgentSettings::for_jobs(agent) else {
        return Ok((messaging, None));
    };
    let jobs = Arc::new(AgentJobs {
        settings,
        tools: OnceLock::new(),
    });
    let runner: Arc<dyn PromptRunner> = jobs.clone();
    Ok((messaging.with_prompt_runner(runner), Some(jobs)))
}

/// Runs the prompts of jobs with the agent of `[agent]`, on the tools of the
/// command that runs the scheduler (`toolbelt serve`, `toolbelt cron run`): the
/// same roots, rules, sandbox and call log; calls that an `ask` rule covers are
/// declined, as in `toolbelt agent -p`, unless the runs have someone to ask: on
/// the web page of `toolbelt serve`, the model's questions (`ask_user`) and the
/// calls that need approval (an `ask` rule, a hook that asks) wait for the
/// person; elsewhere nobody can answer them. Under `toolbelt serve` each run's
/// transcript goes to the store as well, where every replica lists it.
#[derive(Debug)]
pub struct AgentJobs {
    settings: AgentSettings,
    tools: OnceLock<JobTools>,
}

/// What the runs of [`AgentJobs`] work with.
#[derive(Debug)]
struct JobTools {
    /// A fork of the command's registry, with the jobs' approver.
    registry: Arc<Registry>,
    /// Where the runs' questions wait for an answer, if anywhere.
    questions: Option<PendingQuestions>,
    /// Where the runs' transcript lines go besides their files, if anywhere.
    transcripts: Option<Arc<dyn TranscriptSink>>,
}

impl AgentJobs {
    /// Gives the runs the tools of `registry` (a fork of it: with its own
    /// approver, which declines what needs approval) and, with `questions`, someone
    /// to ask: each run's questions wait there, under the run's id; with
    /// `transcripts`, where their transcripts' lines go too. Once; later calls are
    /// ignored.
    pub fn attach(
        &self,
        registry: &Registry,
        questions: Option<PendingQuestions>,
        transcripts: Option<Arc<dyn TranscriptSink>>,
    ) {
        let tools = JobTools {
            registry: Arc::new(job_fork(registry)),
            questions,
            transcripts,
        };
        let _ = self.tools.set(tools);
    }
}

/// A fork of `registry` whose calls under an `ask` rule are declined.
fn job_fork(registry: &Registry) -> Registry {
    let mut tools = registry.fork();
    tools.set_approver(Some(Arc::new(Unattended {
        approve_all: false,
        reason: JOB_REASON,
    })));
    tools
}

/// The label of the choice that approves a call.
const ALLOW_ONCE: &str = "Allow once";

/// Puts a call that needs approval to the person as a question (on the web
/// page): "Allow once" runs it; anything else declines it, with what they wrote.
struct AskingApprover {
    asker: Arc<dyn Asker>,
}

impl Approver for AskingApprover {
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let why = request
                .rule
                .map(|r| format!(" under {r}"))
                .unwrap_or_default();
            let what = request
                .subject
                .map(|s| format!(": {s}"))
                .unwrap_or_default();
            let question = Question {
                header: "Approval".into(),
                question: format!(
                    "A scheduled run asks to call {}{what}, which needs your approval{why}. Allow it?",
                    request.tool
                ),
                options: vec![
                    QuestionOption {
                        label: ALLOW_ONCE.into(),
                        description: "run this call".into(),
                    },
                    QuestionOption {
                        label: "Deny".into(),
                        description: "refuse it (say why in your own words)".into(),
                    },
                ],
                multi_select: false,
            };
            match self.asker.ask(std::slice::from_ref(&question)).await {
                Ok(Answers::Answered(answers))
                    if answers
                        .iter()
                        .any(|a| a.selected.iter().any(|s| s == ALLOW_ONCE)) =>
                {
                    Approval::Approve
                }
                Ok(Answers::Answered(answers)) => Approval::Decline {
                    reason: answers.into_iter().find_map(|a| a.text),
                },
                Ok(Answers::Declined { reason }) => Approval::Decline { reason },
                Err(e) => {
                    tracing::warn!(
                        "an approval could not be asked: {}",
                        toolbelt_core::error_chain(&e)
                    );
                    Approval::Decline {
                        reason: Some(JOB_REASON.to_string()),
                    }
                }
            }
        })
    }
}

impl PromptRunner for AgentJobs {
    fn run<'a>(&'a self, job: &'a CronJob, cancel: CancellationToken) -> BoxFuture<'a, PromptRun> {
        Box::pin(async move {
            let (Some(tools), Some(prompt)) = (self.tools.get(), job.prompt.as_deref()) else {
                return PromptRun::failed(
                    "error",
                    "the process that fired the job has no tools to run its prompt with",
                );
            };
            let run_id = Arc::new(OnceLock::new());
            // A registry of the run's own, whose questions say which run asks.
            let registry = match &tools.questions {
                Some(questions) => {
                    let mut registry = job_fork(&tools.registry);
                    let asker = Arc::new(questions.for_run(Arc::clone(&run_id)));
                    registry.set_approver(Some(Arc::new(AskingApprover {
                        asker: asker.clone(),
                    })));
                    registry.set_asker(Some(asker));
                    Arc::new(registry)
                }
                None => Arc::clone(&tools.registry),
            };
            let origin = Origin {
                job: Some(job.name.clone()),
                ..Origin::new("cron")
            };
            let (outcome, text, run_id) = model::run_unattended(
                registry,
                &self.settings,
                prompt,
                &cancel,
                &run_id,
                origin,
                tools.transcripts.clone(),
            )
            .await;
            PromptRun {
                outcome: outcome.as_str().to_string(),
                text,
                run_id: (!run_id.is_empty()).then_some(run_id),
            }
        })
    }
}

/// The scheduler and the outbox running in the background.
#[derive(Debug)]
pub struct Background {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    transcripts: Option<RunEventWriter>,
}

impl Background {
    /// A token that stops them when cancelled, without waiting: no new firing is
    /// claimed, no new message taken, and the sends cut off give their messages
    /// back (for the other replicas on the store). [`Background::stop`] then waits.
    pub fn stopper(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Stops them: prompt runs under way are cut off and recorded as interrupted
    /// (within the scheduler's grace period), their transcripts' last lines
    /// written to the store, then this returns.
    pub async fn stop(self) {
        self.cancel.cancel();
        let grace = std::time::Duration::from_millis(toolbelt_sched::STOP_GRACE_MS + 1_000);
        if tokio::time::timeout(grace, self.task).await.is_err() {
            tracing::warn!("the scheduler did not stop within its grace period");
        }
        if let Some(writer) = &self.transcripts {
            writer.flush().await;
        }
    }
}

/// Where a server's runs go, so that its replicas behave as one: their questions
/// wait in `questions`, their transcripts are copied to `store` (as runs of the
/// served workspace, kept by `replica`).
#[derive(Debug)]
pub struct Shared<'a> {
    /// Where the runs' questions wait.
    pub questions: &'a PendingQuestions,
    /// The store the transcripts are copied to.
    pub store: &'a StoreHandle,
    /// This process, among the replicas.
    pub replica: &'a str,
}

/// Starts `messaging` on the current runtime until [`Background::stop`]: the
/// scheduler and the outbox of `toolbelt serve`, the jobs' prompts run on
/// `registry`'s tools, their questions and transcripts where `shared` says.
pub fn spawn(
    messaging: &Messaging,
    jobs: Option<&AgentJobs>,
    registry: &Registry,
    shared: &Shared<'_>,
) -> Background {
    let transcripts = jobs.map(|jobs| {
        let workspace = toolbelt_store::workspace_key(registry.session());
        let writer = RunEventWriter::start(shared.store.clone(), workspace, shared.replica);
        jobs.attach(
            registry,
            Some(shared.questions.clone()),
            Some(Arc::new(writer.clone())),
        );
        writer
    });
    let cancel = CancellationToken::new();
    let m = messaging.clone();
    let c = cancel.clone();
    let task = tokio::spawn(async move { m.run(c).await });
    Background {
        cancel,
        task,
        transcripts,
    }
}
