//! `think`: a place for the model to reason, shown to the user.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};

/// What kind of thought.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThoughtType {
    /// Understanding a problem or a result.
    Analysis,
    /// Choosing between options.
    Decision,
    /// Ordering the next steps.
    Plan,
}

/// Arguments of `think`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThinkParams {
    /// Your reasoning, as plain text.
    #[schemars(length(min = 1))]
    pub thought: String,
    /// The kind of thought: analysis, decision or plan.
    #[serde(default, rename = "type")]
    pub kind: Option<ThoughtType>,
    /// How sure you are, from 0 to 1.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: Option<f64>,
}

/// Result of `think`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ThinkOutput {
    /// The line a UI shows: "💭 Thinking: ...".
    pub message: String,
    /// The thought as given.
    pub thought: String,
    /// The kind of thought, when given.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<ThoughtType>,
    /// The confidence, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

/// The `think` tool.
#[derive(Debug, Default)]
pub struct Think;

impl TypedTool for Think {
    type Params = ThinkParams;
    type Output = ThinkOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("think", include_str!("think.md"))
            .title("Think")
            .category(Category::Planning)
            .hints(Hints::read_only())
            .key_argument("thought")
            .example(
                "Weigh two options before acting",
                serde_json::json!({
                    "thought": "Option A is faster, option B is easier to maintain; B fits a long-lived codebase.",
                    "type": "decision",
                    "confidence": 0.8
                }),
                serde_json::json!({
                    "message": "💭 Thinking: Option A is faster, option B is easier to maintain; B fits a long-lived codebase.",
                    "thought": "Option A is faster, option B is easier to maintain; B fits a long-lived codebase.",
                    "type": "decision",
                    "confidence": 0.8
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: ThinkParams) -> ToolResult<ThinkOutput> {
        let message = format!("💭 Thinking: {}", p.thought);
        ctx.emit(&message);
        let out = ThinkOutput {
            message,
            thought: p.thought,
            kind: p.kind,
            confidence: p.confidence,
        };
        Ok(Reply::new(out, "Thought recorded."))
    }
}
