//! Reviews and their pattern analysis on both backends, against figures worked out
//! by hand for the fixture `tests/fixtures/reviews/reviews.json` (English and
//! Chinese reviews of a user in UTC+08:00).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, NaiveDate};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_store::{
    AnalysisRequest, NewReview, ReviewKind, ReviewQuery, Section, Store, StoreError, TimeRange,
    analyze_patterns, list_reviews, parse_utc_offset, testing, write_review,
};

const FIXTURE: &str = include_str!("../fixtures/reviews/reviews.json");
/// When the fixture is written: 2026-03-14 10:00 UTC.
const WRITTEN_AT_MS: i64 = 1_773_482_400_000;

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the test took longer than 60 s")
}

fn ms(rfc3339: &str) -> i64 {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .timestamp_millis()
}

fn kind(s: &str) -> ReviewKind {
    serde_json::from_value(json!(s)).unwrap()
}

/// Writes every review of the fixture, oldest first.
async fn load_fixture(store: &Store) {
    let rows: Vec<Value> = serde_json::from_str(FIXTURE).unwrap();
    for r in rows {
        let new = NewReview {
            content: r["content"].as_str().unwrap().to_string(),
            kind: kind(r["type"].as_str().unwrap()),
            tags: serde_json::from_value(r["tags"].clone()).unwrap(),
            linked_project_ids: Vec::new(),
            mood: r["mood"].as_f64(),
            date: Some(r["date"].as_str().unwrap().to_string()),
        };
        write_review(store, &new, WRITTEN_AT_MS).await.unwrap();
    }
}

/// Tasks around the range 2026-02-13 .. 2026-03-14 (UTC+08:00): three created in
/// it, two completed in it (one of them created before it).
async fn insert_tasks(store: &Store) {
    let tasks = [
        (
            "before, done inside",
            "2026-02-12T10:00:00+08:00",
            Some("2026-02-20T10:00:00+08:00"),
        ),
        (
            "inside, done inside",
            "2026-02-15T10:00:00+08:00",
            Some("2026-03-01T10:00:00+08:00"),
        ),
        ("inside, open", "2026-02-25T10:00:00+08:00", None),
        (
            "inside, done after",
            "2026-03-10T10:00:00+08:00",
            Some("2026-03-15T01:00:00+08:00"),
        ),
        ("after", "2026-03-15T00:30:00+08:00", None),
    ];
    for (title, created, completed) in tasks {
        let status = if completed.is_some() {
            "completed"
        } else {
            "pending"
        };
        sqlx::query(
            "INSERT INTO tasks (title, priority, status, completed_at, created_at, updated_at) VALUES ($1, 'medium', $2, $3, $4, $4)",
        )
        .bind(title)
        .bind(status)
        .bind(completed.map(ms))
        .bind(ms(created))
        .execute(store.pool())
        .await
        .unwrap();
    }
}

/// The analysis of the fixture over the month ending 2026-03-14, in UTC+08:00.
pub fn expected_month() -> Value {
    json!({
        "time_range": "month",
        "start_date": "2026-02-13",
        "end_date": "2026-03-14",
        "utc_offset": "+08:00",
        "days": 30,
        "reviews": 13,
        "mood": {
            "count": 12,
            "average": 6.83,
            "trend": {"slope_per_day": 0.089, "direction": "rising"},
            "by_weekday": [
                {"weekday": "Monday", "count": 4, "average": 5.88},
                {"weekday": "Tuesday", "count": 2, "average": 5.75},
                {"weekday": "Wednesday", "count": 2, "average": 7.25},
                {"weekday": "Thursday", "count": 1, "average": 8.5},
                {"weekday": "Friday", "count": 2, "average": 7.5},
                {"weekday": "Saturday", "count": 1, "average": 9.0},
                {"weekday": "Sunday", "count": 0, "average": null}
            ]
        },
        "tags": [
            {"tag": "work", "count": 9, "mean_mood": 6.72},
            {"tag": "health", "count": 4, "mean_mood": 6.75},
            {"tag": "reflection", "count": 3, "mean_mood": 7.83}
        ],
        "themes": {
            "words": [
                {"text": "review", "reviews": 4, "occurrences": 5},
                {"text": "code", "reviews": 4, "occurrences": 4},
                {"text": "database", "reviews": 4, "occurrences": 4},
                {"text": "migration", "reviews": 4, "occurrences": 4},
                {"text": "morning", "reviews": 4, "occurrences": 4},
                {"text": "进展", "reviews": 4, "occurrences": 4},
                {"text": "顺利", "reviews": 4, "occurrences": 4},
                {"text": "run", "reviews": 3, "occurrences": 3},
                {"text": "数据库", "reviews": 3, "occurrences": 3},
                {"text": "迁移", "reviews": 3, "occurrences": 3}
            ],
            "phrases": [
                {"text": "code review", "reviews": 4, "occurrences": 4},
                {"text": "database migration", "reviews": 4, "occurrences": 4},
                {"text": "进展顺利", "reviews": 4, "occurrences": 4},
                {"text": "morning run", "reviews": 3, "occurrences": 3},
                {"text": "数据库迁移", "reviews": 3, "occurrences": 3},
                {"text": "团队沟通", "reviews": 2, "occurrences": 2},
                {"text": "沟通顺畅", "reviews": 2, "occurrences": 2}
            ]
        },
        "tasks": {"created": 3, "completed": 2, "completion_ratio": 0.67},
        "streaks": {
            "current": 1,
            "longest": 6,
            "longest_start": "2026-03-02",
            "longest_end": "2026-03-07",
            "days_with_review": 13,
            "days_in_range": 30
        }
    })
}

/// The text summary of [`expected_month`].
pub const EXPECTED_MONTH_SUMMARY: &str = "Patterns of the last 30 days (2026-02-13 to 2026-03-14, UTC+08:00): 13 reviews.
- Mood: average 6.83 over 12 reviews, rising (+0.089/day); by weekday: Mon 5.88, Tue 5.75, Wed 7.25, Thu 8.5, Fri 7.5, Sat 9.
- Tags: work ×9 (mood 6.72), health ×4 (mood 6.75), reflection ×3 (mood 7.83).
- Themes: review (4), code (4), database (4), migration (4), morning (4), 进展 (4), 顺利 (4), run (3), 数据库 (3), 迁移 (3).
- Phrases: code review (4), database migration (4), 进展顺利 (4), morning run (3), 数据库迁移 (3), 团队沟通 (2), 沟通顺畅 (2).
- Tasks: 3 created, 2 completed (ratio 0.67).
- Streaks: current 1 day, longest 6 (2026-03-02 to 2026-03-07); reviews on 13 of 30 days.";

fn month_request() -> AnalysisRequest {
    let mut req = AnalysisRequest::new(
        TimeRange::Month,
        NaiveDate::from_ymd_opt(2026, 3, 14).unwrap(),
    );
    req.utc_offset = parse_utc_offset("+08:00").unwrap();
    req
}

#[tokio::test]
async fn the_fixture_has_the_hand_computed_patterns() {
    within(async {
        for t in testing::both().await.unwrap() {
            load_fixture(&t.store).await;
            insert_tasks(&t.store).await;
            let a = analyze_patterns(&t.store, &month_request()).await.unwrap();
            assert_eq!(
                serde_json::to_value(&a).unwrap(),
                expected_month(),
                "{:?}",
                t.store.backend()
            );
            assert_eq!(a.summary(), EXPECTED_MONTH_SUMMARY);
        }
    })
    .await;
}

#[tokio::test]
async fn the_offset_decides_the_day_and_only_asked_sections_come_back() {
    within(async {
        for t in testing::both().await.unwrap() {
            load_fixture(&t.store).await;
            // 2026-03-02T07:00+08:00 is a Monday there and still Sunday in UTC.
            let mut req = AnalysisRequest::new(
                TimeRange::Week,
                NaiveDate::from_ymd_opt(2026, 3, 2).unwrap(),
            );
            req.sections = vec![Section::Mood, Section::Streaks];
            let utc = analyze_patterns(&t.store, &req).await.unwrap();
            req.utc_offset = parse_utc_offset("+08:00").unwrap();
            let east = analyze_patterns(&t.store, &req).await.unwrap();
            let sunday_monday = |a: &toolbelt_store::PatternAnalysis| {
                let m = a.mood.as_ref().unwrap();
                (m.by_weekday[6].count, m.by_weekday[0].count)
            };
            assert_eq!(sunday_monday(&utc), (1, 0));
            assert_eq!(sunday_monday(&east), (0, 1));
            let v = serde_json::to_value(&east).unwrap();
            let mut keys = v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            keys.sort();
            assert_eq!(
                keys,
                [
                    "days",
                    "end_date",
                    "mood",
                    "reviews",
                    "start_date",
                    "streaks",
                    "time_range",
                    "utc_offset"
                ]
            );
            // 2026-02-24 .. 2026-03-02 in UTC+08:00 holds one review, on its last day.
            assert_eq!(east.reviews, 1);
            assert_eq!(east.start_date, "2026-02-24");
            let s = east.streaks.unwrap();
            assert_eq!(
                (s.current, s.longest, s.days_with_review, s.days_in_range),
                (1, 1, 1, 7)
            );
        }
    })
    .await;
}

/// Reviews with and without a mood, one after another on the same connections: on
/// PostgreSQL a statement first prepared for a missing mood must still take one.
#[tokio::test]
async fn moods_may_come_and_go() {
    within(async {
        for t in testing::both().await.unwrap() {
            let store = &t.store;
            for i in 0..12 {
                let new = NewReview {
                    content: format!("review {i}"),
                    kind: ReviewKind::Daily,
                    tags: Vec::new(),
                    linked_project_ids: Vec::new(),
                    mood: (i % 3 != 0).then_some(f64::from(i % 9) + 1.5),
                    date: Some("2026-03-04".into()),
                };
                let r = write_review(store, &new, WRITTEN_AT_MS)
                    .await
                    .unwrap_or_else(|e| panic!("{:?}, review {i}: {e}", store.backend()));
                assert_eq!(r.mood, new.mood, "{:?}", store.backend());
            }
        }
    })
    .await;
}

#[tokio::test]
async fn reviews_are_written_with_tags_projects_and_a_real_mood() {
    within(async {
        for t in testing::both().await.unwrap() {
            let store = &t.store;
            let project: i64 = sqlx::query_scalar(
                "INSERT INTO projects (name, status, created_at, updated_at) VALUES ('Migration', 'active', 0, 0) RETURNING id",
            )
            .fetch_one(store.pool())
            .await
            .unwrap();
            let new = NewReview {
                content: "今天进展顺利，完成了数据库迁移".into(),
                kind: ReviewKind::Daily,
                tags: vec![" Work ".into(), "work".into(), "数据库".into()],
                linked_project_ids: vec![format!("project-{project}"), format!("{project}")],
                mood: Some(7.5),
                date: Some("2026-03-04T21:30:00+08:00".into()),
            };
            let r = write_review(store, &new, WRITTEN_AT_MS).await.unwrap();
            assert_eq!(
                serde_json::to_value(&r).unwrap(),
                json!({
                    "id": "review-1",
                    "content": "今天进展顺利，完成了数据库迁移",
                    "type": "daily",
                    "tags": ["Work", "数据库"],
                    "linked_project_ids": [format!("project-{project}")],
                    "mood": 7.5,
                    "date": "2026-03-04T13:30:00Z"
                })
            );
            // No date: the moment of writing.
            let plain = NewReview {
                content: "Quiet day.".into(),
                kind: ReviewKind::Weekly,
                tags: vec![],
                linked_project_ids: vec![],
                mood: None,
                date: None,
            };
            let r2 = write_review(store, &plain, WRITTEN_AT_MS).await.unwrap();
            assert_eq!((r2.id.as_str(), r2.date.as_str()), ("review-2", "2026-03-14T10:00:00Z"));

            let page = list_reviews(store, &ReviewQuery::default()).await.unwrap();
            assert_eq!(page.total, 2);
            assert_eq!(page.items, vec![r2.clone(), r.clone()]);

            // Nothing is written when a project is missing or of another kind.
            for (id, message) in [
                ("project-9", "no project has the id project-9; list_projects lists the projects and their ids"),
                ("task-1", "\"task-1\" is a task id, not a project id; list_projects lists the projects and their ids"),
            ] {
                let bad = NewReview { linked_project_ids: vec![id.into()], ..plain.clone() };
                match write_review(store, &bad, WRITTEN_AT_MS).await {
                    Err(StoreError::NotFound(m)) => assert_eq!(m, message),
                    other => panic!("{other:?}"),
                }
            }
            for (new, message) in [
                (NewReview { content: " \n ".into(), ..plain.clone() }, "`content` is empty or only whitespace: write what happened, what went well and what to change"),
                (NewReview { mood: Some(11.0), ..plain.clone() }, "`mood` is 11: give a number from 1 (worst) to 10 (best)"),
                (NewReview { mood: Some(0.0), ..plain.clone() }, "`mood` is 0: give a number from 1 (worst) to 10 (best)"),
                (NewReview { date: Some("2026-02-30".into()), ..plain.clone() }, "date: 2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD"),
                (NewReview { tags: vec!["ok".into(), "".into()], ..plain.clone() }, "`tags[1]` is empty: give each tag a word, or leave the empty one out"),
            ] {
                match write_review(store, &new, WRITTEN_AT_MS).await {
                    Err(StoreError::Invalid(m)) => assert_eq!(m, message),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(list_reviews(store, &ReviewQuery::default()).await.unwrap().total, 2);
        }
    })
    .await;
}

#[tokio::test]
async fn reviews_are_listed_newest_first_and_filtered() {
    within(async {
        for t in testing::both().await.unwrap() {
            load_fixture(&t.store).await;
            let ids = |page: &toolbelt_store::ReviewPage| {
                page.items.iter().map(|r| r.id.clone()).collect::<Vec<_>>()
            };
            let all = list_reviews(&t.store, &ReviewQuery::default()).await.unwrap();
            assert_eq!((all.total, all.items.len(), all.limit, all.has_more), (14, 14, 20, false));
            assert_eq!(all.items[0].id, "review-14");
            assert_eq!(all.items[13].id, "review-1");
            assert_eq!(all.items[1].date, "2026-03-09T12:00:00Z");

            let q = ReviewQuery { tag: Some("WORK".into()), limit: Some(3), offset: Some(2), ..Default::default() };
            let page = list_reviews(&t.store, &q).await.unwrap();
            assert_eq!((page.total, page.has_more), (10, true));
            assert_eq!(ids(&page), ["review-10", "review-9", "review-7"]);
            assert_eq!(page.items[0].tags, ["work", "health"]);

            let q = ReviewQuery { kind: Some(ReviewKind::Weekly), ..Default::default() };
            assert_eq!(ids(&list_reviews(&t.store, &q).await.unwrap()), ["review-6"]);

            // Days in UTC+08:00: 03-02 07:00 there belongs to 2026-03-02.
            let q = ReviewQuery {
                since: Some("2026-03-02".into()),
                until: Some("2026-03-04".into()),
                utc_offset: Some("+08:00".into()),
                ..Default::default()
            };
            assert_eq!(ids(&list_reviews(&t.store, &q).await.unwrap()), ["review-9", "review-8", "review-7"]);
            let q = ReviewQuery { utc_offset: None, ..q };
            assert_eq!(ids(&list_reviews(&t.store, &q).await.unwrap()), ["review-9", "review-8"]);

            for (q, message) in [
                (ReviewQuery { limit: Some(201), ..Default::default() }, "`limit` is 201: give 1 to 200, and page with `offset`"),
                (ReviewQuery { since: Some("yesterday".into()), ..Default::default() }, "since: \"yesterday\" is not a date or date-time; write an RFC 3339 date-time such as 2026-03-01T17:00:00Z, or a date YYYY-MM-DD (work out relative dates such as \"tomorrow\" yourself)"),
                (ReviewQuery { since: Some("2026-03-05".into()), until: Some("2026-03-01".into()), ..Default::default() }, "`since` is after `until`: give a `since` on or before `until`"),
            ] {
                match list_reviews(&t.store, &q).await {
                    Err(StoreError::Invalid(m)) => assert_eq!(m, message),
                    other => panic!("{other:?}"),
                }
            }
        }
    })
    .await;
}

#[tokio::test]
async fn ten_thousand_reviews_are_analysed_quickly() {
    within(async {
        let t = testing::sqlite().await.unwrap();
        let mut tx = t.store.begin_write().await.unwrap();
        let rows: Vec<Value> = serde_json::from_str(FIXTURE).unwrap();
        let base = ms("2026-03-14T21:00:00+08:00");
        for i in 0..10_000i64 {
            let r = &rows[usize::try_from(i).unwrap() % rows.len()];
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO reviews (content, kind, mood, reviewed_at, created_at) VALUES ($1, 'daily', $2, $3, $3) RETURNING id",
            )
            .bind(r["content"].as_str().unwrap())
            .bind(r["mood"].as_f64())
            .bind(base - i * 700_000)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
            sqlx::query("INSERT INTO review_tags (review_id, position, tag, tag_key) VALUES ($1, 0, 'work', 'work')")
                .bind(id)
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
        let mut req = month_request();
        req.time_range = TimeRange::Quarter;
        // Load the dictionary first: the bound is on the analysis itself.
        let _ = analyze_patterns(&t.store, &month_request()).await.unwrap();
        let started = std::time::Instant::now();
        let a = analyze_patterns(&t.store, &req).await.unwrap();
        let took = started.elapsed();
        assert_eq!(a.reviews, 10_000);
        assert_eq!(a.tags.unwrap()[0].count, 10_000);
        let bound = if cfg!(debug_assertions) { 10 } else { 1 };
        assert!(took < Duration::from_secs(bound), "{took:?}");
    })
    .await;
}
