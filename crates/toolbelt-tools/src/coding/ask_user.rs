//! `ask_user`: multiple-choice questions to the person, through whoever can reach
//! them (the terminal agent's picker, an MCP client's elicitation).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{
    Answer, Answers, AskError, Category, ErrorCode, Hints, Question, QuestionOption, Reply,
    ToolContext, ToolError, ToolResult, ToolSpec, TypedTool, Violation, error_chain,
};

/// The longest header, in characters.
const MAX_HEADER_CHARS: usize = 12;

/// Arguments of `ask_user`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserParams {
    /// One to four questions.
    #[schemars(length(min = 1, max = 4))]
    pub questions: Vec<QuestionParam>,
}

/// One question of `ask_user`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionParam {
    /// A short label for the question, at most 12 characters ("Database").
    #[schemars(length(min = 1, max = 12))]
    pub header: String,
    /// The question, ending with "?".
    #[schemars(length(min = 1))]
    pub question: String,
    /// Two to four choices.
    #[schemars(length(min = 2, max = 4))]
    pub options: Vec<OptionParam>,
    /// True when several options may be chosen.
    #[serde(default)]
    pub multi_select: bool,
}

/// One choice of a question.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionParam {
    /// What the user picks: a few words.
    #[schemars(length(min = 1))]
    pub label: String,
    /// What choosing it means.
    #[serde(default)]
    pub description: String,
}

/// Result of `ask_user`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AskUserOutput {
    /// One answer per question, in order (empty when declined).
    pub answers: Vec<Answer>,
    /// True when the user chose not to answer.
    pub declined: bool,
    /// Why they declined, when they said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The `ask_user` tool.
#[derive(Debug, Default)]
pub struct AskUser;

impl TypedTool for AskUser {
    type Params = AskUserParams;
    type Output = AskUserOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("ask_user", include_str!("ask_user.md"))
            .title("Ask the user")
            .category(Category::Planning)
            .hints(Hints::read_only())
            .own_timeout()
            .example(
                "Ask which storage to build on",
                serde_json::json!({"questions": [{
                    "header": "Storage",
                    "question": "Where should the sessions be stored?",
                    "options": [
                        {"label": "SQLite", "description": "one file beside the app"},
                        {"label": "PostgreSQL", "description": "the existing database server"}
                    ]
                }]}),
                serde_json::json!({
                    "answers": [{"header": "Storage", "selected": ["SQLite"]}],
                    "declined": false
                }),
            )
    }

    fn validate(&self, p: &AskUserParams) -> Vec<Violation> {
        let mut problems = Vec::new();
        for (i, q) in p.questions.iter().enumerate() {
            if q.header.chars().count() > MAX_HEADER_CHARS {
                problems.push(Violation::new(
                    format!("questions[{i}].header"),
                    format!("{:?} is over {MAX_HEADER_CHARS} characters", q.header),
                ));
            }
            for (j, o) in q.options.iter().enumerate() {
                if q.options[..j].iter().any(|other| other.label == o.label) {
                    problems.push(Violation::new(
                        format!("questions[{i}].options[{j}].label"),
                        format!("{:?} is given twice", o.label),
                    ));
                }
            }
            if p.questions[..i]
                .iter()
                .any(|other| other.header == q.header)
            {
                problems.push(Violation::new(
                    format!("questions[{i}].header"),
                    format!("{:?} is the header of an earlier question", q.header),
                ));
            }
        }
        problems
    }

    async fn call(&self, ctx: &ToolContext, p: AskUserParams) -> ToolResult<AskUserOutput> {
        let questions: Vec<Question> = p
            .questions
            .into_iter()
            .map(|q| Question {
                header: q.header,
                question: q.question,
                options: q
                    .options
                    .into_iter()
                    .map(|o| QuestionOption {
                        label: o.label,
                        description: o.description,
                    })
                    .collect(),
                multi_select: q.multi_select,
            })
            .collect();
        let Some(asker) = ctx.asker() else {
            return Err(nobody_to_ask("nobody can answer questions here"));
        };
        let answers = tokio::select! {
            answers = asker.ask(&questions) => answers,
            () = ctx.cancel_token().cancelled() => {
                return Err(ToolError::new(ErrorCode::Cancelled, "the questions were cancelled"));
            }
        };
        match answers {
            Ok(Answers::Answered(answers)) => {
                let text = answered_text(&answers);
                let out = AskUserOutput {
                    answers,
                    declined: false,
                    reason: None,
                };
                Ok(Reply::new(out, text))
            }
            Ok(Answers::Declined { reason }) => {
                let text = match &reason {
                    Some(r) => format!(
                        "The user declined to answer, saying: {r}\nDecide yourself, or ask in your reply."
                    ),
                    None => "The user declined to answer. Decide yourself, or ask in your reply."
                        .to_string(),
                };
                let out = AskUserOutput {
                    answers: Vec::new(),
                    declined: true,
                    reason,
                };
                Ok(Reply::new(out, text))
            }
            Err(AskError::Unsupported(why)) => Err(nobody_to_ask(&why)),
            Err(e) => Err(ToolError::new(
                ErrorCode::Unavailable,
                format!(
                    "the questions could not be put to the user: {}",
                    error_chain(&e)
                ),
            )
            .hint("ask the questions in your reply instead")),
        }
    }
}

/// UNAVAILABLE: nobody can be asked here.
fn nobody_to_ask(why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::Unavailable,
        format!("the user cannot be asked from here: {why}"),
    )
    .hint("ask your questions in your reply instead, and stop there for the user's answer")
}

/// `The user answered:` and a line per question.
fn answered_text(answers: &[Answer]) -> String {
    let mut text = String::from("The user answered:");
    for a in answers {
        let mut parts: Vec<String> = a.selected.clone();
        if let Some(own) = a.text.as_deref().filter(|t| !t.trim().is_empty()) {
            parts.push(format!("\"{}\" (in their own words)", own.trim()));
        }
        let shown = if parts.is_empty() {
            "(no answer)".to_string()
        } else {
            parts.join(", ")
        };
        text.push_str(&format!("\n- {}: {shown}", a.header));
    }
    text
}
