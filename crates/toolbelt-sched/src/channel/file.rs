//! The file channel: one JSON line per message, appended to a file.

use std::path::Path;

use serde_json::json;
use tokio::io::AsyncWriteExt as _;

use super::{Outgoing, SendError};

/// Appends `{id, channel, chat_id, content, reply_to, media, at}` as one line.
/// The line is written with one `write` call to a file opened for appending, so
/// lines of concurrent writers do not mix.
pub(crate) async fn append(
    path: &Path,
    channel: &str,
    message: &Outgoing,
) -> Result<(), SendError> {
    let media: Vec<_> = message
        .media
        .iter()
        .map(|m| json!({"name": m.name, "content_type": m.content_type, "bytes": base64_len(&m.data)}))
        .collect();
    let line = json!({
        "id": message.id,
        "channel": channel,
        "chat_id": message.chat_id,
        "content": message.content,
        "reply_to": message.reply_to,
        "media": media,
        "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    });
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    write_line(path, &bytes)
        .await
        .map_err(|e| SendError::Retry {
            detail: format!(
                "cannot append to {}: {}",
                path.display(),
                toolbelt_core::error_chain(&e)
            ),
            retry_after: None,
        })
}

/// Appends `line` to `path` with one `write`, creating the file and its
/// directory when missing.
async fn write_line(path: &Path, line: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await?;
    file.write_all(line).await?;
    file.flush().await
}

fn base64_len(data: &str) -> usize {
    (data.len() / 4 * 3).saturating_sub(data.chars().rev().take_while(|c| *c == '=').count())
}
