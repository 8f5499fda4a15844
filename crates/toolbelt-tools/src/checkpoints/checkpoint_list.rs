//! `checkpoint_list`: the workspace's newest checkpoints, one line each.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_checkpoint::Checkpoints;
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};

use crate::checkpoints::{CheckpointSummary, LISTED_PATHS};

/// Checkpoints listed when no `limit` is given.
const DEFAULT_LIMIT: u32 = 20;
/// Most checkpoints one call lists.
const MAX_LIMIT: u32 = 100;

/// Arguments of `checkpoint_list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointListParams {
    /// How many (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// Result of `checkpoint_list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CheckpointListOutput {
    /// The checkpoints, newest first.
    pub checkpoints: Vec<CheckpointSummary>,
    /// Older checkpoints exist beyond `limit`.
    pub more: bool,
}

/// The `checkpoint_list` tool.
#[derive(Debug, Clone)]
pub struct CheckpointList {
    checkpoints: Checkpoints,
}

impl CheckpointList {
    /// The tool, listing `checkpoints`.
    pub fn new(checkpoints: Checkpoints) -> CheckpointList {
        CheckpointList { checkpoints }
    }
}

impl TypedTool for CheckpointList {
    type Params = CheckpointListParams;
    type Output = CheckpointListOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("checkpoint_list", include_str!("checkpoint_list.md"))
            .title("List Checkpoints")
            .category(Category::Files)
            .permission("checkpoints:read")
            .hints(Hints::read_only())
            .example(
                "The two newest checkpoints",
                serde_json::json!({"limit": 2}),
                serde_json::json!({
                    "checkpoints": [{
                        "id": "cp-8", "at": "2026-05-04T09:36:12Z", "tool": "bash",
                        "origin": "mcp (client claude-code)", "status": "complete",
                        "problem": null, "rewind_of": null, "file_count": 2,
                        "files": ["Cargo.lock", "src/lib.rs"]
                    }, {
                        "id": "cp-7", "at": "2026-05-04T09:35:40Z", "tool": "edit_file",
                        "origin": "mcp (client claude-code)", "status": "complete",
                        "problem": null, "rewind_of": null, "file_count": 1,
                        "files": ["src/main.rs"]
                    }],
                    "more": true
                }),
            )
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        p: CheckpointListParams,
    ) -> ToolResult<CheckpointListOutput> {
        let limit = p.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let store = self.checkpoints.store().await?;
        let workspace = self.checkpoints.workspace();
        let mut page =
            toolbelt_store::list_checkpoints(store, workspace, None, i64::from(limit) + 1).await?;
        let more = page.len() > limit as usize;
        page.truncate(limit as usize);
        // Their paths, in one read: the page is the newest, so everything from its
        // oldest on is the page (and what was taken meanwhile, left out).
        if let Some(oldest) = page.last().map(|r| r.id) {
            let with_files = toolbelt_store::checkpoints_from(store, workspace, oldest).await?;
            for record in &mut page {
                if let Some(full) = with_files.iter().find(|f| f.id == record.id) {
                    record.files.clone_from(&full.files);
                }
            }
        }
        let checkpoints: Vec<CheckpointSummary> = page
            .iter()
            .map(|r| CheckpointSummary::new(r, LISTED_PATHS))
            .collect();
        let text = if checkpoints.is_empty() {
            "No checkpoints yet: one is taken each time a tool call changes files.".to_string()
        } else {
            let mut text = format!(
                "{} checkpoint{}, newest first{}:",
                checkpoints.len(),
                if checkpoints.len() == 1 { "" } else { "s" },
                if more {
                    " (older ones exist: raise limit)"
                } else {
                    ""
                }
            );
            for c in &checkpoints {
                text.push('\n');
                text.push_str(&c.line());
            }
            text.push_str(
                "\ncheckpoint_diff shows what one changed; rewind goes back to before one \
                 (undoing it and every later one).",
            );
            text
        };
        Ok(Reply::new(CheckpointListOutput { checkpoints, more }, text))
    }
}
