//! `kill_shell`: stops a background shell with everything it started.

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{Category, Hints, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_exec::Shells;

use crate::shell::{ShellReport, report};

/// Arguments of `kill_shell`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillShellParams {
    /// The id of a background shell, from `bash` with `run_in_background`.
    #[schemars(length(min = 1))]
    pub shell_id: String,
}

/// The `kill_shell` tool.
#[derive(Debug, Default)]
pub struct KillShell {
    shells: Shells,
}

impl KillShell {
    /// A `kill_shell` stopping the sessions of `shells`.
    #[must_use]
    pub fn new(shells: Shells) -> KillShell {
        KillShell { shells }
    }
}

impl TypedTool for KillShell {
    type Params = KillShellParams;
    type Output = ShellReport;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("kill_shell", include_str!("kill_shell.md"))
            .title("Stop Background Shell")
            .category(Category::Shell)
            .permission("shell:exec")
            .hints(
                Hints::writes()
                    .destructive()
                    .idempotent()
                    .concurrency_safe(),
            )
            .key_argument("shell_id")
            .example(
                "Stop a dev server",
                serde_json::json!({"shell_id": "shell_1"}),
                serde_json::json!({
                    "shell_id": "shell_1", "command": "npm run dev", "status": "killed",
                    "exit_code": null, "stdout": "", "stderr": "",
                    "dropped_bytes": 0, "filtered_lines": 0, "runtime_ms": 63100
                }),
            )
    }

    /// Nothing: it only signals a process (what the process wrote before was
    /// the checkpoint of the `bash` call that started it).
    fn changes(&self, _args: &serde_json::Value) -> Option<toolbelt_core::Changes> {
        Some(toolbelt_core::Changes::Nothing)
    }

    async fn call(&self, _ctx: &ToolContext, p: KillShellParams) -> ToolResult<ShellReport> {
        self.shells.kill(&p.shell_id).await?;
        let read = self.shells.read(&p.shell_id)?;
        Ok(report(read, None))
    }
}
