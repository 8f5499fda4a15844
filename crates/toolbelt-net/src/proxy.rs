//! An explicitly configured HTTP proxy, reached through `CONNECT` tunnels to
//! addresses the guard already checked.

use std::fmt;
use std::io;
use std::net::SocketAddr;

use base64::Engine as _;
use percent_encoding::percent_decode_str;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use url::{Host, Url};

use crate::error::FetchError;

/// The largest proxy answer head read before giving up.
const MAX_PROXY_HEAD_BYTES: usize = 16 * 1024;

/// An `http://host:port` proxy, with optional basic credentials.
#[derive(Clone)]
pub(crate) struct Proxy {
    host: Host<String>,
    port: u16,
    /// The `Proxy-Authorization` value (`Basic <base64>`, plain ASCII); never
    /// shown.
    authorization: Option<String>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credentials are never printed.
        f.debug_struct("Proxy")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("authorization", &self.authorization.is_some())
            .finish()
    }
}

/// Why a proxy URL is refused.
#[derive(Debug, thiserror::Error)]
enum BadProxy {
    /// Not a URL.
    #[error(transparent)]
    Url(#[from] url::ParseError),
    /// Not an `http://` URL.
    #[error("scheme {0:?} is not supported; use an http:// proxy")]
    Scheme(String),
    /// No host to connect to.
    #[error("no host")]
    NoHost,
}

impl From<BadProxy> for FetchError {
    fn from(e: BadProxy) -> Self {
        FetchError::bad_setting("proxy".to_owned(), e)
    }
}

impl Proxy {
    /// Parses `http://[user:password@]host[:port]`.
    ///
    /// # Errors
    /// [`FetchError::Config`] saying why the proxy URL is refused.
    pub(crate) fn parse(input: &str) -> Result<Self, FetchError> {
        Ok(Self::from_url(input)?)
    }

    /// [`parse`](Self::parse) before the error is a fetcher configuration error.
    fn from_url(input: &str) -> Result<Self, BadProxy> {
        let url = Url::parse(input.trim())?;
        if url.scheme() != "http" {
            return Err(BadProxy::Scheme(url.scheme().to_owned()));
        }
        let host = url.host().map(|h| h.to_owned()).ok_or(BadProxy::NoHost)?;
        let port = url.port_or_known_default().unwrap_or(80);
        let authorization = if url.username().is_empty() && url.password().is_none() {
            None
        } else {
            let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
            let user = decode(url.username());
            let password = decode(url.password().unwrap_or(""));
            let token =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            Some(format!("Basic {token}"))
        };
        Ok(Self {
            host,
            port,
            authorization,
        })
    }

    pub(crate) fn host(&self) -> &Host<String> {
        &self.host
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `host:port`, for messages.
    pub(crate) fn name(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Asks the proxy, on `stream`, for a tunnel to `target` (an IP address and
    /// port, never a name, so that the proxy does not resolve anything).
    ///
    /// The error is an `io::Error`: the stream's own (including the idle
    /// timeout) or `Other` with the proxy's refusal.
    pub(crate) async fn tunnel<S>(&self, stream: &mut S, target: SocketAddr) -> io::Result<()>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
        if let Some(auth) = &self.authorization {
            head.push_str("Proxy-Authorization: ");
            head.push_str(auth);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await?;
        stream.flush().await?;
        // Byte by byte: nothing after the head may be consumed, it belongs to
        // the tunnel.
        let mut answer = Vec::with_capacity(256);
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            if answer.len() >= MAX_PROXY_HEAD_BYTES {
                return Err(io::Error::other("the proxy's answer is too long"));
            }
            if stream.read(&mut byte).await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the proxy closed the connection",
                ));
            }
            answer.push(byte[0]);
        }
        let text = String::from_utf8_lossy(&answer);
        let status_line = text.lines().next().unwrap_or("");
        let status = status_line.split_whitespace().nth(1).unwrap_or("");
        if status.len() == 3 && status.starts_with('2') {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "the proxy refused the tunnel to {target}: {status_line}"
            )))
        }
    }
}
