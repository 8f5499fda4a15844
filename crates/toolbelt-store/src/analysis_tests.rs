//! Unit tests of the analysis on plain rows.

use super::*;

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap_or_default()
}

fn at(date: &str, mood: Option<f64>, content: &str, tags: &[&str]) -> ReviewPoint {
    ReviewPoint {
        reviewed_at: day_start_ms(day(date), Utc.fix()) + 12 * 3_600_000,
        mood,
        content: content.to_string(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
    }
}

#[test]
fn slope_is_least_squares() {
    assert_eq!(slope(&[(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]), Some(1.0));
    assert_eq!(slope(&[(0.0, 5.0), (2.0, 4.0)]), Some(-0.5));
    assert_eq!(slope(&[(3.0, 5.0), (3.0, 7.0)]), None);
    assert_eq!(slope(&[(3.0, 5.0)]), None);
}

#[test]
fn an_empty_range_has_empty_sections() {
    let req = AnalysisRequest::new(TimeRange::Week, day("2026-03-07"));
    let a = analyze(&req, &[], Some((0, 0)));
    assert_eq!(a.start_date, "2026-03-01");
    assert_eq!(
        a.mood.as_ref().map(|m| (m.count, m.average, m.trend)),
        Some((0, None, None))
    );
    assert_eq!(a.tags, Some(vec![]));
    assert_eq!(a.tasks.as_ref().map(|t| t.completion_ratio), Some(None));
    let s = a
        .streaks
        .clone()
        .unwrap_or_else(|| streaks(&[], day("2026-03-01"), day("2026-03-07")));
    assert_eq!(
        (
            s.current,
            s.longest,
            s.longest_start,
            s.days_with_review,
            s.days_in_range
        ),
        (0, 0, None, 0, 7)
    );
    assert_eq!(
        a.summary(),
        "Patterns of the last 7 days (2026-03-01 to 2026-03-07, UTC+00:00): 0 reviews.\n\
         - Mood: no review with a mood.\n- Tags: none.\n- Themes: no word recurs yet.\n\
         - Tasks: 0 created, 0 completed.\n- Streaks: current 0 days, longest 0; reviews on 0 of 7 days."
    );
}

#[test]
fn the_current_streak_may_end_the_day_before() {
    let dates = [
        day("2026-03-01"),
        day("2026-03-02"),
        day("2026-03-04"),
        day("2026-03-05"),
        day("2026-03-06"),
    ];
    let s = streaks(&dates, day("2026-03-01"), day("2026-03-07"));
    assert_eq!(
        (
            s.current,
            s.longest,
            s.longest_start.as_deref(),
            s.longest_end.as_deref(),
            s.days_with_review
        ),
        (3, 3, Some("2026-03-04"), Some("2026-03-06"), 5)
    );
    let s = streaks(&dates[..2], day("2026-03-01"), day("2026-03-07"));
    assert_eq!(
        (s.current, s.longest, s.longest_start.as_deref()),
        (0, 2, Some("2026-03-01"))
    );
}

#[test]
fn only_asked_sections_are_computed() {
    let mut req = AnalysisRequest::new(TimeRange::Week, day("2026-03-07"));
    req.sections = vec![Section::Tags];
    let rows = [
        at("2026-03-02", Some(6.0), "", &["Work", "health"]),
        at("2026-03-03", Some(9.0), "", &["work"]),
        at("2026-03-04", None, "", &["rest"]),
    ];
    let a = analyze(&req, &rows, None);
    assert!(a.mood.is_none() && a.themes.is_none() && a.tasks.is_none() && a.streaks.is_none());
    assert_eq!(
        a.tags,
        Some(vec![
            TagPattern {
                tag: "Work".into(),
                count: 2,
                mean_mood: Some(7.5)
            },
            TagPattern {
                tag: "health".into(),
                count: 1,
                mean_mood: Some(6.0)
            },
            TagPattern {
                tag: "rest".into(),
                count: 1,
                mean_mood: None
            },
        ])
    );
}
