//! `read_output`: pages a saved output by its id: from this process's spill
//! directory, else from where the session keeps saved outputs beyond it (the
//! store replicas of a server share).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::output::{
    DEFAULT_READ_LIMIT_LINES, MAX_READ_LIMIT_LINES, SpillError, read_spilled_within,
};
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};

/// Arguments of `read_output`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadOutputParams {
    /// The output_id of a truncated result (`out_` + 32 hex digits).
    #[schemars(length(min = 1))]
    pub output_id: String,
    /// First line, 1-based; negative counts from the end (-100 = the last 100 lines). Default 1.
    #[serde(default)]
    pub offset: Option<i64>,
    /// Lines to read (default 200, at most 2000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 2000))]
    pub limit: Option<u32>,
}

/// Result of `read_output`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReadOutputResult {
    /// The id read.
    pub output_id: String,
    /// First line shown (0 when none).
    pub first_line: u64,
    /// Last line shown (0 when none).
    pub last_line: u64,
    /// Lines in the whole output.
    pub total_lines: u64,
    /// Bytes in the whole output.
    pub total_bytes: u64,
    /// Offset to continue with, when more remains.
    pub next_offset: Option<u64>,
    /// Lines cut because they were too long.
    pub cut_lines: usize,
}

/// The `read_output` tool.
#[derive(Debug, Default)]
pub struct ReadOutput;

impl TypedTool for ReadOutput {
    type Params = ReadOutputParams;
    type Output = ReadOutputResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("read_output", include_str!("read_output.md"))
            .title("Read Saved Output")
            .category(Category::System)
            .permission("state:read")
            .reads_saved_output()
            .hints(Hints::read_only())
            .key_argument("output_id")
            .example(
                "Read the last 50 lines of a long build log",
                serde_json::json!({"output_id": "out_0190f1f2a3b4c5d6e7f8091a2b3c4d5e", "offset": -50}),
                serde_json::json!({
                    "output_id": "out_0190f1f2a3b4c5d6e7f8091a2b3c4d5e",
                    "first_line": 9951, "last_line": 10000, "total_lines": 10000,
                    "total_bytes": 612345, "next_offset": null, "cut_lines": 0
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: ReadOutputParams) -> ToolResult<ReadOutputResult> {
        let limit = p
            .limit
            .map_or(DEFAULT_READ_LIMIT_LINES, |l| l as usize)
            .clamp(1, MAX_READ_LIMIT_LINES);
        let dir = ctx.session().spill_dir();
        // The page is held to the session's budget so it is never cut and spilled again.
        let max_page_bytes = ctx.budget().max_bytes;
        let offset = p.offset.unwrap_or(1);
        let local = read_spilled_within(&dir, &p.output_id, offset, limit, max_page_bytes);
        let page = match (local, ctx.session().saved_outputs()) {
            // Saved by another process sharing the store (a replica of this server).
            (Err(SpillError::NotFound(_)), Some(saved)) => {
                saved
                    .page(&p.output_id, offset, limit, max_page_bytes)
                    .await?
            }
            (read, _) => read?,
        };
        let out = ReadOutputResult {
            output_id: p.output_id,
            first_line: page.first_line,
            last_line: page.last_line,
            total_lines: page.total_lines,
            total_bytes: page.total_bytes,
            next_offset: page.next_offset,
            cut_lines: page.cut_lines,
        };
        Ok(Reply::new(out, page.text)
            .stat(
                "lines",
                page.last_line.saturating_sub(page.first_line) + u64::from(page.first_line > 0),
            )
            .stat("total_lines", page.total_lines))
    }
}
