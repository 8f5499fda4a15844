//! [`FetchError`]: what can go wrong between a URL and its bytes.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::address::AddressClass;

/// Boxed source of a protocol error, so that the HTTP stack's own error type
/// does not become part of this crate's API.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Which time limit ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutKind {
    /// The whole fetch (every hop, headers and body) took longer than allowed.
    Total,
    /// No byte arrived from the server for longer than allowed.
    Idle,
    /// Opening the TCP connection took longer than allowed.
    Connect,
}

impl std::fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Total => "total",
            Self::Idle => "idle",
            Self::Connect => "connect",
        })
    }
}

/// Everything that can stop a URL from being checked or fetched.
///
/// HTTP error statuses (404, 500, ...) are not errors: they come back as data in
/// [`Fetched::status`](crate::fetch::Fetched::status). The variants split into
/// refusals by the guard ([`UnsupportedScheme`](Self::UnsupportedScheme),
/// [`Credentials`](Self::Credentials), [`Blocked`](Self::Blocked)), limits
/// ([`Timeout`](Self::Timeout), [`TooManyRedirects`](Self::TooManyRedirects),
/// [`RedirectLoop`](Self::RedirectLoop)) and network failures, each naming the host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The text is not a URL the guard can read.
    #[error("invalid URL {url:?}")]
    InvalidUrl {
        /// The text as given.
        url: String,
        /// What is wrong with it: the URL parser's error, or a sentence.
        #[source]
        source: BoxError,
    },
    /// The URL's scheme is not http or https.
    #[error(
        "{url}: the scheme {scheme:?} is refused; only http:// and https:// URLs can be fetched"
    )]
    UnsupportedScheme {
        /// The URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// The URL carries a user name or password.
    #[error("{url}: URLs with a user name or password are refused; remove the credentials")]
    Credentials {
        /// The URL, credentials removed.
        url: String,
    },
    /// The URL has no host to connect to.
    #[error("{url}: the URL has no host")]
    MissingHost {
        /// The URL.
        url: String,
    },
    /// The host is, or resolves to, an address the policy does not allow.
    #[error(
        "{host} is blocked: {addr} is a {class} address; only public internet addresses can be fetched"
    )]
    Blocked {
        /// The host as written in the URL.
        host: String,
        /// The first address that was refused.
        addr: IpAddr,
        /// Why it was refused.
        class: AddressClass,
    },
    /// The host name could not be resolved.
    #[error("could not resolve {host}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's error.
        #[source]
        source: io::Error,
    },
    /// The host name resolved to no address at all.
    #[error("{host} resolved to no address")]
    NoAddress {
        /// The host name.
        host: String,
    },
    /// No TCP connection could be opened (refused, unreachable, ...).
    #[error("could not connect to {host} ({addr})")]
    Connect {
        /// The host as written in the URL.
        host: String,
        /// The last address tried.
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The TLS handshake failed (bad certificate, not a TLS server, ...).
    #[error("TLS with {host} failed")]
    Tls {
        /// The host as written in the URL.
        host: String,
        /// The TLS error.
        #[source]
        source: io::Error,
    },
    /// A time limit ran out.
    #[error("{url}: {kind} timeout of {limit:?} reached (host {host})")]
    Timeout {
        /// The URL being fetched when time ran out.
        url: String,
        /// Its host.
        host: String,
        /// Which limit.
        kind: TimeoutKind,
        /// The limit.
        limit: Duration,
    },
    /// The server broke the HTTP protocol or closed the connection early.
    #[error("HTTP exchange with {host} failed")]
    Protocol {
        /// The host as written in the URL.
        host: String,
        /// The HTTP stack's error.
        #[source]
        source: BoxError,
    },
    /// The body could not be read or decompressed.
    #[error("{url}: reading the body failed")]
    Body {
        /// The URL.
        url: String,
        /// The read or decompression error.
        #[source]
        source: io::Error,
    },
    /// More redirects than allowed.
    #[error("{url}: more than {limit} redirects; fetch the last location yourself if it is right")]
    TooManyRedirects {
        /// The URL the last redirect pointed to.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// A redirect pointed back to a URL already visited.
    #[error("{url}: redirect loop (this URL was already visited in this fetch)")]
    RedirectLoop {
        /// The URL visited twice.
        url: String,
    },
    /// A redirect's `Location` could not be used.
    #[error("{url}: bad redirect to {location:?}")]
    BadRedirect {
        /// The URL that answered with the redirect.
        url: String,
        /// The `Location` header as sent.
        location: String,
        /// What is wrong with it: the URL parser's error, or a sentence.
        #[source]
        source: BoxError,
    },
    /// The configured proxy could not be used (refused the tunnel, closed the
    /// connection, answered garbage).
    #[error("proxy {proxy}")]
    Proxy {
        /// The proxy's `host:port`.
        proxy: String,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// The fetcher's configuration is unusable.
    #[error("invalid fetcher configuration")]
    Config {
        /// What is wrong: the setting and why, or the TLS setup's error.
        #[source]
        source: BoxError,
    },
}

impl From<crate::tls::TlsError> for FetchError {
    fn from(e: crate::tls::TlsError) -> Self {
        FetchError::Config {
            source: Box::new(e),
        }
    }
}

/// A setting of the fetcher that cannot be used: its name (and value), the
/// cause kept as the source.
#[derive(Debug, thiserror::Error)]
#[error("{setting}")]
pub(crate) struct BadSetting {
    /// The setting, as the message names it (`user agent "x"`, `proxy`).
    pub(crate) setting: String,
    /// Why it cannot be used.
    #[source]
    pub(crate) source: BoxError,
}

impl FetchError {
    /// [`FetchError::Config`] for `setting`, refused because of `source`.
    pub(crate) fn bad_setting(setting: String, source: impl Into<BoxError>) -> FetchError {
        FetchError::Config {
            source: Box::new(BadSetting {
                setting,
                source: source.into(),
            }),
        }
    }
}
