//! `analyze_patterns`: mood, tags, themes, tasks and streaks over the recent reviews.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{
    AnalysisRequest, PatternAnalysis, Section, TimeRange, analyze_patterns, local_date, now_ms,
    parse_date, parse_utc_offset,
};

use crate::planner::invalid;
use crate::planner::reviews::{check, offset};
use crate::stored::store_tool;

/// Arguments of `analyze_patterns`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzePatternsParams {
    /// week, month or quarter: the last 7, 30 or 90 days, ending at `end_date`.
    pub time_range: TimeRange,
    /// The sections to compute: mood, tags, themes, tasks, streaks; all when left out.
    #[serde(default)]
    pub categories: Option<Vec<Section>>,
    /// The last day of the range, YYYY-MM-DD, included; today (in `utc_offset`) when left out.
    #[serde(default)]
    pub end_date: Option<String>,
    /// The user's offset from UTC, like "+08:00", deciding calendar days and weekdays; "+00:00" when left out.
    #[serde(default)]
    pub utc_offset: Option<String>,
}

store_tool! {
    /// The `analyze_patterns` tool.
    AnalyzePatterns
}

impl TypedTool for AnalyzePatterns {
    type Params = AnalyzePatternsParams;
    type Output = PatternAnalysis;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("analyze_patterns", include_str!("analyze_patterns.md"))
            .title("Analyze Patterns")
            .category(Category::Review)
            .permission("store:read")
            .hints(Hints::read_only())
            .key_argument("time_range")
            .example(
                "Mood and streaks of the week ending March 4th, for a user in UTC+08:00",
                serde_json::json!({
                    "time_range": "week",
                    "categories": ["mood", "streaks"],
                    "end_date": "2026-03-04",
                    "utc_offset": "+08:00"
                }),
                serde_json::json!({
                    "time_range": "week",
                    "start_date": "2026-02-26",
                    "end_date": "2026-03-04",
                    "utc_offset": "+08:00",
                    "days": 7,
                    "reviews": 2,
                    "mood": {
                        "count": 2,
                        "average": 6.75,
                        "trend": {"slope_per_day": 1.5, "direction": "rising"},
                        "by_weekday": [
                            {"weekday": "Monday", "count": 0, "average": null},
                            {"weekday": "Tuesday", "count": 1, "average": 6.0},
                            {"weekday": "Wednesday", "count": 1, "average": 7.5},
                            {"weekday": "Thursday", "count": 0, "average": null},
                            {"weekday": "Friday", "count": 0, "average": null},
                            {"weekday": "Saturday", "count": 0, "average": null},
                            {"weekday": "Sunday", "count": 0, "average": null}
                        ]
                    },
                    "streaks": {
                        "current": 2,
                        "longest": 2,
                        "longest_start": "2026-03-03",
                        "longest_end": "2026-03-04",
                        "days_with_review": 2,
                        "days_in_range": 7
                    }
                }),
            )
    }

    fn validate(&self, p: &AnalyzePatternsParams) -> Vec<Violation> {
        let mut out = Vec::new();
        if let Some(d) = &p.end_date {
            check("end_date", parse_date(d), &mut out);
        }
        if let Some(o) = &p.utc_offset {
            check("utc_offset", parse_utc_offset(o), &mut out);
        }
        out
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        p: AnalyzePatternsParams,
    ) -> ToolResult<PatternAnalysis> {
        let store = self.store.get().await?;
        let tz = offset(p.utc_offset.as_deref())?;
        let end_date = match &p.end_date {
            Some(d) => parse_date(d).map_err(|e| invalid("end_date", e))?,
            None => local_date(now_ms(), tz),
        };
        let mut sections = p.categories.unwrap_or_default();
        sections.dedup();
        let request = AnalysisRequest {
            time_range: p.time_range,
            end_date,
            utc_offset: tz,
            sections,
        };
        let analysis = analyze_patterns(store, &request).await?;
        let text = analysis.summary();
        Ok(Reply::new(analysis, text))
    }
}
