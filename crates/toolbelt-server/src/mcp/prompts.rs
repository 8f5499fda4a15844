//! The skills served as MCP prompts.

use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptResult, Prompt, PromptMessage, Role};
use serde_json::json;

use super::server::McpServer;

impl McpServer {
    /// The skills as prompts.
    pub(super) fn prompts(&self) -> Vec<Prompt> {
        let Some(skills) = self.skills() else {
            return Vec::new();
        };
        skills
            .scan()
            .skills
            .into_iter()
            .map(|skill| Prompt::new(skill.name, Some(skill.description), None))
            .collect()
    }

    /// One skill as a prompt: its instructions as a user message.
    pub(super) fn prompt(&self, name: &str) -> Result<GetPromptResult, McpError> {
        let Some(skills) = self.skills() else {
            return Err(McpError::invalid_params(
                format!("there is no prompt named {name:?}: this server has no prompts"),
                None,
            ));
        };
        let skill = skills.get(name).map_err(|unknown| {
            // The prompts are the skills: the message names them so.
            McpError::invalid_params(
                unknown.to_string(),
                Some(json!({"prompt": name, "closest": unknown.closest, "available": unknown.available})),
            )
        })?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            skill.instructions(),
        )])
        .with_description(skill.description))
    }
}
