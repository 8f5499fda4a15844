//! The HTTP server of `toolbelt serve` with the fixture tools that the official MCP
//! conformance suite calls by name (`test_simple_text`, `test_image_content`,
//! `test_error_handling`, `test_tool_with_progress`, `json_schema_2020_12_tool`)
//! registered beside the built-ins. Every fixture goes through the registry, the
//! envelope and the MCP adapter like any other tool.
//!
//! Loopback only and without a token, as the suite sends none:
//!
//! ```text
//! cargo run -p toolbelt-server --example conformance_server -- 127.0.0.1:8751 /tmp/root
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolbelt_core::{ErrorCode, Registry, Reply, Session, ToolContext, ToolError, ToolSpec};
use toolbelt_server::ServeConfig;

/// A 1x1 red PNG.
const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn register_fixtures(registry: &mut Registry) -> Result<(), Box<dyn std::error::Error>> {
    registry.register_fn(
        ToolSpec::new("test_simple_text", "Returns a fixed text.", no_arguments()),
        |_ctx: ToolContext, _args: Value| async {
            Ok(Reply::new(
                json!({}),
                "This is a simple text response for testing.",
            ))
        },
    )?;
    registry.register_fn(
        ToolSpec::new(
            "test_image_content",
            "Returns a 1x1 red PNG.",
            no_arguments(),
        ),
        |_ctx: ToolContext, _args: Value| async {
            Ok(Reply::new(
                json!({"image": {"mime_type": "image/png", "data": RED_PIXEL_PNG}}),
                "A 1x1 red pixel.",
            ))
        },
    )?;
    registry.register_fn(
        ToolSpec::new("test_error_handling", "Always fails.", no_arguments()),
        |_ctx: ToolContext, _args: Value| async {
            Err::<Reply<Value>, _>(ToolError::new(
                ErrorCode::Internal,
                "This tool intentionally returns an error for testing",
            ))
        },
    )?;
    registry.register_fn(
        ToolSpec::new(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100, 50 ms apart.",
            no_arguments(),
        ),
        |ctx: ToolContext, _args: Value| async move {
            for step in [0.0, 50.0, 100.0] {
                if step > 0.0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.progress(step, Some(100.0), None);
            }
            Ok(Reply::new(
                json!({}),
                "Progress reported: 0, 50, 100 of 100.",
            ))
        },
    )?;
    registry.register_fn(
        ToolSpec::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "type": "object",
                        "properties": {
                            "street": {"type": "string"},
                            "city": {"type": "string"}
                        }
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"}
                },
                "additionalProperties": false
            }),
        ),
        |_ctx: ToolContext, args: Value| async move { Ok(Reply::new(args, "Arguments accepted.")) },
    )?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let bind: SocketAddr = args
        .next()
        .ok_or("usage: conformance_server ADDR ROOT")?
        .parse()?;
    let root = PathBuf::from(args.next().ok_or("usage: conformance_server ADDR ROOT")?);
    let session = Session::new(&root).with_state_dir(root.join(".toolbelt"));
    let mut registry = Registry::new(session);
    toolbelt_tools::register_builtins(&mut registry)?;
    register_fixtures(&mut registry)?;
    let listener = toolbelt_server::http::bind(bind).await?;
    eprintln!(
        "conformance server listening on http://{}/mcp",
        listener.local_addr()?
    );
    toolbelt_server::http::serve_listener(
        listener,
        Arc::new(registry),
        ServeConfig::without_token(bind),
        toolbelt_server::http::shutdown_signal(),
    )
    .await?;
    Ok(())
}
