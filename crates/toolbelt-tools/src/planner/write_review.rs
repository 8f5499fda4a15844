//! `write_review`: saves a dated review with a type, tags, linked projects and a mood.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{
    Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool, Violation,
};
use toolbelt_store::{
    NewReview, Review, ReviewKind, check_content, check_tag, now_ms, parse_date_or_time,
    write_review,
};

use crate::planner::reviews::check;
use crate::stored::store_tool;

/// Arguments of `write_review`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteReviewParams {
    /// The review: what happened, what went well, what to change. Any language.
    #[schemars(length(min = 1))]
    pub content: String,
    /// daily, weekly or monthly.
    #[serde(rename = "type")]
    pub kind: ReviewKind,
    /// Tags such as "work" or "health"; trimmed, and duplicates differing only in case are merged.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Ids of the projects the review is about, like "project-3".
    #[serde(default)]
    pub linked_project_ids: Option<Vec<String>>,
    /// How the day or period felt, from 1 (worst) to 10 (best); decimals allowed.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub mood: Option<f64>,
    /// The day the review is about, YYYY-MM-DD, or an RFC 3339 date-time; now when left out. Give yesterday's date for a review of yesterday.
    #[serde(default)]
    pub date: Option<String>,
}

store_tool! {
    /// The `write_review` tool.
    WriteReview
}

impl TypedTool for WriteReview {
    type Params = WriteReviewParams;
    type Output = Review;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("write_review", include_str!("write_review.md"))
            .title("Write Review")
            .category(Category::Review)
            .permission("store:write")
            .hints(Hints::writes())
            .key_argument("content")
            .example(
                "Save yesterday's daily review, in Chinese, with a tag and a mood",
                serde_json::json!({
                    "content": "今天进展顺利，完成了数据库迁移",
                    "type": "daily",
                    "tags": ["work"],
                    "mood": 7.5,
                    "date": "2026-03-04"
                }),
                serde_json::json!({
                    "id": "review-1",
                    "content": "今天进展顺利，完成了数据库迁移",
                    "type": "daily",
                    "tags": ["work"],
                    "linked_project_ids": [],
                    "mood": 7.5,
                    "date": "2026-03-04T12:00:00Z"
                }),
            )
    }

    fn validate(&self, p: &WriteReviewParams) -> Vec<Violation> {
        let mut out = Vec::new();
        check("content", check_content(&p.content), &mut out);
        if let Some(tags) = &p.tags {
            for (i, t) in tags.iter().enumerate() {
                check(&format!("tags[{i}]"), check_tag(i, t), &mut out);
            }
        }
        if let Some(d) = &p.date {
            check("date", parse_date_or_time(d), &mut out);
        }
        out
    }

    async fn call(&self, _ctx: &ToolContext, p: WriteReviewParams) -> ToolResult<Review> {
        let store = self.store.get().await?;
        let new = NewReview {
            content: p.content,
            kind: p.kind,
            tags: p.tags.unwrap_or_default(),
            linked_project_ids: p.linked_project_ids.unwrap_or_default(),
            mood: p.mood,
            date: p.date,
        };
        let review = write_review(store, &new, now_ms()).await?;
        let mut text = format!(
            "Saved {} ({}, {}",
            review.id,
            review.kind.as_str(),
            review.date
        );
        if let Some(m) = review.mood {
            text.push_str(&format!(", mood {m}"));
        }
        if !review.tags.is_empty() {
            text.push_str(&format!(", tags: {}", review.tags.join(", ")));
        }
        if !review.linked_project_ids.is_empty() {
            text.push_str(&format!(
                ", projects: {}",
                review.linked_project_ids.join(", ")
            ));
        }
        text.push_str(").");
        Ok(Reply::new(review, text))
    }
}
