//! A server's tool result as one envelope: the text a model reads, and `data`
//! that keeps every content block (an image's bytes at `data.image`, where the
//! providers and the MCP server look for one).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value, json};
use toolbelt_core::human::human_bytes;
use toolbelt_core::{Envelope, ErrorCode};

/// The envelope of `result`, a call of `tool` on server `server`.
///
/// - text blocks are the text, joined by blank lines;
/// - the first image is kept whole at `data.image` (`mime_type`, base64 `data`)
///   and named in the text; further images, audio and binary resources are named
///   with their type and size;
/// - an embedded text resource is its text under a line naming its URI; a link
///   names its URI;
/// - `structuredContent` is `data.structured`, and the text when nothing else is;
/// - `isError` makes an error envelope (`REMOTE_ERROR`) whose message is the text.
pub fn to_envelope(server: &str, tool: &str, result: CallToolResult) -> Envelope {
    let mut parts: Vec<String> = Vec::new();
    let mut blocks: Vec<Value> = Vec::new();
    let mut image: Option<Value> = None;
    for block in result.content {
        match block {
            ContentBlock::Text(t) => {
                blocks.push(json!({"type": "text", "chars": t.text.chars().count()}));
                parts.push(t.text);
            }
            ContentBlock::Image(i) => {
                let bytes = decoded_len(&i.data);
                parts.push(format!("[image: {}, {}]", i.mime_type, human_bytes(bytes)));
                blocks.push(json!({"type": "image", "mime_type": i.mime_type, "bytes": bytes}));
                if image.is_none() {
                    image = Some(json!({"mime_type": i.mime_type, "data": i.data}));
                }
            }
            ContentBlock::Audio(a) => {
                let bytes = decoded_len(&a.data);
                parts.push(format!(
                    "[audio: {}, {}; not shown]",
                    a.mime_type,
                    human_bytes(bytes)
                ));
                blocks.push(json!({"type": "audio", "mime_type": a.mime_type, "bytes": bytes}));
            }
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => {
                    let kind = mime_type.as_deref().unwrap_or("text");
                    parts.push(format!("[resource {uri} ({kind})]\n{text}"));
                    blocks.push(json!({"type": "resource", "uri": uri, "mime_type": mime_type, "chars": text.chars().count()}));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let bytes = decoded_len(&blob);
                    let kind = mime_type.as_deref().unwrap_or("binary");
                    parts.push(format!(
                        "[resource {uri} ({kind}, {}); binary, not shown]",
                        human_bytes(bytes)
                    ));
                    blocks.push(json!({"type": "resource", "uri": uri, "mime_type": mime_type, "bytes": bytes}));
                }
                other => {
                    parts.push("[a resource of a kind toolbelt does not know]".into());
                    blocks.push(json!({"type": "resource", "unknown": serde_json::to_value(&other).unwrap_or(Value::Null)}));
                }
            },
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("[link: {} <{}>", link.name, link.uri);
                if let Some(d) = link.description.as_deref().filter(|d| !d.is_empty()) {
                    line.push_str(": ");
                    line.push_str(d);
                }
                line.push(']');
                parts.push(line);
                blocks.push(json!({"type": "resource_link", "uri": link.uri, "name": link.name, "mime_type": link.mime_type}));
            }
            other => {
                let kind = serde_json::to_value(&other)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_else(|| "unknown".into());
                parts.push(format!("[a {kind} block, not shown]"));
                blocks.push(json!({"type": kind}));
            }
        }
    }
    let structured = result.structured_content;
    if parts.is_empty()
        && let Some(value) = &structured
    {
        parts.push(serde_json::to_string_pretty(value).unwrap_or_default());
    }
    let text = parts.join("\n\n");
    if result.is_error == Some(true) {
        let message = if text.trim().is_empty() {
            format!("{tool} of MCP server {server} failed without saying why")
        } else {
            text
        };
        let mut env = Envelope::error(ErrorCode::RemoteError, message, None);
        env.data = json!({"server": server});
        return env;
    }
    let mut data = Map::new();
    data.insert("server".into(), Value::String(server.to_string()));
    data.insert("content".into(), Value::Array(blocks));
    if let Some(value) = structured {
        data.insert("structured".into(), value);
    }
    if let Some(image) = image {
        data.insert("image".into(), image);
    }
    let text = if text.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        text
    };
    Envelope::success(Value::Object(data), text)
}

/// The decoded size of base64 `data`, without decoding it.
fn decoded_len(data: &str) -> u64 {
    let trimmed = data.trim_end_matches('=');
    let len = trimmed.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    (len as u64) * 3 / 4
}

#[cfg(test)]
#[path = "content_tests.rs"]
mod tests;
