//! A tool of another server, as the registry sees it.

use std::sync::Weak;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::ServiceError;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, Category, Envelope, ErrorCode, Hints, MAX_TOOL_NAME_LEN, ToolContext, ToolError,
    ToolSpec,
};

use super::{Server, unavailable};
use crate::config::ServerSpec;
use crate::content::to_envelope;

/// The longest description kept; some servers put whole manuals there.
const MAX_DESCRIPTION_CHARS: usize = 4_000;

/// A tool whose input schema is not an object schema: it cannot take arguments
/// the way every tool does, and is left out.
#[derive(Debug, thiserror::Error)]
#[error("its input schema has type {0}, not object")]
pub(crate) struct NotAnObjectSchema(Value);

/// A tool of another MCP server under its registry name (`server__tool`).
pub(crate) struct RemoteTool {
    server: Weak<Server>,
    server_name: String,
    /// The server's own name of the tool.
    remote_name: String,
    timeout: Duration,
    spec: ToolSpec,
}

impl RemoteTool {
    /// The tool `tool` of server `spec`, named `prefix` + its name.
    ///
    /// # Errors
    /// Why the tool cannot be offered (its schema is not an object schema).
    pub(crate) fn new(
        server: Weak<Server>,
        spec: &ServerSpec,
        prefix: &str,
        tool: &rmcp::model::Tool,
    ) -> Result<RemoteTool, NotAnObjectSchema> {
        let name = registry_name(prefix, &tool.name);
        let mut schema = Value::Object((*tool.input_schema).clone());
        match schema.get("type") {
            None => {
                schema["type"] = Value::String("object".into());
            }
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => return Err(NotAnObjectSchema(other.clone())),
        }
        let description = tool
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map_or_else(
                || format!("The tool {} of the MCP server {}.", tool.name, spec.name),
                |d| d.chars().take(MAX_DESCRIPTION_CHARS).collect(),
            );
        let annotations = tool.annotations.clone().unwrap_or_default();
        let title = tool
            .title
            .clone()
            .or(annotations.title.clone())
            .unwrap_or_else(|| tool.name.to_string());
        // The MCP defaults: not read-only, destructive, not idempotent, open world.
        let read_only = annotations.read_only_hint.unwrap_or(false);
        let hints = Hints {
            read_only,
            destructive: !read_only && annotations.destructive_hint.unwrap_or(true),
            idempotent: annotations.idempotent_hint.unwrap_or(read_only),
            open_world: annotations.open_world_hint.unwrap_or(true),
            concurrency_safe: read_only,
        };
        let spec_out = ToolSpec::new(name, description, schema)
            .title(format!("{title} ({})", spec.name))
            .category(Category::Remote)
            .permission(format!("mcp:{}", spec.name))
            .hints(hints)
            .own_timeout();
        Ok(RemoteTool {
            server,
            server_name: spec.name.clone(),
            remote_name: tool.name.to_string(),
            timeout: spec.tool_timeout,
            spec: spec_out,
        })
    }

    async fn run(&self, ctx: &ToolContext, args: Value) -> Result<Envelope, ToolError> {
        let server = self
            .server
            .upgrade()
            .ok_or_else(|| unavailable(&self.server_name, "it was shut down"))?;
        let live = server.live().await?;
        let mut params = CallToolRequestParams::new(self.remote_name.clone());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let call = live.peer().call_tool(params);
        // Dropping the call (time out, cancel) tells the server with
        // `notifications/cancelled`.
        let outcome = tokio::select! {
            r = call => r,
            () = tokio::time::sleep(self.timeout) => {
                return Err(ToolError::new(
                    ErrorCode::Timeout,
                    format!(
                        "{} did not finish within {} s; the MCP server {} was told to cancel it",
                        self.spec.name,
                        self.timeout.as_secs_f64(),
                        self.server_name
                    ),
                )
                .hint("try again with a smaller request, or raise tool_timeout in its [mcp_servers] entry"));
            }
            () = ctx.cancel_token().cancelled() => {
                return Err(ToolError::new(ErrorCode::Cancelled, "the call was cancelled"));
            }
        };
        match outcome {
            Ok(result) => Ok(to_envelope(&self.server_name, &self.remote_name, result)),
            Err(ServiceError::McpError(e)) => Err(ToolError::new(
                if e.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    ErrorCode::InvalidParams
                } else {
                    ErrorCode::RemoteError
                },
                format!(
                    "the MCP server {} refused the call: {}",
                    self.server_name, e.message
                ),
            )),
            Err(
                e @ (ServiceError::TransportClosed
                | ServiceError::TransportSend(_)
                | ServiceError::Cancelled { .. }),
            ) => Err(server
                .lost(
                    &live,
                    &format!("the connection ended during the call ({e})"),
                )
                .await),
            Err(e) => Err(ToolError::new(
                ErrorCode::RemoteError,
                format!("the call to MCP server {} failed: {e}", self.server_name),
            )),
        }
    }
}

impl toolbelt_core::Tool for RemoteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            match self.run(ctx, args).await {
                Ok(env) => env,
                Err(e) => e.into_envelope(),
            }
        })
    }
}

/// `prefix` + `tool`, with characters a registry name cannot hold replaced by `_`,
/// and cut to the longest name (ending in a short hash of the whole when cut).
pub(crate) fn registry_name(prefix: &str, tool: &str) -> String {
    let clean: String = format!("{prefix}{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_TOOL_NAME_LEN {
        return clean;
    }
    let hash = clean.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let tag = format!("_{:08x}", hash as u32);
    let keep = MAX_TOOL_NAME_LEN - tag.len();
    format!("{}{tag}", &clean[..keep])
}
