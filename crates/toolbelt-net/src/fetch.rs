//! Fetching one URL behind the [guard](crate::guard).
//!
//! A [`Fetcher`] is built once with [`FetcherBuilder`] and is cheap to clone and
//! share. [`Fetcher::fetch`] follows redirects by hand, checking every hop, and
//! returns a [`Fetched`]: final URL, status, the headers that matter, the body
//! (decompressed and capped) and the redirect chain. HTTP error statuses are data,
//! not errors.
//!
//! Each hop is one fresh HTTP/1.1 connection (TLS with rustls and the webpki
//! roots for `https`), opened only to an address the guard checked:
//!
//! 1. the host is resolved once per fetch ([`Guard`] with the configured
//!    [`Resolver`]) and every address is checked against the [`Policy`];
//! 2. the socket is opened to one of those addresses, the observer set with
//!    [`FetcherBuilder::on_connect`] hearing about each attempt first;
//! 3. nothing else resolves: no proxy is read from the environment, an explicit
//!    proxy ([`FetcherBuilder::proxy`]) is asked for a tunnel to the checked IP
//!    address, and the HTTP stack is handed an already connected socket.
//!
//! ```no_run
//! # async fn run() -> Result<(), toolbelt_net::fetch::FetchError> {
//! use toolbelt_net::fetch::{FetchOptions, Fetcher};
//!
//! let fetcher = Fetcher::builder().build()?;
//! let page = fetcher.fetch("https://example.com/", &FetchOptions::default()).await?;
//! println!("{} {} bytes, truncated: {}", page.status, page.body.len(), page.truncated);
//! println!("{}", page.text());
//! # Ok(()) }
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    ACCEPT, ACCEPT_ENCODING, CONNECTION, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HOST,
    LOCATION, USER_AGENT,
};
use http::{HeaderValue, Method, Request};
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::Instant;
use url::{Host, Url};

use crate::charset::{self, Decoded};
use crate::error::BoxError;
pub use crate::error::{FetchError, TimeoutKind};
use crate::guard::{CheckedTarget, Guard, Policy, Resolver, SystemResolver, check_url, parse_url};
use crate::proxy::Proxy;
use crate::tls;

mod body;
mod headers;
mod idle;

use body::read_body;
use headers::RequestHeaders;
use idle::{IdleIo, Io, is_idle_timeout};

/// The `User-Agent` sent unless another is configured: it names the software
/// honestly instead of posing as a browser.
pub const DEFAULT_USER_AGENT: &str = concat!(
    "toolbelt/",
    env!("CARGO_PKG_VERSION"),
    " (+https://example.invalid/toolbelt)"
);
/// Default cap on the (decompressed) body: 5 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
/// Default limit on the whole fetch, every hop included.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest total timeout accepted; longer values are lowered to this.
pub const MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(120);
/// Default limit on silence: no byte from the server for this long stops the fetch.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default limit on opening one TCP connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default and largest number of redirects followed.
pub const MAX_REDIRECTS: usize = 5;
/// The `Accept` header sent unless the options give another.
pub const DEFAULT_ACCEPT: &str = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5";

const READ_CHUNK_BYTES: usize = 16 * 1024;

/// Called with every socket address a connection is about to be attempted to.
pub type ConnectObserver = Arc<dyn Fn(SocketAddr) + Send + Sync>;

/// Configuration for a [`Fetcher`].
#[derive(Clone)]
pub struct FetcherBuilder {
    user_agent: String,
    total_timeout: Duration,
    idle_timeout: Duration,
    connect_timeout: Duration,
    max_body_bytes: usize,
    max_redirects: usize,
    policy: Policy,
    resolver: Arc<dyn Resolver>,
    on_connect: Option<ConnectObserver>,
    proxy: Option<String>,
    extra_roots: Vec<Vec<u8>>,
}

impl fmt::Debug for FetcherBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetcherBuilder")
            .field("user_agent", &self.user_agent)
            .field("total_timeout", &self.total_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_redirects", &self.max_redirects)
            .field("policy", &self.policy)
            .field("proxy", &self.proxy.is_some())
            .field("extra_roots", &self.extra_roots.len())
            .finish_non_exhaustive()
    }
}

impl Default for FetcherBuilder {
    fn default() -> Self {
        Self {
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_redirects: MAX_REDIRECTS,
            policy: Policy::default(),
            resolver: Arc::new(SystemResolver),
            on_connect: None,
            proxy: None,
            extra_roots: Vec::new(),
        }
    }
}

impl FetcherBuilder {
    /// The defaults: public addresses only, system resolver, 5 MiB, 30 s, 5 redirects.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `User-Agent` header.
    #[must_use]
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// The limit on a whole fetch (lowered to [`MAX_TOTAL_TIMEOUT`]).
    #[must_use]
    pub fn total_timeout(mut self, timeout: Duration) -> Self {
        self.total_timeout = timeout.min(MAX_TOTAL_TIMEOUT);
        self
    }

    /// The limit on silence between two reads.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The limit on opening one TCP connection.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The cap on the decompressed body; the rest is dropped and
    /// [`Fetched::truncated`] set.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How many redirects to follow (at most [`MAX_REDIRECTS`]; 0 returns the
    /// redirect itself as an error).
    #[must_use]
    pub fn max_redirects(mut self, redirects: usize) -> Self {
        self.max_redirects = redirects.min(MAX_REDIRECTS);
        self
    }

    /// The address policy (public only by default).
    ///
    /// # Security
    ///
    /// See [`Policy`]: anything but the default lets fetched URLs and their
    /// redirects reach non-public addresses.
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Shorthand for `policy(policy.allow_private_network(yes))`.
    ///
    /// # Security
    ///
    /// See [`Policy::allow_private_network`].
    #[must_use]
    pub fn allow_private_network(mut self, yes: bool) -> Self {
        self.policy = self.policy.allow_private_network(yes);
        self
    }

    /// The resolver (the system's by default). It is asked once per host per fetch.
    #[must_use]
    pub fn resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Trusts this certificate authority (DER) in addition to the webpki roots,
    /// e.g. a company's own CA.
    ///
    /// # Security
    ///
    /// Whoever holds the CA's key can impersonate any `https` site to this fetcher.
    #[must_use]
    pub fn add_root_certificate(mut self, der: impl Into<Vec<u8>>) -> Self {
        self.extra_roots.push(der.into());
        self
    }

    /// Sends every request through this HTTP proxy
    /// (`http://[user:password@]host[:port]`). Without it no proxy is used: the
    /// `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` variables are never
    /// read.
    ///
    /// # Security
    ///
    /// The guard still resolves and checks every host here, then asks the proxy
    /// for a `CONNECT` tunnel to the checked **IP address** (never the name), for
    /// `http` and `https` alike, so the proxy resolves nothing and cannot be
    /// steered elsewhere by DNS. The proxy's own address is trusted as configured
    /// and is not checked by the policy. The proxy must allow `CONNECT` to the
    /// ports fetched (80 as well as 443).
    #[must_use]
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = Some(url.into());
        self
    }

    /// Calls `observer` with each socket address right before a connection is
    /// attempted to it (for logging and audits). Through a proxy, the observer
    /// hears the address the tunnel is asked for, not the proxy's.
    #[must_use]
    pub fn on_connect(mut self, observer: impl Fn(SocketAddr) + Send + Sync + 'static) -> Self {
        self.on_connect = Some(Arc::new(observer));
        self
    }

    /// Builds the fetcher (the TLS configuration is made here, once).
    ///
    /// # Errors
    ///
    /// [`FetchError::Config`] when the user agent is not a valid header value, the
    /// proxy URL is not an `http://` URL, a root certificate cannot be read, or
    /// TLS cannot be set up.
    pub fn build(self) -> Result<Fetcher, FetchError> {
        let user_agent = HeaderValue::from_str(&self.user_agent)
            .map_err(|e| FetchError::bad_setting(format!("user agent {:?}", self.user_agent), e))?;
        let tls = tls::client_config(&self.extra_roots, tls::ALPN_HTTP1)?;
        let proxy = self.proxy.as_deref().map(Proxy::parse).transpose()?;
        Ok(Fetcher {
            inner: Arc::new(Inner {
                guard: Guard::with_resolver(self.policy, self.resolver),
                tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
                user_agent,
                total_timeout: self.total_timeout,
                idle_timeout: self.idle_timeout,
                connect_timeout: self.connect_timeout,
                max_body_bytes: self.max_body_bytes,
                max_redirects: self.max_redirects,
                on_connect: self.on_connect,
                proxy,
            }),
        })
    }
}

/// Per-call settings for [`Fetcher::fetch`]; unset fields take the fetcher's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FetchOptions {
    /// Total time limit for this call (lowered to [`MAX_TOTAL_TIMEOUT`]).
    pub timeout: Option<Duration>,
    /// Body cap for this call; it can lower the fetcher's cap, never raise it.
    pub max_body_bytes: Option<usize>,
    /// The `Accept` header for this call.
    pub accept: Option<String>,
    /// Follow redirects only within the same host; a redirect to another host
    /// ends the fetch with the 3xx answer and
    /// [`Fetched::redirect_not_followed`], so the caller can decide (and tell a
    /// model where the page went). Off by default.
    pub same_host_redirects_only: bool,
    /// More request headers (an API key, say). They are sent to the first URL's
    /// host only, never after a redirect to another host.
    pub headers: Vec<(String, String)>,
}

impl FetchOptions {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`timeout`](Self::timeout).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets [`max_body_bytes`](Self::max_body_bytes).
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = Some(bytes);
        self
    }

    /// Sets [`accept`](Self::accept).
    #[must_use]
    pub fn accept(mut self, accept: impl Into<String>) -> Self {
        self.accept = Some(accept.into());
        self
    }

    /// Adds a request header (see [`headers`](Self::headers)).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets [`same_host_redirects_only`](Self::same_host_redirects_only).
    #[must_use]
    pub fn same_host_redirects_only(mut self, yes: bool) -> Self {
        self.same_host_redirects_only = yes;
        self
    }
}

/// One redirect that was followed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Redirect {
    /// The URL that answered with the redirect.
    pub from: Url,
    /// Where it pointed (relative locations resolved).
    pub to: Url,
    /// The redirect status (301, 302, 303, 307, 308).
    pub status: u16,
}

/// The outcome of a fetch that reached a server and read its answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fetched {
    /// The URL asked for.
    pub url: Url,
    /// The URL that gave the final answer (after redirects).
    pub final_url: Url,
    /// The HTTP status of the final answer (404 and 500 included).
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The `charset` parameter of `Content-Type`.
    pub charset: Option<String>,
    /// The `Content-Length` header (of the bytes on the wire).
    pub content_length: Option<u64>,
    /// The `Content-Encoding` header.
    pub content_encoding: Option<String>,
    /// Whether [`body`](Self::body) was decompressed (gzip, deflate, br). A body in
    /// an unknown encoding is kept as sent and this is false.
    pub decompressed: bool,
    /// The body, decompressed, at most the cap.
    pub body: Bytes,
    /// Whether the body was longer than the cap and cut.
    pub truncated: bool,
    /// The redirects followed, in order.
    pub redirects: Vec<Redirect>,
    /// Where the final answer redirects to when that redirect was not followed
    /// ([`FetchOptions::same_host_redirects_only`] and another host); the answer
    /// itself (status 3xx, its body) is in the other fields.
    pub redirect_not_followed: Option<Url>,
    /// Time from the call to the end of the body.
    pub elapsed: Duration,
}

impl Fetched {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The media type in lower case, without parameters (`text/html`).
    pub fn mime_type(&self) -> Option<String> {
        let ct = self.content_type.as_deref()?;
        let essence = ct.split(';').next().unwrap_or("").trim();
        (!essence.is_empty()).then(|| essence.to_ascii_lowercase())
    }

    /// The body decoded to UTF-8, with the encoding used and where it came from
    /// (see [`charset`]).
    pub fn decode(&self) -> Decoded {
        charset::decode(self.content_type.as_deref(), &self.body)
    }

    /// The body decoded to UTF-8.
    pub fn text(&self) -> String {
        self.decode().text
    }
}

/// Fetches URLs behind the guard. Cheap to clone; clones share configuration.
#[derive(Clone)]
pub struct Fetcher {
    inner: Arc<Inner>,
}

struct Inner {
    guard: Guard,
    tls: tokio_rustls::TlsConnector,
    user_agent: HeaderValue,
    total_timeout: Duration,
    idle_timeout: Duration,
    connect_timeout: Duration,
    max_body_bytes: usize,
    max_redirects: usize,
    on_connect: Option<ConnectObserver>,
    proxy: Option<Proxy>,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        f.debug_struct("Fetcher")
            .field("guard", &i.guard)
            .field("user_agent", &i.user_agent)
            .field("total_timeout", &i.total_timeout)
            .field("idle_timeout", &i.idle_timeout)
            .field("max_body_bytes", &i.max_body_bytes)
            .field("max_redirects", &i.max_redirects)
            .field("proxy", &i.proxy)
            .finish_non_exhaustive()
    }
}

/// The part of a fetch that is in progress, for reporting timeouts.
struct Progress {
    url: Url,
}

impl Fetcher {
    /// A builder with the defaults.
    pub fn builder() -> FetcherBuilder {
        FetcherBuilder::new()
    }

    /// The guard this fetcher checks every hop with.
    pub fn guard(&self) -> &Guard {
        &self.inner.guard
    }

    /// Fetches `url` with GET, following up to the configured number of redirects.
    ///
    /// # Errors
    ///
    /// Refusals by the guard ([`FetchError::UnsupportedScheme`],
    /// [`FetchError::Credentials`], [`FetchError::Blocked`], ...) on the URL or any
    /// redirect; [`FetchError::Resolve`], [`FetchError::Connect`],
    /// [`FetchError::Tls`], [`FetchError::Protocol`] and [`FetchError::Body`] on
    /// network failures; [`FetchError::Timeout`]; [`FetchError::TooManyRedirects`],
    /// [`FetchError::RedirectLoop`] and [`FetchError::BadRedirect`]. An HTTP error
    /// status is not an error.
    ///
    /// # Security
    ///
    /// `url` is untrusted. Every hop is checked (scheme, credentials, every address
    /// of its host) before any connection; each name is resolved once per fetch
    /// and the socket is opened only to the checked addresses; no proxy comes from
    /// the environment. The body is capped after decompression, so a compression
    /// bomb costs at most the cap.
    pub async fn fetch(&self, url: &str, options: &FetchOptions) -> Result<Fetched, FetchError> {
        let started = Instant::now();
        let url = parse_url(url)?;
        let total = options
            .timeout
            .unwrap_or(self.inner.total_timeout)
            .min(MAX_TOTAL_TIMEOUT);
        let mut progress = Progress { url: url.clone() };
        let run = self.run(url, options, started, &mut progress);
        match tokio::time::timeout(total, run).await {
            Ok(result) => result,
            Err(_) => Err(timeout_error(&progress.url, TimeoutKind::Total, total)),
        }
    }

    async fn run(
        &self,
        url: Url,
        options: &FetchOptions,
        started: Instant,
        progress: &mut Progress,
    ) -> Result<Fetched, FetchError> {
        let inner = &*self.inner;
        let RequestHeaders { accept, extra } = RequestHeaders::of(options)?;
        let first_host = url.host_str().map(str::to_owned);
        let cap = options
            .max_body_bytes
            .map_or(inner.max_body_bytes, |n| n.min(inner.max_body_bytes));
        let mut cache: HashMap<String, Vec<IpAddr>> = HashMap::new();
        let mut seen: HashSet<Url> = HashSet::new();
        let mut redirects: Vec<Redirect> = Vec::new();
        let mut current = url.clone();
        loop {
            progress.url = current.clone();
            seen.insert(without_fragment(&current));
            let target = inner.guard.resolve_cached(&current, &mut cache).await?;
            let same_host = current.host_str().map(str::to_owned) == first_host;
            let headers: &[(http::header::HeaderName, HeaderValue)] =
                if same_host { &extra } else { &[] };
            let exchange = self.exchange(&target, &accept, headers).await?;
            let status = exchange.response.status().as_u16();
            let mut not_followed: Option<Url> = None;
            if let Some(next) = redirect_target(&exchange.response, &current) {
                let mut next = next?;
                if next.fragment().is_none() && current.fragment().is_some() {
                    next.set_fragment(current.fragment());
                }
                check_url(&next)?;
                if options.same_host_redirects_only && next.host() != current.host() {
                    not_followed = Some(next);
                } else {
                    if seen.contains(&without_fragment(&next)) {
                        return Err(FetchError::RedirectLoop {
                            url: next.to_string(),
                        });
                    }
                    if redirects.len() >= inner.max_redirects {
                        return Err(FetchError::TooManyRedirects {
                            url: next.to_string(),
                            limit: inner.max_redirects,
                        });
                    }
                    drop(exchange);
                    redirects.push(Redirect {
                        from: current,
                        to: next.clone(),
                        status,
                    });
                    current = next;
                    continue;
                }
            }
            let (parts, body) = exchange.response.into_parts();
            let header = |name: http::header::HeaderName| {
                parts
                    .headers
                    .get(name)
                    .and_then(|v: &HeaderValue| v.to_str().ok())
                    .map(|v| v.trim().to_owned())
            };
            let content_type = header(CONTENT_TYPE);
            let content_encoding = header(CONTENT_ENCODING);
            let content_length = header(CONTENT_LENGTH).and_then(|v| v.parse::<u64>().ok());
            let charset = content_type
                .as_deref()
                .and_then(charset::charset_param)
                .map(str::to_owned);
            let read = read_body(
                body,
                content_encoding.as_deref(),
                cap,
                content_length,
                &target,
                inner.idle_timeout,
            )
            .await?;
            drop(exchange.connection);
            return Ok(Fetched {
                url,
                final_url: current,
                status,
                content_type,
                charset,
                content_length,
                content_encoding,
                decompressed: read.decompressed,
                body: Bytes::from(read.bytes),
                truncated: read.truncated,
                redirects,
                redirect_not_followed: not_followed,
                elapsed: started.elapsed(),
            });
        }
    }

    /// Connects to a checked address, speaks TLS if needed, sends the request and
    /// reads the response head.
    async fn exchange(
        &self,
        target: &CheckedTarget,
        accept: &HeaderValue,
        headers: &[(http::header::HeaderName, HeaderValue)],
    ) -> Result<Exchange, FetchError> {
        let inner = &*self.inner;
        let host = target.host_str();
        let tcp = match &inner.proxy {
            None => IdleIo::new(self.connect(target).await?, inner.idle_timeout),
            Some(proxy) => self.connect_through(proxy, target).await?,
        };
        let io: Box<dyn Io> = if target.url().scheme() == "https" {
            let name = match target.host() {
                Host::Domain(d) => ServerName::try_from(d.trim_end_matches('.').to_owned())
                    .map_err(|e| FetchError::Tls {
                        host: host.clone(),
                        source: io::Error::new(io::ErrorKind::InvalidInput, e),
                    })?,
                Host::Ipv4(ip) => ServerName::from(IpAddr::V4(*ip)),
                Host::Ipv6(ip) => ServerName::from(IpAddr::V6(*ip)),
            };
            let tls = inner.tls.connect(name, tcp).await.map_err(|source| {
                if is_idle_timeout(&source) {
                    timeout_error(target.url(), TimeoutKind::Idle, inner.idle_timeout)
                } else {
                    FetchError::Tls {
                        host: host.clone(),
                        source,
                    }
                }
            })?;
            Box::new(tls)
        } else {
            Box::new(tcp)
        };
        let url = target.url();
        let mut path = url.path().to_owned();
        if let Some(query) = url.query() {
            path.push('?');
            path.push_str(query);
        }
        let host_header = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        let mut request = Request::builder();
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request
            .method(Method::GET)
            .uri(path)
            .header(HOST, host_header)
            .header(USER_AGENT, inner.user_agent.clone())
            .header(ACCEPT, accept.clone())
            .header(ACCEPT_ENCODING, "gzip, deflate, br")
            .header(CONNECTION, "close")
            .body(Empty::<Bytes>::new())
            .map_err(|e| FetchError::InvalidUrl {
                url: url.to_string(),
                source: Box::new(e),
            })?;
        let (response, connection) = http1(io, request)
            .await
            .map_err(|e| self.hyper_error(target, e))?;
        Ok(Exchange {
            response,
            connection,
        })
    }

    /// Opens a TCP connection to one of the target's checked addresses, in order.
    /// With no proxy, this is the only place a socket is opened.
    async fn connect(&self, target: &CheckedTarget) -> Result<TcpStream, FetchError> {
        let inner = &*self.inner;
        let mut last: Option<(SocketAddr, io::Error)> = None;
        for &addr in target.addrs() {
            if let Some(observer) = &inner.on_connect {
                observer(addr);
            }
            match self.open(addr).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some((addr, e)),
            }
        }
        Err(self.connect_error(target.url(), &target.host_str(), last))
    }

    /// Opens a tunnel through the proxy to one of the target's checked addresses.
    async fn connect_through(
        &self,
        proxy: &Proxy,
        target: &CheckedTarget,
    ) -> Result<IdleIo<TcpStream>, FetchError> {
        let inner = &*self.inner;
        let proxy_ips: Vec<IpAddr> = match proxy.host() {
            Host::Ipv4(ip) => vec![IpAddr::V4(*ip)],
            Host::Ipv6(ip) => vec![IpAddr::V6(*ip)],
            Host::Domain(name) => inner.guard.resolve_host(name).await?,
        };
        let mut last_refusal: Option<FetchError> = None;
        for &addr in target.addrs() {
            if let Some(observer) = &inner.on_connect {
                observer(addr);
            }
            let mut stream = None;
            let mut last: Option<(SocketAddr, io::Error)> = None;
            for &ip in &proxy_ips {
                let proxy_addr = SocketAddr::new(ip, proxy.port());
                match self.open(proxy_addr).await {
                    Ok(s) => {
                        stream = Some(s);
                        break;
                    }
                    Err(e) => last = Some((proxy_addr, e)),
                }
            }
            let Some(stream) = stream else {
                return Err(self.connect_error(target.url(), &proxy.name(), last));
            };
            let mut io = IdleIo::new(stream, inner.idle_timeout);
            match proxy.tunnel(&mut io, addr).await {
                Ok(()) => return Ok(io),
                Err(e) if is_idle_timeout(&e) => {
                    return Err(timeout_error(
                        target.url(),
                        TimeoutKind::Idle,
                        inner.idle_timeout,
                    ));
                }
                Err(e) => {
                    last_refusal = Some(FetchError::Proxy {
                        proxy: proxy.name(),
                        source: e,
                    });
                }
            }
        }
        Err(last_refusal.unwrap_or_else(|| FetchError::NoAddress {
            host: target.host_str(),
        }))
    }

    /// Opens one TCP connection within the connect timeout.
    async fn open(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        match tokio::time::timeout(self.inner.connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                Ok(stream)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out")),
        }
    }

    fn connect_error(
        &self,
        url: &Url,
        host: &str,
        last: Option<(SocketAddr, io::Error)>,
    ) -> FetchError {
        match last {
            Some((_, e)) if e.kind() == io::ErrorKind::TimedOut => {
                timeout_error(url, TimeoutKind::Connect, self.inner.connect_timeout)
            }
            Some((addr, source)) => FetchError::Connect {
                host: host.to_owned(),
                addr,
                source,
            },
            None => FetchError::NoAddress {
                host: host.to_owned(),
            },
        }
    }

    fn hyper_error(&self, target: &CheckedTarget, e: hyper::Error) -> FetchError {
        if is_idle_timeout(&e) {
            timeout_error(target.url(), TimeoutKind::Idle, self.inner.idle_timeout)
        } else {
            FetchError::Protocol {
                host: target.host_str(),
                source: Box::new(e),
            }
        }
    }
}

fn timeout_error(url: &Url, kind: TimeoutKind, limit: Duration) -> FetchError {
    FetchError::Timeout {
        url: url.to_string(),
        host: url.host_str().unwrap_or_default().to_owned(),
        kind,
        limit,
    }
}

fn without_fragment(url: &Url) -> Url {
    let mut url = url.clone();
    url.set_fragment(None);
    url
}

/// The `Location` of a redirect response: `None` when the response is not a
/// followable redirect, `Some(Err(raw))` when the header is not text.
/// Where a redirect from `current` points: `None` when `response` is no
/// redirect or has no `Location`, an error when the location is not text or not
/// a URL reference.
fn redirect_target<B>(
    response: &http::Response<B>,
    current: &Url,
) -> Option<Result<Url, FetchError>> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let value = response.headers().get(LOCATION)?;
    let bad = |location: String, source: BoxError| FetchError::BadRedirect {
        url: current.to_string(),
        location,
        source,
    };
    Some(match value.to_str() {
        Ok(s) => {
            let location = s.trim();
            current
                .join(location)
                .map_err(|e| bad(location.to_owned(), Box::new(e)))
        }
        Err(_) => Err(bad(
            String::from_utf8_lossy(value.as_bytes()).into_owned(),
            "the Location header is not valid text".into(),
        )),
    })
}

struct Exchange {
    response: http::Response<hyper::body::Incoming>,
    connection: AbortOnDrop,
}

/// One HTTP/1.1 exchange on `io`: the handshake, then `request`. The connection
/// is driven by a task that stops when the returned guard is dropped.
async fn http1(
    io: Box<dyn Io>,
    request: Request<Empty<Bytes>>,
) -> Result<(http::Response<hyper::body::Incoming>, AbortOnDrop), hyper::Error> {
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    let connection = AbortOnDrop(tokio::spawn(async move {
        let _ = conn.await;
    }));
    let response = sender.send_request(request).await?;
    Ok((response, connection))
}

/// Stops the connection task when the fetch is done or dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
