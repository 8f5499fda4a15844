//! Patterns in the reviews of a recent range ([`analyze_patterns`]): mood and its
//! trend, tags, recurring words and phrases (English and Chinese), tasks created
//! and completed, and review streaks. Deterministic: plain counting and least
//! squares over the rows of one range, no model.

use std::collections::{HashMap, HashSet};
use toolbelt_core::human::plural;

use chrono::{Datelike, Duration, FixedOffset, NaiveDate, Offset, Utc, Weekday};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::reviews::{day_start_ms, format_offset, local_date, tag_key};
use crate::themes::{phrase, sentences};
use crate::{Store, StoreResult};

/// How many words and how many phrases the themes list at most.
pub const TOP_THEMES: usize = 10;
/// A trend whose slope (mood points per day) is smaller than this either way is steady.
pub const STEADY_SLOPE_PER_DAY: f64 = 0.05;

/// How far back an analysis looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimeRange {
    /// The last 7 days.
    Week,
    /// The last 30 days.
    Month,
    /// The last 90 days.
    Quarter,
}

impl TimeRange {
    /// Its length in days, the end date included.
    pub fn days(self) -> u32 {
        match self {
            TimeRange::Week => 7,
            TimeRange::Month => 30,
            TimeRange::Quarter => 90,
        }
    }

    /// Its name: `week`, `month`, `quarter`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeRange::Week => "week",
            TimeRange::Month => "month",
            TimeRange::Quarter => "quarter",
        }
    }
}

/// One part of an analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// Mood: average, trend, by weekday.
    Mood,
    /// Tags: how often, and the mood with each.
    Tags,
    /// Recurring words and phrases.
    Themes,
    /// Tasks created and completed.
    Tasks,
    /// Days in a row with a review.
    Streaks,
}

impl Section {
    /// Every section, in the order they are shown.
    pub const ALL: [Section; 5] = [
        Section::Mood,
        Section::Tags,
        Section::Themes,
        Section::Tasks,
        Section::Streaks,
    ];
}

/// What to analyse.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisRequest {
    /// How many days, ending at `end_date`.
    pub time_range: TimeRange,
    /// The last day of the range, included.
    pub end_date: NaiveDate,
    /// The offset from UTC that decides calendar days and weekdays.
    pub utc_offset: FixedOffset,
    /// The sections to compute; empty for all.
    pub sections: Vec<Section>,
}

impl AnalysisRequest {
    /// Every section over `time_range` ending at `end_date`, days in UTC.
    pub fn new(time_range: TimeRange, end_date: NaiveDate) -> AnalysisRequest {
        AnalysisRequest {
            time_range,
            end_date,
            utc_offset: Utc.fix(),
            sections: Vec::new(),
        }
    }

    /// The first day of the range.
    pub fn start_date(&self) -> NaiveDate {
        self.end_date - Duration::days(i64::from(self.time_range.days()) - 1)
    }

    fn wants(&self, s: Section) -> bool {
        self.sections.is_empty() || self.sections.contains(&s)
    }
}

/// Where the mood is heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Up by at least [`STEADY_SLOPE_PER_DAY`] a day.
    Rising,
    /// Down by at least [`STEADY_SLOPE_PER_DAY`] a day.
    Falling,
    /// Less change than that.
    Steady,
}

impl Direction {
    /// Its name: `rising`, `falling`, `steady`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Rising => "rising",
            Direction::Falling => "falling",
            Direction::Steady => "steady",
        }
    }
}

/// The least-squares line of mood against the day.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct MoodTrend {
    /// Mood points per day, rounded to 3 decimals.
    pub slope_per_day: f64,
    /// rising, falling or steady.
    pub direction: Direction,
}

/// Mood on one weekday.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WeekdayMood {
    /// Monday .. Sunday.
    pub weekday: String,
    /// Reviews with a mood on that weekday.
    pub count: u64,
    /// Their average, to 2 decimals; null without any.
    pub average: Option<f64>,
}

/// The mood section.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MoodPatterns {
    /// Reviews with a mood.
    pub count: u64,
    /// Their average, to 2 decimals; null without any.
    pub average: Option<f64>,
    /// The trend; null with moods on fewer than two different days.
    pub trend: Option<MoodTrend>,
    /// Monday to Sunday.
    pub by_weekday: Vec<WeekdayMood>,
}

/// One tag's figures.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TagPattern {
    /// The tag, as first written in the range.
    pub tag: String,
    /// Reviews with it.
    pub count: u64,
    /// The average mood of those with a mood, to 2 decimals; null without any.
    pub mean_mood: Option<f64>,
}

/// A recurring word or phrase.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ThemeCount {
    /// The word, or two adjacent words.
    pub text: String,
    /// Reviews it appears in.
    pub reviews: u64,
    /// Times it appears, over all reviews.
    pub occurrences: u64,
}

/// The themes section.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Themes {
    /// Words in at least two reviews, the top [`TOP_THEMES`].
    pub words: Vec<ThemeCount>,
    /// Adjacent word pairs in at least two reviews, the top [`TOP_THEMES`].
    pub phrases: Vec<ThemeCount>,
}

/// The tasks section.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskPatterns {
    /// Tasks created in the range.
    pub created: u64,
    /// Tasks completed in the range (whenever created).
    pub completed: u64,
    /// completed / created, to 2 decimals; null when none was created.
    pub completion_ratio: Option<f64>,
}

/// The streaks section.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Streaks {
    /// Days in a row with a review ending at the end date, or the day before it
    /// when the end date has none yet (counted inside the range).
    pub current: u32,
    /// The longest run of days in a row with a review in the range.
    pub longest: u32,
    /// Its first day (the earliest of equal runs); null without reviews.
    pub longest_start: Option<String>,
    /// Its last day; null without reviews.
    pub longest_end: Option<String>,
    /// Days of the range with at least one review.
    pub days_with_review: u32,
    /// Days in the range.
    pub days_in_range: u32,
}

/// The result of [`analyze_patterns`]. Sections not asked for are absent.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PatternAnalysis {
    /// week, month or quarter.
    pub time_range: TimeRange,
    /// The first day of the range.
    pub start_date: String,
    /// The last day of the range, included.
    pub end_date: String,
    /// The offset from UTC of the calendar days: `+08:00`.
    pub utc_offset: String,
    /// Days in the range.
    pub days: u32,
    /// Reviews in the range.
    pub reviews: u64,
    /// Mood: average, trend, by weekday.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mood: Option<MoodPatterns>,
    /// Tags, most frequent first (then by name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<TagPattern>>,
    /// Recurring words and phrases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub themes: Option<Themes>,
    /// Tasks created and completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TaskPatterns>,
    /// Days in a row with a review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaks: Option<Streaks>,
}

/// One review as the analysis reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewPoint {
    /// The moment it is about, ms since the epoch.
    pub reviewed_at: i64,
    /// Its mood, when given.
    pub mood: Option<f64>,
    /// Its text (only read for themes).
    pub content: String,
    /// Its tags.
    pub tags: Vec<String>,
}

/// Analyses the reviews of the range `request` names, and the tasks created and
/// completed in it: one query for the reviews (one more for their tags), one for
/// the tasks.
///
/// # Errors
/// A failed query.
pub async fn analyze_patterns(
    store: &Store,
    request: &AnalysisRequest,
) -> StoreResult<PatternAnalysis> {
    let start = day_start_ms(request.start_date(), request.utc_offset);
    let end = day_start_ms(request.end_date, request.utc_offset) + 86_400_000;
    let sql = if request.wants(Section::Themes) {
        "SELECT id, mood, reviewed_at, content FROM reviews WHERE reviewed_at >= $1 AND reviewed_at < $2 ORDER BY reviewed_at, id"
    } else {
        "SELECT id, mood, reviewed_at FROM reviews WHERE reviewed_at >= $1 AND reviewed_at < $2 ORDER BY reviewed_at, id"
    };
    let rows = sqlx::query(sql)
        .bind(start)
        .bind(end)
        .fetch_all(store.pool())
        .await?;
    let mut points = Vec::with_capacity(rows.len());
    let mut index: HashMap<i64, usize> = HashMap::with_capacity(rows.len());
    let with_content = request.wants(Section::Themes);
    for row in &rows {
        let id: i64 = row.try_get(0)?;
        index.insert(id, points.len());
        points.push(ReviewPoint {
            reviewed_at: row.try_get(2)?,
            mood: row.try_get(1)?,
            content: if with_content {
                row.try_get(3)?
            } else {
                String::new()
            },
            tags: Vec::new(),
        });
    }
    if request.wants(Section::Tags) && !points.is_empty() {
        let rows = sqlx::query(
            "SELECT t.review_id, t.tag FROM review_tags t JOIN reviews r ON r.id = t.review_id WHERE r.reviewed_at >= $1 AND r.reviewed_at < $2 ORDER BY t.review_id, t.position",
        )
        .bind(start)
        .bind(end)
        .fetch_all(store.pool())
        .await?;
        for row in &rows {
            let id: i64 = row.try_get(0)?;
            if let Some(&i) = index.get(&id) {
                points[i].tags.push(row.try_get(1)?);
            }
        }
    }
    let tasks = if request.wants(Section::Tasks) {
        let row = sqlx::query(
            "SELECT CAST(COUNT(CASE WHEN created_at >= $1 AND created_at < $2 THEN 1 END) AS BIGINT), \
                    CAST(COUNT(CASE WHEN completed_at >= $1 AND completed_at < $2 THEN 1 END) AS BIGINT) \
             FROM tasks WHERE (created_at >= $1 AND created_at < $2) OR (completed_at >= $1 AND completed_at < $2)",
        )
        .bind(start)
        .bind(end)
        .fetch_one(store.pool())
        .await?;
        let created: i64 = row.try_get(0)?;
        let completed: i64 = row.try_get(1)?;
        Some((
            u64::try_from(created).unwrap_or(0),
            u64::try_from(completed).unwrap_or(0),
        ))
    } else {
        None
    };
    // Tokenising thousands of reviews (and loading the Chinese dictionary the first
    // time) takes long enough to stall other requests: off the async threads.
    let request = request.clone();
    Ok(tokio::task::spawn_blocking(move || analyze(&request, &points, tasks)).await?)
}

/// The analysis of `reviews` (those in the range, oldest first) and of the tasks
/// `(created, completed)` in the range, without the store.
pub fn analyze(
    request: &AnalysisRequest,
    reviews: &[ReviewPoint],
    tasks: Option<(u64, u64)>,
) -> PatternAnalysis {
    let start = request.start_date();
    let days = request.time_range.days();
    let dates: Vec<NaiveDate> = reviews
        .iter()
        .map(|r| local_date(r.reviewed_at, request.utc_offset))
        .collect();
    PatternAnalysis {
        time_range: request.time_range,
        start_date: start.to_string(),
        end_date: request.end_date.to_string(),
        utc_offset: format_offset(request.utc_offset),
        days,
        reviews: reviews.len() as u64,
        mood: request
            .wants(Section::Mood)
            .then(|| mood(reviews, &dates, start)),
        tags: request.wants(Section::Tags).then(|| tags(reviews)),
        themes: request.wants(Section::Themes).then(|| themes(reviews)),
        tasks: if request.wants(Section::Tasks) {
            let (created, completed) = tasks.unwrap_or((0, 0));
            Some(TaskPatterns {
                created,
                completed,
                completion_ratio: (created > 0)
                    .then(|| round(completed as f64 / created as f64, 2)),
            })
        } else {
            None
        },
        streaks: request
            .wants(Section::Streaks)
            .then(|| streaks(&dates, start, request.end_date)),
    }
}

/// `x` rounded to `places` decimals.
fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    let r = (x * f).round() / f;
    if r == 0.0 { 0.0 } else { r }
}

fn mean(sum: f64, n: u64) -> Option<f64> {
    (n > 0).then(|| round(sum / n as f64, 2))
}

const WEEKDAYS: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

fn weekday_name(d: Weekday) -> &'static str {
    match d {
        Weekday::Mon => "Monday",
        Weekday::Tue => "Tuesday",
        Weekday::Wed => "Wednesday",
        Weekday::Thu => "Thursday",
        Weekday::Fri => "Friday",
        Weekday::Sat => "Saturday",
        Weekday::Sun => "Sunday",
    }
}

fn mood(reviews: &[ReviewPoint], dates: &[NaiveDate], start: NaiveDate) -> MoodPatterns {
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut by_day = [(0u64, 0f64); 7];
    for (r, d) in reviews.iter().zip(dates) {
        if let Some(m) = r.mood {
            points.push(((*d - start).num_days() as f64, m));
            let w = d.weekday().num_days_from_monday() as usize;
            by_day[w].0 += 1;
            by_day[w].1 += m;
        }
    }
    let n = points.len() as u64;
    let sum: f64 = points.iter().map(|p| p.1).sum();
    let trend = slope(&points).map(|s| {
        let slope_per_day = round(s, 3);
        let direction = if slope_per_day.abs() < STEADY_SLOPE_PER_DAY {
            Direction::Steady
        } else if slope_per_day > 0.0 {
            Direction::Rising
        } else {
            Direction::Falling
        };
        MoodTrend {
            slope_per_day,
            direction,
        }
    });
    MoodPatterns {
        count: n,
        average: mean(sum, n),
        trend,
        by_weekday: WEEKDAYS
            .iter()
            .zip(by_day)
            .map(|(w, (count, sum))| WeekdayMood {
                weekday: weekday_name(*w).to_string(),
                count,
                average: mean(sum, count),
            })
            .collect(),
    }
}

/// The least-squares slope of y against x; `None` unless x takes two values.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

fn tags(reviews: &[ReviewPoint]) -> Vec<TagPattern> {
    // key -> (first spelling, count, mood sum, mood count)
    let mut by_key: HashMap<String, (String, u64, f64, u64)> = HashMap::new();
    for r in reviews {
        for t in &r.tags {
            let e = by_key
                .entry(tag_key(t))
                .or_insert_with(|| (t.clone(), 0, 0.0, 0));
            e.1 += 1;
            if let Some(m) = r.mood {
                e.2 += m;
                e.3 += 1;
            }
        }
    }
    let mut out: Vec<(String, TagPattern)> = by_key
        .into_iter()
        .map(|(key, (tag, count, sum, n))| {
            (
                key,
                TagPattern {
                    tag,
                    count,
                    mean_mood: mean(sum, n),
                },
            )
        })
        .collect();
    out.sort_by(|a, b| b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(&b.0)));
    out.into_iter().map(|(_, t)| t).collect()
}

#[derive(Default)]
struct Counter {
    reviews: u64,
    occurrences: u64,
    last: usize,
}

fn count(map: &mut HashMap<String, Counter>, key: String, review: usize) {
    let c = map.entry(key).or_insert_with(|| Counter {
        reviews: 0,
        occurrences: 0,
        last: usize::MAX,
    });
    c.occurrences += 1;
    if c.last != review {
        c.last = review;
        c.reviews += 1;
    }
}

fn top(map: HashMap<String, Counter>) -> Vec<ThemeCount> {
    let mut v: Vec<ThemeCount> = map
        .into_iter()
        .filter(|(_, c)| c.reviews >= 2)
        .map(|(text, c)| ThemeCount {
            text,
            reviews: c.reviews,
            occurrences: c.occurrences,
        })
        .collect();
    v.sort_by(|a, b| {
        b.reviews
            .cmp(&a.reviews)
            .then_with(|| b.occurrences.cmp(&a.occurrences))
            .then_with(|| a.text.cmp(&b.text))
    });
    v.truncate(TOP_THEMES);
    v
}

fn themes(reviews: &[ReviewPoint]) -> Themes {
    let mut words: HashMap<String, Counter> = HashMap::new();
    let mut phrases: HashMap<String, Counter> = HashMap::new();
    for (i, r) in reviews.iter().enumerate() {
        for sentence in sentences(&r.content) {
            for pair in sentence.windows(2) {
                count(&mut phrases, phrase(&pair[0], &pair[1]), i);
            }
            for w in sentence {
                count(&mut words, w, i);
            }
        }
    }
    Themes {
        words: top(words),
        phrases: top(phrases),
    }
}

fn streaks(dates: &[NaiveDate], start: NaiveDate, end: NaiveDate) -> Streaks {
    let have: HashSet<NaiveDate> = dates.iter().copied().collect();
    let days_in_range = u32::try_from((end - start).num_days() + 1).unwrap_or(0);
    let mut longest = 0u32;
    let mut longest_at: Option<(NaiveDate, NaiveDate)> = None;
    let mut run = 0u32;
    let mut run_start = start;
    let mut day = start;
    while day <= end {
        if have.contains(&day) {
            if run == 0 {
                run_start = day;
            }
            run += 1;
            if run > longest {
                longest = run;
                longest_at = Some((run_start, day));
            }
        } else {
            run = 0;
        }
        day += Duration::days(1);
    }
    let back_from = if have.contains(&end) {
        Some(end)
    } else {
        end.pred_opt().filter(|d| have.contains(d))
    };
    let mut current = 0u32;
    if let Some(mut d) = back_from {
        while d >= start && have.contains(&d) {
            current += 1;
            match d.pred_opt() {
                Some(p) => d = p,
                None => break,
            }
        }
    }
    Streaks {
        current,
        longest,
        longest_start: longest_at.map(|(s, _)| s.to_string()),
        longest_end: longest_at.map(|(_, e)| e.to_string()),
        days_with_review: u32::try_from(have.iter().filter(|d| **d >= start && **d <= end).count())
            .unwrap_or(0),
        days_in_range,
    }
}

fn or_dash(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| v.to_string())
}

impl PatternAnalysis {
    /// A short readable summary, one line per section.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "Patterns of the last {} days ({} to {}, UTC{}): {} {}.",
            self.days,
            self.start_date,
            self.end_date,
            self.utc_offset,
            self.reviews,
            plural(self.reviews, "review")
        );
        if let Some(m) = &self.mood {
            out.push_str("\n- Mood: ");
            if m.count == 0 {
                out.push_str("no review with a mood.");
            } else {
                out.push_str(&format!(
                    "average {} over {} {}",
                    or_dash(m.average),
                    m.count,
                    plural(m.count, "review")
                ));
                match &m.trend {
                    Some(t) => out.push_str(&format!(
                        ", {} ({:+}/day)",
                        t.direction.as_str(),
                        t.slope_per_day
                    )),
                    None => out.push_str(", no trend yet"),
                }
                let days: Vec<String> = m
                    .by_weekday
                    .iter()
                    .filter_map(|w| w.average.map(|a| format!("{} {a}", &w.weekday[..3])))
                    .collect();
                out.push_str(&format!("; by weekday: {}.", days.join(", ")));
            }
        }
        if let Some(tags) = &self.tags {
            out.push_str("\n- Tags: ");
            if tags.is_empty() {
                out.push_str("none.");
            } else {
                let list: Vec<String> = tags
                    .iter()
                    .map(|t| match t.mean_mood {
                        Some(m) => format!("{} ×{} (mood {m})", t.tag, t.count),
                        None => format!("{} ×{}", t.tag, t.count),
                    })
                    .collect();
                out.push_str(&format!("{}.", list.join(", ")));
            }
        }
        if let Some(th) = &self.themes {
            let list = |v: &[ThemeCount]| {
                v.iter()
                    .map(|c| format!("{} ({})", c.text, c.reviews))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if th.words.is_empty() {
                out.push_str("\n- Themes: no word recurs yet.");
            } else {
                out.push_str(&format!("\n- Themes: {}.", list(&th.words)));
                if !th.phrases.is_empty() {
                    out.push_str(&format!("\n- Phrases: {}.", list(&th.phrases)));
                }
            }
        }
        if let Some(t) = &self.tasks {
            out.push_str(&format!(
                "\n- Tasks: {} created, {} completed",
                t.created, t.completed
            ));
            match t.completion_ratio {
                Some(r) => out.push_str(&format!(" (ratio {r}).")),
                None => out.push('.'),
            }
        }
        if let Some(s) = &self.streaks {
            out.push_str(&format!(
                "\n- Streaks: current {} {}, longest {}",
                s.current,
                plural(s.current as u64, "day"),
                s.longest
            ));
            if let (Some(a), Some(b)) = (&s.longest_start, &s.longest_end) {
                out.push_str(&format!(" ({a} to {b})"));
            }
            out.push_str(&format!(
                "; reviews on {} of {} days.",
                s.days_with_review, s.days_in_range
            ));
        }
        out
    }
}

#[cfg(test)]
#[path = "analysis_tests.rs"]
mod tests;
