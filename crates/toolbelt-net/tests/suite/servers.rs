//! Real servers on 127.0.0.1 for the guard and fetch tests: axum apps, raw TCP
//! servers that misbehave on purpose, canaries that count connections, a resolver
//! that counts lookups and a recorder of connection attempts.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use toolbelt_net::fetch::FetcherBuilder;
use toolbelt_net::guard::{Policy, ResolveFuture, Resolver};

/// Every async test runs inside this limit.
pub const TEST_LIMIT: Duration = Duration::from_secs(15);

/// Runs `f` with [`TEST_LIMIT`].
pub async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(TEST_LIMIT, f)
        .await
        .expect("test took too long")
}

/// A task that stops when dropped.
pub struct Task(JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A server listening on 127.0.0.1.
pub struct Server {
    pub addr: SocketAddr,
    _task: Task,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

/// Serves an axum app on 127.0.0.1 with an OS-chosen port.
pub async fn serve(app: axum::Router) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    serve_on(listener, app)
}

/// Serves an axum app on a given listener.
pub fn serve_on(listener: TcpListener, app: axum::Router) -> Server {
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Server {
        addr,
        _task: Task(task),
    }
}

/// A raw TCP server: `handle` gets each accepted connection after its request head
/// was read.
pub async fn raw<F, Fut>(handle: F) -> Server
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = Arc::new(handle);
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let handle = handle.clone();
            tokio::spawn(async move {
                read_head(&mut stream).await;
                handle(stream).await;
            });
        }
    });
    Server {
        addr,
        _task: Task(task),
    }
}

async fn read_head(stream: &mut TcpStream) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
}

/// A listener that only counts the connections it accepts: nothing may ever reach it.
pub struct Canary {
    pub addr: SocketAddr,
    accepts: Arc<AtomicUsize>,
    _task: Task,
}

impl Canary {
    pub async fn bind(addr: &str) -> io::Result<Canary> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let accepts = Arc::new(AtomicUsize::new(0));
        let counter = accepts.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Ok(Canary {
            addr,
            accepts,
            _task: Task(task),
        })
    }

    pub async fn loopback() -> Canary {
        Self::bind("127.0.0.1:0").await.unwrap()
    }

    pub fn accepts(&self) -> usize {
        self.accepts.load(Ordering::SeqCst)
    }
}

/// Records every socket address the fetcher attempts a connection to.
#[derive(Clone, Default)]
pub struct Recorder {
    attempts: Arc<Mutex<Vec<SocketAddr>>>,
}

impl Recorder {
    pub fn observer(&self) -> impl Fn(SocketAddr) + Send + Sync + 'static {
        let attempts = self.attempts.clone();
        move |addr| attempts.lock().unwrap().push(addr)
    }

    pub fn attempts(&self) -> Vec<SocketAddr> {
        self.attempts.lock().unwrap().clone()
    }
}

/// A resolver that gives its `answers` in turn (the last one repeated) and counts
/// how often it is asked.
pub struct CountingResolver {
    answers: Vec<Vec<IpAddr>>,
    calls: AtomicUsize,
}

impl CountingResolver {
    pub fn new(answers: Vec<Vec<IpAddr>>) -> Arc<Self> {
        Arc::new(Self {
            answers,
            calls: AtomicUsize::new(0),
        })
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Resolver for CountingResolver {
    fn resolve<'a>(&'a self, _host: &'a str) -> ResolveFuture<'a> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = self
            .answers
            .get(n)
            .or(self.answers.last())
            .cloned()
            .unwrap_or_default();
        Box::pin(async move { Ok(answer) })
    }
}

/// A fetcher builder that may reach exactly `allowed` (plus public addresses),
/// records its connection attempts, and has short timeouts.
pub fn builder_allowing(allowed: &[SocketAddr], recorder: &Recorder) -> FetcherBuilder {
    let mut policy = Policy::new();
    for addr in allowed {
        policy = policy.allow_socket_addr(*addr);
    }
    FetcherBuilder::new()
        .policy(policy)
        .on_connect(recorder.observer())
        .total_timeout(Duration::from_secs(5))
        .idle_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2))
}

/// A small HTTP `CONNECT` proxy on 127.0.0.1 that records each request head and
/// either refuses (with `refuse`) or tunnels to the requested address.
pub struct ConnectProxy {
    pub addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    _task: Task,
}

impl ConnectProxy {
    pub async fn start(refuse: Option<&'static str>) -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let head = read_head_text(&mut client).await;
                    seen.lock().unwrap().push(head.clone());
                    if let Some(answer) = refuse {
                        let _ = client.write_all(answer.as_bytes()).await;
                        return;
                    }
                    let target = head
                        .lines()
                        .next()
                        .and_then(|l| l.split_whitespace().nth(1))
                        .unwrap_or("")
                        .to_owned();
                    match TcpStream::connect(&target).await {
                        Ok(mut upstream) => {
                            let ok = b"HTTP/1.1 200 Connection established\r\n\r\n";
                            if client.write_all(ok).await.is_ok() {
                                let _ =
                                    tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                            }
                        }
                        Err(_) => {
                            let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                        }
                    }
                });
            }
        });
        ConnectProxy {
            addr,
            heads,
            _task: Task(task),
        }
    }

    /// The request heads received, one string each.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// The `CONNECT` targets asked for.
    pub fn targets(&self) -> Vec<String> {
        self.heads()
            .iter()
            .filter_map(|h| {
                h.lines()
                    .next()?
                    .split_whitespace()
                    .nth(1)
                    .map(str::to_owned)
            })
            .collect()
    }
}

async fn read_head_text(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Serves an axum app over TLS on 127.0.0.1 with a fresh self-signed certificate
/// for `names` (DNS names or IP addresses); returns the server and the
/// certificate (DER) to trust.
pub async fn serve_tls(app: axum::Router, names: &[&str]) -> (Server, Vec<u8>) {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    use hyper_util::service::TowerToHyperService;
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let certified = rcgen::generate_simple_self_signed(names).unwrap();
    let cert_der = certified.cert.der().to_vec();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app))
                    .await;
            });
        }
    });
    (
        Server {
            addr,
            _task: Task(task),
        },
        cert_der,
    )
}
