//! Questions kept in the store, shared by two replicas (on SQLite and on
//! PostgreSQL): asked on one, listed and answered on the other, once; the asking
//! run gets the answer where it waits; declined, refused, expired and withdrawn
//! as in one process.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pretty_assertions::assert_eq;
use toolbelt_core::{Answer, Answers, AskError, Asker, Question, QuestionOption};
use toolbelt_store::{StoreHandle, testing};

use super::*;
use crate::test_support::TEST_TIMEOUT;

fn storage() -> Vec<Question> {
    vec![Question {
        header: "Storage".into(),
        question: "Which database?".into(),
        options: ["SQLite", "PostgreSQL"]
            .iter()
            .map(|l| QuestionOption {
                label: (*l).into(),
                description: String::new(),
            })
            .collect(),
        multi_select: false,
    }]
}

fn pick(label: &str) -> Reply {
    Reply {
        answers: Some(vec![ReplyAnswer {
            header: "Storage".into(),
            selected: vec![label.into()],
            text: None,
        }]),
        ..Reply::default()
    }
}

/// Two replicas on one store.
fn replicas(store: &toolbelt_store::Store, wait: Duration) -> (PendingQuestions, PendingQuestions) {
    let handle = StoreHandle::open(store.clone());
    let replica = |name: &str| {
        PendingQuestions::with_limits(wait, 10).with_store(handle.clone(), name.to_string())
    };
    (replica("replica-a"), replica("replica-b"))
}

/// Asks `asker` from a task, as a run would.
fn ask(asker: impl Asker + 'static) -> tokio::task::JoinHandle<Result<Answers, AskError>> {
    tokio::spawn(async move { asker.ask(&storage()).await })
}

/// Waits until `replica` lists `n` sets waiting; returns them.
async fn until_listed(replica: &PendingQuestions, n: usize) -> Vec<Pending> {
    tokio::time::timeout(TEST_TIMEOUT, async {
        loop {
            let waiting = replica.waiting().await.expect("listed");
            if waiting.len() == n {
                return waiting;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("listed in time")
}

async fn outcome(
    asking: tokio::task::JoinHandle<Result<Answers, AskError>>,
) -> Result<Answers, AskError> {
    tokio::time::timeout(TEST_TIMEOUT, asking)
        .await
        .expect("in time")
        .expect("task")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_asked_on_one_replica_is_answered_through_the_other_once() {
    for t in testing::both().await.expect("stores") {
        let (a, b) = replicas(&t.store, DEFAULT_ANSWER_WAIT);
        assert_eq!(a.replica(), Some("replica-a"));
        let run_id = Arc::new(OnceLock::new());
        run_id.set("20260501-090000-ab12".to_string()).expect("set");
        let asking = ask(a.for_run(run_id));
        let listed = until_listed(&b, 1).await;
        assert_eq!(
            (listed[0].run_id.as_deref(), &listed[0].questions),
            (Some("20260501-090000-ab12"), &storage())
        );
        assert_eq!(listed[0].expires_at - listed[0].asked_at, 10 * 60 * 1000);
        assert_eq!((a.len(), b.len()), (1, 0));
        let id = listed[0].id.clone();

        // A reply that does not fit is refused; the questions stay.
        assert!(matches!(
            b.answer(&id, pick("MySQL")).await,
            Err(ReplyError::Invalid(_))
        ));
        assert!(b.answer(&id, pick("PostgreSQL")).await.expect("taken"));
        assert_eq!(
            outcome(asking).await,
            Ok(Answers::Answered(vec![Answer {
                header: "Storage".into(),
                selected: vec!["PostgreSQL".into()],
                text: None,
            }]))
        );
        // Once: neither replica takes a second answer.
        assert!(matches!(
            a.answer(&id, pick("SQLite")).await,
            Err(ReplyError::Answered(_))
        ));
        assert!(matches!(
            b.answer(
                &id,
                Reply {
                    decline: true,
                    ..Reply::default()
                }
            )
            .await,
            Err(ReplyError::Answered(_))
        ));
        assert!(matches!(
            b.answer("q-0000", pick("SQLite")).await,
            Err(ReplyError::NotPending(_))
        ));
        assert!(a.waiting().await.expect("listed").is_empty());
        assert!(a.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn declined_on_either_replica_the_reason_reaches_the_run() {
    for t in testing::both().await.expect("stores") {
        let (a, b) = replicas(&t.store, DEFAULT_ANSWER_WAIT);
        for answering in [&b, &a] {
            let asking = ask(a.clone());
            let id = until_listed(answering, 1).await[0].id.clone();
            let reply = Reply {
                decline: true,
                reason: Some(" not now ".into()),
                ..Reply::default()
            };
            assert!(!answering.answer(&id, reply).await.expect("taken"));
            assert_eq!(
                outcome(asking).await,
                Ok(Answers::Declined {
                    reason: Some("not now".into())
                })
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unanswered_questions_expire_and_a_cancelled_run_withdraws_its_own() {
    for t in testing::both().await.expect("stores") {
        let (a, b) = replicas(&t.store, Duration::from_millis(300));
        let asking = ask(a.clone());
        let id = until_listed(&b, 1).await[0].id.clone();
        assert_eq!(
            outcome(asking).await,
            Ok(Answers::Declined {
                reason: Some("nobody answered within 300 milliseconds".into())
            })
        );
        assert!(b.waiting().await.expect("listed").is_empty());
        assert!(matches!(
            b.answer(&id, pick("SQLite")).await,
            Err(ReplyError::Expired(_))
        ));

        let (a, b) = replicas(&t.store, DEFAULT_ANSWER_WAIT);
        let asking = ask(a.clone());
        let id = until_listed(&b, 1).await[0].id.clone();
        asking.abort();
        until_listed(&b, 0).await;
        assert!(matches!(
            b.answer(&id, pick("SQLite")).await,
            Err(ReplyError::Expired(_))
        ));
        assert!(a.is_empty());
    }
}
