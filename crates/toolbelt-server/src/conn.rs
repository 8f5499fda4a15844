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
//!   `/proc/net/tcp`), else an address.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

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

impl Client {
    /// The client of a connection from `peer` to `local`.
    pub(crate) fn of(peer: SocketAddr, local: SocketAddr) -> Client {
        if peer.ip().is_loopback()
            && let Some(uid) = socket_uid(peer, local)
        {
            return Client::Uid(uid);
        }
        Client::Ip(peer.ip())
    }
}

/// The uid owning the socket `peer` -> `local`, from `/proc/net/tcp` (or `tcp6`).
fn socket_uid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let (table, peer_hex, local_hex) = match (peer, local) {
        (SocketAddr::V4(p), SocketAddr::V4(l)) => ("/proc/net/tcp", hex_v4(p), hex_v4(l)),
        (SocketAddr::V6(p), SocketAddr::V6(l)) => ("/proc/net/tcp6", hex_v6(p), hex_v6(l)),
        _ => return None,
    };
    let text = std::fs::read_to_string(table).ok()?;
    text.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl, local_address, rem_address, st, tx:rx, tr:when, retrnsmt, uid
        (fields.get(1) == Some(&peer_hex.as_str()) && fields.get(2) == Some(&local_hex.as_str()))
            .then(|| fields.get(7)?.parse().ok())
            .flatten()
    })
}

/// An IPv4 socket address as `/proc/net/tcp` writes it: the address as a
/// native-endian word, the port, in hex.
fn hex_v4(addr: std::net::SocketAddrV4) -> String {
    format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(addr.ip().octets()),
        addr.port()
    )
}

/// An IPv6 socket address as `/proc/net/tcp6` writes it.
fn hex_v6(addr: std::net::SocketAddrV6) -> String {
    let words: String = addr
        .ip()
        .octets()
        .chunks(4)
        .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
        .collect();
    format!("{words}:{:04X}", addr.port())
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
}

/// One open connection.
pub(crate) struct Conn {
    id: u64,
    /// Who opened it.
    client: Client,
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
        })
    }

    pub(crate) fn deadlines(&self) -> Deadlines {
        self.deadlines
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until a connection of `client` just accepted may be served: at once
    /// under the cap and the client's share of it; else after closing the
    /// connection idle the longest (or only held back), of the client's own when
    /// it holds its share, or when one closes.
    pub(crate) async fn room(&self, client: Client) {
        loop {
            let closed = self.closed.notified();
            {
                let open = self.open();
                let own = open.values().filter(|c| c.client == client).count();
                if open.len() < self.max && own < self.per_client {
                    return;
                }
                let at_share = own >= self.per_client;
                if let Some(victim) = open
                    .values()
                    .filter(|c| c.is_idle() && (!at_share || c.client == client))
                    .min_by_key(|c| c.idle_since_ms.load(Ordering::Relaxed))
                {
                    tracing::debug!(target: "toolbelt::serve", id = victim.id, "closing an idle connection for a new one");
                    victim.close.cancel();
                }
            }
            closed.await;
        }
    }

    /// Registers a connection of `client` just accepted.
    pub(crate) fn accepted(self: &Arc<Self>, client: Client) -> Arc<Conn> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            client,
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
        if std::path::Path::new("/proc/net/tcp").exists() {
            assert_eq!(
                Client::of(peer, local),
                Client::Uid(rustix::process::getuid().as_raw())
            );
        }
        // Another address is its address.
        let far: SocketAddr = "192.0.2.7:4000".parse().expect("addr");
        assert_eq!(Client::of(far, local), Client::Ip(far.ip()));
    }

    #[test]
    fn proc_net_tcp_addresses_are_written_as_the_kernel_writes_them() {
        let v4: std::net::SocketAddrV4 = "127.0.0.1:35643".parse().expect("addr");
        if cfg!(target_endian = "little") {
            assert_eq!(hex_v4(v4), "0100007F:8B3B");
        }
    }
}
