//! Unix domain stream sockets: `UnixListener` and `UnixStream`.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::task::{ready, Context, Poll};

use mio::Interest;

use crate::async_fd::AsyncFd;
use crate::net::impl_stream_io;
use crate::ready::Direction;

/// A Unix domain stream listener, registered with the reactor of the core that created it.
///
/// Binding creates the socket file; dropping the listener closes the socket but, as with std,
/// does not remove the file.
pub struct UnixListener {
    /// The non-blocking listening socket, registered for reading.
    io: AsyncFd<mio::net::UnixListener>,
}

impl UnixListener {
    /// Creates a listener bound to the socket file `path`.
    ///
    /// # Errors
    ///
    /// Binding failed (for instance `AddrInUse` if the file exists).
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        Ok(UnixListener::from_mio(mio::net::UnixListener::bind(path)?))
    }

    /// Takes over a listening std socket, setting it non-blocking; it registers with the core
    /// that first polls it.
    ///
    /// # Errors
    ///
    /// Making it non-blocking failed.
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(true)?;
        Ok(UnixListener::from_mio(mio::net::UnixListener::from_std(
            listener,
        )))
    }

    /// Wraps a non-blocking mio listener, for the core that first polls it.
    fn from_mio(listener: mio::net::UnixListener) -> Self {
        let io = AsyncFd::unbound(listener, Interest::READABLE, false);
        UnixListener { io }
    }

    /// Accepts a connection; the stream registers with the core that first polls it.
    ///
    /// # Errors
    ///
    /// As `accept4(2)`; the listener stays usable.
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// Polls for a connection; registers the task's waker when none is pending.
    ///
    /// # Errors
    ///
    /// As [`accept`](Self::accept).
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(UnixStream, SocketAddr)>> {
        let registration = self.io.registration();
        let (socket, addr) =
            ready!(registration.poll_io(cx, Direction::Read, || self.io.get_ref().accept()))?;
        registration.count_accept();
        Poll::Ready(Ok((UnixStream::from_mio(socket), addr)))
    }

    /// The address the listener is bound to.
    ///
    /// # Errors
    ///
    /// As `getsockname(2)`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr()
    }
}

impl AsFd for UnixListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsRawFd for UnixListener {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.io.get_ref().fmt(f)
    }
}

/// A Unix domain stream connection, driven by the core that polls it (see
/// `Registration`'s threads).
///
/// Implements futures-io's `AsyncRead` and `AsyncWrite`, also on `&UnixStream`.
/// [`poll_close`](futures_io::AsyncWrite::poll_close) shuts down the write side. Writes use
/// `MSG_NOSIGNAL`: a closed peer gives `BrokenPipe`, never `SIGPIPE`.
pub struct UnixStream {
    /// The non-blocking socket and its registration (read and write interest).
    pub(crate) io: AsyncFd<mio::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket file `path`.
    ///
    /// # Errors
    ///
    /// No runtime runs here, or the connect failed: `NotFound` without a socket file,
    /// `ConnectionRefused` without a listener on it, `WouldBlock` if its backlog is full.
    pub async fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        let stream = UnixStream::from_mio(mio::net::UnixStream::connect(path)?);
        // A Unix connect completes or fails at once, but wait for writability anyway, as for
        // TCP, and read the socket error it may have left.
        poll_fn(|cx| stream.io.registration().poll_write_ready(cx)).await?;
        match stream.io.get_ref().take_error()? {
            Some(e) => Err(e),
            None => Ok(stream),
        }
    }

    /// Creates a connected pair of streams; each registers with the core that first polls it.
    ///
    /// # Errors
    ///
    /// `socketpair(2)` failed.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((UnixStream::from_mio(a), UnixStream::from_mio(b)))
    }

    /// Takes over a connected std stream, setting it non-blocking; it registers with the core
    /// that first polls it.
    ///
    /// # Errors
    ///
    /// Making it non-blocking failed.
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        Ok(UnixStream::from_mio(mio::net::UnixStream::from_std(stream)))
    }

    /// Wraps a non-blocking mio stream, for the core that first polls it.
    fn from_mio(socket: mio::net::UnixStream) -> Self {
        let io = AsyncFd::unbound(socket, Interest::READABLE | Interest::WRITABLE, true);
        UnixStream { io }
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// As `getsockname(2)`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr()
    }

    /// The peer's address.
    ///
    /// # Errors
    ///
    /// As `getpeername(2)`.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().peer_addr()
    }

    /// Shuts down the read side, the write side or both at once, as `shutdown(2)` and std's
    /// `UnixStream::shutdown`. Not named `shutdown`, which would hide tokio's
    /// `AsyncWriteExt::shutdown()`, as on [`TcpStream`](crate::TcpStream).
    ///
    /// # Errors
    ///
    /// As `shutdown(2)`.
    pub fn shutdown_std(&self, how: Shutdown) -> io::Result<()> {
        self.io.get_ref().shutdown(how)
    }
}

impl_stream_io!(UnixStream);

impl AsFd for UnixStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsRawFd for UnixStream {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.io.get_ref().fmt(f)
    }
}
