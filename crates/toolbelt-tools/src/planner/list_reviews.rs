//! `list_reviews`: reviews newest first, filtered by dates, type and tag.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{
    MAX_REVIEW_LIMIT, ReviewKind, ReviewPage, ReviewQuery, list_reviews, parse_date_or_time,
    parse_utc_offset,
};

use crate::planner::reviews::{check, line, offset};
use crate::stored::store_tool;

/// Arguments of `list_reviews`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListReviewsParams {
    /// Reviews about this day or later: YYYY-MM-DD (from the start of that day) or an RFC 3339 date-time.
    #[serde(default)]
    pub since: Option<String>,
    /// Reviews about this day or earlier: YYYY-MM-DD (to the end of that day) or an RFC 3339 date-time.
    #[serde(default)]
    pub until: Option<String>,
    /// Only reviews of this type: daily, weekly or monthly.
    #[serde(default, rename = "type")]
    pub kind: Option<ReviewKind>,
    /// Only reviews with this tag (case-insensitive).
    #[serde(default)]
    pub tag: Option<String>,
    /// How many reviews to return, 1 to 200; 20 when left out.
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// How many matching reviews to skip, to page.
    #[serde(default)]
    pub offset: Option<u32>,
    /// The user's offset from UTC, like "+08:00", deciding where the days of `since`/`until` start and end and the days shown; "+00:00" when left out.
    #[serde(default)]
    pub utc_offset: Option<String>,
}

store_tool! {
    /// The `list_reviews` tool.
    ListReviews
}

impl TypedTool for ListReviews {
    type Params = ListReviewsParams;
    type Output = ReviewPage;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("list_reviews", include_str!("list_reviews.md"))
            .title("List Reviews")
            .category(Category::Review)
            .permission("store:read")
            .hints(Hints::read_only())
            .example(
                "The daily reviews tagged work since March 1st, for a user in UTC+08:00",
                serde_json::json!({
                    "since": "2026-03-01",
                    "type": "daily",
                    "tag": "work",
                    "utc_offset": "+08:00"
                }),
                serde_json::json!({
                    "items": [{
                        "id": "review-1",
                        "content": "今天进展顺利，完成了数据库迁移",
                        "type": "daily",
                        "tags": ["work"],
                        "linked_project_ids": [],
                        "mood": 7.5,
                        "date": "2026-03-04T12:00:00Z"
                    }],
                    "total": 1,
                    "limit": 20,
                    "offset": 0,
                    "has_more": false
                }),
            )
    }

    fn validate(&self, p: &ListReviewsParams) -> Vec<Violation> {
        let mut out = Vec::new();
        if let Some(s) = &p.since {
            check("since", parse_date_or_time(s), &mut out);
        }
        if let Some(s) = &p.until {
            check("until", parse_date_or_time(s), &mut out);
        }
        if let Some(o) = &p.utc_offset {
            check("utc_offset", parse_utc_offset(o), &mut out);
        }
        out
    }

    async fn call(&self, _ctx: &ToolContext, p: ListReviewsParams) -> ToolResult<ReviewPage> {
        let store = self.store.get().await?;
        let tz = offset(p.utc_offset.as_deref())?;
        let q = ReviewQuery {
            since: p.since,
            until: p.until,
            kind: p.kind,
            tag: p.tag,
            limit: p.limit.map(|l| l.min(MAX_REVIEW_LIMIT)),
            offset: p.offset,
            utc_offset: p.utc_offset,
        };
        let page = list_reviews(store, &q).await?;
        let text = if page.items.is_empty() {
            if page.total == 0 {
                "No review matches; write_review saves one.".to_string()
            } else {
                format!(
                    "No review at offset {} ({} match); call again with a smaller offset.",
                    page.offset, page.total
                )
            }
        } else {
            let first = u64::from(page.offset) + 1;
            let last = u64::from(page.offset) + page.items.len() as u64;
            let mut t = format!("Reviews {first}-{last} of {}, newest first:", page.total);
            for r in &page.items {
                t.push_str("\n- ");
                t.push_str(&line(r, tz));
            }
            if page.has_more {
                t.push_str(&format!("\nMore: call again with offset {last}."));
            }
            t
        };
        Ok(Reply::new(page, text))
    }
}
