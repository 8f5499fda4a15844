//! Reviews: dated reflections with a type, tags, linked projects and a mood
//! ([`write_review`], [`list_reviews`]), and the date rules they share with
//! [`crate::analyze_patterns`].

use std::collections::HashMap;

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime, Offset, SecondsFormat, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::dates::{DateOrTime, parse_date_or_time};
use crate::{Kind, RecordId, Store, StoreError, StoreResult};

/// The lowest mood a review can carry.
pub const MIN_MOOD: f64 = 1.0;
/// The highest mood a review can carry.
pub const MAX_MOOD: f64 = 10.0;
/// How many reviews [`list_reviews`] returns when no limit is given.
pub const DEFAULT_REVIEW_LIMIT: u32 = 20;
/// The most reviews [`list_reviews`] returns at once.
pub const MAX_REVIEW_LIMIT: u32 = 200;
/// The hour (UTC) a review given only a date is placed at: noon, so that it falls
/// on that calendar day in every time zone from UTC-11:00 to UTC+11:00.
pub const DATE_ONLY_HOUR_UTC: u32 = 12;
const MS_PER_DAY: i64 = 86_400_000;

/// How often a review is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewKind {
    /// About one day.
    Daily,
    /// About one week.
    Weekly,
    /// About one month.
    Monthly,
}

impl ReviewKind {
    /// Its name as stored and shown: `daily`, `weekly`, `monthly`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewKind::Daily => "daily",
            ReviewKind::Weekly => "weekly",
            ReviewKind::Monthly => "monthly",
        }
    }

    fn parse(s: &str) -> Option<ReviewKind> {
        match s {
            "daily" => Some(ReviewKind::Daily),
            "weekly" => Some(ReviewKind::Weekly),
            "monthly" => Some(ReviewKind::Monthly),
            _ => None,
        }
    }
}

/// A stored review.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Review {
    /// Its id, `review-7`.
    pub id: String,
    /// The text as written.
    pub content: String,
    /// daily, weekly or monthly.
    #[serde(rename = "type")]
    pub kind: ReviewKind,
    /// Its tags, trimmed, in the order given, without case-insensitive duplicates.
    pub tags: Vec<String>,
    /// The projects it is about (`project-3`).
    pub linked_project_ids: Vec<String>,
    /// The mood from 1 to 10, when given.
    pub mood: Option<f64>,
    /// The moment the review is about, RFC 3339 in UTC.
    pub date: String,
}

/// A review to write.
#[derive(Debug, Clone, PartialEq)]
pub struct NewReview {
    /// The text; not blank.
    pub content: String,
    /// daily, weekly or monthly.
    pub kind: ReviewKind,
    /// Tags; each is trimmed and must not be empty; case-insensitive duplicates are merged.
    pub tags: Vec<String>,
    /// Ids of existing projects (`project-3`).
    pub linked_project_ids: Vec<String>,
    /// From [`MIN_MOOD`] to [`MAX_MOOD`].
    pub mood: Option<f64>,
    /// `YYYY-MM-DD` or an RFC 3339 date-time the review is about; `None` for now.
    pub date: Option<String>,
}

/// Which reviews [`list_reviews`] returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewQuery {
    /// Reviews about this moment or later: `YYYY-MM-DD` (from the start of that day) or RFC 3339.
    pub since: Option<String>,
    /// Reviews about this moment or earlier: `YYYY-MM-DD` (to the end of that day) or RFC 3339.
    pub until: Option<String>,
    /// Only reviews of this type.
    pub kind: Option<ReviewKind>,
    /// Only reviews with this tag (case-insensitive).
    pub tag: Option<String>,
    /// How many to return: [`DEFAULT_REVIEW_LIMIT`] when `None`, at most [`MAX_REVIEW_LIMIT`].
    pub limit: Option<u32>,
    /// How many of the matching reviews to skip.
    pub offset: Option<u32>,
    /// The offset from UTC (`+08:00`) that decides where a date alone starts and ends; UTC when `None`.
    pub utc_offset: Option<String>,
}

/// One page of reviews, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReviewPage {
    /// The reviews of this page, newest first.
    pub items: Vec<Review>,
    /// How many reviews match, over all pages.
    pub total: u64,
    /// The limit applied.
    pub limit: u32,
    /// The offset applied.
    pub offset: u32,
    /// True when more matching reviews follow this page.
    pub has_more: bool,
}

/// Checks a review's text: not blank.
///
/// # Errors
/// [`StoreError::Invalid`] for empty or whitespace-only content.
pub fn check_content(content: &str) -> StoreResult<()> {
    if content.trim().is_empty() {
        return Err(StoreError::invalid(
            "`content` is empty or only whitespace: write what happened, what went well and what to change",
        ));
    }
    Ok(())
}

/// Trims tags, refuses empty ones and merges case-insensitive duplicates (the first
/// spelling stays).
///
/// # Errors
/// [`StoreError::Invalid`] naming the first empty tag (`tags[2]`).
pub fn normalize_tags(tags: &[String]) -> StoreResult<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    let mut seen = std::collections::HashSet::new();
    for (i, tag) in tags.iter().enumerate() {
        check_tag(i, tag)?;
        let t = tag.trim();
        if seen.insert(tag_key(t)) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

/// Checks the tag at `index`: not blank.
///
/// # Errors
/// [`StoreError::Invalid`] naming `tags[index]`.
pub fn check_tag(index: usize, tag: &str) -> StoreResult<()> {
    if tag.trim().is_empty() {
        return Err(StoreError::invalid(format!(
            "`tags[{index}]` is empty: give each tag a word, or leave the empty one out"
        )));
    }
    Ok(())
}

/// The key tags are compared by: lowercase.
pub fn tag_key(tag: &str) -> String {
    tag.trim().to_lowercase()
}

/// Checks a mood: a number from [`MIN_MOOD`] to [`MAX_MOOD`].
///
/// # Errors
/// [`StoreError::Invalid`] naming `mood`.
pub fn check_mood(mood: f64) -> StoreResult<()> {
    if !mood.is_finite() || !(MIN_MOOD..=MAX_MOOD).contains(&mood) {
        return Err(StoreError::invalid(format!(
            "`mood` is {mood}: give a number from 1 (worst) to 10 (best)"
        )));
    }
    Ok(())
}

/// Reads an offset from UTC: `+08:00`, `-05:30`, `Z` or `+00:00` for UTC.
///
/// # Errors
/// [`StoreError::Invalid`] naming `utc_offset`.
pub fn parse_utc_offset(text: &str) -> StoreResult<FixedOffset> {
    let bad = || {
        StoreError::invalid(format!(
            "`utc_offset` is {text:?}: use +HH:MM or -HH:MM between -12:00 and +14:00, like +08:00"
        ))
    };
    let t = text.trim();
    if t == "Z" {
        return Ok(Utc.fix());
    }
    let b = t.as_bytes();
    if b.len() != 6 || b[3] != b':' || !(b[0] == b'+' || b[0] == b'-') {
        return Err(bad());
    }
    let digits = |s: &str| -> Option<i32> {
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let (h, m) = match (digits(&t[1..3]), digits(&t[4..6])) {
        (Some(h), Some(m)) if m < 60 => (h, m),
        _ => return Err(bad()),
    };
    let secs = (h * 60 + m) * 60;
    let secs = if b[0] == b'-' { -secs } else { secs };
    if !(-12 * 3600..=14 * 3600).contains(&secs) {
        return Err(bad());
    }
    FixedOffset::east_opt(secs).ok_or_else(bad)
}

/// An offset shown as `+08:00`.
pub fn format_offset(offset: FixedOffset) -> String {
    let secs = offset.local_minus_utc();
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.abs();
    format!("{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60)
}

/// The calendar day of `ms` (since the epoch) at `offset`.
pub fn local_date(ms: i64, offset: FixedOffset) -> NaiveDate {
    let utc = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default();
    utc.with_timezone(&offset).date_naive()
}

/// The first millisecond of `date` at `offset`.
pub fn day_start_ms(date: NaiveDate, offset: FixedOffset) -> i64 {
    let naive = date.and_time(NaiveTime::MIN);
    naive.and_utc().timestamp_millis() - i64::from(offset.local_minus_utc()) * 1000
}

/// `ms` since the epoch as RFC 3339 in UTC, to the second: `2026-03-05T12:00:00Z`.
pub fn rfc3339_utc(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The moment a review's `date` names: a date alone is noon UTC of that day.
fn review_moment(date: DateOrTime) -> i64 {
    match date {
        DateOrTime::Date(d) => {
            d.and_time(NaiveTime::MIN).and_utc().timestamp_millis()
                + i64::from(DATE_ONLY_HOUR_UTC) * 3_600_000
        }
        DateOrTime::Time(t) => t.timestamp_millis(),
    }
}

/// Writes a review, checking each linked project inside the write transaction.
/// `now_ms` is the moment of writing (and of the review, when it names no date).
///
/// # Errors
/// [`StoreError::Invalid`] for blank content, an empty tag, a mood outside 1..10 or a
/// bad date; [`StoreError::NotFound`] for a project id that names no project (or is
/// another kind's id); a failed query.
pub async fn write_review(store: &Store, new: &NewReview, now_ms: i64) -> StoreResult<Review> {
    check_content(&new.content)?;
    let tags = normalize_tags(&new.tags)?;
    if let Some(m) = new.mood {
        check_mood(m)?;
    }
    let moment = match &new.date {
        Some(d) => review_moment(date_or_time_field("date", d)?),
        None => now_ms,
    };
    let mut projects: Vec<RecordId> = Vec::with_capacity(new.linked_project_ids.len());
    for text in &new.linked_project_ids {
        let id = RecordId::parse(Kind::Project, text)?;
        if !projects.contains(&id) {
            projects.push(id);
        }
    }

    let mut tx = store.begin_write().await?;
    for id in &projects {
        let sql = format!(
            "SELECT id FROM projects WHERE id = $1{}",
            store.for_update()
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id.number)
            .fetch_optional(&mut *tx)
            .await?;
        if row.is_none() {
            return Err(StoreError::not_found(format!(
                "no project has the id {id}; list_projects lists the projects and their ids"
            )));
        }
    }
    // A missing mood is a NULL in the SQL, not a bound `None`: sqlx's Any driver
    // sends a missing f64 to PostgreSQL as a float4 NULL, and the statement it then
    // prepares on that connection refuses every later float8 mood.
    let row = match new.mood {
        Some(mood) => sqlx::query(
            "INSERT INTO reviews (content, kind, mood, reviewed_at, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(new.content.clone())
        .bind(new.kind.as_str())
        .bind(mood)
        .bind(moment)
        .bind(now_ms),
        None => sqlx::query(
            "INSERT INTO reviews (content, kind, mood, reviewed_at, created_at) VALUES ($1, $2, NULL, $3, $4) RETURNING id",
        )
        .bind(new.content.clone())
        .bind(new.kind.as_str())
        .bind(moment)
        .bind(now_ms),
    }
    .fetch_one(&mut *tx)
    .await?;
    let number: i64 = row.try_get(0)?;
    for (i, tag) in tags.iter().enumerate() {
        sqlx::query(
            "INSERT INTO review_tags (review_id, position, tag, tag_key) VALUES ($1, $2, $3, $4)",
        )
        .bind(number)
        .bind(i64::try_from(i).unwrap_or(i64::MAX))
        .bind(tag.clone())
        .bind(tag_key(tag))
        .execute(&mut *tx)
        .await?;
    }
    for (i, id) in projects.iter().enumerate() {
        sqlx::query(
            "INSERT INTO review_projects (review_id, project_id, position) VALUES ($1, $2, $3)",
        )
        .bind(number)
        .bind(id.number)
        .bind(i64::try_from(i).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(Review {
        id: RecordId::new(Kind::Review, number).to_string(),
        content: new.content.clone(),
        kind: new.kind,
        tags,
        linked_project_ids: projects.iter().map(ToString::to_string).collect(),
        mood: new.mood,
        date: rfc3339_utc(moment),
    })
}

/// The date or date-time the request gave as `field`; a bad one is refused with
/// the field's name in front of the reason.
fn date_or_time_field(field: &str, text: &str) -> StoreResult<DateOrTime> {
    parse_date_or_time(text).map_err(|e| e.for_field(field))
}

/// The bounds `[from, to)` in ms of a query's `since`/`until`.
fn query_bounds(q: &ReviewQuery) -> StoreResult<(Option<i64>, Option<i64>)> {
    let offset = match &q.utc_offset {
        Some(o) => parse_utc_offset(o)?,
        None => Utc.fix(),
    };
    let from = match &q.since {
        Some(s) => Some(match date_or_time_field("since", s)? {
            DateOrTime::Date(d) => day_start_ms(d, offset),
            DateOrTime::Time(t) => t.timestamp_millis(),
        }),
        None => None,
    };
    let to = match &q.until {
        Some(s) => Some(match date_or_time_field("until", s)? {
            DateOrTime::Date(d) => day_start_ms(d, offset) + MS_PER_DAY,
            DateOrTime::Time(t) => t.timestamp_millis() + 1,
        }),
        None => None,
    };
    if let (Some(f), Some(t)) = (from, to)
        && f >= t
    {
        return Err(StoreError::invalid(
            "`since` is after `until`: give a `since` on or before `until`",
        ));
    }
    Ok((from, to))
}

/// Lists reviews newest first (by the moment they are about), filtered by `q`.
///
/// # Errors
/// [`StoreError::Invalid`] for a bad date, offset or limit; a failed query.
pub async fn list_reviews(store: &Store, q: &ReviewQuery) -> StoreResult<ReviewPage> {
    let (from, to) = query_bounds(q)?;
    let limit = q.limit.unwrap_or(DEFAULT_REVIEW_LIMIT);
    if limit == 0 || limit > MAX_REVIEW_LIMIT {
        return Err(StoreError::invalid(format!(
            "`limit` is {limit}: give 1 to {MAX_REVIEW_LIMIT}, and page with `offset`"
        )));
    }
    let offset = q.offset.unwrap_or(0);

    let mut conds: Vec<String> = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        format!("${n}")
    };
    if from.is_some() {
        conds.push(format!("r.reviewed_at >= {}", next()));
    }
    if to.is_some() {
        conds.push(format!("r.reviewed_at < {}", next()));
    }
    if q.kind.is_some() {
        conds.push(format!("r.kind = {}", next()));
    }
    let key = q.tag.as_deref().map(tag_key);
    if key.is_some() {
        conds.push(format!(
            "EXISTS (SELECT 1 FROM review_tags t WHERE t.review_id = r.id AND t.tag_key = {})",
            next()
        ));
    }
    let limit_p = next();
    let offset_p = next();
    let filter = if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    };

    let count_sql = format!("SELECT CAST(COUNT(*) AS BIGINT) FROM reviews r{filter}");
    let list_sql = format!(
        "SELECT r.id, r.content, r.kind, r.mood, r.reviewed_at FROM reviews r{filter} ORDER BY r.reviewed_at DESC, r.id DESC LIMIT {limit_p} OFFSET {offset_p}"
    );
    let mut count = sqlx::query(sqlx::AssertSqlSafe(count_sql));
    let mut list = sqlx::query(sqlx::AssertSqlSafe(list_sql));
    for v in [from, to].into_iter().flatten() {
        count = count.bind(v);
        list = list.bind(v);
    }
    if let Some(k) = q.kind {
        count = count.bind(k.as_str());
        list = list.bind(k.as_str());
    }
    if let Some(k) = &key {
        count = count.bind(k.clone());
        list = list.bind(k.clone());
    }
    let total: i64 = count.fetch_one(store.pool()).await?.try_get(0)?;
    let rows = list
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(store.pool())
        .await?;

    let mut items = Vec::with_capacity(rows.len());
    let mut numbers = Vec::with_capacity(rows.len());
    for row in &rows {
        let number: i64 = row.try_get(0)?;
        let kind: String = row.try_get(2)?;
        let kind = ReviewKind::parse(&kind).ok_or_else(|| {
            StoreError::invalid(format!("review-{number} has an unknown type {kind:?}"))
        })?;
        numbers.push(number);
        items.push(Review {
            id: RecordId::new(Kind::Review, number).to_string(),
            content: row.try_get(1)?,
            kind,
            tags: Vec::new(),
            linked_project_ids: Vec::new(),
            mood: row.try_get(3)?,
            date: rfc3339_utc(row.try_get(4)?),
        });
    }
    if !numbers.is_empty() {
        let marks: Vec<String> = (1..=numbers.len()).map(|i| format!("${i}")).collect();
        let marks = marks.join(", ");
        let index: HashMap<i64, usize> = numbers.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let tag_sql = format!(
            "SELECT review_id, tag FROM review_tags WHERE review_id IN ({marks}) ORDER BY review_id, position"
        );
        let project_sql = format!(
            "SELECT review_id, project_id FROM review_projects WHERE review_id IN ({marks}) ORDER BY review_id, position"
        );
        let mut tq = sqlx::query(sqlx::AssertSqlSafe(tag_sql));
        let mut pq = sqlx::query(sqlx::AssertSqlSafe(project_sql));
        for n in &numbers {
            tq = tq.bind(*n);
            pq = pq.bind(*n);
        }
        for row in tq.fetch_all(store.pool()).await? {
            let id: i64 = row.try_get(0)?;
            if let Some(&i) = index.get(&id) {
                items[i].tags.push(row.try_get(1)?);
            }
        }
        for row in pq.fetch_all(store.pool()).await? {
            let id: i64 = row.try_get(0)?;
            if let Some(&i) = index.get(&id) {
                let project: i64 = row.try_get(1)?;
                items[i]
                    .linked_project_ids
                    .push(RecordId::new(Kind::Project, project).to_string());
            }
        }
    }
    let total = u64::try_from(total).unwrap_or(0);
    let has_more = u64::from(offset) + (items.len() as u64) < total;
    Ok(ReviewPage {
        items,
        total,
        limit,
        offset,
        has_more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_read_and_shown() {
        let o = parse_utc_offset("+08:00").ok();
        assert_eq!(o.map(format_offset).as_deref(), Some("+08:00"));
        let o = parse_utc_offset("-05:30").ok();
        assert_eq!(o.map(format_offset).as_deref(), Some("-05:30"));
        for bad in ["8", "+8:00", "+15:00", "+08:60", "UTC", "+0a:00", "-13:00"] {
            assert!(parse_utc_offset(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reviews_given_a_date_are_placed_at_noon_utc() {
        assert_eq!(
            parse_date_or_time("2026-03-05T21:30:00+08:00")
                .ok()
                .map(review_moment)
                .map(rfc3339_utc)
                .as_deref(),
            Some("2026-03-05T13:30:00Z")
        );
        assert_eq!(
            parse_date_or_time("2026-03-05")
                .ok()
                .map(review_moment)
                .map(rfc3339_utc)
                .as_deref(),
            Some("2026-03-05T12:00:00Z")
        );
    }

    #[test]
    fn days_start_at_local_midnight() {
        let o = FixedOffset::east_opt(8 * 3600).unwrap_or(Utc.fix());
        let d = NaiveDate::from_ymd_opt(2026, 3, 5).unwrap_or_default();
        let start = day_start_ms(d, o);
        assert_eq!(rfc3339_utc(start), "2026-03-04T16:00:00Z");
        assert_eq!(local_date(start, o), d);
        assert_eq!(local_date(start - 1, o), d.pred_opt().unwrap_or_default());
    }

    #[test]
    fn tags_are_trimmed_and_merged() {
        let tags: Vec<String> = [" Work ", "work", "健康", "WORK", "health"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            normalize_tags(&tags).ok(),
            Some(vec!["Work".into(), "健康".into(), "health".into()])
        );
        let bad: Vec<String> = vec!["a".into(), "  ".into()];
        assert_eq!(
            normalize_tags(&bad).err().map(|e| e.to_string()).as_deref(),
            Some("`tags[1]` is empty: give each tag a word, or leave the empty one out")
        );
    }
}
