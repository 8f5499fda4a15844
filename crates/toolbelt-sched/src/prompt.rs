//! [`PromptRunner`]: how a job's prompt is run. The scheduler knows nothing of
//! agents: whoever wires it (the `toolbelt` binary) gives it a runner, and the
//! scheduler keeps the run's outcome and sends its answer.

use std::fmt;

use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_store::CronJob;

/// The outcome of a run that gave its final answer.
pub const FINAL_ANSWER: &str = "final_answer";

/// The outcome of a run cut off because its server stopped. It is not run again
/// on its own (the job fires at its next time, or with `run_now`); the job's last
/// run and its channel say so.
pub const INTERRUPTED: &str = "interrupted";

/// What a prompt job's run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptRun {
    /// How the run ended: [`FINAL_ANSWER`], or why not (`error`, `max_steps`,
    /// `repeated_call`, `cancelled`, [`INTERRUPTED`]).
    pub outcome: String,
    /// The final answer, or what went wrong.
    pub text: String,
    /// The run's transcript id, when one was written.
    pub run_id: Option<String>,
}

impl PromptRun {
    /// A run that could not start or failed, saying why.
    pub fn failed(outcome: impl Into<String>, text: impl Into<String>) -> PromptRun {
        PromptRun {
            outcome: outcome.into(),
            text: text.into(),
            run_id: None,
        }
    }

    /// True when the run gave its final answer.
    pub fn answered(&self) -> bool {
        self.outcome == FINAL_ANSWER
    }

    /// What the job's channel gets: the answer, or what became of the run.
    pub fn message(&self, job: &CronJob) -> String {
        if self.answered() {
            return self.text.clone();
        }
        format!(
            "Job {:?} ended without an answer ({}): {}",
            job.name, self.outcome, self.text
        )
    }
}

/// Runs the prompt of a job that fired, to its end or until `cancel`.
pub trait PromptRunner: Send + Sync + fmt::Debug {
    /// Runs `job`'s prompt; never fails: a failure is a [`PromptRun`] saying so.
    fn run<'a>(&'a self, job: &'a CronJob, cancel: CancellationToken) -> BoxFuture<'a, PromptRun>;
}
