//! `cron`: jobs that send a message on a schedule (seed 001's CronTool), kept in the
//! store and fired by `toolbelt serve` or `toolbelt cron run`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
    Violation,
};
use toolbelt_sched::{Messaging, SchedError, Schedule, Zone};
use toolbelt_store::{
    CronJob, CronJobStatus, NewCronJob, create_cron_job, find_cron_job, get_message,
    list_cron_jobs, remove_cron_job, store_error,
};

use super::workspace_key;
use crate::message::message::{channel_list, delivery_reply, delivery_wait};

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CronAction {
    /// Create a job (name, schedule, message, channel; tz, chat_id).
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
    /// When (add): a cron expression (5 fields, or 6 with seconds first), `every 30s` / `every 10m` / `every 2h`, or one time in RFC 3339.
    #[serde(default)]
    pub schedule: Option<String>,
    /// The IANA time zone the schedule is read in (add), e.g. `Europe/Berlin`; default the machine's.
    #[serde(default)]
    pub tz: Option<String>,
    /// The configured channel the message goes to (add).
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
    /// `sent`, `pending` (being delivered), `failed`, or `unknown`.
    pub status: String,
    /// Why delivery failed or is being retried.
    pub error: Option<String>,
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
    /// What it sends.
    pub message: String,
    /// Where.
    pub channel: String,
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
    /// For run_now: `sent`, `pending` or `failed`.
    pub delivery: Option<String>,
}

/// The `cron` tool: registered with the `message` tool, when a channel is configured.
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

fn job_data(job: &CronJob, last: Option<&toolbelt_store::LastRun>) -> JobData {
    let zone = zone_of(job);
    JobData {
        name: job.name.clone(),
        schedule: job.schedule.clone(),
        tz: job.tz.clone(),
        message: job.message.clone(),
        channel: job.channel.clone(),
        chat_id: job.chat_id.clone(),
        next_run: job.next_at.map(|at| zone.format(at)),
        last_run: last.map(|l| LastRunData {
            scheduled_for: zone.format(l.scheduled_for),
            status: l
                .status
                .map_or("unknown", |s| s.as_str())
                .replace("sending", "pending"),
            // A delivered run's earlier failures are history, not its result.
            error: l
                .error
                .clone()
                .filter(|_| l.status != Some(toolbelt_store::OutboxStatus::Sent)),
        }),
    }
}

fn job_line(j: &JobData) -> String {
    let mut line = format!(
        "- {} [{} {}] -> {}{}: next {}",
        j.name,
        j.schedule,
        j.tz,
        j.channel,
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
        .hint("add add: name, schedule, message and channel; remove and run_now: name")),
    }
}

fn sched_error(e: SchedError) -> ToolError {
    e.into_tool_error()
}

impl TypedTool for Cron {
    type Params = CronParams;
    type Output = CronOutput;

    fn spec(&self) -> ToolSpec {
        let description = format!(
            "{}{}",
            include_str!("cron.md").trim_end(),
            channel_list(&self.messaging)
        );
        ToolSpec::describe("cron", description)
            .title("Scheduled Jobs")
            .category(Category::Schedule)
            .permission("store:write")
            .key_argument("name")
            .hints(Hints {
                read_only: false,
                destructive: true,
                idempotent: false,
                open_world: true,
                concurrency_safe: false,
            })
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
                let message = required("message", p.message.as_ref(), "add")?;
                let channel = required("channel", p.channel.as_ref(), "add")?;
                let zone = match &p.tz {
                    Some(tz) => Zone::parse(tz).map_err(sched_error)?,
                    None => self.messaging.default_zone(),
                };
                let schedule = Schedule::parse(&schedule_text, zone).map_err(sched_error)?;
                self.messaging
                    .channels()
                    .check(&channel, p.chat_id.as_deref(), &message, false)
                    .map_err(sched_error)?;
                let now = clock.now_ms();
                let first = schedule.first(now, zone).map_err(sched_error)?;
                let job = create_cron_job(
                    store,
                    &NewCronJob {
                        workspace,
                        name,
                        schedule: schedule_text,
                        tz: zone.name().to_string(),
                        message,
                        channel,
                        chat_id: p.chat_id,
                        next_at: Some(first),
                    },
                    now,
                )
                .await
                .map_err(store_error)?;
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
                let jobs = list_cron_jobs(store, Some(&workspace))
                    .await
                    .map_err(store_error)?;
                let data: Vec<JobData> = jobs
                    .iter()
                    .map(|CronJobStatus { job, last }| job_data(job, last.as_ref()))
                    .collect();
                let text = if data.is_empty() {
                    "No jobs in this workspace. Add one with action \"add\".".to_string()
                } else {
                    let lines: Vec<String> = data.iter().map(job_line).collect();
                    format!(
                        "{} job{}:\n{}",
                        data.len(),
                        if data.len() == 1 { "" } else { "s" },
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
                let job = remove_cron_job(store, &workspace, &name)
                    .await
                    .map_err(store_error)?;
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
                    .await
                    .map_err(store_error)?
                    .ok_or_else(|| {
                        ToolError::new(ErrorCode::NotFound, format!("no job named {name:?}"))
                            .hint("list the jobs with action \"list\"")
                    })?;
                let firing = self
                    .messaging
                    .scheduler()
                    .fire_now(&job)
                    .await
                    .map_err(sched_error)?;
                let outbox = self.messaging.outbox();
                tokio::select! {
                    r = outbox.deliver(&firing.message_id, delivery_wait(ctx)) => {
                        r.map_err(sched_error)?;
                    }
                    () = ctx.cancel_token().cancelled() => {
                        return Err(ToolError::new(
                            ErrorCode::Cancelled,
                            format!("cancelled; job {name} fired and its message {} stays in the outbox, to be delivered", firing.message_id),
                        ));
                    }
                }
                let message = get_message(store, &firing.message_id)
                    .await
                    .map_err(store_error)?
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
