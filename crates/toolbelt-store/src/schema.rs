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

/// Version 7: the person's hooks that ran for each call (`hooks`, the JSON of a
/// list of `toolbelt_core::hooks::HookRun`: name, event, outcome, ms), `NULL`
/// when none did.
const V7: &str = r#"
ALTER TABLE calls ADD COLUMN hooks TEXT;
"#;

/// Version 6: checkpoints, what each call that changed files changed (with where
/// the content before is kept, by hash), so that it can be seen and undone; the
/// call log gains where each call came from (`origin`, the JSON of a
/// `toolbelt_core::Origin`) and the checkpoint taken before it (`cp-12`).
///
/// A checkpoint's `status` is `complete`, `partial` (some before contents could
/// not be kept: `captured` is 0 on those files, `note` says why) or `pruned` (its
/// contents were removed; its rows stay, to show what the call did). `rewind_of`
/// is set on the checkpoint a rewind takes of itself, to the checkpoint it rewound
/// to. `bytes` counts the content stored new for the checkpoint.
const V6: &str = r#"
ALTER TABLE calls ADD COLUMN origin TEXT;
ALTER TABLE calls ADD COLUMN checkpoint TEXT;
CREATE TABLE checkpoints (
    id          {pk},
    workspace   TEXT NOT NULL,
    at_ms       BIGINT NOT NULL,
    call_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    origin      TEXT NOT NULL,   -- JSON of toolbelt_core::Origin
    status      TEXT NOT NULL,   -- complete | partial | pruned
    problem     TEXT,
    rewind_of   BIGINT,          -- on a rewind's own checkpoint: the checkpoint it rewound to
    bytes       BIGINT NOT NULL  -- bytes of content stored new for it
);
CREATE INDEX checkpoints_workspace ON checkpoints (workspace, id);
CREATE TABLE checkpoint_files (
    checkpoint_id BIGINT NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
    path          TEXT NOT NULL,
    change        TEXT NOT NULL,   -- created | modified | deleted | renamed | mode
    renamed_from  TEXT,
    before_kind   TEXT NOT NULL,   -- absent | file | dir | symlink | other
    before_hash   TEXT,
    before_mode   BIGINT,
    before_size   BIGINT,
    before_link   TEXT,
    after_kind    TEXT NOT NULL,
    after_hash    TEXT,
    after_mode    BIGINT,
    after_size    BIGINT,
    after_link    TEXT,
    captured      BIGINT NOT NULL, -- 1 when the before content is kept; 0: too large, a hard link...
    note          TEXT,            -- why not captured
    PRIMARY KEY (checkpoint_id, path)
);
CREATE INDEX checkpoint_files_hash ON checkpoint_files (before_hash);
"#;

/// Version 8: what replicas of one server share through the store.
///
/// - `calls.record_key`: the key a call's record is journalled under on the
///   machine that answered it (`<journal>:<seq>`), so that replaying a journal
///   after a crash writes each record once.
/// - `file_stamps`: what was last read of each file of a workspace, so that a
///   write answered by one replica knows of the read another one answered.
/// - `saved_outputs` and `saved_output_chunks`: a truncated output's full text,
///   in chunks of whole lines (`first_line` is the 1-based number of the chunk's
///   first line; a line longer than a chunk is split and counted in the chunk it
///   ends in), paged by `read_output` from any replica. Precisely: the chunks
///   (`seq` from 0), in order, are the output byte for byte, each at most 256 KiB
///   and ending at the last line end that fits; a line longer than a chunk starts
///   one and is cut into full chunks. `first_line` is the number of the line the
///   chunk's first byte is in (every piece of a long line has that line's), and
///   `lines` the lines ending in it (the output's last line, without a line end,
///   ends in the last chunk), so a chunk holds the ends of lines `first_line` to
///   `first_line + lines - 1`. `saved_outputs` has the output's totals, its
///   number of `chunks`, its `workspace` (the key the call log uses: reads are
///   held to it) and `created_ms`, when it was saved (for expiry).
/// - `agent_runs` and `agent_run_events`: the transcripts of the runs a server
///   started (scheduled prompts, the page, the API), one row per event: `seq` is
///   the line's number in the transcript file (from 0), `event` the line. A run's
///   `workspace` is the first root of the server that ran it; `started_ms` and
///   `updated_ms` are when its first and last lines were kept (an imported
///   run's: its first and last lines' times); `replica` is the process that kept
///   it, or `import` for a run copied from a transcript file.
/// - `questions`: the questions of runs waiting for a person, answerable through
///   any replica (`answers` is set by the answer, `NULL` while waiting): a set
///   waits while `answers` is `NULL` and `expires_ms` is ahead; a set whose run
///   stopped waiting (cancelled) is withdrawn by setting `expires_ms` to then.
///   `replica` is the process whose run waits (it watches for the answer);
///   `answers` is `{"answered": [{"header", "selected", "text"}]}` or
///   `{"declined": {"reason": ...}}`.
const V8: &str = r#"
ALTER TABLE calls ADD COLUMN record_key TEXT;
CREATE UNIQUE INDEX calls_record_key ON calls (record_key);
CREATE TABLE file_stamps (
    workspace   TEXT NOT NULL,
    path        TEXT NOT NULL,
    hash        TEXT NOT NULL,
    size        BIGINT NOT NULL,
    seen_ms     BIGINT NOT NULL,
    PRIMARY KEY (workspace, path)
);
CREATE TABLE saved_outputs (
    output_id   TEXT PRIMARY KEY,
    workspace   TEXT NOT NULL,
    created_ms  BIGINT NOT NULL,
    total_bytes BIGINT NOT NULL,
    total_lines BIGINT NOT NULL,
    chunks      BIGINT NOT NULL
);
CREATE INDEX saved_outputs_created ON saved_outputs (created_ms);
CREATE TABLE saved_output_chunks (
    output_id   TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    first_line  BIGINT NOT NULL,
    lines       BIGINT NOT NULL,
    data        {blob} NOT NULL,
    PRIMARY KEY (output_id, seq)
);
CREATE TABLE agent_runs (
    run_id      TEXT PRIMARY KEY,
    workspace   TEXT NOT NULL,
    started_ms  BIGINT NOT NULL,
    updated_ms  BIGINT NOT NULL,
    replica     TEXT NOT NULL
);
CREATE INDEX agent_runs_started ON agent_runs (started_ms);
CREATE TABLE agent_run_events (
    run_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    event       TEXT NOT NULL,   -- one transcript line (JSON)
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE questions (
    id          TEXT PRIMARY KEY,
    run_id      TEXT,
    asked_ms    BIGINT NOT NULL,
    expires_ms  BIGINT NOT NULL,
    questions   TEXT NOT NULL,   -- JSON of the questions
    answers     TEXT,            -- JSON of the answers, NULL while waiting
    answered_ms BIGINT,
    replica     TEXT NOT NULL
);
CREATE INDEX questions_waiting ON questions (answered_ms, asked_ms);
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
        Migration {
            version: 6,
            name: "checkpoints",
            sqlite: V6,
            postgres: V6,
        },
        Migration {
            version: 7,
            name: "hooks in the call log",
            sqlite: V7,
            postgres: V7,
        },
        Migration {
            version: 8,
            name: "what replicas share",
            sqlite: V8,
            postgres: V8,
        },
    ];
    steps
        .into_iter()
        .map(|m| {
            let sqlite = m
                .sqlite
                .replace("{pk}", SQLITE_PK)
                .replace("{blob}", "BLOB");
            let postgres = m
                .postgres
                .replace("{pk}", POSTGRES_PK)
                .replace("{blob}", "BYTEA");
            (m, sqlite, postgres)
        })
        .collect()
}

/// The newest schema version this build knows.
pub const LATEST_VERSION: i64 = 8;

/// SQLite's `application_id` of a toolbelt store: "TBLT".
pub(crate) const SQLITE_APPLICATION_ID: i64 = 0x5442_4C54;

#[cfg(test)]
mod tests {
    use sqlx::{Connection, Executor, Row};

    use super::*;
    use crate::{CallFilter, Location, Store, recent_calls};

    /// A SQLite store of version 5 holding one call is migrated: the call is kept,
    /// without origin or checkpoint, and the checkpoint tables are there.
    #[tokio::test]
    async fn a_version_5_store_is_migrated_with_its_calls() {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolbelt.db");
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let mut conn = sqlx::AnyConnection::connect(&url).await.unwrap();
        for (m, sql, _) in migrations() {
            if m.version <= 5 {
                conn.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(sql)))
                    .await
                    .unwrap();
            }
        }
        conn.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "PRAGMA user_version = 5; PRAGMA application_id = {SQLITE_APPLICATION_ID};"
        ))))
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO calls (at_ms, tool, call_id, args, status, duration_ms, bytes_out, workspace) \
             VALUES (1, 'read_file', 'c1', '{}', 'success', 1, 10, '/w')",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();

        let store = Store::open(&Location::Sqlite(path)).await.unwrap();
        assert_eq!(store.schema_version().await.unwrap(), LATEST_VERSION);
        let calls = recent_calls(
            &store,
            &CallFilter {
                tail: 10,
                tool: None,
            },
        )
        .await
        .unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(
            (
                calls[0].call_id.as_str(),
                &calls[0].origin,
                &calls[0].checkpoint
            ),
            ("c1", &None, &None)
        );
        let count: i64 = sqlx::query(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM checkpoints JOIN checkpoint_files ON checkpoint_id = id",
        )
        .fetch_one(store.pool())
        .await
        .unwrap()
        .try_get(0)
        .unwrap();
        assert_eq!(count, 0);
        store.close().await;
    }
}
