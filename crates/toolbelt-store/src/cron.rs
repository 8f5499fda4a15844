//! Cron jobs and their firings.
//!
//! A job ([`CronJob`]) belongs to a workspace, has a name unique in it, a schedule
//! and time zone (kept as text: the store does not parse them), the message it
//! sends or the prompt an agent runs, where the result goes, and `next_at`, the
//! instant of its next firing (`None`: nothing left to fire). A firing is claimed
//! with [`claim_firing`]: one write transaction inserts `(job, scheduled_for)` into
//! `cron_firings` (whose primary key lets one claimer win, whichever server or
//! process it is), puts the message into the outbox, and moves the job on to its
//! next time or removes it (a one-shot job). A prompt job's firing is marked
//! `running` instead; [`record_prompt_run`] later keeps the run's outcome and puts
//! its answer into the outbox, under the id the claim reserved.

use sqlx::{Any, Row, Transaction};

use crate::error::{StoreError, StoreResult};
use crate::outbox::{NewOutboxMessage, OutboxStatus, insert_message};
use crate::store::Store;

/// Longest job name, in characters.
pub const MAX_CRON_NAME_CHARS: usize = 64;

/// A job to create.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewCronJob {
    /// The workspace the job belongs to.
    pub workspace: String,
    /// Its name, unique in the workspace.
    pub name: String,
    /// The schedule as given (`0 9 * * *`, `every 10m`, `at 2026-05-01T09:00:00Z`).
    pub schedule: String,
    /// The IANA time zone the schedule is read in.
    pub tz: String,
    /// What it sends (empty for a prompt job).
    pub message: String,
    /// The prompt an agent runs when it fires; its answer is what it sends.
    pub prompt: Option<String>,
    /// The channel it sends to (`None`: a prompt job whose answer is only kept).
    pub channel: Option<String>,
    /// The chat (or address) in the channel, when the channel needs one.
    pub chat_id: Option<String>,
    /// Its first firing, milliseconds since the epoch.
    pub next_at: Option<i64>,
}

/// A stored job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJob {
    /// Its id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace: String,
    /// Its name.
    pub name: String,
    /// The schedule as given.
    pub schedule: String,
    /// The IANA time zone of the schedule.
    pub tz: String,
    /// What it sends (empty for a prompt job).
    pub message: String,
    /// The prompt an agent runs when it fires.
    pub prompt: Option<String>,
    /// The channel it sends to (`None`: a prompt job whose answer is only kept).
    pub channel: Option<String>,
    /// The chat in the channel.
    pub chat_id: Option<String>,
    /// Its next firing (ms since the epoch); `None` when nothing is left to fire.
    pub next_at: Option<i64>,
    /// When it was created (ms); also the anchor of interval schedules.
    pub created_at: i64,
    /// When it last changed (ms).
    pub updated_at: i64,
}

/// A job with the outcome of its latest firing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJobStatus {
    /// The job.
    pub job: CronJob,
    /// Its latest firing, if it fired.
    pub last: Option<LastRun>,
}

/// The latest firing of a job and what became of its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRun {
    /// The time it was due (ms).
    pub scheduled_for: i64,
    /// When it was claimed (ms).
    pub fired_at: i64,
    /// The message it sent (its outbox id; reserved for a prompt job's answer).
    pub message_id: String,
    /// The message's delivery state (`None` when there is no outbox row: gone, or
    /// a prompt job's answer not sent yet or not sent at all).
    pub status: Option<OutboxStatus>,
    /// The delivery's last error.
    pub error: Option<String>,
    /// A prompt job's run: `running`, then how the agent's run ended
    /// (`final_answer`, `error`, `max_steps`...). `None` for a message job.
    pub outcome: Option<String>,
    /// A prompt job's answer, or what went wrong.
    pub result: Option<String>,
    /// The run's transcript id.
    pub run_id: Option<String>,
}

/// How a prompt job's run went, to record with [`record_prompt_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptRunRecord {
    /// How the run ended (`final_answer`, `error`, `max_steps`, `cancelled`...).
    pub outcome: String,
    /// The answer, or what went wrong.
    pub result: String,
    /// The run's transcript id.
    pub run_id: Option<String>,
    /// The message to send, when the job has a channel.
    pub content: Option<String>,
}

/// A claimed firing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Firing {
    /// The job as it was when it fired.
    pub job: CronJob,
    /// The time the firing was due (ms): the claim's key with the job id.
    pub scheduled_for: i64,
    /// The id of the message put into the outbox.
    pub message_id: String,
    /// The job's next firing after this one (`None`: the job was removed).
    pub next_at: Option<i64>,
}

/// What [`claim_firing`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This caller won the firing.
    Fired(Box<Firing>),
    /// The job is not due (another claimer moved it on, or it was never due).
    NotDue,
    /// Another claimer holds this `(job, scheduled_for)`.
    Taken,
    /// The job no longer exists.
    Gone,
}

/// How [`claim_firing`] fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FireMode {
    /// The job's due firing: keyed by its `next_at`, which then moves on.
    Due,
    /// A firing asked for now (`run_now`): keyed by `now`; the schedule is untouched.
    Manual,
}

const JOB_COLUMNS: &str = "id, workspace, name, schedule, tz, message, channel, chat_id, next_at, created_at, updated_at, prompt";

fn job_row(row: &sqlx::any::AnyRow) -> StoreResult<CronJob> {
    // A job without a channel keeps an empty one (the column predates such jobs).
    let channel: String = row.try_get(6)?;
    Ok(CronJob {
        id: row.try_get(0)?,
        workspace: row.try_get(1)?,
        name: row.try_get(2)?,
        schedule: row.try_get(3)?,
        tz: row.try_get(4)?,
        message: row.try_get(5)?,
        prompt: row.try_get(11)?,
        channel: (!channel.is_empty()).then_some(channel),
        chat_id: row.try_get(7)?,
        next_at: row.try_get(8)?,
        created_at: row.try_get(9)?,
        updated_at: row.try_get(10)?,
    })
}

/// Checks a job name: 1 to [`MAX_CRON_NAME_CHARS`] characters, not only spaces.
///
/// # Errors
/// [`StoreError::Invalid`] saying what is wrong.
pub fn check_cron_name(name: &str) -> StoreResult<()> {
    let chars = name.chars().count();
    if name.trim().is_empty() || chars > MAX_CRON_NAME_CHARS {
        return Err(StoreError::invalid(format!(
            "name: a job name has 1 to {MAX_CRON_NAME_CHARS} characters and is not blank, {chars} given"
        )));
    }
    Ok(())
}

/// Creates a job.
///
/// # Errors
/// [`StoreError::Invalid`] for a bad name, [`StoreError::Conflict`] when the
/// workspace has a job of that name, or a failed query.
pub async fn create_cron_job(store: &Store, job: &NewCronJob, now: i64) -> StoreResult<CronJob> {
    check_cron_name(&job.name)?;
    let taken = || {
        StoreError::conflict(format!(
            "a job named {:?} already exists in this workspace: remove it first (action \"remove\") or choose another name",
            job.name
        ))
    };
    let mut tx = store.begin_write().await?;
    if find(&mut *tx, &job.workspace, &job.name).await?.is_some() {
        return Err(taken());
    }
    let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO cron_jobs (workspace, name, schedule, tz, message, channel, chat_id, next_at, created_at, updated_at, prompt) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10) RETURNING {JOB_COLUMNS}"
    )))
    .bind(&job.workspace)
    .bind(&job.name)
    .bind(&job.schedule)
    .bind(&job.tz)
    .bind(&job.message)
    .bind(job.channel.as_deref().unwrap_or(""))
    .bind(&job.chat_id)
    .bind(job.next_at)
    .bind(now)
    .bind(&job.prompt)
    .fetch_one(&mut *tx)
    .await;
    let row = match inserted {
        Ok(row) => row,
        // Another writer created the name between the check and the insert (PostgreSQL).
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => return Err(taken()),
        Err(e) => return Err(e.into()),
    };
    let created = job_row(&row)?;
    tx.commit().await?;
    Ok(created)
}

/// The job `name` of `workspace`, read through `db` (the pool or a transaction).
async fn find<'e>(
    db: impl sqlx::Executor<'e, Database = Any>,
    workspace: &str,
    name: &str,
) -> StoreResult<Option<CronJob>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {JOB_COLUMNS} FROM cron_jobs WHERE workspace = $1 AND name = $2"
    )))
    .bind(workspace)
    .bind(name)
    .fetch_optional(db)
    .await?;
    row.as_ref().map(job_row).transpose()
}

/// The job `name` of `workspace`.
///
/// # Errors
/// The query fails.
pub async fn find_cron_job(
    store: &Store,
    workspace: &str,
    name: &str,
) -> StoreResult<Option<CronJob>> {
    find(store.pool(), workspace, name).await
}

/// Removes the job `name` of `workspace` and returns it.
///
/// # Errors
/// [`StoreError::NotFound`] naming the workspace's jobs, or a failed query.
pub async fn remove_cron_job(store: &Store, workspace: &str, name: &str) -> StoreResult<CronJob> {
    let mut tx = store.begin_write().await?;
    let Some(job) = find(&mut *tx, workspace, name).await? else {
        let names: Vec<String> =
            sqlx::query("SELECT name FROM cron_jobs WHERE workspace = $1 ORDER BY name LIMIT 20")
                .bind(workspace)
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .filter_map(|r| r.try_get::<String, _>(0).ok())
                .collect();
        let known = if names.is_empty() {
            "this workspace has no jobs".to_string()
        } else {
            format!("its jobs: {}", names.join(", "))
        };
        return Err(StoreError::not_found(format!(
            "no job named {name:?} ({known})"
        )));
    };
    sqlx::query("DELETE FROM cron_jobs WHERE id = $1")
        .bind(job.id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(job)
}

/// The jobs of `workspace` (every workspace's with `None`), by name, each with its
/// latest firing.
///
/// # Errors
/// The query fails.
pub async fn list_cron_jobs(
    store: &Store,
    workspace: Option<&str>,
) -> StoreResult<Vec<CronJobStatus>> {
    let rows = match workspace {
        Some(w) => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {JOB_COLUMNS} FROM cron_jobs WHERE workspace = $1 ORDER BY name, id"
            )))
            .bind(w)
            .fetch_all(store.pool())
            .await?
        }
        None => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {JOB_COLUMNS} FROM cron_jobs ORDER BY workspace, name, id"
            )))
            .fetch_all(store.pool())
            .await?
        }
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let job = job_row(row)?;
        let last = last_run(store, job.id).await?;
        out.push(CronJobStatus { job, last });
    }
    Ok(out)
}

async fn last_run(store: &Store, job_id: i64) -> StoreResult<Option<LastRun>> {
    let row = sqlx::query(
        "SELECT f.scheduled_for, f.fired_at, f.message_id, o.status, o.last_error, f.outcome, f.result, f.run_id \
         FROM cron_firings f LEFT JOIN outbox o ON o.id = f.message_id \
         WHERE f.job_id = $1 ORDER BY f.fired_at DESC, f.scheduled_for DESC LIMIT 1",
    )
    .bind(job_id)
    .fetch_optional(store.pool())
    .await?;
    let Some(row) = row else { return Ok(None) };
    let status: Option<String> = row.try_get(3)?;
    Ok(Some(LastRun {
        scheduled_for: row.try_get(0)?,
        fired_at: row.try_get(1)?,
        message_id: row.try_get(2)?,
        status: status.as_deref().and_then(OutboxStatus::parse),
        error: row.try_get(4)?,
        outcome: row.try_get(5)?,
        result: row.try_get(6)?,
        run_id: row.try_get(7)?,
    }))
}

/// Jobs due at `now` (their `next_at` at or before it), earliest first, at most `limit`.
///
/// # Errors
/// The query fails.
pub async fn due_cron_jobs(store: &Store, now: i64, limit: i64) -> StoreResult<Vec<CronJob>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {JOB_COLUMNS} FROM cron_jobs WHERE next_at IS NOT NULL AND next_at <= $1 ORDER BY next_at, id LIMIT $2"
    )))
    .bind(now)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(job_row).collect()
}

/// Makes job `id` due at `at` (unless it is due earlier already); false when the
/// job is gone.
///
/// # Errors
/// The query fails.
pub async fn make_cron_job_due(store: &Store, id: i64, at: i64) -> StoreResult<bool> {
    let done = sqlx::query(
        "UPDATE cron_jobs SET next_at = $1, updated_at = $1 WHERE id = $2 AND (next_at IS NULL OR next_at > $1)",
    )
    .bind(at)
    .bind(id)
    .execute(store.pool())
    .await?;
    if done.rows_affected() > 0 {
        return Ok(true);
    }
    let row = sqlx::query("SELECT id FROM cron_jobs WHERE id = $1")
        .bind(id)
        .fetch_optional(store.pool())
        .await?;
    Ok(row.is_some())
}

/// The earliest `next_at` of all jobs.
///
/// # Errors
/// The query fails.
pub async fn next_cron_due(store: &Store) -> StoreResult<Option<i64>> {
    let row = sqlx::query("SELECT MIN(next_at) FROM cron_jobs")
        .fetch_one(store.pool())
        .await?;
    Ok(row.try_get::<Option<i64>, _>(0)?)
}

/// Claims a firing of job `job_id` at `now` for `instance`: one transaction that
/// inserts the claim `(job, scheduled_for)`, puts the job's message (id
/// `message_id`) into the outbox (a prompt job's claim is marked `running`
/// instead: [`record_prompt_run`] sends its answer under that id), and — for [`FireMode::Due`] — moves the job to
/// `next(job, scheduled_for)` or removes it when that is `None`.
///
/// With [`FireMode::Due`] the key is the job's `next_at`, so missed firings fire
/// once (`next` is expected to skip to the first time after `now`); with
/// [`FireMode::Manual`] the key is `now`.
///
/// # Errors
/// A failed query.
pub async fn claim_firing(
    store: &Store,
    job_id: i64,
    now: i64,
    instance: &str,
    message_id: &str,
    mode: FireMode,
    next: impl FnOnce(&CronJob, i64) -> Option<i64>,
) -> StoreResult<Claim> {
    let mut tx = store.begin_write().await?;
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {JOB_COLUMNS} FROM cron_jobs WHERE id = $1{}",
        store.for_update()
    )))
    .bind(job_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(job) = row.as_ref().map(job_row).transpose()? else {
        return Ok(Claim::Gone);
    };
    let scheduled_for = match mode {
        FireMode::Due => match job.next_at {
            Some(at) if at <= now => at,
            _ => return Ok(Claim::NotDue),
        },
        FireMode::Manual => now,
    };
    let claimed = sqlx::query(
        "INSERT INTO cron_firings (job_id, scheduled_for, fired_at, instance, message_id, manual, outcome) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
    )
    .bind(job.id)
    .bind(scheduled_for)
    .bind(now)
    .bind(instance)
    .bind(message_id)
    .bind(i64::from(mode == FireMode::Manual))
    .bind(job.prompt.as_ref().map(|_| RUNNING))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if claimed == 0 {
        // The key is held already (a `run_now` at that very millisecond): that
        // firing happened; move the job on so it is not due again.
        if mode == FireMode::Due {
            advance(&mut tx, &job, next(&job, scheduled_for), now).await?;
            tx.commit().await?;
        }
        return Ok(Claim::Taken);
    }
    if job.prompt.is_none() {
        insert_message(
            &mut tx,
            &job_message(&job, message_id, job.message.clone()),
            now,
        )
        .await?;
    }
    let next_at = match mode {
        FireMode::Manual => job.next_at,
        FireMode::Due => next(&job, scheduled_for),
    };
    if mode == FireMode::Due {
        advance(&mut tx, &job, next_at, now).await?;
    }
    tx.commit().await?;
    Ok(Claim::Fired(Box::new(Firing {
        job,
        scheduled_for,
        message_id: message_id.to_string(),
        next_at,
    })))
}

/// The `outcome` of a prompt job's firing whose run has not ended.
pub const RUNNING: &str = "running";

/// The message `job` sends, as `content`, under `id`.
fn job_message(job: &CronJob, id: &str, content: String) -> NewOutboxMessage {
    NewOutboxMessage {
        id: id.to_string(),
        channel: job.channel.clone().unwrap_or_default(),
        chat_id: job.chat_id.clone(),
        content,
        reply_to: None,
        media: None,
        job_id: Some(job.id),
    }
}

/// Records how the run of `firing` (a prompt job's) went, in one transaction: the
/// claim's outcome, result and transcript id, and the answer put into the outbox
/// under the id the claim reserved (when `run.content` is given: the job has a
/// channel).
///
/// # Errors
/// A failed query.
pub async fn record_prompt_run(
    store: &Store,
    firing: &Firing,
    run: &PromptRunRecord,
    now: i64,
) -> StoreResult<()> {
    let mut tx = store.begin_write().await?;
    sqlx::query(
        "UPDATE cron_firings SET outcome = $1, result = $2, run_id = $3 \
         WHERE job_id = $4 AND scheduled_for = $5",
    )
    .bind(&run.outcome)
    .bind(&run.result)
    .bind(&run.run_id)
    .bind(firing.job.id)
    .bind(firing.scheduled_for)
    .execute(&mut *tx)
    .await?;
    if let Some(content) = &run.content {
        insert_message(
            &mut tx,
            &job_message(&firing.job, &firing.message_id, content.clone()),
            now,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Moves `job` to `next_at`, or removes it when that is `None`.
async fn advance(
    tx: &mut Transaction<'static, Any>,
    job: &CronJob,
    next_at: Option<i64>,
    now: i64,
) -> StoreResult<()> {
    match next_at {
        Some(at) => {
            sqlx::query("UPDATE cron_jobs SET next_at = $1, updated_at = $2 WHERE id = $3")
                .bind(at)
                .bind(now)
                .bind(job.id)
                .execute(&mut **tx)
                .await?;
        }
        None => {
            sqlx::query("DELETE FROM cron_jobs WHERE id = $1")
                .bind(job.id)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

/// The claims of job `job_id`, oldest first: `(scheduled_for, instance)`.
///
/// # Errors
/// The query fails.
pub async fn cron_firings(store: &Store, job_id: i64) -> StoreResult<Vec<(i64, String)>> {
    let rows = sqlx::query(
        "SELECT scheduled_for, instance FROM cron_firings WHERE job_id = $1 ORDER BY scheduled_for",
    )
    .bind(job_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect()
}

/// Forgets claims made before `before` (ms), except each job's latest (its last
/// run). A claim only has to outlive the time another scheduler could still try
/// it: a job's `next_at` only moves forward, past every claimed key.
///
/// # Errors
/// The query fails.
pub async fn prune_cron_firings(store: &Store, before: i64) -> StoreResult<u64> {
    let done = sqlx::query(
        "DELETE FROM cron_firings WHERE fired_at < $1 AND fired_at < \
         (SELECT MAX(f.fired_at) FROM cron_firings f WHERE f.job_id = cron_firings.job_id)",
    )
    .bind(before)
    .execute(store.pool())
    .await?;
    Ok(done.rows_affected())
}
