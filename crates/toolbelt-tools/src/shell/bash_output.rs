//! `bash_output`: the new output and status of a background shell.

use std::time::Duration;

use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::error_chain;
use toolbelt_core::{
    Category, ErrorCode, Hints, ToolContext, ToolError, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_exec::Shells;

use crate::shell::{ShellReport, report, wait};

/// Seconds `bash_output` waits for new output by default.
pub const DEFAULT_BLOCK_SECS: u64 = 30;
/// The longest wait `bash_output` may ask for, in seconds.
pub const MAX_BLOCK_SECS: u64 = 600;

/// Arguments of `bash_output`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashOutputParams {
    /// The id of a background shell, from `bash` with `run_in_background`.
    #[schemars(length(min = 1))]
    pub shell_id: String,
    /// Wait for new output (or the end of the shell) before answering; default true.
    #[serde(default)]
    pub block: Option<bool>,
    /// Seconds to wait at most when blocking; default 30, at most 600.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600))]
    pub timeout: Option<u64>,
    /// A regular expression: only the new lines that match it are shown (the others
    /// are read and discarded).
    #[serde(default)]
    pub filter: Option<String>,
}

/// The `bash_output` tool.
#[derive(Debug, Default)]
pub struct BashOutputTool {
    shells: Shells,
}

impl BashOutputTool {
    /// A `bash_output` reading the sessions of `shells`.
    #[must_use]
    pub fn new(shells: Shells) -> BashOutputTool {
        BashOutputTool { shells }
    }
}

impl TypedTool for BashOutputTool {
    type Params = BashOutputParams;
    type Output = ShellReport;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("bash_output", include_str!("bash_output.md"))
            .title("Read Background Shell Output")
            .category(Category::Shell)
            .permission("shell:exec")
            .hints(Hints::read_only().not_idempotent())
            .key_argument("shell_id")
            .own_timeout()
            .example(
                "Wait for a dev server to say it is ready",
                serde_json::json!({"shell_id": "shell_1", "timeout": 60, "filter": "ready|error"}),
                serde_json::json!({
                    "shell_id": "shell_1", "command": "npm run dev", "status": "running",
                    "exit_code": null, "stdout": "ready on http://localhost:3000\n", "stderr": "",
                    "dropped_bytes": 0, "filtered_lines": 4, "runtime_ms": 5210
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: BashOutputParams) -> ToolResult<ShellReport> {
        let filter = compile_filter(p.filter.as_deref())?;
        self.shells.info(&p.shell_id)?;
        if p.block.unwrap_or(true) {
            let secs = p
                .timeout
                .unwrap_or(DEFAULT_BLOCK_SECS)
                .clamp(1, MAX_BLOCK_SECS);
            wait(&self.shells, ctx, &p.shell_id, Duration::from_secs(secs)).await?;
        }
        let read = self.shells.read(&p.shell_id)?;
        Ok(report(read, filter.as_ref()))
    }
}

/// The filter's regex.
fn compile_filter(filter: Option<&str>) -> Result<Option<Regex>, ToolError> {
    match filter.filter(|f| !f.is_empty()) {
        None => Ok(None),
        Some(pattern) => Regex::new(pattern).map(Some).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidParams,
                format!(
                    "filter {pattern:?} is not a valid regular expression: {}",
                    error_chain(&e)
                ),
            )
            .hint("use Rust regex syntax, e.g. \"error|warning\"; escape literal ( [ . * with \\")
        }),
    }
}
