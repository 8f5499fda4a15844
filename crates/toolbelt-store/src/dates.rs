//! Reading the dates and date-times that models write: `YYYY-MM-DD` and RFC 3339 with
//! a zone. A date that does not exist is explained (`February 2026 has 28 days`),
//! a date-time without a zone is refused with the fix, and relative dates
//! (`tomorrow`) are left to the model.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate};

/// Why a text is not a date or date-time: a message for the model, without the
/// name of the field it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadDate(String);

impl BadDate {
    /// The message as [`crate::StoreError::Invalid`] for `field`: `due_date: ...`.
    pub fn for_field(self, field: &str) -> crate::StoreError {
        crate::StoreError::invalid(format!("{field}: {}", self.0))
    }
}

/// A moment given as `YYYY-MM-DD` or an RFC 3339 date-time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateOrTime {
    /// A calendar day.
    Date(NaiveDate),
    /// A moment.
    Time(DateTime<FixedOffset>),
}

/// Which instant of its day a plain date stands for in [`parse_instant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayEdge {
    /// 00:00:00 UTC.
    Start,
    /// 23:59:59 UTC.
    End,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

const DATE_TIME_EXAMPLE: &str =
    "write an RFC 3339 date-time such as 2026-03-01T17:00:00Z, or a date YYYY-MM-DD";
const RELATIVE: &str = "work out relative dates such as \"tomorrow\" yourself";

/// Reads a calendar date written `YYYY-MM-DD` (surrounding spaces ignored).
///
/// # Errors
/// [`BadDate`]: not that shape, or not a real day (`2026-02-30`).
pub fn parse_date(text: &str) -> Result<NaiveDate, BadDate> {
    let t = text.trim();
    match date_parts(t) {
        Some(parts) => calendar_date(t, parts),
        None => Err(BadDate(format!(
            "{t:?} is not a date; write it as YYYY-MM-DD, e.g. 2026-06-30 ({RELATIVE})"
        ))),
    }
}

/// Reads a date `YYYY-MM-DD` or an RFC 3339 date-time with a zone
/// (`2026-03-01T17:00:00Z`, `2026-03-01T17:00:00+08:00`; a space or `t` may stand
/// for the `T`).
///
/// # Errors
/// [`BadDate`]: neither shape, a day that does not exist, or a date-time without a
/// time zone.
pub fn parse_date_or_time(text: &str) -> Result<DateOrTime, BadDate> {
    let t = text.trim();
    if t.len() == 10 {
        return parse_date(t).map(DateOrTime::Date);
    }
    let Some(parts) = t.get(..10).and_then(date_parts) else {
        return Err(BadDate(format!(
            "{t:?} is not a date or date-time; {DATE_TIME_EXAMPLE} ({RELATIVE})"
        )));
    };
    calendar_date(t.get(..10).unwrap_or(t), parts)?;
    let normalized: String = t
        .char_indices()
        .map(|(i, c)| {
            if i == 10 && (c == ' ' || c == 't') {
                'T'
            } else {
                c
            }
        })
        .collect();
    if let Ok(dt) = DateTime::parse_from_rfc3339(&normalized) {
        return Ok(DateOrTime::Time(dt));
    }
    let rest = t.get(10..).unwrap_or("");
    let zoned = rest.ends_with(['Z', 'z']) || rest.get(1..).is_some_and(|r| r.contains(['+', '-']));
    Err(BadDate(if zoned {
        format!("{t:?} is not a valid date-time; {DATE_TIME_EXAMPLE}")
    } else {
        format!("{t} has no time zone; add one, e.g. {t}Z for UTC or {t}+08:00")
    }))
}

/// Reads what [`parse_date_or_time`] reads, as milliseconds since the epoch: a
/// plain date stands for the `edge` of that day in UTC.
///
/// # Errors
/// As [`parse_date_or_time`].
pub fn parse_instant(text: &str, edge: DayEdge) -> Result<i64, BadDate> {
    match parse_date_or_time(text)? {
        DateOrTime::Time(t) => Ok(t.timestamp_millis()),
        DateOrTime::Date(d) => {
            let time = match edge {
                DayEdge::Start => d.and_hms_opt(0, 0, 0),
                DayEdge::End => d.and_hms_opt(23, 59, 59),
            };
            time.map(|dt| dt.and_utc().timestamp_millis())
                .ok_or_else(|| {
                    BadDate(format!(
                        "{:?} is out of range; {DATE_TIME_EXAMPLE}",
                        text.trim()
                    ))
                })
        }
    }
}

/// The numbers of a `YYYY-MM-DD` string, if it has that shape.
fn date_parts(text: &str) -> Option<(i32, u32, u32)> {
    let b = text.as_bytes();
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shaped {
        return None;
    }
    Some((
        text.get(0..4)?.parse().ok()?,
        text.get(5..7)?.parse().ok()?,
        text.get(8..10)?.parse().ok()?,
    ))
}

/// The date of `YYYY-MM-DD` parts, or why it is not a calendar date.
fn calendar_date(text: &str, (y, m, d): (i32, u32, u32)) -> Result<NaiveDate, BadDate> {
    if let Some(date) = NaiveDate::from_ymd_opt(y, m, d) {
        return Ok(date);
    }
    let why = if (1..=12).contains(&m) {
        let first_of_next = if m == 12 {
            NaiveDate::from_ymd_opt(y + 1, 1, 1)
        } else {
            NaiveDate::from_ymd_opt(y, m + 1, 1)
        };
        let days = first_of_next
            .and_then(|n| n.pred_opt())
            .map_or(28, |last| last.day());
        format!(
            "{} {y} has {days} days",
            MONTHS.get(m as usize - 1).copied().unwrap_or("that month")
        )
    } else {
        format!("there is no month {m}")
    };
    Err(BadDate(format!(
        "{text} is not a calendar date ({why}); give a real date as YYYY-MM-DD"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rfc3339(ms: i64) -> String {
        crate::rfc3339_utc(ms)
    }

    fn message<T: std::fmt::Debug>(r: Result<T, BadDate>) -> String {
        match r {
            Ok(v) => unreachable!("parsed as {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn dates_are_real_calendar_days() {
        assert_eq!(
            parse_date(" 2026-02-28 ").ok(),
            NaiveDate::from_ymd_opt(2026, 2, 28)
        );
        assert_eq!(
            message(parse_date("2026-02-30")),
            "2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD"
        );
        assert_eq!(
            message(parse_date("2028-02-30")),
            "2028-02-30 is not a calendar date (February 2028 has 29 days); give a real date as YYYY-MM-DD"
        );
        assert_eq!(
            message(parse_date("2026-12-32")),
            "2026-12-32 is not a calendar date (December 2026 has 31 days); give a real date as YYYY-MM-DD"
        );
        assert_eq!(
            message(parse_date("2026-13-01")),
            "2026-13-01 is not a calendar date (there is no month 13); give a real date as YYYY-MM-DD"
        );
        assert_eq!(
            message(parse_date("tomorrow")),
            "\"tomorrow\" is not a date; write it as YYYY-MM-DD, e.g. 2026-06-30 (work out relative dates such as \"tomorrow\" yourself)"
        );
        for bad in [
            "2026-2-3",
            "2026/02/03",
            "20260203",
            "",
            "2026-02-0x",
            "+026-02-03",
        ] {
            assert!(parse_date(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn date_times_need_a_zone() {
        let at = |t| {
            parse_date_or_time(t).map(|d| match d {
                DateOrTime::Time(t) => rfc3339(t.timestamp_millis()),
                DateOrTime::Date(d) => d.to_string(),
            })
        };
        assert_eq!(
            at("2026-03-05T21:30:00+08:00").ok().as_deref(),
            Some("2026-03-05T13:30:00Z")
        );
        assert_eq!(
            at("2026-03-05 21:30:00Z").ok().as_deref(),
            Some("2026-03-05T21:30:00Z")
        );
        assert_eq!(
            at("2026-03-05t21:30:00.5-02:00").ok().as_deref(),
            Some("2026-03-05T23:30:00Z")
        );
        assert_eq!(at("2026-03-05").ok().as_deref(), Some("2026-03-05"));
        assert_eq!(
            message(at("2026-03-01T17:00:00")),
            "2026-03-01T17:00:00 has no time zone; add one, e.g. 2026-03-01T17:00:00Z for UTC or 2026-03-01T17:00:00+08:00"
        );
        assert_eq!(
            message(at("2026-02-30T10:00:00Z")),
            "2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD"
        );
        assert_eq!(
            message(at("2026-03-01T25:00:00Z")),
            "\"2026-03-01T25:00:00Z\" is not a valid date-time; write an RFC 3339 date-time such as 2026-03-01T17:00:00Z, or a date YYYY-MM-DD"
        );
        assert_eq!(
            message(at("next week")),
            "\"next week\" is not a date or date-time; write an RFC 3339 date-time such as 2026-03-01T17:00:00Z, or a date YYYY-MM-DD (work out relative dates such as \"tomorrow\" yourself)"
        );
        // A multi-byte character where the date would end is no panic.
        assert!(at("2026-03-0中T10:00:00Z").is_err());
    }

    #[test]
    fn instants_put_a_plain_date_at_an_edge_of_its_utc_day() {
        let at = |t, edge| parse_instant(t, edge).map(rfc3339);
        assert_eq!(
            at("2026-03-01", DayEdge::End).ok().as_deref(),
            Some("2026-03-01T23:59:59Z")
        );
        assert_eq!(
            at("2026-03-01", DayEdge::Start).ok().as_deref(),
            Some("2026-03-01T00:00:00Z")
        );
        assert_eq!(
            at("2026-03-01T17:00:00+08:00", DayEdge::End)
                .ok()
                .as_deref(),
            Some("2026-03-01T09:00:00Z")
        );
    }

    #[test]
    fn for_field_names_the_field() {
        let e = parse_date("2026-02-30").err();
        assert_eq!(
            e.map(|e| e.for_field("deadline").to_string()).as_deref(),
            Some(
                "deadline: 2026-02-30 is not a calendar date (February 2026 has 28 days); give a real date as YYYY-MM-DD"
            )
        );
    }
}
