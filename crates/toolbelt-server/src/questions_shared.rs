//! Questions kept in the store, for replicas of a server that share one: what
//! [`PendingQuestions`](crate::PendingQuestions) asks, lists and answers there,
//! and how questions and answers are written as the store's JSON.

use serde::{Deserialize, Serialize};
use toolbelt_core::{Answer, Answers, Question};
use toolbelt_store::{StoreError, StoreHandle, StoredQuestion};

/// The store the questions of one replica are kept in.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    store: StoreHandle,
    /// This process, as the rows of its questions name it.
    replica: String,
}

/// An answer as the `answers` column holds it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredAnswers {
    Answered(Vec<Answer>),
    Declined { reason: Option<String> },
}

impl Shared {
    pub(crate) fn new(store: StoreHandle, replica: String) -> Shared {
        Shared { store, replica }
    }

    /// This process, as the rows of its questions name it.
    pub(crate) fn replica(&self) -> &str {
        &self.replica
    }

    /// Puts `questions` up under `id`, asked by this replica.
    pub(crate) async fn put(
        &self,
        id: &str,
        run_id: Option<&str>,
        questions: &[Question],
        asked_ms: i64,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        let store = self.store.store().await?;
        toolbelt_store::insert_question(
            store,
            &StoredQuestion {
                id: id.to_string(),
                run_id: run_id.map(str::to_string),
                asked_ms,
                expires_ms,
                questions: serde_json::to_string(questions).unwrap_or_else(|_| "[]".into()),
                answers: None,
                answered_ms: None,
                replica: self.replica.clone(),
            },
        )
        .await
    }

    /// The sets waiting at `now_ms`, the oldest first.
    pub(crate) async fn waiting(&self, now_ms: i64) -> Result<Vec<StoredQuestion>, StoreError> {
        toolbelt_store::waiting_questions(self.store.store().await?, now_ms).await
    }

    /// Set `id`, waiting or not.
    pub(crate) async fn get(&self, id: &str) -> Result<Option<StoredQuestion>, StoreError> {
        toolbelt_store::get_question(self.store.store().await?, id).await
    }

    /// Records `answers` to set `id` if it still waits at `now_ms`; whether it did.
    pub(crate) async fn record(
        &self,
        id: &str,
        answers: &Answers,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let stored = match answers {
            Answers::Answered(a) => StoredAnswers::Answered(a.clone()),
            Answers::Declined { reason } => StoredAnswers::Declined {
                reason: reason.clone(),
            },
        };
        let json = serde_json::to_string(&stored).unwrap_or_else(|_| "{}".into());
        toolbelt_store::record_answer(self.store.store().await?, id, &json, now_ms).await
    }

    /// The answers recorded to the sets among `ids`.
    pub(crate) async fn answered(
        &self,
        ids: &[String],
    ) -> Result<Vec<(String, Answers)>, StoreError> {
        let found = toolbelt_store::answered_questions(self.store.store().await?, ids).await?;
        Ok(found
            .into_iter()
            .map(|(id, json)| {
                let answers = answers_of(&id, &json);
                (id, answers)
            })
            .collect())
    }

    /// Stops set `id` waiting, now.
    pub(crate) async fn withdraw(&self, id: &str) -> Result<(), StoreError> {
        let store = self.store.store().await?;
        toolbelt_store::withdraw_question(store, id, toolbelt_store::now_ms()).await
    }
}

/// The questions of a stored set.
///
/// # Errors
/// They are not the JSON of questions.
pub(crate) fn questions_of(set: &StoredQuestion) -> Result<Vec<Question>, serde_json::Error> {
    serde_json::from_str(&set.questions)
}

/// The answers of set `id` from their JSON; an answer that cannot be read counts
/// as declined (with a warning), so that the run goes on.
pub(crate) fn answers_of(id: &str, json: &str) -> Answers {
    match serde_json::from_str::<StoredAnswers>(json) {
        Ok(StoredAnswers::Answered(answers)) => Answers::Answered(answers),
        Ok(StoredAnswers::Declined { reason }) => Answers::Declined { reason },
        Err(e) => {
            tracing::warn!(target: "toolbelt::serve", id, "an answer in the store cannot be read: {e}");
            Answers::Declined {
                reason: Some("the answer could not be read".into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn answers_read_back_as_written_and_unreadable_ones_decline() {
        let answered = StoredAnswers::Answered(vec![Answer {
            header: "Storage".into(),
            selected: vec!["SQLite".into()],
            text: Some("the small one".into()),
        }]);
        let json = serde_json::to_string(&answered).unwrap();
        assert_eq!(
            json,
            r#"{"answered":[{"header":"Storage","selected":["SQLite"],"text":"the small one"}]}"#
        );
        assert!(matches!(answers_of("q-1", &json), Answers::Answered(a) if a.len() == 1));
        assert_eq!(
            answers_of("q-1", r#"{"declined":{"reason":"later"}}"#),
            Answers::Declined {
                reason: Some("later".into())
            }
        );
        assert_eq!(
            answers_of("q-1", "nonsense"),
            Answers::Declined {
                reason: Some("the answer could not be read".into())
            }
        );
    }
}
