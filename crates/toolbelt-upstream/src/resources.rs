//! `mcp_resource`: the resources of the other servers, listed and read through one
//! tool.

use std::sync::{Arc, Weak};

use rmcp::model::{CallToolResult, ContentBlock, ReadResourceRequestParams};
use serde_json::{Value, json};
use toolbelt_core::{
    BoxFuture, Category, Envelope, ErrorCode, Hints, ToolContext, ToolError, ToolSpec,
};

use crate::connection::Server;
use crate::content::to_envelope;

/// The tool's name.
pub(crate) const NAME: &str = "mcp_resource";

/// Lists and reads the resources of the configured servers.
pub(crate) struct ResourceTool {
    servers: Vec<Weak<Server>>,
    spec: ToolSpec,
}

impl ResourceTool {
    pub(crate) fn new(servers: &[Arc<Server>]) -> ResourceTool {
        let names: Vec<&str> = servers.iter().map(|s| s.name()).collect();
        let description = format!(
            "List or read the resources (files, records, documents) of the other MCP servers: {}.\n\n\
             - `action`: `list` gives each resource's server, URI, name and type; `read` returns one resource's content.\n\
             - `server`: the server's name (for `list`, leave it out to list every server's).\n\
             - `uri`: the resource to read, as `list` gives it.",
            names.join(", ")
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["list", "read"], "description": "list or read"},
                "server": {"type": "string", "enum": names, "description": "The server's name."},
                "uri": {"type": "string", "description": "The resource to read (read only)."}
            },
            "required": ["action"],
            "additionalProperties": false
        });
        let spec = ToolSpec::new(NAME, description, schema)
            .title("MCP resources")
            .category(Category::Remote)
            .hints(Hints::read_only())
            .key_argument("uri")
            .own_timeout();
        ResourceTool {
            servers: servers.iter().map(Arc::downgrade).collect(),
            spec,
        }
    }

    fn servers(&self, only: Option<&str>) -> Result<Vec<Arc<Server>>, ToolError> {
        let all: Vec<Arc<Server>> = self.servers.iter().filter_map(Weak::upgrade).collect();
        match only {
            None => Ok(all),
            Some(name) => {
                let found: Vec<Arc<Server>> =
                    all.into_iter().filter(|s| s.name() == name).collect();
                if found.is_empty() {
                    return Err(ToolError::new(
                        ErrorCode::InvalidParams,
                        format!("there is no MCP server named {name:?}"),
                    ));
                }
                Ok(found)
            }
        }
    }

    async fn list(&self, only: Option<&str>) -> Result<Envelope, ToolError> {
        let mut lines = Vec::new();
        let mut found = Vec::new();
        let mut problems = Vec::new();
        for server in self.servers(only)? {
            let live = match server.live().await {
                Ok(live) => live,
                Err(e) => {
                    problems.push(e.into_envelope().text);
                    continue;
                }
            };
            let offers = live
                .peer()
                .peer_info()
                .is_some_and(|info| info.capabilities.resources.is_some());
            if !offers {
                continue;
            }
            match live.peer().list_all_resources().await {
                Ok(resources) => {
                    for r in resources {
                        let kind = r.mime_type.clone().unwrap_or_default();
                        let mut line = format!("{}: {} — {}", server.name(), r.uri, r.name);
                        if !kind.is_empty() {
                            line.push_str(&format!(" ({kind})"));
                        }
                        if let Some(d) = r.description.as_deref().filter(|d| !d.is_empty()) {
                            line.push_str(&format!(": {d}"));
                        }
                        lines.push(line);
                        found.push(json!({
                            "server": server.name(),
                            "uri": r.uri,
                            "name": r.name,
                            "mime_type": r.mime_type,
                            "description": r.description,
                        }));
                    }
                }
                Err(e) => problems.push(format!(
                    "the resources of MCP server {} cannot be listed: {e}",
                    server.name()
                )),
            }
        }
        let mut text = if lines.is_empty() {
            "No resources.".to_string()
        } else {
            lines.join("\n")
        };
        for p in &problems {
            text.push_str(&format!("\n{p}"));
        }
        let data = json!({"resources": found, "problems": problems});
        Ok(if problems.is_empty() {
            Envelope::success(data, text)
        } else {
            Envelope::partial(data, text)
        })
    }

    async fn read(&self, server: Option<&str>, uri: Option<&str>) -> Result<Envelope, ToolError> {
        let (Some(name), Some(uri)) = (server, uri) else {
            return Err(
                ToolError::new(ErrorCode::InvalidParams, "read needs `server` and `uri`")
                    .hint("call mcp_resource with action list to see them"),
            );
        };
        let server = self.servers(Some(name))?.remove(0);
        let live = server.live().await?;
        let result = live
            .peer()
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| {
                ToolError::new(
                    ErrorCode::RemoteError,
                    format!("MCP server {name} did not give {uri}: {e}"),
                )
            })?;
        let blocks = result
            .contents
            .into_iter()
            .map(ContentBlock::resource)
            .collect();
        Ok(to_envelope(name, NAME, CallToolResult::success(blocks)))
    }
}

impl toolbelt_core::Tool for ResourceTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, _ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            let server = args.get("server").and_then(Value::as_str);
            let uri = args.get("uri").and_then(Value::as_str);
            let outcome = match args.get("action").and_then(Value::as_str) {
                Some("read") => self.read(server, uri).await,
                _ => self.list(server).await,
            };
            outcome.unwrap_or_else(ToolError::into_envelope)
        })
    }
}
