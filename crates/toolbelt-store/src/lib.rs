//! toolbelt's store: one API over SQLite (embedded, the default: a file in the state
//! directory, WAL) and PostgreSQL (`TOOLBELT_DATABASE_URL`), with versioned
//! migrations run at open.
//!
//! - [`Store`] opens a [`Location`], refusing a corrupt, foreign or newer database
//!   without touching it ([`StoreError`]), and hands out write transactions that
//!   take SQLite's write lock up front ([`Store::begin_write`]).
//! - [`StoreHandle`]: a store opened on first use, shared by the tools and the call
//!   log; `From<StoreError> for ToolError` turns a [`StoreError`] into the error
//!   a model reads.
//! - [`RecordId`] and [`Kind`]: planner ids as models see them (`project-12`).
//! - Reviews: [`write_review`], [`list_reviews`], and [`analyze_patterns`] for mood,
//!   tags, themes (English and Chinese words), tasks and streaks over a range.
//! - The planner: [`Project`], [`Goal`] and [`Task`] records, written and read by
//!   methods of [`Store`] ([`Store::create_project`], [`Store::list_tasks`]...).
//! - Todo lists per workspace and name, with stable ids: [`read_todos`],
//!   [`replace_todos`], [`update_todos`].
//! - Cron jobs ([`create_cron_job`], [`list_cron_jobs`]...) and their firings,
//!   claimed once per `(job, scheduled_for)` across processes ([`claim_firing`]).
//! - The outbox of messages to channels: [`enqueue_message`], leases
//!   ([`claim_message`], given back by a deliverer that stops with
//!   [`release_message`]) and outcomes ([`record_sent`], [`record_retry`],
//!   [`record_failed`]).
//! - The call log: [`CallLogWriter`] (a [`toolbelt_core::CallLog`] that journals
//!   each record on local disk before the call's answer leaves, and writes the
//!   journal to the store in batches off the call's path; what a killed process
//!   left is written at the next start) and [`recent_calls`]; for people,
//!   [`list_calls`] (filtered, paged), [`calls_after`] (a live view) and
//!   [`all_todo_lists`].
//! - Checkpoints, what each call changed in files ([`CheckpointRecord`],
//!   [`FileChange`]): [`insert_checkpoint`], [`list_checkpoints`],
//!   [`get_checkpoint`], [`checkpoints_from`], [`last_rewind`], and for pruning
//!   [`checkpoint_ages`], [`referenced_hashes`] and [`mark_pruned`].
//! - What replicas of a server share: [`StoreStamps`], the file stamps of a
//!   workspace (what was read, for the write tools' optimistic lock), and
//!   [`StoreOutputs`], its saved outputs in chunks of lines, paged by
//!   `read_output` from any replica ([`saved_output_page`]) and expired by the
//!   spill files' rule ([`expire_saved_outputs`]).
//! - Agent runs and their questions, so that replicas behave as one: the
//!   transcripts' lines ([`RunEventWriter`], [`list_agent_runs`],
//!   [`agent_run_events`], [`import_agent_run`]) and the questions waiting for a
//!   person ([`insert_question`], [`waiting_questions`], [`record_answer`],
//!   [`answered_questions`], [`withdraw_question`]).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use toolbelt_store::{Location, Store};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(&Location::in_state_dir(dir.path())).await.unwrap();
//! assert_eq!(store.schema_version().await.unwrap(), toolbelt_store::LATEST_VERSION);
//! # });
//! ```

mod analysis;
mod call_journal;
mod call_rows;
mod call_writer;
mod calls;
mod checkpoints;
mod cron;
mod dates;
mod error;
mod file_stamps;
mod handle;
mod ids;
mod outbox;
mod outputs;
mod planner;
mod questions;
mod reviews;
mod runs;
mod schema;
mod store;
mod subagents;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
mod themes;
mod todos;
mod tool_error;
mod views;

pub use analysis::{
    AnalysisRequest, Direction, MoodPatterns, MoodTrend, PatternAnalysis, ReviewPoint,
    STEADY_SLOPE_PER_DAY, Section, Streaks, TOP_THEMES, TagPattern, TaskPatterns, ThemeCount,
    Themes, TimeRange, WeekdayMood, analyze, analyze_patterns,
};
pub use call_journal::CALL_JOURNAL_ROTATE_BYTES;
pub use call_rows::CALL_LOG_RETENTION_MS;
pub use call_writer::{
    CALL_JOURNAL_DIR, CALL_LOG_BATCH_MAX, CALL_LOG_LINGER, CALL_LOG_QUEUE_CAPACITY,
    CALL_LOG_RETRY_MAX, CALL_LOG_RETRY_MIN, CallLogWriter,
};
pub use calls::{CallEntry, CallFilter, recent_calls};
pub use checkpoints::{
    CheckpointRecord, FileChange, FileState, checkpoint_ages, checkpoints_from, get_checkpoint,
    insert_checkpoint, last_rewind, list_checkpoints, mark_pruned, mark_reverted,
    referenced_hashes,
};
pub use cron::{
    Claim, CronJob, CronJobStatus, FireMode, Firing, LastRun, MAX_CRON_NAME_CHARS, NewCronJob,
    PromptRunRecord, RUNNING, check_cron_name, claim_firing, create_cron_job, cron_firings,
    due_cron_jobs, find_cron_job, list_cron_jobs, make_cron_job_due, next_cron_due,
    prune_cron_firings, record_prompt_run, remove_cron_job,
};
pub use dates::{BadDate, DateOrTime, DayEdge, parse_date, parse_date_or_time, parse_instant};
pub use error::{DbError, StoreError, StoreResult};
pub use file_stamps::StoreStamps;
pub use handle::StoreHandle;
pub use ids::{Kind, RecordId};
pub use outbox::{
    NewOutboxMessage, OutboxMessage, OutboxStatus, claim_message, due_messages, enqueue_message,
    get_message, list_messages, next_message_due, record_failed, record_parts_sent, record_retry,
    record_sent, release_message,
};
pub use outputs::{
    ExpiredOutputs, SAVED_OUTPUT_EXPIRY_INTERVAL, StoreOutputs, expire_saved_outputs,
    saved_output_page,
};
pub use planner::{
    Completion, DEFAULT_LIST_LIMIT, DeletedProject, Goal, GoalFilter, GoalLink, GoalStage,
    GoalSummary, MAX_LIST_LIMIT, MAX_OVERDUE_LISTED, NewGoal, NewProject, NewTask, OverdueTask,
    Page, Priority, Project, ProjectFilter, ProjectStats, ProjectStatus, ProjectUpdate, Task,
    TaskFilter, TaskStatus, completion_rate,
};
pub use questions::{
    QUESTION_RETENTION_MS, StoredQuestion, answered_questions, get_question, insert_question,
    record_answer, waiting_questions, withdraw_question,
};
pub use reviews::{
    DATE_ONLY_HOUR_UTC, DEFAULT_REVIEW_LIMIT, MAX_MOOD, MAX_REVIEW_LIMIT, MIN_MOOD, NewReview,
    Review, ReviewKind, ReviewPage, ReviewQuery, check_content, check_mood, check_tag,
    day_start_ms, format_offset, list_reviews, local_date, normalize_tags, parse_utc_offset,
    rfc3339_utc, tag_key, write_review,
};
pub use runs::{
    Imported, RUN_EVENT_BATCH_MAX, RUN_EVENT_LINGER, RUN_EVENT_QUEUE_CAPACITY,
    RUN_EVENT_RETRY_DELAY, RunEventWriter, RunLine, StoredRun, agent_run_events, find_agent_run,
    import_agent_run, list_agent_runs, workspace_key,
};
pub use schema::LATEST_VERSION;
pub use store::{
    Backend, DEFAULT_FILE_NAME, Location, QUICK_CHECK_MAX_BYTES, SQLITE_BUSY_TIMEOUT_MS, Store,
};
pub use subagents::{
    SubagentProgress, SubagentTask, get_subagent_task, insert_subagent_task, list_subagent_tasks,
    mark_subagent_delivered, undelivered_subagent_tasks, update_subagent_task,
};
pub use todos::{
    AppliedTodoChanges, DEFAULT_TODO_LIST, MAX_TODO_LIST_NAME_CHARS, StoredTodo, TodoChanges,
    TodoInput, TodoListKey, TodoPatch, read_todos, replace_todos, update_todos,
};
pub use views::{
    CallQuery, DEFAULT_CALLS_PAGE, MAX_CALLS_PAGE, MAX_TODO_LISTS, TodoListView, TodoView,
    all_todo_lists, calls_after, last_call_id, list_calls,
};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
