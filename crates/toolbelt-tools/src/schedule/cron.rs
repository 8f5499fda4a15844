//! `cron`: jobs that send a message, or run a prompt by the agent and send its
//! answer, on a schedule, kept in the store and fired by
//! `toolbelt serve` or `toolbelt cron run`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::human::plural;
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
    Violation,
};
use toolbelt_sched::{Messaging, Schedule, Zone};
use toolbelt_store::{
    CronJob, CronJobStatus, NewCronJob, RUNNING, create_cron_job, find_cron_job, get_message,
    list_cron_jobs, remove_cron_job,
};

use crate::delivery::{delivery_reply, delivery_wait, with_channels};
use crate::stored::workspace_key;

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CronAction {
    /// Create a job (name, schedule, message or prompt, channel; tz, chat_id).
    Add,
    /// List the jobs of this workspace with their next and last runs.
    List,
    /// Remove a job by name.
    Remove,
    /// Fire a job now, whatever its schedule.
    RunNow,
}

/// Arguments of `cron`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronParams {
    /// `add`, `list`, `remove` or `run_now`.
    pub action: CronAction,
    /// The job's name, unique in the workspace (add, remove, run_now).
    #[serde(default)]
    pub name: Option<String>,
    /// The text the job sends (add).
    #[serde(default)]
    pub message: Option<String>,
    /// Instead of `message` (add): a task the agent carries out with the tools when the job fires; its final answer is sent to `channel`, or, without a channel, kept as the job's last run.
    #[serde(default)]
    pub prompt: Option<String>,
    /// When (add): a cron expression (5 fields, or 6 with seconds first), `every 30s` / `every 10m` / `every 2h`, or one time in RFC 3339.
    #[serde(default)]
    pub schedule: Option<String>,
    /// The IANA time zone the schedule is read in (add), e.g. `Europe/Berlin`; default the machine's.
    #[serde(default)]
    pub tz: Option<String>,
    /// The configured channel the message (or the prompt's answer) goes to (add).
    #[serde(default)]
    pub channel: Option<String>,
    /// The chat in the channel, when it needs one (add).
    #[serde(default)]
    pub chat_id: Option<String>,
}

/// The latest firing of a job.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LastRunData {
    /// When it was due, in the job's time zone.
    pub scheduled_for: String,
    /// `sent`, `pending` (being delivered), `failed`, or `unknown`; for a prompt
    /// job also `running` (the agent is at work) and, without a channel,
    /// `answered` or `failed`.
    pub status: String,
    /// Why delivery failed or is being retried.
    pub error: Option<String>,
    /// A prompt job's run: how it ended (`final_answer`, `error`, `max_steps`...).
    pub outcome: Option<String>,
    /// A prompt job's answer, or what went wrong.
    pub result: Option<String>,
    /// The run's transcript id (`toolbelt agent --resume ID`).
    pub run_id: Option<String>,
}

/// A job as `cron` shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct JobData {
    /// Its name.
    pub name: String,
    /// The schedule as given.
    pub schedule: String,
    /// Its time zone.
    pub tz: String,
    /// What it sends (empty for a prompt job).
    pub message: String,
    /// The prompt the agent runs.
    pub prompt: Option<String>,
    /// Where (none: a prompt job whose answer is only kept).
    pub channel: Option<String>,
    /// The chat.
    pub chat_id: Option<String>,
    /// Its next run in its time zone (RFC 3339); null when none is left.
    pub next_run: Option<String>,
    /// Its latest run.
    pub last_run: Option<LastRunData>,
}

/// Result of `cron`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CronOutput {
    /// The action done.
    pub action: CronAction,
    /// The jobs listed, or the one added, removed or fired.
    pub jobs: Vec<JobData>,
    /// For run_now: the id of the message sent, also its idempotency key.
    pub message_id: Option<String>,
    /// For run_now: `sent`, `pending` or `failed`; `running` for a prompt job.
    pub delivery: Option<String>,
}

/// The `cron` tool: registered when a channel is configured or jobs can run prompts.
#[derive(Debug, Clone)]
pub struct Cron {
    messaging: Messaging,
}

impl Cron {
    /// The tool, on `messaging`'s store, channels and scheduler.
    pub fn new(messaging: Messaging) -> Cron {
        Cron { messaging }
    }
}

fn zone_of(job: &CronJob) -> Zone {
    Zone::parse(&job.tz).unwrap_or_else(|_| Zone::utc())
}

/// A stored job as `cron` (and the web page) shows it: its next run and the
/// times of its last run in its own time zone.
pub fn job_data(job: &CronJob, last: Option<&toolbelt_store::LastRun>) -> JobData {
    let zone = zone_of(job);
    JobData {
        name: job.name.clone(),
        schedule: job.schedule.clone(),
        tz: job.tz.clone(),
        message: job.message.clone(),
        prompt: job.prompt.clone(),
        channel: job.channel.clone(),
        chat_id: job.chat_id.clone(),
        next_run: job.next_at.map(|at| zone.format(at)),
        last_run: last.map(|l| LastRunData {
            scheduled_for: zone.format(l.scheduled_for),
            status: last_status(job, l),
            // A delivered run's earlier failures are history, not its result.
            error: l
                .error
                .clone()
                .filter(|_| l.status != Some(toolbelt_store::OutboxStatus::Sent)),
            outcome: l.outcome.clone(),
            result: l.result.clone(),
            run_id: l.run_id.clone(),
        }),
    }
}

/// What became of a job's latest run, in one word.
fn last_status(job: &CronJob, l: &toolbelt_store::LastRun) -> String {
    match (l.status, l.outcome.as_deref()) {
        (Some(s), _) => s.as_str().replace("sending", "pending"),
        (None, Some(RUNNING)) => RUNNING.to_string(),
        (None, Some(outcome)) if job.channel.is_none() => {
            if outcome == toolbelt_sched::FINAL_ANSWER {
                "answered".to_string()
            } else {
                "failed".to_string()
            }
        }
        (None, _) => "unknown".to_string(),
    }
}

fn job_line(j: &JobData) -> String {
    let mut line = format!(
        "- {} [{} {}]{} -> {}{}: next {}",
        j.name,
        j.schedule,
        j.tz,
        if j.prompt.is_some() { " prompt" } else { "" },
        j.channel.as_deref().unwrap_or("(kept)"),
        j.chat_id
            .as_deref()
            .map(|c| format!(" {c}"))
            .unwrap_or_default(),
        j.next_run.as_deref().unwrap_or("none")
    );
    if let Some(last) = &j.last_run {
        line.push_str(&format!("; last {} {}", last.scheduled_for, last.status));
        if let Some(e) = &last.error {
            line.push_str(&format!(" ({e})"));
        }
        if let Some(outcome) = last.outcome.as_deref().filter(|o| *o != RUNNING) {
            let result = last.result.as_deref().unwrap_or_default();
            let first = result.lines().next().unwrap_or_default();
            let short: String = first.chars().take(120).collect();
            let cut = if short.len() < result.len() {
                "…"
            } else {
                ""
            };
            line.push_str(&format!(", {outcome}: {short}{cut}"));
        }
    }
    line
}

fn required(field: &str, value: Option<&String>, action: &str) -> Result<String, ToolError> {
    match value.map(|v| v.trim()).filter(|v| !v.is_empty()) {
        Some(v) => Ok(v.to_string()),
        None => Err(ToolError::new(
            ErrorCode::InvalidParams,
            format!("{field} is required for action {action:?}"),
        )
        .hint("add: name, schedule, message and channel (or prompt, with or without a channel); remove and run_now: name")),
    }
}

impl Cron {
    /// What an `add` makes the job do: `(message, prompt, channel)`.
    fn what_it_does(
        &self,
        p: &CronParams,
    ) -> Result<(String, Option<String>, Option<String>), ToolError> {
        let given = |v: Option<&String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let channel = given(p.channel.as_ref());
        let (message, prompt) = match (given(p.message.as_ref()), given(p.prompt.as_ref())) {
            (Some(_), Some(_)) => {
                return Err(ToolError::new(
                    ErrorCode::InvalidParams,
                    "give message or prompt, not both",
                )
                .hint("message: the text the job sends; prompt: a task the agent carries out, its answer sent"));
            }
            (None, None) => {
                return Err(ToolError::new(
                    ErrorCode::InvalidParams,
                    "message or prompt is required for action \"add\"",
                )
                .hint("message: the text the job sends (with channel); prompt: a task the agent carries out when the job fires"));
            }
            (Some(message), None) => (message, None),
            (None, Some(prompt)) => {
                if !self.messaging.runs_prompts() {
                    return Err(ToolError::new(
                        ErrorCode::InvalidParams,
                        "prompt: no agent is configured to run it",
                    )
                    .hint("ask the user to configure one under [agent] in toolbelt.toml (provider, model, base_url, api_key_env; or TOOLBELT_AGENT_MODEL), or give a message instead"));
                }
                (String::new(), Some(prompt))
            }
        };
        match &channel {
            Some(name) => {
                let content = prompt.as_ref().map_or(message.as_str(), |_| "(the answer)");
                self.messaging
                    .channels()
                    .check(name, p.chat_id.as_deref(), content, false)?;
            }
            None if prompt.is_none() => {
                return Err(ToolError::new(
                    ErrorCode::InvalidParams,
                    "channel is required for a job that sends a message",
                )
                .hint("name one of the configured channels (see this tool's description)"));
            }
            None => {}
        }
        Ok((message, prompt, channel))
    }

    /// `run_now` of a prompt job: due now, run by the scheduler in the background.
    async fn prompt_now(&self, job: CronJob) -> ToolResult<CronOutput> {
        if !self.messaging.scheduler().make_due(&job).await? {
            return Err(ToolError::new(
                ErrorCode::NotFound,
                format!("job {:?} was removed meanwhile", job.name),
            ));
        }
        let goes = job.channel.as_deref().map_or_else(
            || "its answer is kept as its last run".to_string(),
            |c| format!("its answer goes to {c}"),
        );
        let text = format!(
            "Job {} is due now: the agent runs its prompt under `toolbelt serve` (or `toolbelt cron run`), at once if one is running, else at its start; {goes}. See how it went with action \"list\".",
            job.name
        );
        Ok(Reply::new(
            CronOutput {
                action: CronAction::RunNow,
                jobs: vec![job_data(&job, None)],
                message_id: None,
                delivery: Some(RUNNING.to_string()),
            },
            text,
        ))
    }
}

impl TypedTool for Cron {
    type Params = CronParams;
    type Output = CronOutput;

    fn spec(&self) -> ToolSpec {
        let prompts = if self.messaging.runs_prompts() {
            ""
        } else {
            "\n\nPrompts are not available here (no agent is configured): jobs send messages."
        };
        let base = format!("{}{prompts}", include_str!("cron.md").trim_end());
        let description = if self.messaging.channels().is_empty() {
            format!(
                "{base}\n\nNo channel is configured: jobs run prompts, their answers kept as each job's last run."
            )
        } else {
            with_channels(&base, &self.messaging)
        };
        ToolSpec::describe("cron", description)
            .title("Scheduled Jobs")
            .category(Category::Schedule)
            .permission("store:write")
            .key_argument("name")
            .hints(Hints::writes().destructive().open_world())
            .example(
                "A weekday morning summary to the team channel",
                json!({
                    "action": "add",
                    "name": "standup-reminder",
                    "schedule": "25 9 * * 1-5",
                    "tz": "Europe/Berlin",
                    "message": "Stand-up in 5 minutes: post your blockers.",
                    "channel": "team"
                }),
                json!({
                    "action": "add",
                    "jobs": [{
                        "name": "standup-reminder",
                        "schedule": "25 9 * * 1-5",
                        "tz": "Europe/Berlin",
                        "message": "Stand-up in 5 minutes: post your blockers.",
                        "channel": "team",
                        "prompt": null,
                        "chat_id": null,
                        "next_run": "2026-05-04T09:25:00+02:00",
                        "last_run": null
                    }],
                    "message_id": null,
                    "delivery": null
                }),
            )
    }

    fn validate(&self, p: &CronParams) -> Vec<Violation> {
        let mut out = Vec::new();
        if let Some(tz) = &p.tz
            && Zone::parse(tz).is_err()
        {
            out.push(Violation::new(
                "tz",
                format!("unknown time zone {tz:?}: use an IANA name such as \"Europe/Berlin\" or \"UTC\""),
            ));
        }
        out
    }

    async fn call(&self, ctx: &ToolContext, p: CronParams) -> ToolResult<CronOutput> {
        let workspace = workspace_key(ctx);
        let store = self.messaging.store().get().await?;
        let clock = self.messaging.outbox().clock().clone();
        match p.action {
            CronAction::Add => {
                let name = required("name", p.name.as_ref(), "add")?;
                let schedule_text = required("schedule", p.schedule.as_ref(), "add")?;
                let (message, prompt, channel) = self.what_it_does(&p)?;
                let zone = match &p.tz {
                    Some(tz) => Zone::parse(tz)?,
                    None => self.messaging.default_zone(),
                };
                let schedule = Schedule::parse(&schedule_text, zone)?;
                let now = clock.now_ms();
                let first = schedule.first(now, zone)?;
                let job = create_cron_job(
                    store,
                    &NewCronJob {
                        workspace,
                        name,
                        schedule: schedule_text,
                        tz: zone.name().to_string(),
                        message,
                        prompt,
                        channel,
                        chat_id: p.chat_id,
                        next_at: Some(first),
                    },
                    now,
                )
                .await?;
                self.messaging.scheduler().wake();
                let data = job_data(&job, None);
                let text = format!(
                    "Added job {}: first run {}. It fires while `toolbelt serve` (or `toolbelt cron run`) is running; a run missed while none was fires once at the next start.",
                    job.name,
                    data.next_run.as_deref().unwrap_or("none")
                );
                Ok(Reply::new(
                    CronOutput {
                        action: p.action,
                        jobs: vec![data],
                        message_id: None,
                        delivery: None,
                    },
                    text,
                ))
            }
            CronAction::List => {
                let jobs = list_cron_jobs(store, Some(&workspace)).await?;
                let data: Vec<JobData> = jobs
                    .iter()
                    .map(|CronJobStatus { job, last }| job_data(job, last.as_ref()))
                    .collect();
                let text = if data.is_empty() {
                    "No jobs in this workspace. Add one with action \"add\".".to_string()
                } else {
                    let lines: Vec<String> = data.iter().map(job_line).collect();
                    format!(
                        "{} {}:\n{}",
                        data.len(),
                        plural(data.len() as u64, "job"),
                        lines.join("\n")
                    )
                };
                Ok(Reply::new(
                    CronOutput {
                        action: p.action,
                        jobs: data,
                        message_id: None,
                        delivery: None,
                    },
                    text,
                )
                .stat("jobs", jobs.len()))
            }
            CronAction::Remove => {
                let name = required("name", p.name.as_ref(), "remove")?;
                let job = remove_cron_job(store, &workspace, &name).await?;
                self.messaging.scheduler().wake();
                Ok(Reply::new(
                    CronOutput {
                        action: p.action,
                        jobs: vec![job_data(&job, None)],
                        message_id: None,
                        delivery: None,
                    },
                    format!("Removed job {}.", job.name),
                ))
            }
            CronAction::RunNow => {
                let name = required("name", p.name.as_ref(), "run_now")?;
                let job = find_cron_job(store, &workspace, &name)
                    .await?
                    .ok_or_else(|| {
                        ToolError::new(ErrorCode::NotFound, format!("no job named {name:?}"))
                            .hint("list the jobs with action \"list\"")
                    })?;
                if job.prompt.is_some() {
                    return self.prompt_now(job).await;
                }
                let firing = self.messaging.scheduler().fire_now(&job).await?;
                let outbox = self.messaging.outbox();
                tokio::select! {
                    r = outbox.deliver(&firing.message_id, delivery_wait(ctx)) => {
                        r?;
                    }
                    () = ctx.cancel_token().cancelled() => {
                        return Err(ToolError::new(
                            ErrorCode::Cancelled,
                            format!("cancelled; job {name} fired and its message {} stays in the outbox, to be delivered", firing.message_id),
                        ));
                    }
                }
                let message = get_message(store, &firing.message_id)
                    .await?
                    .ok_or_else(|| {
                        ToolError::new(
                            ErrorCode::Internal,
                            "the fired message vanished from the outbox",
                        )
                    })?;
                let reply = delivery_reply(&message, &format!("Job {name} fired; its message"))?;
                let text = reply.text.clone();
                Ok(Reply::new(
                    CronOutput {
                        action: p.action,
                        jobs: vec![job_data(&job, None)],
                        message_id: Some(message.id.clone()),
                        delivery: Some(reply.data.status),
                    },
                    text,
                ))
            }
        }
    }
}
