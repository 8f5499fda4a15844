//! The versioned schema: each migration in SQLite's and PostgreSQL's dialect.
//!
//! Times are milliseconds since the Unix epoch (UTC) in `BIGINT` columns, dates
//! `YYYY-MM-DD` text; booleans are `BIGINT` 0/1. Ids of planner records are integers,
//! shown to models as `project-12`, `goal-3`, `task-40`, `review-7`.

/// One step of the schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// The schema version after this step.
    pub version: i64,
    /// What it does.
    pub name: &'static str,
    /// SQLite statements.
    pub sqlite: &'static str,
    /// PostgreSQL statements.
    pub postgres: &'static str,
}

/// The tables of version 1, with `{pk}` standing for the auto-increment key of each dialect.
const V1: &str = r#"
CREATE TABLE todo_lists (
    workspace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    next_id     BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (workspace, name)
);
CREATE TABLE todos (
    workspace   TEXT NOT NULL,
    list        TEXT NOT NULL,
    id          BIGINT NOT NULL,
    position    BIGINT NOT NULL,
    title       TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (workspace, list, id),
    FOREIGN KEY (workspace, list) REFERENCES todo_lists (workspace, name) ON DELETE CASCADE
);
CREATE TABLE goals (
    id          {pk},
    title       TEXT NOT NULL,
    description TEXT,
    stage       TEXT NOT NULL,
    deadline    TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE TABLE projects (
    id          {pk},
    name        TEXT NOT NULL,
    description TEXT,
    status      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE TABLE project_goals (
    project_id  BIGINT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    goal_id     BIGINT NOT NULL REFERENCES goals (id) ON DELETE CASCADE,
    linked_at   BIGINT NOT NULL,
    PRIMARY KEY (project_id, goal_id)
);
CREATE INDEX project_goals_goal ON project_goals (goal_id);
CREATE TABLE tasks (
    id              {pk},
    title           TEXT NOT NULL,
    description     TEXT,
    project_id      BIGINT REFERENCES projects (id),
    due_at          BIGINT,
    priority        TEXT NOT NULL,
    status          TEXT NOT NULL,
    completion_note TEXT,
    completed_at    BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX tasks_project ON tasks (project_id);
CREATE INDEX tasks_created ON tasks (created_at);
CREATE INDEX tasks_completed ON tasks (completed_at);
CREATE TABLE reviews (
    id          {pk},
    content     TEXT NOT NULL,
    kind        TEXT NOT NULL,
    mood        DOUBLE PRECISION,
    reviewed_at BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX reviews_reviewed ON reviews (reviewed_at);
CREATE TABLE review_tags (
    review_id   BIGINT NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
    position    BIGINT NOT NULL,
    tag         TEXT NOT NULL,
    tag_key     TEXT NOT NULL,
    PRIMARY KEY (review_id, tag_key)
);
CREATE INDEX review_tags_key ON review_tags (tag_key);
CREATE TABLE review_projects (
    review_id   BIGINT NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
    project_id  BIGINT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    position    BIGINT NOT NULL,
    PRIMARY KEY (review_id, project_id)
);
CREATE INDEX review_projects_project ON review_projects (project_id);
CREATE TABLE calls (
    id          {pk},
    at_ms       BIGINT NOT NULL,
    tool        TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    args        TEXT NOT NULL,
    status      TEXT NOT NULL,
    error_code  TEXT,
    duration_ms BIGINT NOT NULL,
    bytes_out   BIGINT NOT NULL,
    workspace   TEXT NOT NULL
);
CREATE INDEX calls_tool ON calls (tool, id);
CREATE INDEX calls_at ON calls (at_ms);
"#;

/// Version 2: cron jobs, their claimed firings, and the outbox of messages to channels.
///
/// A firing is claimed by inserting `(job_id, scheduled_for)` into `cron_firings`,
/// whose primary key lets exactly one scheduler win; the same transaction puts the
/// job's message into `outbox` and moves the job to its next time. Outbox rows are
/// delivered by whoever holds their lease (`lease_until`); `id` is the message's
/// idempotency key.
const V2: &str = r#"
CREATE TABLE cron_jobs (
    id          {pk},
    workspace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    schedule    TEXT NOT NULL,
    tz          TEXT NOT NULL,
    message     TEXT NOT NULL,
    channel     TEXT NOT NULL,
    chat_id     TEXT,
    next_at     BIGINT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX cron_jobs_name ON cron_jobs (workspace, name);
CREATE INDEX cron_jobs_next ON cron_jobs (next_at);
CREATE TABLE cron_firings (
    job_id        BIGINT NOT NULL,
    scheduled_for BIGINT NOT NULL,
    fired_at      BIGINT NOT NULL,
    instance      TEXT NOT NULL,
    message_id    TEXT NOT NULL,
    manual        BIGINT NOT NULL,
    PRIMARY KEY (job_id, scheduled_for)
);
CREATE INDEX cron_firings_fired ON cron_firings (fired_at);
CREATE TABLE outbox (
    id              TEXT PRIMARY KEY,
    channel         TEXT NOT NULL,
    chat_id         TEXT,
    content         TEXT NOT NULL,
    reply_to        TEXT,
    media           TEXT,
    job_id          BIGINT,
    status          TEXT NOT NULL,
    attempts        BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT,
    last_error      TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    sent_at         BIGINT
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX outbox_job ON outbox (job_id, created_at);
"#;

/// Version 3: jobs that run an agent prompt (its answer sent to the channel, when
/// the job has one: `channel` is empty when it has none), and the outcome of each
/// firing's run (`outcome`: `running`, then the agent's outcome; `result`: its answer
/// or what went wrong; `run_id`: its transcript).
const V3: &str = r#"
ALTER TABLE cron_jobs ADD COLUMN prompt TEXT;
ALTER TABLE cron_firings ADD COLUMN outcome TEXT;
ALTER TABLE cron_firings ADD COLUMN result TEXT;
ALTER TABLE cron_firings ADD COLUMN run_id TEXT;
"#;

/// Version 4: subagents started in the background (`spawn`) and their reports, kept
/// so they can be read after the process that ran them is gone.
const V4: &str = r#"
CREATE TABLE subagent_tasks (
    id            TEXT PRIMARY KEY,
    label         TEXT NOT NULL,
    agent_type    TEXT NOT NULL,
    prompt        TEXT NOT NULL,
    parent_run_id TEXT,
    owner         TEXT NOT NULL,
    status        TEXT NOT NULL,
    result        TEXT,
    steps         BIGINT NOT NULL,
    tool_calls    BIGINT NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    run_id        TEXT,
    created_at    BIGINT NOT NULL,
    started_at    BIGINT,
    finished_at   BIGINT,
    delivered_at  BIGINT
);
CREATE INDEX subagent_tasks_created ON subagent_tasks (created_at);
CREATE INDEX subagent_tasks_parent ON subagent_tasks (parent_run_id, delivered_at);
"#;

/// Version 5: the parts of a message already delivered (a Telegram message's text,
/// then each attachment), so that a delivery cut off between parts goes on from
/// the next one instead of sending the first again.
const V5: &str = r#"
ALTER TABLE outbox ADD COLUMN parts_sent BIGINT NOT NULL DEFAULT 0;
"#;

const SQLITE_PK: &str = "INTEGER PRIMARY KEY AUTOINCREMENT";
const POSTGRES_PK: &str = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY";

/// Every migration, in order. The last one's version is [`LATEST_VERSION`].
pub(crate) fn migrations() -> Vec<(Migration, String, String)> {
    let steps = [
        Migration {
            version: 1,
            name: "todos, planner, call log",
            sqlite: V1,
            postgres: V1,
        },
        Migration {
            version: 2,
            name: "cron jobs, firings, outbox",
            sqlite: V2,
            postgres: V2,
        },
        Migration {
            version: 3,
            name: "cron jobs that run a prompt",
            sqlite: V3,
            postgres: V3,
        },
        Migration {
            version: 4,
            name: "background subagents",
            sqlite: V4,
            postgres: V4,
        },
        Migration {
            version: 5,
            name: "outbox parts delivered",
            sqlite: V5,
            postgres: V5,
        },
    ];
    steps
        .into_iter()
        .map(|m| {
            let sqlite = m.sqlite.replace("{pk}", SQLITE_PK);
            let postgres = m.postgres.replace("{pk}", POSTGRES_PK);
            (m, sqlite, postgres)
        })
        .collect()
}

/// The newest schema version this build knows.
pub const LATEST_VERSION: i64 = 5;

/// SQLite's `application_id` of a toolbelt store: "TBLT".
pub(crate) const SQLITE_APPLICATION_ID: i64 = 0x5442_4C54;
