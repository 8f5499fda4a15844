//! The SSRF guard: which URLs and addresses may be reached.
//!
//! - [`parse_url`] and [`check_url`] refuse everything but `http` and `https`,
//!   and URLs carrying credentials.
//! - [`classify`] sorts an [`IpAddr`] into an [`AddressClass`]; addresses that embed
//!   an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are classified by
//!   the embedded address.
//! - [`Policy`] says which classes and which exact socket addresses are allowed.
//! - [`Guard`] joins a policy and a [`Resolver`]: [`Guard::resolve`] resolves a name
//!   **once**, checks **every** address, and hands back a [`CheckedTarget`], the only
//!   value the fetcher connects to.
//!
//! Hosts are read the way a WHATWG URL parser reads them (`http://2130706433/`,
//! `http://0177.0.0.1/`, `http://0x7f.1/` and `http://127.1/` are all `127.0.0.1`),
//! and the decision is made on the parsed address, never on the string.
//!
//! ```
//! use toolbelt_net::guard::{classify, parse_url, AddressClass};
//!
//! let url = parse_url("http://0x7f.1/admin").unwrap();
//! assert_eq!(url.host_str(), Some("127.0.0.1"));
//! assert_eq!(classify("::ffff:169.254.169.254".parse().unwrap()), AddressClass::Metadata);
//! assert!(parse_url("file:///etc/passwd").is_err());
//! ```

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use url::{Host, Url};

pub use crate::address::{AddressClass, classify, classify_v4, classify_v6};
use crate::error::FetchError;

/// Which addresses may be reached. By default only public addresses.
///
/// # Security
///
/// The default refuses every non-public class.
/// [`allow_private_network`](Self::allow_private_network) opens loopback and
/// private networks for local use;
/// [`allow_socket_addr`](Self::allow_socket_addr) opens exactly one IP and port.
/// Cloud metadata, unspecified, multicast, broadcast and reserved addresses are
/// opened only by an exact [`allow_socket_addr`](Self::allow_socket_addr).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    allow_private_network: bool,
    allowed_socket_addrs: Vec<SocketAddr>,
}

impl Policy {
    /// The default policy: public addresses only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens loopback, private, link-local, unique-local and shared address space
    /// (see [`AddressClass::is_private_network`]). Off by default.
    ///
    /// # Security
    ///
    /// Lets a fetched URL (and every redirect) reach services on this machine and its
    /// networks. Only for a user fetching their own local services.
    #[must_use]
    pub fn allow_private_network(mut self, yes: bool) -> Self {
        self.allow_private_network = yes;
        self
    }

    /// Opens exactly this IP address and port, whatever its class.
    ///
    /// # Security
    ///
    /// The match is exact: `127.0.0.1:8080` does not open `127.0.0.1:8081`. An
    /// IPv4-mapped IPv6 address matches its IPv4 form.
    #[must_use]
    pub fn allow_socket_addr(mut self, addr: SocketAddr) -> Self {
        self.allowed_socket_addrs.push(canonical(addr));
        self
    }

    /// Whether private networks are open.
    pub fn allows_private_network(&self) -> bool {
        self.allow_private_network
    }

    /// Checks one socket address.
    ///
    /// # Errors
    ///
    /// The address's class when the policy refuses it.
    pub fn check(&self, addr: SocketAddr) -> Result<(), AddressClass> {
        let class = classify(addr.ip());
        if class.is_public()
            || (self.allow_private_network && class.is_private_network())
            || self.allowed_socket_addrs.contains(&canonical(addr))
        {
            Ok(())
        } else {
            Err(class)
        }
    }
}

fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// The future returned by [`Resolver::resolve`].
pub type ResolveFuture<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Turns a host name into addresses. Implement it to control resolution (tests,
/// a DNS-over-HTTPS client, a fixed table).
pub trait Resolver: Send + Sync {
    /// Resolves `host` (a domain name, never an IP literal) to its addresses.
    ///
    /// # Errors
    ///
    /// Whatever stops the lookup; it is reported as [`FetchError::Resolve`].
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a>;
}

/// The system resolver (`getaddrinfo` through [`tokio::net::lookup_host`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A table of names and their addresses; names not in the table fail to resolve.
/// Handy for tests and fixed deployments.
#[derive(Clone, Debug, Default)]
pub struct StaticResolver {
    table: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `host` (compared in lower case) with its addresses.
    #[must_use]
    pub fn with(mut self, host: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.table
            .insert(host.to_ascii_lowercase(), addrs.into_iter().collect());
        self
    }
}

impl Resolver for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a> {
        let found = self.table.get(&host.to_ascii_lowercase()).cloned();
        Box::pin(async move {
            found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"))
        })
    }
}

/// Parses `input` as a URL and applies [`check_url`].
///
/// # Errors
///
/// [`FetchError::InvalidUrl`] when it is not a URL, and whatever [`check_url`] refuses.
///
/// # Security
///
/// The host is normalised by the WHATWG parser (numeric IPv4 forms become dotted
/// quads, IPv6 is compressed); later checks use the parsed host, never `input`.
pub fn parse_url(input: &str) -> Result<Url, FetchError> {
    let url = Url::parse(input.trim()).map_err(|e| FetchError::InvalidUrl {
        url: input.to_owned(),
        source: Box::new(e),
    })?;
    check_url(&url)?;
    Ok(url)
}

/// The checks that need no resolution: scheme http or https, no credentials, a
/// host present.
///
/// # Errors
///
/// [`FetchError::UnsupportedScheme`], [`FetchError::Credentials`] or
/// [`FetchError::MissingHost`].
///
/// # Security
///
/// `file:`, `gopher:`, `data:`, `ftp:` and every other scheme are refused here;
/// addresses are checked by [`Guard::resolve`].
pub fn check_url(url: &Url) -> Result<(), FetchError> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(FetchError::UnsupportedScheme {
                url: without_credentials(url),
                scheme: other.to_owned(),
            });
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::Credentials {
            url: without_credentials(url),
        });
    }
    if url.host().is_none() {
        return Err(FetchError::MissingHost {
            url: url.to_string(),
        });
    }
    Ok(())
}

/// `url` as text, user name and password removed, for error messages.
fn without_credentials(url: &Url) -> String {
    let mut shown = url.clone();
    // Both calls fail only on URLs that cannot carry credentials at all; the
    // text is right either way.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// A URL whose host was resolved once and whose every address passed the policy.
/// Only [`Guard::resolve`] makes one, and the fetcher connects only to
/// [`CheckedTarget::addrs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedTarget {
    url: Url,
    host: Host<String>,
    addrs: Vec<SocketAddr>,
}

impl CheckedTarget {
    /// The URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The parsed host (a domain, or an IP literal).
    pub fn host(&self) -> &Host<String> {
        &self.host
    }

    /// The host as text, for messages (IPv6 in brackets).
    pub fn host_str(&self) -> String {
        self.host.to_string()
    }

    /// The checked addresses with the URL's port, in resolver order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }
}

/// A policy and a resolver: decides whether a URL may be fetched.
#[derive(Clone)]
pub struct Guard {
    policy: Policy,
    resolver: Arc<dyn Resolver>,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Default for Guard {
    fn default() -> Self {
        Self::new(Policy::default())
    }
}

impl Guard {
    /// A guard with the system resolver.
    pub fn new(policy: Policy) -> Self {
        Self::with_resolver(policy, Arc::new(SystemResolver))
    }

    /// A guard with its own resolver.
    pub fn with_resolver(policy: Policy, resolver: Arc<dyn Resolver>) -> Self {
        Self { policy, resolver }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The resolver.
    pub fn resolver(&self) -> &Arc<dyn Resolver> {
        &self.resolver
    }

    /// Checks `url` ([`check_url`]), resolves its host once (IP literals are not
    /// resolved) and checks every address.
    ///
    /// # Errors
    ///
    /// What [`check_url`] refuses; [`FetchError::Resolve`] or
    /// [`FetchError::NoAddress`] when the name does not resolve;
    /// [`FetchError::Blocked`] when **any** address is refused.
    ///
    /// # Security
    ///
    /// One resolution, all answers checked: a name that resolves to one public and
    /// one private address is blocked, since the connection could go to either.
    /// Connect only to the returned [`CheckedTarget::addrs`], never to a new lookup.
    pub async fn resolve(&self, url: &Url) -> Result<CheckedTarget, FetchError> {
        self.resolve_cached(url, &mut HashMap::new()).await
    }

    /// Like [`resolve`](Self::resolve), reusing and filling `cache` (domain to
    /// addresses), so that one fetch resolves each name at most once across its
    /// redirects.
    pub(crate) async fn resolve_cached(
        &self,
        url: &Url,
        cache: &mut HashMap<String, Vec<IpAddr>>,
    ) -> Result<CheckedTarget, FetchError> {
        check_url(url)?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| FetchError::InvalidUrl {
                url: url.to_string(),
                source: "no port".into(),
            })?;
        let host = match url.host() {
            Some(h) => h.to_owned(),
            None => {
                return Err(FetchError::MissingHost {
                    url: url.to_string(),
                });
            }
        };
        let ips = match &host {
            Host::Ipv4(ip) => vec![IpAddr::V4(*ip)],
            Host::Ipv6(ip) => vec![IpAddr::V6(*ip)],
            Host::Domain(name) => match cache.get(name) {
                Some(ips) => ips.clone(),
                None => {
                    let ips = self.resolve_name(name).await?;
                    cache.insert(name.clone(), ips.clone());
                    ips
                }
            },
        };
        let mut addrs: Vec<SocketAddr> = Vec::with_capacity(ips.len());
        for ip in ips {
            let addr = SocketAddr::new(ip, port);
            if let Err(class) = self.policy.check(addr) {
                return Err(FetchError::Blocked {
                    host: host.to_string(),
                    addr: ip,
                    class,
                });
            }
            if !addrs.contains(&addr) {
                addrs.push(addr);
            }
        }
        Ok(CheckedTarget {
            url: url.clone(),
            host,
            addrs,
        })
    }

    /// Resolves `name` with the resolver, unchecked.
    ///
    /// # Errors
    /// [`FetchError::Resolve`] naming the host when the resolver fails.
    pub(crate) async fn resolve_host(&self, name: &str) -> Result<Vec<IpAddr>, FetchError> {
        self.resolver
            .resolve(name)
            .await
            .map_err(|source| FetchError::Resolve {
                host: name.to_owned(),
                source,
            })
    }

    async fn resolve_name(&self, name: &str) -> Result<Vec<IpAddr>, FetchError> {
        // The WHATWG parser keeps a trailing dot; resolvers accept it.
        let ips = self.resolve_host(name).await?;
        if ips.is_empty() {
            return Err(FetchError::NoAddress {
                host: name.to_owned(),
            });
        }
        Ok(ips)
    }
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
