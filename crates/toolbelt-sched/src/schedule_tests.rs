#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use pretty_assertions::assert_eq;

fn ms(rfc3339: &str) -> i64 {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .timestamp_millis()
}

fn berlin() -> Zone {
    Zone::parse("Europe/Berlin").unwrap()
}

fn message_and_hint(e: SchedError) -> (String, String) {
    match e {
        SchedError::Schedule { message, hint } => (message, hint),
        SchedError::Cron { ref hint, .. } => (toolbelt_core::error_chain(&e), hint.clone()),
        other => panic!("not a schedule error: {other:?}"),
    }
}

#[test]
fn cron_with_five_or_six_fields_and_nicknames() {
    let z = Zone::utc();
    let five = Schedule::parse("30 9 * * *", z).unwrap();
    assert_eq!(
        five.next_after(ms("2026-01-01T10:00:00Z"), 0, z),
        Some(ms("2026-01-02T09:30:00Z"))
    );
    let six = Schedule::parse("*/20 * * * * *", z).unwrap();
    assert_eq!(
        six.next_after(ms("2026-01-01T10:00:00Z"), 0, z),
        Some(ms("2026-01-01T10:00:20Z"))
    );
    let daily = Schedule::parse("@daily", z).unwrap();
    assert_eq!(
        daily.next_after(ms("2026-01-01T10:00:00Z"), 0, z),
        Some(ms("2026-01-02T00:00:00Z"))
    );
}

#[test]
fn next_is_strictly_after_even_inside_a_matching_second() {
    let z = Zone::utc();
    let every_second = Schedule::parse("* * * * * *", z).unwrap();
    let t = ms("2026-01-01T10:00:00Z") + 400;
    assert_eq!(
        every_second.next_after(t, 0, z),
        Some(ms("2026-01-01T10:00:01Z"))
    );
}

#[test]
fn bad_cron_expressions_say_why_and_how() {
    for text in ["61 * * * *", "* * *", "0 0 32 * *", "1 2 3 4 5 6 2027"] {
        let (message, hint) = message_and_hint(Schedule::parse(text, Zone::utc()).unwrap_err());
        assert!(message.contains(text), "{message}");
        assert!(hint.contains("5 fields"), "{hint}");
    }
}

#[test]
fn a_bad_cron_expression_reads_as_before_with_croners_words_last() {
    let text = "61 * * * *";
    let croner = CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(text)
        .unwrap_err();
    let e = Schedule::parse(text, Zone::utc())
        .unwrap_err()
        .into_tool_error();
    assert_eq!(e.code, toolbelt_core::ErrorCode::InvalidParams);
    assert_eq!(
        e.message,
        format!("schedule \"61 * * * *\" is not a valid cron expression: {croner}")
    );
    assert_eq!(e.hint.as_deref(), Some(CRON_HINT));
}

#[test]
fn intervals_count_from_the_anchor_and_have_a_floor() {
    let z = Zone::utc();
    let every = Schedule::parse("every 10m", z).unwrap();
    assert!(matches!(every, Schedule::Every(600_000)));
    assert_eq!(every.next_after(1_000_000, 400_000, z), Some(1_600_000));
    assert_eq!(every.next_after(999_999, 400_000, z), Some(1_000_000));
    assert!(matches!(
        Schedule::parse("Every 2h", z).unwrap(),
        Schedule::Every(7_200_000)
    ));
    assert!(matches!(
        Schedule::parse("every 30 seconds", z).unwrap(),
        Schedule::Every(30_000)
    ));
    for text in ["every 500ms", "every 0s"] {
        let (message, hint) = message_and_hint(Schedule::parse(text, z).unwrap_err());
        assert!(message.contains("shortest interval, 1 s"), "{message}");
        assert!(hint.contains("at least 1 s"), "{hint}");
    }
    let (message, _) = message_and_hint(Schedule::parse("every 5 fortnights", z).unwrap_err());
    assert!(message.contains("unknown unit"), "{message}");
}

#[test]
fn one_shot_times_with_offset_or_in_the_zone() {
    let at = Schedule::parse("2026-05-01T09:00:00+02:00", Zone::utc()).unwrap();
    assert!(at.is_one_shot());
    assert_eq!(
        at.next_after(0, 0, Zone::utc()),
        Some(ms("2026-05-01T07:00:00Z"))
    );
    assert_eq!(
        at.next_after(ms("2026-05-01T07:00:00Z"), 0, Zone::utc()),
        None
    );
    let local = Schedule::parse("at 2026-05-01T09:00", berlin()).unwrap();
    assert_eq!(
        local.next_after(0, 0, berlin()),
        Some(ms("2026-05-01T07:00:00Z"))
    );
    // 02:30 on the spring-forward day does not exist in Berlin.
    let (message, _) = message_and_hint(Schedule::parse("2026-03-29T02:30", berlin()).unwrap_err());
    assert!(message.contains("does not exist"), "{message}");
    let past = Schedule::parse("2020-01-01T00:00:00Z", Zone::utc()).unwrap();
    let (message, _) = message_and_hint(
        past.first(ms("2026-01-01T00:00:00Z"), Zone::utc())
            .unwrap_err(),
    );
    assert!(message.contains("not in the future"), "{message}");
}

#[test]
fn unknown_time_zones_are_refused() {
    assert!(matches!(
        Zone::parse("Mars/Olympus"),
        Err(SchedError::TimeZone { .. })
    ));
    assert_eq!(
        Zone::parse("Asia/Shanghai").unwrap().name(),
        "Asia/Shanghai"
    );
}

#[test]
fn a_daily_time_in_the_dst_gap_fires_after_the_gap_and_in_the_overlap_once() {
    let z = berlin();
    let daily = Schedule::parse("30 2 * * *", z).unwrap();
    // Spring forward, 29 March 2026: 02:00 CET jumps to 03:00 CEST.
    let spring = daily
        .next_after(ms("2026-03-28T12:00:00+01:00"), 0, z)
        .unwrap();
    assert_eq!(z.format(spring), "2026-03-29T03:00:00+02:00");
    let after_spring = daily.next_after(spring, 0, z).unwrap();
    assert_eq!(z.format(after_spring), "2026-03-30T02:30:00+02:00");
    // Fall back, 25 October 2026: 02:30 happens twice; the first counts.
    let fall = daily
        .next_after(ms("2026-10-24T12:00:00+02:00"), 0, z)
        .unwrap();
    assert_eq!(z.format(fall), "2026-10-25T02:30:00+02:00");
    let after_fall = daily.next_after(fall, 0, z).unwrap();
    assert_eq!(z.format(after_fall), "2026-10-26T02:30:00+01:00");
}
