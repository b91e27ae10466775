//! `TcpStream`: a connected TCP socket.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use mio::Interest;

use crate::async_fd::AsyncFd;
use crate::net::addr::{resolve, ToSocketAddrs};
use crate::net::impl_stream_io;
use crate::net::tcp_split::{OwnedReadHalf, OwnedWriteHalf};
use crate::reactor::Reactor;
use crate::ready::Direction;
use crate::sys;

/// A TCP connection, registered with the reactor of the core that created it.
///
/// Implements futures-io's `AsyncRead` and `AsyncWrite`, also on `&TcpStream`, so one task can
/// read while another writes (or use [`into_split`](Self::into_split)).
/// [`poll_close`](futures_io::AsyncWrite::poll_close) shuts down the write side. Writes use
/// `MSG_NOSIGNAL`: a reset peer gives `BrokenPipe` or `ConnectionReset`, never `SIGPIPE`.
/// Dropping the stream deregisters and closes it.
///
/// It is `Send` and `Sync`, and driven by the core that polls it: polled on another core than
/// the one it is registered with, it moves there (each direction on its own, so a read half and
/// a write half may wait on two cores); used where no core runs, or after its runtime stopped,
/// it returns an error. Dropped on another thread it is closed and leaves the epoll set at
/// once, and the reactor frees its slot at its next poll.
///
/// # Examples
///
/// A client and a server in a tickless runtime: see `tickless::net`, which re-exports this
/// type.
pub struct TcpStream {
    /// The non-blocking socket and its registration (read and write interest).
    pub(crate) io: AsyncFd<mio::net::TcpStream>,
}

impl TcpStream {
    /// Connects to `addr`, trying each address it stands for in turn.
    ///
    /// `addr` is a [`ToSocketAddrs`]: a `SocketAddr`, an `(IpAddr, u16)`, a `"host:port"`
    /// string or a `(host, port)` pair. A host name is looked up by the reactor's
    /// [resolver](Reactor::set_resolver): in a tickless runtime, on its blocking pool, so the
    /// core keeps running meanwhile.
    ///
    /// # Errors
    ///
    /// No reactor is current; the address did not resolve; or the last connect failed, for
    /// instance with `ConnectionRefused` when nothing listens on the port.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let resolver = Reactor::with_current(Reactor::resolver)?;
        let mut last = None;
        for addr in resolve(&addr, resolver).await? {
            match TcpStream::connect_addr(addr).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(sys::no_addresses))
    }

    /// Starts a non-blocking connect and waits for it to complete.
    async fn connect_addr(addr: SocketAddr) -> io::Result<TcpStream> {
        let stream = TcpStream::from_mio(mio::net::TcpStream::connect(addr)?);
        poll_fn(|cx| stream.poll_connected(cx)).await?;
        Ok(stream)
    }

    /// Ready once the connect started by `connect_addr` has completed or failed.
    ///
    /// As mio documents: wait for writability, then `SO_ERROR` says whether it failed, and a
    /// peer address says it succeeded; without either the wakeup was spurious.
    fn poll_connected(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            let event = ready!(self.io.registration().poll_write_ready(cx))?;
            let socket = self.io.get_ref();
            if let Some(e) = socket.take_error()? {
                return Poll::Ready(Err(e));
            }
            match socket.peer_addr() {
                Ok(_) => return Poll::Ready(Ok(())),
                Err(e)
                    if e.kind() == io::ErrorKind::NotConnected
                        || e.raw_os_error() == Some(libc::ENOTCONN) =>
                {
                    self.io.registration().clear_would_block(event);
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Takes over a connected std stream, setting it non-blocking; it registers with the core
    /// that first polls it.
    ///
    /// # Errors
    ///
    /// Making it non-blocking failed.
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        Ok(TcpStream::from_mio(mio::net::TcpStream::from_std(stream)))
    }

    /// Wraps a non-blocking mio stream, for the core that first polls it.
    pub(crate) fn from_mio(socket: mio::net::TcpStream) -> TcpStream {
        let io = AsyncFd::unbound(socket, Interest::READABLE | Interest::WRITABLE, true);
        TcpStream { io }
    }

    /// The local address of the connection.
    ///
    /// # Errors
    ///
    /// As `getsockname(2)`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr()
    }

    /// The remote address of the connection.
    ///
    /// # Errors
    ///
    /// As `getpeername(2)`; `NotConnected` once the connection is gone.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().peer_addr()
    }

    /// Sets `TCP_NODELAY` (disables Nagle's algorithm when true).
    ///
    /// # Errors
    ///
    /// As `setsockopt(2)`.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.io.get_ref().set_nodelay(nodelay)
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// # Errors
    ///
    /// As `getsockopt(2)`.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.get_ref().nodelay()
    }

    /// Sets `SO_LINGER`, as tokio's `set_linger`: `None` (the default) lets `close` return at
    /// once; `Some(d)` makes dropping the stream wait up to `d` (whole seconds) for unsent data,
    /// blocking the core meanwhile; `Some(Duration::ZERO)` resets the connection on drop.
    ///
    /// # Errors
    ///
    /// As `setsockopt(2)`.
    pub fn set_linger(&self, linger: Option<std::time::Duration>) -> io::Result<()> {
        sys::set_linger(self.as_fd(), linger)
    }

    /// `SO_LINGER`, as [`set_linger`](Self::set_linger) takes it.
    ///
    /// # Errors
    ///
    /// As `getsockopt(2)`.
    pub fn linger(&self) -> io::Result<Option<std::time::Duration>> {
        sys::linger(self.as_fd())
    }

    /// Waits until the stream may be readable (data, end of file or an error), as tokio's
    /// `readable`; then [`try_read`](Self::try_read). Readiness can be a false positive: a
    /// `try_read` may still return `WouldBlock`, and the loop waits again.
    ///
    /// # Errors
    ///
    /// None today; `io::Result` for tokio's signature.
    pub async fn readable(&self) -> io::Result<()> {
        poll_fn(|cx| self.io.registration().poll_read_ready(cx).map_ok(drop)).await
    }

    /// Waits until the stream may be writable, as tokio's `writable`.
    ///
    /// # Errors
    ///
    /// None today; `io::Result` for tokio's signature.
    pub async fn writable(&self) -> io::Result<()> {
        poll_fn(|cx| self.io.registration().poll_write_ready(cx).map_ok(drop)).await
    }

    /// Reads what is there without waiting, as tokio's `try_read`: `Ok(0)` at end of file,
    /// `WouldBlock` (and the readiness cleared) when nothing is.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless_io::internal::Reactor;
    /// use tickless_io::TcpStream;
    ///
    /// let reactor = Reactor::new()?;
    /// let _guard = reactor.enter();
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let mut client = std::net::TcpStream::connect(listener.local_addr()?)?;
    /// let stream = TcpStream::from_std(listener.accept()?.0)?;
    /// let mut buf = [0u8; 8];
    /// assert_eq!(stream.try_read(&mut buf).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    /// std::io::Write::write_all(&mut client, b"hi")?;
    /// let n = loop {
    ///     match stream.try_read(&mut buf) {
    ///         Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => drop(reactor.poll(None)?),
    ///         other => break other?,
    ///     }
    /// };
    /// assert_eq!(&buf[..n], b"hi");
    /// # std::io::Result::Ok(())
    /// ```
    ///
    /// # Errors
    ///
    /// `WouldBlock` when nothing is ready; otherwise as `read(2)`.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.registration().try_io(Direction::Read, || {
            io::Read::read(&mut self.io.get_ref(), buf)
        })
    }

    /// Writes what fits without waiting, as tokio's `try_write`; `WouldBlock` (and the
    /// readiness cleared) when nothing does. Uses `MSG_NOSIGNAL`, as every write here.
    ///
    /// # Errors
    ///
    /// `WouldBlock` when the send buffer is full; otherwise as `send(2)`.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io
            .registration()
            .try_io(Direction::Write, || sys::send_nosignal(self.as_fd(), buf))
    }

    /// Shuts down the read side, the write side or both at once, as `shutdown(2)` and std's
    /// `TcpStream::shutdown`. Not named `shutdown`, which would hide tokio's
    /// `AsyncWriteExt::shutdown()` (the write side, awaited: `stream.shutdown().await` works
    /// as on tokio, with feature `tokio` and the trait in scope; futures-io's is `close()`).
    ///
    /// # Errors
    ///
    /// As `shutdown(2)`; `NotConnected` if the connection is gone.
    pub fn shutdown_std(&self, how: Shutdown) -> io::Result<()> {
        self.io.get_ref().shutdown(how)
    }

    /// Splits the stream into a read half and a write half that can move into different tasks,
    /// on this core or others: each direction waits on the core that polls it. Dropping the write half shuts down the write side; see
    /// [`OwnedWriteHalf`].
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        self.io.registration().mark_split();
        let shared = Arc::new(self);
        (
            OwnedReadHalf::new(Arc::clone(&shared)),
            OwnedWriteHalf::new(shared),
        )
    }
}

impl_stream_io!(TcpStream);

impl AsFd for TcpStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.io.get_ref().fmt(f)
    }
}
