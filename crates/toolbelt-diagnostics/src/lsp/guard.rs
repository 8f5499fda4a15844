//! A guard between a server's stdout and async-lsp's framing, and the adapter
//! from tokio's writer to the `futures` one async-lsp takes.
//!
//! async-lsp reads header lines into an unbounded string and allocates a body of
//! the announced length before reading it. [`FrameGuard`] watches the bytes go
//! by and fails the stream (so the main loop ends and the server is
//! disconnected) as soon as they stop looking like LSP frames: a header line that
//! is not `Content-Length:` or `Content-Type:`, a header block over
//! [`MAX_HEADER_BYTES`], a length over [`MAX_BODY_BYTES`]. It never buffers more
//! than one header line and never allocates the announced length.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::ReadBuf;

/// The most a header block may take, its ending empty line included.
pub(crate) const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The largest body a server may announce.
pub(crate) const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

/// The header names a frame may carry (compared without case, with the colon).
const HEADER_NAMES: [&[u8]; 2] = [b"content-length:", b"content-type:"];

/// How a server's output broke the framing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum FramingError {
    /// A header line that is neither `Content-Length` nor `Content-Type`.
    #[error("not an LSP header line")]
    NotAHeader,
    /// The header block is longer than the limit.
    #[error("LSP header block longer than {limit} bytes")]
    HeaderTooLong {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A `Content-Length` that is not a number.
    #[error("invalid Content-Length")]
    BadLength,
    /// A `Content-Length` over the limit.
    #[error("Content-Length {length} over the limit of {limit} bytes")]
    BodyTooLong {
        /// The announced length.
        length: u64,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A header block without `Content-Length`.
    #[error("LSP header block without Content-Length")]
    MissingLength,
}

/// Where the framing is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Inside a header block.
    Header,
    /// Inside a body, with this many bytes left.
    Body(u64),
}

/// The framing state machine, fed with every byte read.
#[derive(Debug)]
pub(crate) struct Framing {
    mode: Mode,
    /// Bytes of the current header block so far.
    header_bytes: usize,
    /// The current header line so far (bounded by `MAX_HEADER_BYTES`).
    line: Vec<u8>,
    /// The length announced in the current header block.
    length: Option<u64>,
}

impl Default for Framing {
    fn default() -> Framing {
        Framing {
            mode: Mode::Header,
            header_bytes: 0,
            line: Vec::new(),
            length: None,
        }
    }
}

impl Framing {
    /// Checks the next bytes of the stream.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) -> Result<(), FramingError> {
        while !bytes.is_empty() {
            match self.mode {
                Mode::Body(left) => {
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(bytes.len());
                    bytes = &bytes[take..];
                    let left = left - take as u64;
                    self.mode = if left == 0 {
                        Mode::Header
                    } else {
                        Mode::Body(left)
                    };
                }
                Mode::Header => {
                    let (&byte, rest) = bytes.split_first().ok_or(FramingError::NotAHeader)?;
                    bytes = rest;
                    self.header_byte(byte)?;
                }
            }
        }
        Ok(())
    }

    /// One byte of a header block.
    fn header_byte(&mut self, byte: u8) -> Result<(), FramingError> {
        self.header_bytes += 1;
        if self.header_bytes > MAX_HEADER_BYTES {
            return Err(FramingError::HeaderTooLong {
                limit: MAX_HEADER_BYTES,
            });
        }
        if byte == b'\n' {
            return self.end_line();
        }
        self.line.push(byte);
        self.check_prefix()
    }

    /// Fails early when the line so far cannot become a known header.
    fn check_prefix(&self) -> Result<(), FramingError> {
        let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        let fits = HEADER_NAMES.iter().any(|name| {
            let n = line.len().min(name.len());
            line[..n].eq_ignore_ascii_case(&name[..n])
        });
        if fits {
            Ok(())
        } else {
            Err(FramingError::NotAHeader)
        }
    }

    /// A complete header line (or the empty line ending the block).
    fn end_line(&mut self) -> Result<(), FramingError> {
        let line = std::mem::take(&mut self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            return self.end_block();
        }
        let name = HEADER_NAMES
            .iter()
            .find(|name| line.len() >= name.len() && line[..name.len()].eq_ignore_ascii_case(name))
            .ok_or(FramingError::NotAHeader)?;
        if *name == HEADER_NAMES[0] {
            self.length = Some(parse_length(&line[name.len()..])?);
        }
        Ok(())
    }

    /// The empty line: the body follows.
    fn end_block(&mut self) -> Result<(), FramingError> {
        let length = self.length.take().ok_or(FramingError::MissingLength)?;
        self.header_bytes = 0;
        self.mode = if length == 0 {
            Mode::Header
        } else {
            Mode::Body(length)
        };
        Ok(())
    }
}

/// The value of a `Content-Length` header, within the limit.
fn parse_length(value: &[u8]) -> Result<u64, FramingError> {
    let value = value.trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(FramingError::BadLength);
    }
    let length = std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    if length > MAX_BODY_BYTES {
        return Err(FramingError::BodyTooLong {
            length,
            limit: MAX_BODY_BYTES,
        });
    }
    Ok(length)
}

/// A server's stdout as a `futures` reader that fails once the framing breaks.
#[derive(Debug)]
pub(crate) struct FrameGuard<R> {
    inner: R,
    framing: Framing,
    failed: Option<FramingError>,
}

impl<R> FrameGuard<R> {
    /// Guards `inner`.
    pub(crate) fn new(inner: R) -> FrameGuard<R> {
        FrameGuard {
            inner,
            framing: Framing::default(),
            failed: None,
        }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> futures::io::AsyncRead for FrameGuard<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(err) = &this.failed {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, err.clone())));
        }
        let mut read = ReadBuf::new(buf);
        ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
        let filled = read.filled();
        let n = filled.len();
        if let Err(err) = this.framing.feed(filled) {
            this.failed = Some(err.clone());
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, err)));
        }
        Poll::Ready(Ok(n))
    }
}

/// A tokio writer as a `futures` one.
#[derive(Debug)]
pub(crate) struct Writer<W>(pub(crate) W);

impl<W: tokio::io::AsyncWrite + Unpin> futures::io::AsyncWrite for Writer<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    #[test]
    fn frames_pass_whole_and_byte_by_byte() {
        let mut bytes = frame(r#"{"jsonrpc":"2.0"}"#);
        bytes.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n");
        bytes.extend(frame("{}"));
        assert_eq!(Framing::default().feed(&bytes), Ok(()));
        let mut framing = Framing::default();
        for b in &bytes {
            assert_eq!(framing.feed(std::slice::from_ref(b)), Ok(()));
        }
        assert_eq!(framing.mode, Mode::Header);
    }

    #[test]
    fn text_before_the_headers_is_refused_at_once() {
        assert_eq!(
            Framing::default().feed(b"hello\n"),
            Err(FramingError::NotAHeader)
        );
        // Without a newline too: "h" cannot start a header.
        assert_eq!(Framing::default().feed(b"h"), Err(FramingError::NotAHeader));
    }

    #[test]
    fn huge_length_is_refused_before_the_body() {
        assert_eq!(
            Framing::default().feed(b"Content-Length: 999999999999\r\n\r\n"),
            Err(FramingError::BodyTooLong {
                length: 999_999_999_999,
                limit: MAX_BODY_BYTES
            })
        );
        assert_eq!(
            Framing::default().feed(b"Content-Length: 99999999999999999999999999\r\n"),
            Err(FramingError::BodyTooLong {
                length: u64::MAX,
                limit: MAX_BODY_BYTES
            })
        );
    }

    #[test]
    fn endless_header_line_is_refused_at_the_limit() {
        let mut framing = Framing::default();
        let mut line = b"Content-Type: ".to_vec();
        line.resize(MAX_HEADER_BYTES, b'a');
        assert_eq!(framing.feed(&line), Ok(()));
        assert_eq!(
            framing.feed(b"a"),
            Err(FramingError::HeaderTooLong {
                limit: MAX_HEADER_BYTES
            })
        );
    }

    #[test]
    fn block_without_length_or_with_a_bad_one() {
        assert_eq!(
            Framing::default().feed(b"Content-Type: x\r\n\r\n"),
            Err(FramingError::MissingLength)
        );
        assert_eq!(
            Framing::default().feed(b"Content-Length: -3\r\n"),
            Err(FramingError::BadLength)
        );
    }

    #[tokio::test]
    async fn guard_fails_the_stream_and_stays_failed() {
        use futures::AsyncReadExt;
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut guard = FrameGuard::new(rx);
        tokio::io::AsyncWriteExt::write_all(&mut tx, b"hello\n")
            .await
            .unwrap();
        let mut buf = [0u8; 16];
        let err = guard.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(guard.read(&mut buf).await.is_err());
    }
}
