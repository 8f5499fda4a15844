//! `write_stdin`: sends text to a background shell and returns its new output.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{Category, Hints, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_exec::Shells;

use crate::shell::{ShellReport, report, wait};

/// How long `write_stdin` waits for an answer after sending.
pub const ANSWER_WAIT: Duration = Duration::from_secs(1);

/// Arguments of `write_stdin`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteStdinParams {
    /// The id of a background shell, from `bash` with `run_in_background`.
    #[schemars(length(min = 1))]
    pub shell_id: String,
    /// The text to send (end a line with `\n`); empty: send nothing, just return the
    /// new output.
    pub chars: String,
}

/// The `write_stdin` tool.
#[derive(Debug, Default)]
pub struct WriteStdin {
    shells: Shells,
}

impl WriteStdin {
    /// A `write_stdin` writing to the sessions of `shells`.
    #[must_use]
    pub fn new(shells: Shells) -> WriteStdin {
        WriteStdin { shells }
    }
}

impl TypedTool for WriteStdin {
    type Params = WriteStdinParams;
    type Output = ShellReport;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("write_stdin", include_str!("write_stdin.md"))
            .title("Write to Background Shell")
            .category(Category::Shell)
            .permission("shell:exec")
            .hints(Hints::writes().destructive().open_world())
            .key_argument("shell_id")
            .example(
                "Answer a prompt",
                serde_json::json!({"shell_id": "shell_2", "chars": "y\n"}),
                serde_json::json!({
                    "shell_id": "shell_2", "command": "./install.sh", "status": "running",
                    "exit_code": null, "stdout": "Installing...\n", "stderr": "",
                    "dropped_bytes": 0, "filtered_lines": 0, "runtime_ms": 12040
                }),
            )
    }

    /// Nothing when it sends nothing (a read of the new output); otherwise the
    /// default, anything: the text may make the process write.
    fn changes(&self, args: &serde_json::Value) -> Option<toolbelt_core::Changes> {
        (args.get("chars").and_then(serde_json::Value::as_str) == Some(""))
            .then_some(toolbelt_core::Changes::Nothing)
    }

    async fn call(&self, ctx: &ToolContext, p: WriteStdinParams) -> ToolResult<ShellReport> {
        self.shells
            .write_stdin(&p.shell_id, p.chars.as_bytes())
            .await?;
        if !p.chars.is_empty() {
            wait(&self.shells, ctx, &p.shell_id, ANSWER_WAIT).await?;
        }
        let read = self.shells.read(&p.shell_id)?;
        Ok(report(read, None))
    }
}
