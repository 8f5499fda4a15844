//! The open connections of `toolbelt serve`: deadlines from accept, and room for a
//! new client when the cap is reached.
//!
//! [`Connections`] knows every open connection and what it is doing
//! ([`Conn`]): how many of its requests are in flight (from the parsed headers
//! until the response body is sent or dropped), how many of those are only held
//! back (a wrong token's answer, delayed), and since when it has been idle.
//!
//! - A connection with nothing in flight is closed after [`FIRST_REQUEST_SECS`]
//!   without a first request (a socket opened and left silent) and after
//!   [`KEEP_ALIVE_IDLE_SECS`] between requests; a request's headers must come
//!   within that time too (hyper's own header timeout covers a slow trickle).
//! - A request body must arrive whole within [`BODY_READ_SECS`].
//! - At the cap, a new connection takes the place of the one idle the longest
//!   (or only held back): silent sockets or slow wrong-token senders cannot keep
//!   a client with the token out. When every connection is busy, the new one
//!   waits for a free slot.
//! - One client holds at most three quarters of the cap: past that, its new
//!   connection takes the place of its own connection idle the longest, or waits.
//!   A client is a user (by uid, for a connection over loopback on Linux, read from
//!   `/proc/net/tcp`, and only once that many connections are open), else an
//!   address.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use toolbelt_core::sync::lock;

use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Seconds a new connection has to send its first request's headers.
pub const FIRST_REQUEST_SECS: u64 = 10;
/// Seconds a connection may stay open with no request in flight.
pub const KEEP_ALIVE_IDLE_SECS: u64 = 60;
/// Seconds a request's body has to arrive, whole.
pub const BODY_READ_SECS: u64 = 30;

/// Milliseconds a read of the socket tables answers for the connections it holds.
/// A burst of connections is in the tables before the first of it is accepted: one
/// read serves them all, where a read per connection (the kernel walks its whole
/// table each time) made the accept loop the bottleneck under a flood.
const SOCKET_OWNERS_FRESH_MS: u64 = 1_000;

/// The deadlines of [`Connections`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadlines {
    pub first_request: Duration,
    pub keep_alive_idle: Duration,
    pub body_read: Duration,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines {
            first_request: Duration::from_secs(FIRST_REQUEST_SECS),
            keep_alive_idle: Duration::from_secs(KEEP_ALIVE_IDLE_SECS),
            body_read: Duration::from_secs(BODY_READ_SECS),
        }
    }
}

/// Who opened a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Client {
    /// A local user.
    Uid(u32),
    /// An address.
    Ip(IpAddr),
}

/// An endpoint as `/proc/net/tcp{,6}` writes it, as numbers: the address's words
/// (native-endian, as the kernel prints them) and the port.
type Endpoint = (u128, u16);

/// The owners of the sockets, read from `/proc/net/tcp` and `tcp6` at once:
/// `(client side, server side)` to the uid.
struct SocketOwners(HashMap<(Endpoint, Endpoint), u32>);

impl SocketOwners {
    /// The owners of the connections to `server` open now, from the tables
    /// (none where there are none, as off Linux). Only established sockets whose
    /// other end is `server` are kept.
    fn read(server: SocketAddr) -> SocketOwners {
        let table = if server.is_ipv6() {
            "/proc/net/tcp6"
        } else {
            "/proc/net/tcp"
        };
        let server = endpoint(server);
        let mut owners = HashMap::new();
        let Ok(text) = std::fs::read_to_string(table) else {
            return SocketOwners(owners);
        };
        for line in text.lines().skip(1) {
            // sl, local_address, rem_address, st, tx:rx, tr:when, retrnsmt, uid
            let mut fields = line.split_whitespace();
            let (Some(local), Some(remote), Some("01")) =
                (fields.nth(1), fields.next(), fields.next())
            else {
                continue;
            };
            if parse_endpoint(remote) != Some(server) {
                continue;
            }
            let uid = fields.nth(3).and_then(|u| u.parse::<u32>().ok());
            if let (Some(local), Some(uid)) = (parse_endpoint(local), uid) {
                owners.insert((local, server), uid);
            }
        }
        SocketOwners(owners)
    }

    /// Whether the tables hold the connection from `peer` to `local`.
    fn knows(&self, peer: SocketAddr, local: SocketAddr) -> bool {
        self.0.contains_key(&(endpoint(peer), endpoint(local)))
    }

    /// The client of a connection from `peer` to `local`: its user over
    /// loopback, when the tables say, else its address.
    fn client(&self, peer: SocketAddr, local: SocketAddr) -> Client {
        let uid = peer
            .ip()
            .is_loopback()
            .then(|| self.0.get(&(endpoint(peer), endpoint(local))))
            .flatten();
        match uid {
            Some(uid) => Client::Uid(*uid),
            None => Client::Ip(peer.ip()),
        }
    }
}

/// `addr` as [`SocketOwners`] keys it.
fn endpoint(addr: SocketAddr) -> Endpoint {
    let words = match addr.ip() {
        IpAddr::V4(ip) => u128::from(u32::from_ne_bytes(ip.octets())),
        IpAddr::V6(ip) => ip.octets().chunks(4).fold(0u128, |acc, w| {
            (acc << 32) | u128::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
        }),
    };
    (words, addr.port())
}

/// `ADDR:PORT` in the hex of `/proc/net/tcp{,6}`.
fn parse_endpoint(text: &str) -> Option<Endpoint> {
    let (addr, port) = text.split_once(':')?;
    Some((
        u128::from_str_radix(addr, 16).ok()?,
        u16::from_str_radix(port, 16).ok()?,
    ))
}

/// The open connections, up to a cap.
pub(crate) struct Connections {
    max: usize,
    /// The most one client holds.
    per_client: usize,
    deadlines: Deadlines,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    /// Told when a connection closes.
    closed: Notify,
    epoch: Instant,
    /// The last read of the socket tables, and when it was made.
    owners: Mutex<Option<(Instant, Arc<SocketOwners>)>>,
}

/// One open connection.
pub(crate) struct Conn {
    id: u64,
    /// The client's end.
    peer: SocketAddr,
    /// Ours.
    local: SocketAddr,
    /// Who opened it, once looked up.
    client: OnceLock<Client>,
    /// Requests in flight.
    in_flight: AtomicUsize,
    /// Of those, the ones only held back (a delayed wrong-token answer).
    held: AtomicUsize,
    /// Whether a request has started on it.
    served: AtomicUsize,
    /// Milliseconds after the epoch when it last became idle.
    idle_since_ms: AtomicU64,
    /// Closes the connection.
    close: CancellationToken,
    /// Told when a request ends.
    settled: Notify,
    epoch: Instant,
}

impl Connections {
    pub(crate) fn new(max: usize, deadlines: Deadlines) -> Arc<Connections> {
        Arc::new(Connections {
            max,
            per_client: (max - max / 4).max(1),
            deadlines,
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            closed: Notify::new(),
            epoch: Instant::now(),
            owners: Mutex::new(None),
        })
    }

    pub(crate) fn deadlines(&self) -> Deadlines {
        self.deadlines
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        lock(&self.open)
    }

    /// The socket tables as they know the connection from `peer` to `local`: the
    /// last read while it is fresh and holds that connection (or `peer` is not
    /// local, so that no table would), else a new read.
    fn owners(&self, peer: SocketAddr, local: SocketAddr) -> Arc<SocketOwners> {
        let mut last = lock(&self.owners);
        if let Some((at, owners)) = last.as_ref()
            && at.elapsed() < Duration::from_millis(SOCKET_OWNERS_FRESH_MS)
            && (owners.knows(peer, local) || !peer.ip().is_loopback())
        {
            return Arc::clone(owners);
        }
        let owners = Arc::new(SocketOwners::read(local));
        *last = Some((Instant::now(), Arc::clone(&owners)));
        owners
    }

    /// Waits until a connection of `client` just accepted may be served: at once
    /// under the cap and the client's share of it; else after closing the
    /// connection idle the longest (or only held back), of the client's own when
    /// it holds its share, or when one closes.
    ///
    /// Who the clients are is looked up (in the socket tables, read again only when
    /// they do not know this connection or are over a second old) only when so
    /// many connections are open that one client could hold its share.
    /// Returns the new connection's client when it was looked up.
    pub(crate) async fn room(&self, peer: SocketAddr, local: SocketAddr) -> Option<Client> {
        // Looked up once: while this waits, no other connection is accepted.
        let mut owners: Option<Arc<SocketOwners>> = None;
        loop {
            let closed = self.closed.notified();
            if self.open().len() < self.max.min(self.per_client) {
                return None;
            }
            let owners = owners.get_or_insert_with(|| self.owners(peer, local));
            let client = owners.client(peer, local);
            {
                let open = self.open();
                let mut own = 0;
                for conn in open.values() {
                    if *conn
                        .client
                        .get_or_init(|| owners.client(conn.peer, conn.local))
                        == client
                    {
                        own += 1;
                    }
                }
                if open.len() < self.max && own < self.per_client {
                    return Some(client);
                }
                let at_share = own >= self.per_client;
                if let Some(victim) = open
                    .values()
                    .filter(|c| c.is_idle() && (!at_share || c.client.get() == Some(&client)))
                    .min_by_key(|c| c.idle_since_ms.load(Ordering::Relaxed))
                {
                    tracing::debug!(target: "toolbelt::serve", id = victim.id, "closing an idle connection for a new one");
                    victim.close.cancel();
                }
            }
            closed.await;
        }
    }

    /// Registers a connection from `peer` to `local` just accepted (its client, when
    /// [`Connections::room`] looked it up).
    pub(crate) fn accepted(
        self: &Arc<Self>,
        peer: SocketAddr,
        local: SocketAddr,
        client: Option<Client>,
    ) -> Arc<Conn> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            peer,
            local,
            client: client.map_or_else(OnceLock::new, OnceLock::from),
            in_flight: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            served: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(ms_since(self.epoch)),
            close: CancellationToken::new(),
            settled: Notify::new(),
            epoch: self.epoch,
        });
        self.open().insert(id, Arc::clone(&conn));
        conn
    }

    /// Forgets a connection that closed.
    pub(crate) fn closed(&self, conn: &Conn) {
        self.open().remove(&conn.id);
        self.closed.notify_waiters();
    }

    /// Completes when `conn` is to be closed: evicted, or idle past its deadline.
    pub(crate) async fn expired(&self, conn: &Conn) {
        loop {
            let deadline = if conn.served.load(Ordering::Relaxed) == 0 {
                self.deadlines.first_request
            } else {
                self.deadlines.keep_alive_idle
            };
            let settled = conn.settled.notified();
            let wait = if conn.in_flight.load(Ordering::Acquire) > 0 {
                // Looked at again when a request ends.
                Duration::MAX
            } else {
                let idle_for = Duration::from_millis(
                    ms_since(self.epoch).saturating_sub(conn.idle_since_ms.load(Ordering::Relaxed)),
                );
                match deadline.checked_sub(idle_for) {
                    Some(left) if !left.is_zero() => left,
                    _ => return,
                }
            };
            tokio::select! {
                () = conn.close.cancelled() => return,
                () = settled => {}
                () = tokio::time::sleep(wait.min(Duration::from_secs(24 * 60 * 60))) => {}
            }
        }
    }
}

impl Conn {
    /// Idle, or only holding back answers.
    fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == self.held.load(Ordering::Acquire)
    }

    /// A request started: in flight until the guard is dropped (with the
    /// response's body).
    pub(crate) fn request(self: &Arc<Self>) -> InFlight {
        self.served.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(self))
    }

    /// Marks a request of this connection as only held back while the guard lives:
    /// the connection may be closed for a new one.
    pub(crate) fn hold(self: &Arc<Self>) -> Held {
        self.held.fetch_add(1, Ordering::AcqRel);
        Held(Arc::clone(self))
    }
}

/// The connection a request came on, in the request's extensions.
#[derive(Clone)]
pub(crate) struct Peer {
    /// The client's address.
    pub addr: SocketAddr,
    /// Its connection.
    pub conn: Arc<Conn>,
}

/// A request in flight on its connection.
pub(crate) struct InFlight(Arc<Conn>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let conn = &self.0;
        conn.idle_since_ms
            .store(ms_since(conn.epoch), Ordering::Relaxed);
        conn.in_flight.fetch_sub(1, Ordering::AcqRel);
        conn.settled.notify_waiters();
    }
}

/// A request only held back.
pub(crate) struct Held(Arc<Conn>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::AcqRel);
    }
}

fn ms_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A response body that keeps its request in flight until it is sent or dropped.
pub(crate) struct Tracked {
    inner: Body,
    _in_flight: InFlight,
}

impl Tracked {
    pub(crate) fn new(inner: Body, in_flight: InFlight) -> Tracked {
        Tracked {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A request body that fails once its deadline passes before it ended.
pub(crate) struct WithDeadline<B> {
    inner: B,
    deadline: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
}

impl<B> WithDeadline<B> {
    pub(crate) fn new(inner: B, limit: Duration) -> WithDeadline<B> {
        WithDeadline {
            inner,
            deadline: Box::pin(tokio::time::sleep(limit)),
            limit,
        }
    }
}

impl<B> HttpBody for WithDeadline<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            let limit = self.limit.as_secs();
            return Poll::Ready(Some(Err(Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the request body did not arrive within {limit} s"),
            )))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_client_is_its_user() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server_side, peer) = listener.accept().expect("accept");
        assert_eq!(peer, client.local_addr().expect("addr"));
        let local = server_side.local_addr().expect("addr");
        let owners = SocketOwners::read(local);
        if std::path::Path::new("/proc/net/tcp").exists() {
            assert_eq!(
                owners.client(peer, local),
                Client::Uid(rustix::process::getuid().as_raw())
            );
        }
        // Another address is its address.
        let far: SocketAddr = "192.0.2.7:4000".parse().expect("addr");
        assert_eq!(owners.client(far, local), Client::Ip(far.ip()));
    }

    #[test]
    fn proc_net_tcp_addresses_read_as_the_socket_addresses() {
        let v4: SocketAddr = "127.0.0.1:35643".parse().expect("addr");
        if cfg!(target_endian = "little") {
            assert_eq!(parse_endpoint("0100007F:8B3B"), Some(endpoint(v4)));
            let v6: SocketAddr = "[::1]:443".parse().expect("addr");
            assert_eq!(
                parse_endpoint("00000000000000000000000001000000:01BB"),
                Some(endpoint(v6))
            );
        }
        assert_eq!(parse_endpoint("nonsense"), None);
    }
}
