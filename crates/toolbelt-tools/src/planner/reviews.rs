//! What the review tools share: store refusals as argument violations, offsets,
//! the one-line view of a review.

use chrono::{DateTime, FixedOffset, Offset, Utc};
use toolbelt_core::{ToolError, Violation};
use toolbelt_store::{Review, parse_utc_offset};

/// Most characters of a review's first line shown in a listing.
pub(crate) const FIRST_LINE_MAX_CHARS: usize = 100;

/// Adds a violation at `path` when `check` refused the argument.
pub(crate) fn check<T, E: std::fmt::Display>(
    path: &str,
    check: Result<T, E>,
    out: &mut Vec<Violation>,
) {
    if let Err(e) = check {
        out.push(Violation::new(path, e.to_string()));
    }
}

/// The offset of `utc_offset`, UTC when absent.
pub(crate) fn offset(utc_offset: Option<&str>) -> Result<FixedOffset, ToolError> {
    match utc_offset {
        Some(o) => Ok(parse_utc_offset(o)?),
        None => Ok(Utc.fix()),
    }
}

/// The first non-blank line of `content`, cut at [`FIRST_LINE_MAX_CHARS`].
pub(crate) fn first_line(content: &str) -> String {
    let line = content
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() > FIRST_LINE_MAX_CHARS {
        let cut: String = line.chars().take(FIRST_LINE_MAX_CHARS).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// The calendar day of a review's `date` at `offset`: `2026-03-04`.
pub(crate) fn day(date: &str, offset: FixedOffset) -> String {
    DateTime::parse_from_rfc3339(date)
        .map(|d| d.with_timezone(&offset).date_naive().to_string())
        .unwrap_or_else(|_| date.chars().take(10).collect())
}

/// `review-3 · 2026-03-04 · daily · mood 7.5 · [work, health] · first line`.
pub(crate) fn line(r: &Review, offset: FixedOffset) -> String {
    let mut parts = vec![
        r.id.clone(),
        day(&r.date, offset),
        r.kind.as_str().to_string(),
    ];
    if let Some(m) = r.mood {
        parts.push(format!("mood {m}"));
    }
    if !r.tags.is_empty() {
        parts.push(format!("[{}]", r.tags.join(", ")));
    }
    parts.push(first_line(&r.content));
    parts.join(" · ")
}
