//! Questions in the store on both backends: listed while waiting, answered once,
//! not after they expired or were withdrawn, the answers found by the asker.

use pretty_assertions::assert_eq;
use toolbelt_store::{
    QUESTION_RETENTION_MS, StoreError, StoredQuestion, answered_questions, get_question,
    insert_question, record_answer, testing, waiting_questions, withdraw_question,
};

fn asked(id: &str, asked_ms: i64, expires_ms: i64) -> StoredQuestion {
    StoredQuestion {
        id: id.into(),
        run_id: Some("run-1".into()),
        asked_ms,
        expires_ms,
        questions: r#"[{"header":"Storage"}]"#.into(),
        answers: None,
        answered_ms: None,
        replica: "replica-a".into(),
    }
}

#[tokio::test]
async fn questions_wait_until_answered_once() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        insert_question(s, &asked("q-2", 200, 10_000))
            .await
            .unwrap();
        insert_question(s, &asked("q-1", 100, 10_000))
            .await
            .unwrap();
        assert!(matches!(
            insert_question(s, &asked("q-1", 300, 10_000)).await,
            Err(StoreError::Conflict(_))
        ));
        let ids = |qs: Vec<StoredQuestion>| qs.into_iter().map(|q| q.id).collect::<Vec<_>>();
        assert_eq!(
            ids(waiting_questions(s, 500).await.unwrap()),
            ["q-1", "q-2"]
        );

        assert!(
            record_answer(s, "q-1", r#"{"answered":[]}"#, 600)
                .await
                .unwrap()
        );
        // A second answer is refused; the first stays.
        assert!(
            !record_answer(s, "q-1", r#"{"declined":{}}"#, 700)
                .await
                .unwrap()
        );
        assert!(
            !record_answer(s, "q-9", r#"{"declined":{}}"#, 700)
                .await
                .unwrap()
        );
        let q1 = get_question(s, "q-1").await.unwrap().unwrap();
        assert_eq!(
            (q1.answers.as_deref(), q1.answered_ms, q1.is_waiting(700)),
            (Some(r#"{"answered":[]}"#), Some(600), false)
        );
        assert_eq!(ids(waiting_questions(s, 800).await.unwrap()), ["q-2"]);
        assert_eq!(
            answered_questions(s, &["q-1".into(), "q-2".into(), "q-9".into()])
                .await
                .unwrap(),
            vec![("q-1".to_string(), r#"{"answered":[]}"#.to_string())]
        );
        assert_eq!(get_question(s, "q-9").await.unwrap(), None);
    }
}

#[tokio::test]
async fn expired_and_withdrawn_questions_are_neither_listed_nor_answerable() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        insert_question(s, &asked("q-old", 100, 1_000))
            .await
            .unwrap();
        insert_question(s, &asked("q-gone", 100, 10_000))
            .await
            .unwrap();
        assert_eq!(waiting_questions(s, 1_000).await.unwrap().len(), 1);
        assert!(!record_answer(s, "q-old", "{}", 1_000).await.unwrap());

        withdraw_question(s, "q-gone", 2_000).await.unwrap();
        assert!(waiting_questions(s, 2_000).await.unwrap().is_empty());
        assert!(!record_answer(s, "q-gone", "{}", 2_001).await.unwrap());
        let gone = get_question(s, "q-gone").await.unwrap().unwrap();
        assert_eq!((gone.expires_ms, gone.answers), (2_000, None));

        // Long after, a new question clears them away.
        let later = 2_000 + QUESTION_RETENTION_MS + 1;
        insert_question(s, &asked("q-new", later, later + 1_000))
            .await
            .unwrap();
        assert_eq!(get_question(s, "q-old").await.unwrap(), None);
        assert_eq!(get_question(s, "q-gone").await.unwrap(), None);
    }
}
