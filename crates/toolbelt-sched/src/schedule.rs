//! [`Schedule`]: when a job fires — a cron expression, an interval, or one time —
//! read in an IANA time zone ([`Zone`]), and [`Schedule::next_after`].
//!
//! Cron expressions are croner's: 5 fields (minute hour day month weekday) or 6
//! with seconds first, names (`MON`, `JAN`), `L`, `W`, `#`, and nicknames such as
//! `@daily`. Across daylight-saving changes croner's rules hold: a time that falls
//! in the spring-forward gap fires at the first instant after the gap, a time that
//! occurs twice in the fall-back overlap fires once, at the earlier instant;
//! interval-like expressions (`*/15 * * * *`) fire on every real instant.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use crate::error::{SchedError, SchedResult};

/// The shortest interval accepted, in milliseconds.
pub const MIN_INTERVAL_MS: i64 = 1_000;
/// The longest interval accepted, in milliseconds (a year).
pub const MAX_INTERVAL_MS: i64 = 366 * 86_400_000;

const CRON_HINT: &str = "write a cron expression with 5 fields (minute hour day-of-month month day-of-week, e.g. \"30 9 * * 1-5\" for 09:30 on weekdays) or 6 with seconds first, an interval such as \"every 30s\", \"every 10m\" or \"every 2h\", or one time as RFC 3339 (\"2026-05-01T09:00:00+02:00\")";

/// An IANA time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone(Tz);

impl Zone {
    /// The zone named `name` (`Europe/Berlin`, `UTC`).
    ///
    /// # Errors
    /// [`SchedError::TimeZone`] for a name the IANA database does not have.
    pub fn parse(name: &str) -> SchedResult<Zone> {
        Tz::from_str(name.trim())
            .map(Zone)
            .map_err(|_| SchedError::TimeZone {
                zone: name.to_string(),
            })
    }

    /// UTC.
    pub fn utc() -> Zone {
        Zone(Tz::UTC)
    }

    /// Its IANA name.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// `ms` (since the epoch) as RFC 3339 in this zone, to the second.
    pub fn format(&self, ms: i64) -> String {
        match Utc.timestamp_millis_opt(ms) {
            LocalResult::Single(t) => t
                .with_timezone(&self.0)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            _ => ms.to_string(),
        }
    }

    fn at(&self, ms: i64) -> Option<DateTime<Tz>> {
        match Utc.timestamp_millis_opt(ms) {
            LocalResult::Single(t) => Some(t.with_timezone(&self.0)),
            _ => None,
        }
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The machine's time zone: `TZ` when it names an IANA zone, else where
/// `/etc/localtime` points, else `/etc/timezone`, else UTC.
pub fn local_zone() -> Zone {
    if let Ok(tz) = std::env::var("TZ")
        && let Ok(zone) = Zone::parse(tz.trim_start_matches(':'))
    {
        return zone;
    }
    if let Ok(target) = std::fs::read_link("/etc/localtime") {
        let text = target.to_string_lossy().to_string();
        if let Some((_, name)) = text.split_once("zoneinfo/")
            && let Ok(zone) = Zone::parse(name)
        {
            return zone;
        }
    }
    if let Ok(text) = std::fs::read_to_string("/etc/timezone")
        && let Ok(zone) = Zone::parse(text.trim())
    {
        return zone;
    }
    Zone::utc()
}

/// When a job fires.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// A cron expression, read in the job's zone.
    Cron(Box<Cron>),
    /// Every so many milliseconds, counted from the job's creation.
    Every(i64),
    /// Once, at this instant (ms since the epoch).
    At(i64),
}

impl Schedule {
    /// Reads `text` in `zone`: a cron expression, `every <n><s|m|h|d>`, or one time
    /// (`at` optional): RFC 3339, or a date-time without offset read in `zone`.
    ///
    /// # Errors
    /// [`SchedError::Schedule`] saying what is wrong and how to write it.
    pub fn parse(text: &str, zone: Zone) -> SchedResult<Schedule> {
        let text = text.trim();
        if text.is_empty() {
            return Err(bad("schedule is empty".into()));
        }
        let lower = text.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("every") {
            return parse_interval(rest.trim(), text).map(Schedule::Every);
        }
        let time_text = lower
            .strip_prefix("at ")
            .map(|_| text[3..].trim())
            .unwrap_or(text);
        if looks_like_time(time_text) {
            return parse_time(time_text, zone).map(Schedule::At);
        }
        let parser = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build();
        match parser.parse(text) {
            Ok(cron) => Ok(Schedule::Cron(Box::new(cron))),
            Err(source) => Err(SchedError::Cron {
                text: text.to_string(),
                hint: CRON_HINT.into(),
                source,
            }),
        }
    }

    /// True for a schedule that fires once.
    pub fn is_one_shot(&self) -> bool {
        matches!(self, Schedule::At(_))
    }

    /// The first firing strictly after `after` (ms), for a job created at `anchor`
    /// (intervals count from it), in `zone`. `None` when nothing is left.
    pub fn next_after(&self, after: i64, anchor: i64, zone: Zone) -> Option<i64> {
        match self {
            Schedule::At(at) => (*at > after).then_some(*at),
            Schedule::Every(every) => {
                if after < anchor {
                    return Some(anchor + every);
                }
                let n = (after - anchor) / every + 1;
                anchor.checked_add(n.checked_mul(*every)?)
            }
            Schedule::Cron(cron) => {
                let start = zone.at(after)?;
                let next = cron.find_next_occurrence(&start, false).ok()?;
                let ms = next.timestamp_millis();
                // croner works in whole seconds: a start inside a matching second
                // may give that second back.
                if ms > after {
                    Some(ms)
                } else {
                    let start = zone.at(ms + 1_000)?;
                    let next = cron.find_next_occurrence(&start, true).ok()?;
                    Some(next.timestamp_millis())
                }
            }
        }
    }

    /// The first firing of a job created at `now` (ms).
    ///
    /// # Errors
    /// [`SchedError::Schedule`] for a one-shot time not in the future, or a cron
    /// expression that never matches.
    pub fn first(&self, now: i64, zone: Zone) -> SchedResult<i64> {
        if let Schedule::At(at) = self
            && *at <= now
        {
            return Err(SchedError::Schedule {
                message: format!(
                    "the time {} is not in the future (now is {})",
                    zone.format(*at),
                    zone.format(now)
                ),
                hint: "give a later time, or use run_now to fire an existing job at once".into(),
            });
        }
        self.next_after(now, now, zone)
            .ok_or_else(|| SchedError::Schedule {
                message: "the schedule never fires".into(),
                hint: CRON_HINT.into(),
            })
    }
}

fn bad(message: String) -> SchedError {
    SchedError::Schedule {
        message,
        hint: CRON_HINT.into(),
    }
}

fn looks_like_time(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 16
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b't' || b[10] == b' ')
}

fn parse_time(text: &str, zone: Zone) -> SchedResult<i64> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp_millis());
    }
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M"))
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S"))
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M"))
        .map_err(|_| SchedError::Schedule {
            message: format!("{text:?} is not a valid time"),
            hint: "write one time as RFC 3339 (\"2026-05-01T09:00:00+02:00\" or \"2026-05-01T07:00:00Z\"), or \"2026-05-01T09:00\" in the job's tz".into(),
        })?;
    match zone.0.from_local_datetime(&naive) {
        LocalResult::Single(t) => Ok(t.timestamp_millis()),
        // The clock shows it twice (fall back): the first.
        LocalResult::Ambiguous(first, _) => Ok(first.timestamp_millis()),
        LocalResult::None => Err(SchedError::Schedule {
            message: format!(
                "{text} does not exist in {} (the clocks skip it for daylight saving)",
                zone.name()
            ),
            hint: "give a time outside the skipped hour, or with an explicit offset".into(),
        }),
    }
}

fn parse_interval(rest: &str, text: &str) -> SchedResult<i64> {
    let hint = "write an interval as \"every 30s\", \"every 10m\", \"every 2h\" or \"every 1d\" (at least 1 s)";
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let unit = rest[digits.len()..].trim();
    let Ok(n) = digits.parse::<i64>() else {
        return Err(SchedError::Schedule {
            message: format!("{text:?} has no number of units"),
            hint: hint.into(),
        });
    };
    let unit_ms: i64 = match unit {
        "ms" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => {
            return Err(SchedError::Schedule {
                message: format!("{text:?}: unknown unit {unit:?}"),
                hint: hint.into(),
            });
        }
    };
    let ms = n.saturating_mul(unit_ms);
    if ms < MIN_INTERVAL_MS {
        return Err(SchedError::Schedule {
            message: format!("{text:?} is shorter than the shortest interval, 1 s"),
            hint: "use an interval of at least 1 s (\"every 1s\"), or a cron expression".into(),
        });
    }
    if ms > MAX_INTERVAL_MS {
        return Err(SchedError::Schedule {
            message: format!("{text:?} is longer than a year"),
            hint: "use a cron expression for rare firings (\"0 9 1 1 *\": 09:00 every 1 January)"
                .into(),
        });
    }
    Ok(ms)
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
