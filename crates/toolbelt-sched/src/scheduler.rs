//! [`Scheduler`]: fires the jobs that are due, each firing claimed once in the store.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolbelt_core::error_chain;
use toolbelt_store::{
    Claim, CronJob, FireMode, Firing, PromptRunRecord, StoreHandle, claim_firing, due_cron_jobs,
    make_cron_job_due, next_cron_due, prune_cron_firings, record_prompt_run,
};

use crate::clock::Clock;
use crate::error::SchedResult;
use crate::outbox::Outbox;
use crate::prompt::{PromptRun, PromptRunner};
use crate::schedule::{Schedule, Zone};

/// Longest sleep of an idle scheduler, in milliseconds: how soon it notices a job
/// that another process added.
pub const MAX_IDLE_MS: i64 = 5_000;
/// Jobs read per query while firing.
const FIRE_BATCH: i64 = 500;
/// Claims older than this are forgotten (each job's latest is kept).
pub const CLAIM_RETENTION_MS: i64 = 7 * 86_400_000;
/// The most of a prompt job's answer kept as its last result, in characters (the
/// whole answer is in the run's transcript and in the message sent).
pub const MAX_RESULT_CHARS: usize = 4_000;
/// How long a stopping scheduler waits for prompt runs to record their end, in ms.
pub const STOP_GRACE_MS: u64 = 2_000;

/// The next firing of `job` strictly after `after` (ms). `None` when nothing is
/// left (a one-shot job that fired) or the stored schedule cannot be read.
pub fn next_fire(job: &CronJob, after: i64) -> Option<i64> {
    let zone = Zone::parse(&job.tz).ok()?;
    let schedule = match Schedule::parse(&job.schedule, zone) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(job = %job.name, "stored schedule cannot be read: {}", error_chain(&e));
            return None;
        }
    };
    schedule.next_after(after, job.created_at, zone)
}

/// Fires due jobs: each due `(job, scheduled_for)` is claimed in the store, which
/// puts the job's message into the outbox in the same transaction. A prompt job's
/// firing starts its run on the [`PromptRunner`], whose answer then goes into the
/// outbox. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Scheduler {
    store: StoreHandle,
    outbox: Outbox,
    clock: Arc<dyn Clock>,
    instance: String,
    wake: Arc<Notify>,
    prompts: Option<Arc<dyn PromptRunner>>,
    /// The prompt runs under way.
    runs: TaskTracker,
    /// Stops them.
    stop: CancellationToken,
}

impl Scheduler {
    /// A scheduler on `store`, handing messages to `outbox`, on the outbox's clock.
    pub fn new(store: StoreHandle, outbox: Outbox) -> Scheduler {
        let clock = outbox.clock().clone();
        Scheduler {
            store,
            outbox,
            clock,
            instance: format!(
                "{}-{}",
                std::process::id(),
                uuid::Uuid::new_v4()
                    .simple()
                    .to_string()
                    .get(..8)
                    .unwrap_or("0")
            ),
            wake: Arc::new(Notify::new()),
            prompts: None,
            runs: TaskTracker::new(),
            stop: CancellationToken::new(),
        }
    }

    /// The same scheduler running prompt jobs on `runner`.
    pub fn with_prompt_runner(mut self, runner: Arc<dyn PromptRunner>) -> Scheduler {
        self.prompts = Some(runner);
        self
    }

    /// The runner of prompt jobs, if any.
    pub fn prompt_runner(&self) -> Option<&Arc<dyn PromptRunner>> {
        self.prompts.as_ref()
    }

    /// The same scheduler recording its claims as `instance`.
    pub fn with_instance(mut self, instance: impl Into<String>) -> Scheduler {
        self.instance = instance.into();
        self
    }

    /// The name its claims carry.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The outbox.
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// Tells [`Scheduler::run`] that the jobs changed.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Fires every job due now, once: a job that missed several times while
    /// nothing ran fires once, keyed by its first missed time, and moves on to its
    /// first time after now; a one-shot job is removed. Returns the firings won.
    ///
    /// # Errors
    /// A store failure.
    pub async fn fire_due(&self) -> SchedResult<Vec<Firing>> {
        let store = self.store.store().await?;
        let now = self.clock.now_ms();
        let mut fired = Vec::new();
        loop {
            let jobs = due_cron_jobs(store, now, FIRE_BATCH).await?;
            let full = i64::try_from(jobs.len()).unwrap_or(i64::MAX) >= FIRE_BATCH;
            for job in jobs {
                let id = uuid::Uuid::now_v7().to_string();
                // The claim records when it was made; the job is due by `now`.
                let at = self.clock.now_ms().max(now);
                let claim = claim_firing(
                    store,
                    job.id,
                    at,
                    &self.instance,
                    &id,
                    FireMode::Due,
                    |job, _| next_fire(job, at),
                )
                .await?;
                if let Claim::Fired(firing) = claim {
                    tracing::info!(job = %firing.job.name, scheduled_for = firing.scheduled_for, "job fired");
                    if firing.job.prompt.is_some() {
                        self.start_prompt((*firing).clone());
                    }
                    fired.push(*firing);
                }
            }
            if !full {
                break;
            }
        }
        if !fired.is_empty() {
            self.outbox.wake();
        }
        Ok(fired)
    }

    /// Starts the run of a prompt job's firing in the background.
    fn start_prompt(&self, firing: Firing) {
        let this = self.clone();
        self.runs.spawn(async move {
            if let Err(e) = this.run_prompt(&firing).await {
                tracing::warn!(job = %firing.job.name, "recording the job's run: {e}");
            }
        });
    }

    /// Runs the prompt of `firing`'s job and records the outcome: the claim keeps
    /// it as the job's last run, and the answer (or, for a run that failed, what
    /// became of it) goes into the outbox when the job has a channel. A failed run
    /// is not fired again.
    ///
    /// # Errors
    /// A store failure while recording.
    pub async fn run_prompt(&self, firing: &Firing) -> SchedResult<PromptRun> {
        let started = self.clock.now_ms();
        let mut run = match &self.prompts {
            Some(runner) => runner.run(&firing.job, self.stop.child_token()).await,
            None => PromptRun::failed(
                "error",
                "no agent is configured to run prompts: set a model under [agent] in toolbelt.toml",
            ),
        };
        if self.stop.is_cancelled() && !run.answered() {
            let secs = (self.clock.now_ms() - started).max(0) / 1000;
            run = PromptRun {
                outcome: crate::prompt::INTERRUPTED.to_string(),
                text: format!(
                    "the server stopped {secs} s into the run, which was cut off; it is not run \
                     again until the job's next time (or run_now)"
                ),
                run_id: run.run_id,
            };
        }
        tracing::info!(job = %firing.job.name, outcome = %run.outcome, "job's prompt ran");
        let record = PromptRunRecord {
            outcome: run.outcome.clone(),
            result: clip(&run.text, MAX_RESULT_CHARS),
            run_id: run.run_id.clone(),
            content: firing.job.channel.as_ref().map(|name| {
                let max = self
                    .outbox
                    .channels()
                    .get(name)
                    .map_or(usize::MAX, |c| c.max_content_chars());
                clip(&run.message(&firing.job), max.saturating_sub(60))
            }),
        };
        let store = self.store.store().await?;
        record_prompt_run(store, firing, &record, self.clock.now_ms()).await?;
        if record.content.is_some() {
            self.outbox.wake();
        }
        Ok(run)
    }

    /// Waits for the prompt runs under way to end.
    pub async fn wait_runs(&self) {
        self.runs.close();
        self.runs.wait().await;
        self.runs.reopen();
    }

    /// Makes a prompt job due now: the running scheduler fires it at once (and a
    /// scheduler started later, at its start), then goes on with its schedule. A
    /// prompt's run may take long, so it runs in the background of the scheduler,
    /// not in the call that asked. Returns whether the job still exists.
    ///
    /// # Errors
    /// A store failure.
    pub async fn make_due(&self, job: &CronJob) -> SchedResult<bool> {
        let store = self.store.store().await?;
        let found = make_cron_job_due(store, job.id, self.clock.now_ms()).await?;
        self.wake();
        Ok(found)
    }

    /// Fires `job` now, whatever its schedule, which stays as it is (a prompt
    /// job's run starts in the background, as [`Scheduler::fire_due`] starts it).
    ///
    /// # Errors
    /// A store failure; [`crate::SchedError::Request`] when the job is gone.
    pub async fn fire_now(&self, job: &CronJob) -> SchedResult<Firing> {
        let store = self.store.store().await?;
        let id = uuid::Uuid::now_v7().to_string();
        let now = self.clock.now_ms();
        match claim_firing(
            store,
            job.id,
            now,
            &self.instance,
            &id,
            FireMode::Manual,
            |j, _| j.next_at,
        )
        .await?
        {
            Claim::Fired(firing) => {
                if firing.job.prompt.is_some() {
                    self.start_prompt((*firing).clone());
                }
                self.outbox.wake();
                Ok(*firing)
            }
            Claim::Gone => Err(crate::SchedError::Request(format!(
                "job {:?} was removed meanwhile",
                job.name
            ))),
            Claim::NotDue | Claim::Taken => Err(crate::SchedError::Request(format!(
                "job {:?} was fired at this very moment already; look at its last run with action \"list\"",
                job.name
            ))),
        }
    }

    /// Fires jobs until `cancel`: fires what is due, then sleeps until the next
    /// job is due (at most [`MAX_IDLE_MS`]) or [`Scheduler::wake`] is called.
    /// Never polls faster than jobs are due.
    pub async fn run(&self, cancel: CancellationToken) {
        let mut last_prune = i64::MIN;
        loop {
            if cancel.is_cancelled() {
                break;
            }
            if let Err(e) = self.fire_due().await {
                tracing::warn!("scheduler: {e}");
            }
            let now = self.clock.now_ms();
            let store = self.store.store().await.ok();
            if let Some(store) = store
                && now.saturating_sub(last_prune) > 3_600_000
            {
                last_prune = now;
                if let Err(e) = prune_cron_firings(store, now - CLAIM_RETENTION_MS).await {
                    tracing::warn!("scheduler: pruning old claims: {e}");
                }
            }
            let next = match store {
                Some(store) => next_cron_due(store).await.ok().flatten(),
                None => None,
            };
            // Wake at the due time (rounded up to the next millisecond).
            let sleep_ms = next.map_or(MAX_IDLE_MS, |at| (at - now).clamp(1, MAX_IDLE_MS));
            let sleep_ms = u64::try_from(sleep_ms).unwrap_or(1_000);
            tokio::select! {
                () = cancel.cancelled() => break,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(Duration::from_millis(sleep_ms)) => {}
            }
        }
        // Runs under way end as cancelled, and say so.
        self.stop.cancel();
        let _ = tokio::time::timeout(Duration::from_millis(STOP_GRACE_MS), self.wait_runs()).await;
    }
}

/// `text` cut to `max` characters, marked when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!(
            "{}… [cut: the whole answer is in the run's transcript]",
            &text[..cut]
        ),
    }
}
