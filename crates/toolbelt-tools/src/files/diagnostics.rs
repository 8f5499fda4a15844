//! `diagnostics`: the problems of a file, a directory or the workspace, on demand,
//! through the session's post-edit pipeline (syntax check, linters, language
//! servers).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::diagnostics::CheckRequest;
use toolbelt_core::{
    AfterWrite, Category, DiagnosticsReport, Hints, Reply, Subject, ToolContext, ToolResult,
    ToolSpec, TypedTool,
};

use crate::workspace::workspace;

/// Arguments of `diagnostics`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnosticsParams {
    /// A file or directory (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
}

/// Result of `diagnostics`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DiagnosticsOutput {
    /// What was checked, as given (`.` for the working directory).
    pub path: String,
    /// The problems found (`diagnostics`) and their counts (`diagnostics_summary`).
    #[serde(flatten)]
    pub checks: DiagnosticsReport,
}

/// The `diagnostics` tool, over the session's pipeline.
#[derive(Debug, Clone)]
pub struct Diagnostics {
    after: Arc<dyn AfterWrite>,
}

impl Diagnostics {
    /// The tool, asking `after`.
    pub fn new(after: Arc<dyn AfterWrite>) -> Diagnostics {
        Diagnostics { after }
    }
}

impl TypedTool for Diagnostics {
    type Params = DiagnosticsParams;
    type Output = DiagnosticsOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("diagnostics", include_str!("diagnostics.md"))
            .title("Check Files")
            .category(Category::Files)
            .subject(Subject::Path)
            .permission("fs:read")
            .hints(Hints::read_only())
            .key_argument("path")
            .example(
                "Check one file",
                json!({"path": "app/x.py"}),
                json!({
                    "path": "app/x.py",
                    "diagnostics": [{
                        "path": "app/x.py", "line": 2, "col": 7,
                        "end": {"line": 2, "col": 8}, "severity": "error",
                        "code": "invalid-syntax", "source": "ruff",
                        "message": "Expected a parameter name", "new": false
                    }],
                    "diagnostics_summary": {"new": 0, "fixed": 0, "already_there": 1}
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: DiagnosticsParams) -> ToolResult<DiagnosticsOutput> {
        let ws = workspace(ctx)?;
        let given = p.path.unwrap_or_else(|| ".".to_owned());
        let target = ws.resolve(&given)?;
        if !ws.jail.exists(&target) {
            return Err(ws.not_found(&target));
        }
        let request = CheckRequest {
            cwd: ws.cwd.clone(),
            files: vec![target.abs().to_path_buf()],
        };
        let checks = self.after.check(request).await;
        let text = if checks.is_quiet() {
            format!("No problems found in {given}.")
        } else {
            checks.text.clone()
        };
        Ok(Reply::new(
            DiagnosticsOutput {
                path: given,
                checks,
            },
            text,
        ))
    }
}
