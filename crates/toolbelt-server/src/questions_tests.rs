//! Pending questions: asked, listed and answered over `/v1/questions`, declined,
//! refused when the answer does not fit, declined unanswered after the wait,
//! withdrawn with a cancelled call, and bounded.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::{
    Answer, Answers, AskError, Asker, CallOptions, Question, QuestionOption, Registry, Session,
    ToolCall,
};

use super::*;
use crate::http::{ServeConfig, router};
use crate::test_support::TEST_TIMEOUT;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const BIND: &str = "127.0.0.1:8750";

fn question(header: &str, labels: &[&str], multi_select: bool) -> Question {
    Question {
        header: header.into(),
        question: format!("Which {header}?"),
        options: labels
            .iter()
            .map(|l| QuestionOption {
                label: (*l).into(),
                description: format!("{l}, for short"),
            })
            .collect(),
        multi_select,
    }
}

/// Two questions: one choice of storage, any number of extras.
fn two_questions() -> Vec<Question> {
    vec![
        question("Storage", &["SQLite", "PostgreSQL"], false),
        question("Extras", &["Backups", "Metrics", "Search"], true),
    ]
}

struct Api {
    router: axum::Router,
    _dir: tempfile::TempDir,
}

fn api(questions: &PendingQuestions) -> Api {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = Registry::new(Session::new(dir.path()).with_state_dir(dir.path().join(".s")));
    let mut config = ServeConfig::new(BIND.parse().expect("address"), TOKEN);
    config.questions = questions.clone();
    Api {
        router: router(Arc::new(registry), &config),
        _dir: dir,
    }
}

impl Api {
    async fn send(&self, method: &str, uri: &str, body: Option<&str>) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::HOST, BIND)
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let request = request
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .expect("request");
        let (status, _, bytes) = crate::test_support::respond(self.router.clone(), request).await;
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, value)
    }

    async fn list(&self) -> Value {
        let (status, body) = self.send("GET", "/v1/questions", None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["questions"].clone()
    }

    async fn post(&self, id: &str, body: &Value) -> (StatusCode, Value) {
        self.send(
            "POST",
            &format!("/v1/questions/{id}"),
            Some(&body.to_string()),
        )
        .await
    }
}

/// Waits until `n` sets of questions are pending.
async fn until_pending(questions: &PendingQuestions, n: usize) {
    tokio::time::timeout(TEST_TIMEOUT, async {
        while questions.len() != n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the questions are pending");
}

/// Asks `asked` from a task, as a run would; returns its outcome when it ends.
fn ask_in_background(
    asker: impl Asker + 'static,
    asked: Vec<Question>,
) -> tokio::task::JoinHandle<Result<Answers, AskError>> {
    tokio::spawn(async move { asker.ask(&asked).await })
}

#[tokio::test]
async fn questions_are_listed_with_their_run_and_answered_in_their_order() {
    let questions = PendingQuestions::new();
    let api = api(&questions);
    assert_eq!(api.list().await, json!([]));

    let run_id = Arc::new(OnceLock::new());
    run_id.set("20260501-090000-ab12".to_string()).expect("set");
    let asking = ask_in_background(questions.for_run(run_id), two_questions());
    until_pending(&questions, 1).await;

    let listed = api.list().await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let set = &listed[0];
    let id = set["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("q-"), "{id}");
    assert_eq!(set["run_id"], "20260501-090000-ab12");
    assert_eq!(
        set["questions"],
        serde_json::to_value(two_questions()).expect("JSON")
    );
    let asked_at = set["asked_at"].as_i64().expect("asked_at");
    assert_eq!(
        set["expires_at"].as_i64(),
        Some(asked_at + 10 * 60 * 1000),
        "{set}"
    );

    // The answers in another order than the questions, with words of one's own.
    let (status, body) = api
        .post(
            &id,
            &json!({"answers": [
                {"header": "Extras", "selected": ["Search", "Backups"]},
                {"header": "Storage", "selected": ["PostgreSQL"], "text": "  the one we run  "},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"id": id, "status": "answered"}));
    let answers = tokio::time::timeout(TEST_TIMEOUT, asking)
        .await
        .expect("answered in time")
        .expect("task")
        .expect("answers");
    assert_eq!(
        answers,
        Answers::Answered(vec![
            Answer {
                header: "Storage".into(),
                selected: vec!["PostgreSQL".into()],
                text: Some("the one we run".into()),
            },
            Answer {
                header: "Extras".into(),
                selected: vec!["Search".into(), "Backups".into()],
                text: None,
            },
        ])
    );
    assert_eq!(api.list().await, json!([]));

    // Answered already: nothing waits under the id.
    let (status, body) = api.post(&id, &json!({"decline": true})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "NOT_FOUND");
    let (status, _) = api.post("q-0000", &json!({"decline": true})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn declining_sends_the_reason_back() {
    let questions = PendingQuestions::new();
    let api = api(&questions);
    // Asked without a run: its id is unknown.
    let asking = ask_in_background(questions.clone(), two_questions());
    until_pending(&questions, 1).await;
    let listed = api.list().await;
    assert_eq!(listed[0]["run_id"], Value::Null);
    let id = listed[0]["id"].as_str().expect("id").to_string();
    let (status, body) = api
        .post(&id, &json!({"decline": true, "reason": " not today "}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "declined");
    assert_eq!(
        asking.await.expect("task"),
        Ok(Answers::Declined {
            reason: Some("not today".into())
        })
    );

    let asking = ask_in_background(questions.clone(), two_questions());
    until_pending(&questions, 1).await;
    let id = api.list().await[0]["id"].as_str().expect("id").to_string();
    let (status, _) = api.post(&id, &json!({"decline": true, "reason": ""})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        asking.await.expect("task"),
        Ok(Answers::Declined { reason: None })
    );
}

#[tokio::test]
async fn answers_that_do_not_fit_the_questions_are_refused_and_they_stay_pending() {
    let questions = PendingQuestions::new();
    let api = api(&questions);
    let asking = ask_in_background(questions.clone(), two_questions());
    until_pending(&questions, 1).await;
    let id = api.list().await[0]["id"].as_str().expect("id").to_string();
    let extras = json!({"header": "Extras", "selected": []});
    let cases = [
        (
            json!({"answers": [{"header": "Storage", "selected": ["MySQL"]}, extras]}),
            "answers[0].selected[0]: \"MySQL\" is not an option of \"Storage\" (the options: \"SQLite\", \"PostgreSQL\")",
        ),
        (
            json!({"answers": [{"header": "Storage", "selected": ["SQLite", "PostgreSQL"]}, extras]}),
            "answers[0].selected: \"Storage\" takes one choice, not 2",
        ),
        (
            json!({"answers": [{"header": "Storage", "selected": []}, extras]}),
            "answers[0]: pick one option of \"Storage\" or answer in \"text\"",
        ),
        (
            json!({"answers": [{"header": "Storage", "selected": ["SQLite"]}, {"header": "Extras", "selected": ["Search", "Search"]}]}),
            "answers[1].selected[1]: \"Search\" is picked twice",
        ),
        (
            json!({"answers": [{"header": "Storage", "selected": ["SQLite"]}]}),
            "no answer to the question \"Extras\"",
        ),
        (
            json!({"answers": [{"header": "Storage", "selected": ["SQLite"]}, {"header": "Storage", "selected": ["SQLite"]}]}),
            "answers[1]: the question \"Storage\" is answered twice",
        ),
        (
            json!({"answers": [{"header": "Database", "selected": ["SQLite"]}, extras]}),
            "answers[0].header: no question has the header \"Database\" (the headers: \"Storage\", \"Extras\")",
        ),
        (
            json!({"answers": [extras], "decline": true}),
            "send either \"answers\" or \"decline\": true, not both",
        ),
        (
            json!({"answers": [{"header": "Storage", "selected": ["SQLite"]}, extras], "reason": "why"}),
            "\"reason\" goes with \"decline\": true only",
        ),
        (
            json!({}),
            "send {\"answers\": [{\"header\", \"selected\", \"text\"}, ...]} or {\"decline\": true}",
        ),
        (
            json!({"decline": false}),
            "send {\"answers\": [{\"header\", \"selected\", \"text\"}, ...]} or {\"decline\": true}",
        ),
    ];
    for (body, message) in cases {
        let (status, answer) = api.post(&id, &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "INVALID_PARAMS", "{body}");
        assert_eq!(answer["error"]["message"], message, "{body}");
    }
    // Bodies that are no answer at all.
    for (body, said) in [
        ("", "the body is empty"),
        ("{\"answers\": ", "the body is not an answer"),
        ("{\"answer\": []}", "unknown field `answer`"),
        (
            "{\"answers\": [{\"header\": \"Storage\", \"picked\": []}]}",
            "unknown field `picked`",
        ),
    ] {
        let (status, answer) = api
            .send("POST", &format!("/v1/questions/{id}"), Some(body))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(said), "{body}: {message}");
    }
    // Still waiting, and a fitting answer is taken: in its own words only, for a
    // question of one choice; no pick at all in a multi-select one.
    assert_eq!(questions.len(), 1);
    let (status, body) = api
        .post(
            &id,
            &json!({"answers": [
                {"header": "Storage", "text": "whatever is simplest"},
                {"header": "Extras", "selected": []},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let Ok(Answers::Answered(answers)) = asking.await.expect("task") else {
        panic!("not answered");
    };
    assert_eq!(answers[0].text.as_deref(), Some("whatever is simplest"));
    assert_eq!(answers[0].selected, Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn unanswered_questions_are_declined_after_the_wait() {
    let questions = PendingQuestions::new();
    let answer = questions.ask_from(None, &two_questions()).await;
    assert_eq!(
        answer,
        Ok(Answers::Declined {
            reason: Some("nobody answered within 10 minutes".into())
        })
    );
    assert!(questions.is_empty());

    let short = PendingQuestions::with_limits(Duration::from_secs(90), 10);
    let answer = short.ask_from(None, &two_questions()).await;
    assert_eq!(
        answer,
        Ok(Answers::Declined {
            reason: Some("nobody answered within 90 seconds".into())
        })
    );
}

#[test]
fn waits_are_spoken_in_their_largest_whole_unit() {
    assert_eq!(spoken(Duration::from_secs(600)), "10 minutes");
    assert_eq!(spoken(Duration::from_secs(60)), "1 minute");
    assert_eq!(spoken(Duration::from_secs(7200)), "2 hours");
    assert_eq!(spoken(Duration::from_secs(1)), "1 second");
    assert_eq!(spoken(Duration::from_millis(250)), "250 milliseconds");
}

#[tokio::test]
async fn a_cancelled_call_withdraws_its_questions() {
    let questions = PendingQuestions::new();
    let api = api(&questions);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut registry =
        Registry::new(Session::new(dir.path()).with_state_dir(dir.path().join(".s")));
    registry
        .register_typed(toolbelt_tools::AskUser)
        .expect("register");
    registry.set_asker(Some(Arc::new(questions.clone())));
    let registry = Arc::new(registry);
    let arguments = json!({"questions": [{
        "header": "Storage",
        "question": "Where should the sessions be stored?",
        "options": [{"label": "SQLite"}, {"label": "PostgreSQL"}]
    }]});

    // Answered on the page: ask_user tells the model what was picked.
    let call = {
        let registry = Arc::clone(&registry);
        let arguments = arguments.clone();
        tokio::spawn(async move {
            registry
                .execute_call(ToolCall::new("ask_user", arguments), CallOptions::default())
                .await
        })
    };
    until_pending(&questions, 1).await;
    let id = api.list().await[0]["id"].as_str().expect("id").to_string();
    let (status, _) = api
        .post(
            &id,
            &json!({"answers": [{"header": "Storage", "selected": ["SQLite"]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let envelope = call.await.expect("task");
    assert_eq!(
        envelope.text, "The user answered:\n- Storage: SQLite",
        "{envelope:?}"
    );

    // Cancelled while waiting: the questions go, and answering them is too late.
    let cancel = CancellationToken::new();
    let call = {
        let registry = Arc::clone(&registry);
        let options = CallOptions {
            cancel: Some(cancel.clone()),
            ..CallOptions::default()
        };
        tokio::spawn(async move {
            registry
                .execute_call(ToolCall::new("ask_user", arguments), options)
                .await
        })
    };
    until_pending(&questions, 1).await;
    let id = api.list().await[0]["id"].as_str().expect("id").to_string();
    cancel.cancel();
    let envelope = call.await.expect("task");
    assert_eq!(
        envelope.error_code(),
        Some(toolbelt_core::ErrorCode::Cancelled),
        "{envelope:?}"
    );
    assert!(questions.is_empty());
    assert_eq!(api.list().await, json!([]));
    let (status, _) = api
        .post(
            &id,
            &json!({"answers": [{"header": "Storage", "selected": ["SQLite"]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A dropped asker withdraws them too.
    let asking = ask_in_background(questions.clone(), two_questions());
    until_pending(&questions, 1).await;
    asking.abort();
    until_pending(&questions, 0).await;
}

#[tokio::test]
async fn the_number_pending_is_bounded() {
    let questions = PendingQuestions::with_limits(Duration::from_secs(60), 2);
    let first = ask_in_background(questions.clone(), two_questions());
    let second = ask_in_background(questions.clone(), two_questions());
    until_pending(&questions, 2).await;
    let refused = questions.ask_from(None, &two_questions()).await;
    assert_eq!(
        refused,
        Err(AskError::Failed(
            "2 sets of questions are waiting for an answer on the web page already".into()
        ))
    );
    assert_eq!(
        questions.ask_from(None, &[]).await,
        Err(AskError::Failed("there are no questions to put".into()))
    );
    first.abort();
    second.abort();
    until_pending(&questions, 0).await;
}

#[tokio::test]
async fn the_questions_need_the_token_and_are_in_the_openapi_document() {
    let questions = PendingQuestions::new();
    let api = api(&questions);
    let request = Request::get("/v1/questions")
        .header(header::HOST, BIND)
        .body(Body::empty())
        .expect("request");
    let (status, _, _) = crate::test_support::respond(api.router.clone(), request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let request = Request::post("/v1/questions/q-1")
        .header(header::HOST, BIND)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{\"decline\": true}"))
        .expect("request");
    let (status, _, _) = crate::test_support::respond(api.router.clone(), request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, doc) = api.send("GET", "/v1/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        doc["paths"]["/v1/questions"]["get"]["operationId"],
        "listQuestions"
    );
    assert_eq!(
        doc["paths"]["/v1/questions/{id}"]["post"]["operationId"],
        "answerQuestions"
    );
}
