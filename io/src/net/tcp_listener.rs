//! `TcpListener`: a listening TCP socket.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::task::{ready, Context, Poll};

use mio::Interest;

use crate::async_fd::AsyncFd;
use crate::net::tcp_stream::TcpStream;
use crate::ready::Direction;
use crate::sys;

/// Listen backlog of [`TcpListener::bind_reuseport`] and
/// [`TcpListener::bind_reuseport_std`]; the kernel caps it at `somaxconn`.
pub(crate) const REUSEPORT_BACKLOG: i32 = 1024;

/// A TCP listener, driven by the core that polls it (see
/// `Registration`'s threads).
///
/// An accepted stream is not registered anywhere yet: it registers with the core that first
/// polls it (and follows the task that polls it after), so one accept loop can hand its connections to tasks on other cores. For a
/// thread-per-core server without that hand-off, give each core its own listener on the same
/// port with [`bind_reuseport`](Self::bind_reuseport) and the kernel spreads connections across
/// them.
pub struct TcpListener {
    /// The non-blocking listening socket, registered for reading.
    io: AsyncFd<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `addr` (with `SO_REUSEADDR`) and listens, trying each address it resolves to.
    ///
    /// `async` to match tokio's signature; it never waits. Resolving a host name blocks the
    /// thread (std's resolver).
    ///
    /// # Errors
    ///
    /// The address did not resolve, or the last bind failed (for instance `AddrInUse`).
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        sys::each_addr(addr, |addr| {
            Ok(TcpListener::from_mio(mio::net::TcpListener::bind(addr)?))
        })
    }

    /// Binds a listener with `SO_REUSEADDR` and `SO_REUSEPORT`, so every core can bind its
    /// own listener to the same port; the kernel balances new connections across them.
    ///
    /// Binding port 0 picks a fresh port for each call: to give every core the same one, bind
    /// the first listener, read its [`local_addr`](Self::local_addr), and bind the others to
    /// that (or let `tickless::net::serve_per_core` do it all).
    ///
    /// # Errors
    ///
    /// Creating, configuring, binding or listening failed.
    pub fn bind_reuseport(addr: SocketAddr) -> io::Result<TcpListener> {
        let fd = sys::reuseport_listener(addr, REUSEPORT_BACKLOG, sys::Share::Join)?;
        let listener = mio::net::TcpListener::from_std(std::net::TcpListener::from(fd));
        Ok(TcpListener::from_mio(listener))
    }

    /// Takes over a listening std socket, setting it non-blocking; it registers with the core
    /// that first polls it.
    ///
    /// # Errors
    ///
    /// Making it non-blocking failed.
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener::from_mio(mio::net::TcpListener::from_std(
            listener,
        )))
    }

    /// Wraps a non-blocking mio listener, for the core that first polls it.
    fn from_mio(listener: mio::net::TcpListener) -> Self {
        let io = AsyncFd::unbound(listener, Interest::READABLE, false);
        TcpListener { io }
    }

    /// Accepts a connection.
    ///
    /// # Errors
    ///
    /// As `accept4(2)`: for instance `EMFILE` when out of descriptors, or
    /// `ConnectionAborted`. The listener stays usable. And as
    /// `Registration::poll_ready`: first polled where no
    /// runtime runs, or after its core stopped.
    ///
    /// After `EMFILE` or `ENFILE` the connection stays queued and the listener stays readable,
    /// so calling `accept` again at once fails again at once: a loop that retries without
    /// waiting spins. Back off on a timer until descriptors are free, as
    /// `tickless::net::serve_per_core`'s accept loops do. Errors about one connection
    /// (`ConnectionAborted`, and the network errors `accept(2)` says to treat like `EAGAIN`)
    /// have already dequeued it: retry at once.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// Polls for a connection; registers the task's waker when none is pending.
    ///
    /// # Errors
    ///
    /// As [`accept`](Self::accept).
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let registration = self.io.registration();
        let (socket, addr) =
            ready!(registration.poll_io(cx, Direction::Read, || self.io.get_ref().accept()))?;
        registration.count_accept();
        // Not registered yet: with the core that first polls it.
        Poll::Ready(Ok((TcpStream::from_mio(socket), addr)))
    }

    /// The address the listener is bound to (with the real port after binding port 0).
    ///
    /// # Errors
    ///
    /// As `getsockname(2)`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr()
    }
}

impl AsFd for TcpListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.io.get_ref().fmt(f)
    }
}
