//! Questions of agent runs waiting for a person, kept in the store so that any
//! replica of a server lists and answers them: the asking replica
//! [inserts](insert_question) them and watches for their answer
//! ([`answered_questions`]); any replica lists the [waiting](waiting_questions)
//! ones and [records an answer](record_answer), once.
//!
//! A set waits while it has no answer and has not expired; a set whose run
//! stopped waiting is [withdrawn](withdraw_question) by expiring it then. The
//! store holds the questions and the answers as JSON text it does not read.

use sqlx::Row;

use crate::error::{StoreError, StoreResult};
use crate::planner::rows::placeholders;
use crate::store::Store;

/// How long sets of questions are kept after they stopped waiting: each insert
/// removes those that stopped waiting before this.
pub const QUESTION_RETENTION_MS: i64 = 30 * 24 * 60 * 60 * 1000;
/// Most ids one query looks up.
const IDS_PER_QUERY: usize = 200;

/// One call's questions, as the `questions` table has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredQuestion {
    /// The id they are answered under (`q-...`).
    pub id: String,
    /// The run that asks, when known.
    pub run_id: Option<String>,
    /// When they were asked (ms since the epoch).
    pub asked_ms: i64,
    /// When they stop waiting (ms): the end of the wait, or when they were withdrawn.
    pub expires_ms: i64,
    /// The questions (JSON).
    pub questions: String,
    /// The answer (JSON), `None` while waiting.
    pub answers: Option<String>,
    /// When the answer was recorded (ms).
    pub answered_ms: Option<i64>,
    /// The process that asks, and waits for the answer.
    pub replica: String,
}

impl StoredQuestion {
    /// Whether they still wait for an answer at `now_ms`.
    pub fn is_waiting(&self, now_ms: i64) -> bool {
        self.answers.is_none() && self.expires_ms > now_ms
    }
}

const COLUMNS: &str = "id, run_id, asked_ms, expires_ms, questions, answers, answered_ms, replica";

fn question_row(row: &sqlx::any::AnyRow) -> StoreResult<StoredQuestion> {
    Ok(StoredQuestion {
        id: row.try_get(0)?,
        run_id: row.try_get(1)?,
        asked_ms: row.try_get(2)?,
        expires_ms: row.try_get(3)?,
        questions: row.try_get(4)?,
        answers: row.try_get(5)?,
        answered_ms: row.try_get(6)?,
        replica: row.try_get(7)?,
    })
}

/// Puts `q` up for an answer (its `answers` and `answered_ms` are ignored), and
/// removes the sets that stopped waiting more than [`QUESTION_RETENTION_MS`]
/// before it was asked.
///
/// # Errors
/// [`StoreError::Conflict`] when the id is taken; a failed query.
pub async fn insert_question(store: &Store, q: &StoredQuestion) -> StoreResult<()> {
    let mut tx = store.begin_write().await?;
    let cutoff = q.asked_ms.saturating_sub(QUESTION_RETENTION_MS);
    sqlx::query(
        "DELETE FROM questions WHERE expires_ms < $1 AND (answered_ms IS NULL OR answered_ms < $2)",
    )
    .bind(cutoff)
    .bind(cutoff)
    .execute(&mut *tx)
    .await?;
    let inserted = sqlx::query(
        "INSERT INTO questions (id, run_id, asked_ms, expires_ms, questions, replica) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&q.id)
    .bind(&q.run_id)
    .bind(q.asked_ms)
    .bind(q.expires_ms)
    .bind(&q.questions)
    .bind(&q.replica)
    .execute(&mut *tx)
    .await;
    match inserted {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            return Err(StoreError::conflict(format!(
                "questions with id {:?} exist",
                q.id
            )));
        }
        other => {
            other?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// The sets waiting for an answer at `now_ms`, the oldest first.
///
/// # Errors
/// A failed query.
pub async fn waiting_questions(store: &Store, now_ms: i64) -> StoreResult<Vec<StoredQuestion>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM questions WHERE answered_ms IS NULL AND expires_ms > $1 \
         ORDER BY asked_ms, id"
    )))
    .bind(now_ms)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(question_row).collect()
}

/// The set `id`, waiting or not.
///
/// # Errors
/// A failed query.
pub async fn get_question(store: &Store, id: &str) -> StoreResult<Option<StoredQuestion>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM questions WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(question_row).transpose()
}

/// Records `answers` (JSON) as the answer to set `id` at `now_ms`, if it still
/// waits then. Returns whether it did: false when the set is unknown, answered
/// already (the first answer stays) or no longer waiting.
///
/// # Errors
/// A failed query.
pub async fn record_answer(
    store: &Store,
    id: &str,
    answers: &str,
    now_ms: i64,
) -> StoreResult<bool> {
    let mut tx = store.begin_write().await?;
    let done = sqlx::query(
        "UPDATE questions SET answers = $1, answered_ms = $2 \
         WHERE id = $3 AND answers IS NULL AND expires_ms > $4",
    )
    .bind(answers)
    .bind(now_ms)
    .bind(id)
    .bind(now_ms)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected() > 0)
}

/// The answers (JSON) recorded to the sets among `ids`, as (id, answers).
///
/// # Errors
/// A failed query.
pub async fn answered_questions(
    store: &Store,
    ids: &[String],
) -> StoreResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(IDS_PER_QUERY) {
        let sql = format!(
            "SELECT id, answers FROM questions WHERE answers IS NOT NULL AND id IN ({})",
            placeholders(1, chunk.len())
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for id in chunk {
            query = query.bind(id);
        }
        for row in query.fetch_all(store.pool()).await? {
            out.push((row.try_get(0)?, row.try_get(1)?));
        }
    }
    Ok(out)
}

/// Stops set `id` waiting at `now_ms` (its run no longer waits for it): it is
/// neither listed nor answerable after. An answer recorded before stays.
///
/// # Errors
/// A failed query.
pub async fn withdraw_question(store: &Store, id: &str, now_ms: i64) -> StoreResult<()> {
    let mut tx = store.begin_write().await?;
    sqlx::query(
        "UPDATE questions SET expires_ms = $1 WHERE id = $2 AND answers IS NULL AND expires_ms > $3",
    )
    .bind(now_ms)
    .bind(id)
    .bind(now_ms)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
