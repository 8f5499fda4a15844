use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents};
use serde_json::json;
use toolbelt_core::{ErrorCode, Status};

use super::to_envelope;

#[test]
fn every_block_kind_reaches_the_text_and_the_data() {
    let png = "iVBORw0KGgo="; // 8 bytes
    let mut result = CallToolResult::success(vec![
        ContentBlock::text("hello"),
        ContentBlock::image(png, "image/png"),
        ContentBlock::audio("AAAA", "audio/wav"),
        ContentBlock::embedded_text("file:///notes.txt", "the notes"),
        ContentBlock::resource(
            serde_json::from_value::<ResourceContents>(json!({
                "uri": "file:///a.bin", "mimeType": "application/octet-stream", "blob": "AAAAAAAA"
            }))
            .unwrap(),
        ),
        ContentBlock::resource_link(Resource::new("file:///big.log", "big.log")),
    ]);
    result.structured_content = Some(json!({"n": 1}));
    let env = to_envelope("srv", "t", result);
    assert_eq!(env.status, Status::Success);
    for part in [
        "hello",
        "[image: image/png, 8 B]",
        "[audio: audio/wav",
        "[resource file:///notes.txt (text/plain)]\nthe notes",
        "[resource file:///a.bin (application/octet-stream, 6 B); binary, not shown]",
        "[link: big.log <file:///big.log>]",
    ] {
        assert!(env.text.contains(part), "{part:?} not in {}", env.text);
    }
    assert_eq!(env.data["image"]["data"], png);
    assert_eq!(env.data["structured"]["n"], 1);
    assert_eq!(env.data["content"].as_array().map(Vec::len), Some(6));
    assert_eq!(env.data["server"], "srv");
}

#[test]
fn an_error_result_is_a_remote_error_and_structured_only_is_text() {
    let env = to_envelope(
        "srv",
        "t",
        CallToolResult::error(vec![ContentBlock::text("no such row")]),
    );
    assert_eq!(env.error_code(), Some(ErrorCode::RemoteError));
    assert!(env.text.contains("no such row"));

    let mut only = CallToolResult::success(vec![]);
    only.structured_content = Some(json!({"rows": [1, 2]}));
    let env = to_envelope("srv", "t", only);
    assert!(env.text.contains("\"rows\""), "{}", env.text);
}
