//! Questions put to the person at the other end: what `ask_user` asks, and the
//! [`Asker`] that reaches them (a picker in the terminal, an MCP client's
//! elicitation, the web page).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::BoxFuture;

/// One choice of a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// What the person picks: one to five words.
    pub label: String,
    /// What picking it means, in a sentence.
    #[serde(default)]
    pub description: String,
}

/// One question, with its choices; the person may also answer in their own words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// A short label shown above the question (at most 12 characters): "Database".
    pub header: String,
    /// The question, ending with a question mark.
    pub question: String,
    /// Two to four choices.
    pub options: Vec<QuestionOption>,
    /// Whether several choices may be picked.
    #[serde(default)]
    pub multi_select: bool,
}

/// The person's answer to one [`Question`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Answer {
    /// The question's header.
    pub header: String,
    /// The labels picked (none when they answered in their own words only).
    pub selected: Vec<String>,
    /// What they wrote, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// How the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answers {
    /// One answer per question, in order.
    Answered(Vec<Answer>),
    /// They chose not to answer; the reason, if given, goes back to the model.
    Declined {
        /// Why, in their words.
        reason: Option<String>,
    },
}

/// Why questions could not be put.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AskError {
    /// Nobody can be asked here (a client without elicitation, a run without a
    /// terminal).
    #[error("{0}")]
    Unsupported(String),
    /// Asking failed on the way.
    #[error("{0}")]
    Failed(String),
    /// Asking failed on the way, because of another error.
    #[error("{what}")]
    Caused {
        /// What could not be done (`no randomness for an id`).
        what: String,
        /// Why (shared: the error is cloned).
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

impl AskError {
    /// [`AskError::Caused`]: `what` could not be done because of `source`.
    pub fn caused(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> AskError {
        AskError::Caused {
            what: what.into(),
            source: Arc::new(source),
        }
    }
}

/// Equal when they say the same; a cause only equals itself.
impl PartialEq for AskError {
    fn eq(&self, other: &AskError) -> bool {
        match (self, other) {
            (AskError::Unsupported(a), AskError::Unsupported(b))
            | (AskError::Failed(a), AskError::Failed(b)) => a == b,
            (
                AskError::Caused { what, source },
                AskError::Caused {
                    what: other_what,
                    source: other_source,
                },
            ) => what == other_what && Arc::ptr_eq(source, other_source),
            _ => false,
        }
    }
}

impl Eq for AskError {}

/// Puts questions to a person and waits for the answer.
pub trait Asker: Send + Sync {
    /// The answers to `questions`.
    fn ask<'a>(&'a self, questions: &'a [Question]) -> BoxFuture<'a, Result<Answers, AskError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caused_failure_keeps_its_cause_for_the_chain() {
        let e = AskError::caused(
            "no randomness for an id",
            std::io::Error::other("no device"),
        );
        assert_eq!(e.to_string(), "no randomness for an id");
        assert_eq!(crate::error_chain(&e), "no randomness for an id: no device");
        assert_eq!(e, e.clone());
        assert_ne!(
            e,
            AskError::caused(
                "no randomness for an id",
                std::io::Error::other("no device")
            )
        );
        assert_ne!(e, AskError::Failed("no randomness for an id".into()));
    }
}
