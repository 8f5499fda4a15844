//! `list_shells`: the background shells and where they are.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_exec::Shells;

use crate::shell::{ShellState, millis, state, status_words};

/// Arguments of `list_shells` (none).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListShellsParams {}

/// One background shell.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShellEntry {
    /// Its id.
    pub shell_id: String,
    /// Its command line.
    pub command: String,
    /// Where it is.
    pub status: ShellState,
    /// Its exit code once it has exited by itself.
    pub exit_code: Option<i32>,
    /// The shell's process id.
    pub pid: Option<u32>,
    /// Run time in milliseconds, to its end or to now.
    pub runtime_ms: u64,
}

/// Result of `list_shells`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShellList {
    /// The shells, oldest first.
    pub shells: Vec<ShellEntry>,
    /// How many shells may run at once.
    pub max_running: usize,
}

/// The `list_shells` tool.
#[derive(Debug, Default)]
pub struct ListShells {
    shells: Shells,
}

impl ListShells {
    /// A `list_shells` listing the sessions of `shells`.
    #[must_use]
    pub fn new(shells: Shells) -> ListShells {
        ListShells { shells }
    }
}

impl TypedTool for ListShells {
    type Params = ListShellsParams;
    type Output = ShellList;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("list_shells", include_str!("list_shells.md"))
            .title("List Background Shells")
            .category(Category::Shell)
            .permission("shell:exec")
            .hints(Hints::read_only())
            .example(
                "See what runs in the background",
                serde_json::json!({}),
                serde_json::json!({
                    "shells": [{
                        "shell_id": "shell_1", "command": "npm run dev", "status": "running",
                        "exit_code": null, "pid": 4242, "runtime_ms": 63100
                    }],
                    "max_running": 8
                }),
            )
    }

    async fn call(&self, _ctx: &ToolContext, _p: ListShellsParams) -> ToolResult<ShellList> {
        let infos = self.shells.list();
        let mut text = String::new();
        if infos.is_empty() {
            text.push_str("[no background shells]");
        }
        for info in &infos {
            let _ = writeln!(
                text,
                "{}  [{}]  $ {}",
                info.id,
                status_words(info),
                info.command
            );
        }
        let shells: Vec<ShellEntry> = infos
            .iter()
            .map(|info| {
                let (status, exit_code) = state(info.status);
                ShellEntry {
                    shell_id: info.id.clone(),
                    command: info.command.clone(),
                    status,
                    exit_code,
                    pid: info.pid,
                    runtime_ms: millis(info.runtime),
                }
            })
            .collect();
        let count = shells.len();
        let out = ShellList {
            shells,
            max_running: self.shells.max_live(),
        };
        Ok(Reply::new(out, text.trim_end().to_string()).stat("shells", count))
    }
}
