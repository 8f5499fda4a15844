//! Reading a response body: decompressed while streaming, capped after
//! decompression.

use std::io;
use std::pin::Pin;
use std::time::Duration;

use async_compression::tokio::bufread::{BrotliDecoder, DeflateDecoder, GzipDecoder, ZlibDecoder};
use futures::TryStreamExt;
use http_body_util::BodyDataStream;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt};
use tokio_util::io::StreamReader;

use super::idle::is_idle_timeout;
use super::{READ_CHUNK_BYTES, timeout_error};
use crate::error::{FetchError, TimeoutKind};
use crate::guard::CheckedTarget;

pub(super) struct BodyRead {
    pub(super) bytes: Vec<u8>,
    pub(super) truncated: bool,
    pub(super) decompressed: bool,
}

pub(super) async fn read_body(
    body: hyper::body::Incoming,
    content_encoding: Option<&str>,
    cap: usize,
    content_length: Option<u64>,
    target: &CheckedTarget,
    idle: Duration,
) -> Result<BodyRead, FetchError> {
    read_capped(body, content_encoding, cap, content_length)
        .await
        .map_err(|e| {
            if is_idle_timeout(&e) {
                timeout_error(target.url(), TimeoutKind::Idle, idle)
            } else {
                FetchError::Body {
                    url: target.url().to_string(),
                    source: e,
                }
            }
        })
}

/// [`read_body`] before its errors name the URL.
async fn read_capped(
    body: hyper::body::Incoming,
    content_encoding: Option<&str>,
    cap: usize,
    content_length: Option<u64>,
) -> io::Result<BodyRead> {
    let stream = BodyDataStream::new(body).map_err(io::Error::other);
    let mut reader = StreamReader::new(stream);
    // The first bytes: an empty body needs no decoder (204, 304 and empty
    // answers often still name an encoding), and "deflate" is sent both as zlib
    // (the standard) and as raw deflate (old servers).
    let head = reader.fill_buf().await?;
    let empty = head.is_empty();
    let zlib = head.len() >= 2
        && head[0] & 0x0f == 8
        && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0;
    let encoding = content_encoding.map(|e| e.trim().to_ascii_lowercase());
    let (mut decoded, decompressed): (Pin<Box<dyn AsyncRead + Send>>, bool) =
        match encoding.as_deref() {
            _ if empty => (Box::pin(reader), false),
            Some("gzip" | "x-gzip") => {
                let mut d = GzipDecoder::new(reader);
                d.multiple_members(true);
                (Box::pin(d), true)
            }
            Some("deflate") if zlib => (Box::pin(ZlibDecoder::new(reader)), true),
            Some("deflate") => (Box::pin(DeflateDecoder::new(reader)), true),
            Some("br") => (Box::pin(BrotliDecoder::new(reader)), true),
            _ => (Box::pin(reader), false),
        };
    let hint = content_length
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(READ_CHUNK_BYTES)
        .min(cap)
        .min(1024 * 1024);
    let mut bytes = Vec::with_capacity(hint);
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    let mut truncated = false;
    loop {
        let n = decoded.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        let room = cap - bytes.len();
        if n > room {
            bytes.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Ok(BodyRead {
        bytes,
        truncated,
        decompressed,
    })
}
