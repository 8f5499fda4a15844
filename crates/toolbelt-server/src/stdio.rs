//! Standard input and output for the stdio server, read and written without a
//! thread hop when they are pipes or sockets.
//!
//! tokio's `stdin()` and `stdout()` run every read and write on the blocking
//! thread pool: two thread switches per message each way, which is most of the
//! time a small call takes. When a stream is a pipe or a socket (what MCP clients
//! give a server they spawn), it is switched to non-blocking mode and driven by
//! the runtime's reactor instead. Other kinds (a terminal, a regular file) keep
//! tokio's blocking streams.
//!
//! Non-blocking mode belongs to the open file description, which a pipe shares
//! with no one else here; it is put back when the stream is dropped.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use rustix::fs::{FileType, OFlags};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// A readable end: standard input.
pub type Input = Box<dyn AsyncRead + Send + Unpin>;
/// A writable end: standard output.
pub type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// Standard input, on the reactor when it is a pipe or a socket.
///
/// Call from within a tokio runtime with I/O enabled.
#[must_use]
pub fn input() -> Input {
    let stdin = io::stdin();
    polled(
        stdin.as_fd(),
        |fd, flags| {
            pipe::Receiver::from_owned_fd(fd)
                .map(|inner| Box::new(Restoring { inner, flags }) as Input)
        },
        |inner, flags| Box::new(Restoring { inner, flags }),
    )
    .unwrap_or_else(|| Box::new(tokio::io::stdin()))
}

/// Standard output, on the reactor when it is a pipe or a socket.
///
/// Call from within a tokio runtime with I/O enabled.
#[must_use]
pub fn output() -> Output {
    let stdout = io::stdout();
    polled(
        stdout.as_fd(),
        |fd, flags| {
            pipe::Sender::from_owned_fd(fd)
                .map(|inner| Box::new(Restoring { inner, flags }) as Output)
        },
        |inner, flags| Box::new(Restoring { inner, flags }),
    )
    .unwrap_or_else(|| Box::new(tokio::io::stdout()))
}

/// A non-blocking duplicate of `fd` on the reactor: through `pipe` for a pipe,
/// through `socket` for a socket. `None` for other kinds (a terminal, a file), or
/// when the reactor refuses it.
fn polled<S>(
    fd: BorrowedFd<'_>,
    pipe: impl FnOnce(OwnedFd, OFlags) -> io::Result<S>,
    socket: impl FnOnce(UnixStream, OFlags) -> S,
) -> Option<S> {
    let kind = FileType::from_raw_mode(rustix::fs::fstat(fd).ok()?.st_mode);
    if !matches!(kind, FileType::Fifo | FileType::Socket) {
        return None;
    }
    let flags = rustix::fs::fcntl_getfl(fd).ok()?;
    let dup = rustix::io::fcntl_dupfd_cloexec(fd, 3).ok()?;
    let opened = if kind == FileType::Fifo {
        pipe(dup, flags)
    } else {
        nonblocking_socket(dup, flags).map(|stream| socket(stream, flags))
    };
    match opened {
        Ok(stream) => Some(stream),
        Err(e) => {
            tracing::debug!("cannot poll a standard stream, using a blocking one: {e}");
            let _ = rustix::fs::fcntl_setfl(fd, flags);
            None
        }
    }
}

/// The socket `fd` (with status `flags`), made non-blocking, on the reactor.
fn nonblocking_socket(fd: OwnedFd, flags: OFlags) -> io::Result<UnixStream> {
    rustix::fs::fcntl_setfl(&fd, flags | OFlags::NONBLOCK)?;
    UnixStream::from_std(std::os::unix::net::UnixStream::from(fd))
}

/// A polled stream that puts the descriptor's status flags back when dropped:
/// non-blocking mode belongs to the open file description, which the process
/// that gave it to us may use again after we exit.
struct Restoring<T: AsFd> {
    inner: T,
    flags: OFlags,
}

impl<T: AsFd> Drop for Restoring<T> {
    fn drop(&mut self) {
        let _ = rustix::fs::fcntl_setfl(self.inner.as_fd(), self.flags);
    }
}

impl<T: AsFd + AsyncRead + Unpin> AsyncRead for Restoring<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsFd + AsyncWrite + Unpin> AsyncWrite for Restoring<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
