//! `UdpSocket`.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::task::{Context, Poll};

use mio::Interest;

use crate::async_fd::AsyncFd;
use crate::ready::Direction;
use crate::sys;

/// A UDP socket, registered with the reactor of the core that created it.
///
/// All methods take `&self`; several tasks of the core may share it through an `Rc`, and every
/// task waiting in a direction is woken by the next readiness in it.
pub struct UdpSocket {
    /// The non-blocking socket and its registration (read and write interest).
    io: AsyncFd<mio::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds a socket to `addr`, trying each address it resolves to.
    ///
    /// `async` to match tokio's signature; it never waits.
    ///
    /// # Errors
    ///
    /// The address did not resolve, or the last bind failed.
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        sys::each_addr(addr, |addr| {
            Ok(UdpSocket::from_mio(mio::net::UdpSocket::bind(addr)?))
        })
    }

    /// Takes over a bound std socket, setting it non-blocking; it registers with the core that
    /// first polls it.
    ///
    /// # Errors
    ///
    /// Making it non-blocking failed.
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket::from_mio(mio::net::UdpSocket::from_std(socket)))
    }

    /// Wraps a non-blocking mio socket, for the core that first polls it.
    fn from_mio(socket: mio::net::UdpSocket) -> UdpSocket {
        let io = AsyncFd::unbound(socket, Interest::READABLE | Interest::WRITABLE, false);
        UdpSocket { io }
    }

    /// Sets the default destination of [`send`](Self::send) and the only source
    /// [`recv`](Self::recv) accepts; the first address `addr` resolves to that works is used.
    ///
    /// # Errors
    ///
    /// The address did not resolve, or `connect(2)` failed for every address.
    pub async fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        sys::each_addr(addr, |addr| self.io.get_ref().connect(addr))
    }

    /// Sends a datagram to the connected peer; returns the bytes sent.
    ///
    /// # Errors
    ///
    /// As `send(2)`; for instance `ConnectionRefused` after an ICMP port unreachable.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_send(cx, buf)).await
    }

    /// Polls sending a datagram to the connected peer.
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io
            .registration()
            .poll_io(cx, Direction::Write, || self.io.get_ref().send(buf))
    }

    /// Receives a datagram from the connected peer; returns its length (truncated to
    /// `buf.len()`).
    ///
    /// # Errors
    ///
    /// As `recv(2)`.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_recv(cx, buf)).await
    }

    /// Polls receiving a datagram from the connected peer.
    ///
    /// # Errors
    ///
    /// As [`recv`](Self::recv).
    pub fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.io
            .registration()
            .poll_io(cx, Direction::Read, || self.io.get_ref().recv(buf))
    }

    /// Waits until a datagram may be there to receive, as tokio's `readable`; then
    /// [`try_recv`](Self::try_recv) or [`try_recv_from`](Self::try_recv_from).
    ///
    /// # Errors
    ///
    /// None today; `io::Result` for tokio's signature.
    pub async fn readable(&self) -> io::Result<()> {
        poll_fn(|cx| self.io.registration().poll_read_ready(cx).map_ok(drop)).await
    }

    /// Waits until a datagram may be sent, as tokio's `writable`.
    ///
    /// # Errors
    ///
    /// None today; `io::Result` for tokio's signature.
    pub async fn writable(&self) -> io::Result<()> {
        poll_fn(|cx| self.io.registration().poll_write_ready(cx).map_ok(drop)).await
    }

    /// Receives a datagram from the connected peer without waiting, as tokio's `try_recv`.
    ///
    /// # Errors
    ///
    /// `WouldBlock` when none is queued (the readiness is cleared); otherwise as `recv(2)`.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io
            .registration()
            .try_io(Direction::Read, || self.io.get_ref().recv(buf))
    }

    /// Receives a datagram and its sender without waiting, as tokio's `try_recv_from`.
    ///
    /// # Errors
    ///
    /// `WouldBlock` when none is queued (the readiness is cleared); otherwise as `recvfrom(2)`.
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io
            .registration()
            .try_io(Direction::Read, || self.io.get_ref().recv_from(buf))
    }

    /// Sends a datagram to the connected peer without waiting, as tokio's `try_send`.
    ///
    /// # Errors
    ///
    /// `WouldBlock` when the send buffer is full (the readiness is cleared); otherwise as
    /// `send(2)`.
    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io
            .registration()
            .try_io(Direction::Write, || self.io.get_ref().send(buf))
    }

    /// Sends a datagram to `target` (its first resolved address); returns the bytes sent.
    ///
    /// # Errors
    ///
    /// The address did not resolve, or as `sendto(2)`.
    pub async fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], target: A) -> io::Result<usize> {
        let target = target
            .to_socket_addrs()?
            .next()
            .ok_or_else(sys::no_addresses)?;
        poll_fn(|cx| self.poll_send_to(cx, buf, target)).await
    }

    /// Polls sending a datagram to `target`.
    ///
    /// # Errors
    ///
    /// As `sendto(2)`.
    pub fn poll_send_to(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        target: SocketAddr,
    ) -> Poll<io::Result<usize>> {
        self.io.registration().poll_io(cx, Direction::Write, || {
            self.io.get_ref().send_to(buf, target)
        })
    }

    /// Receives a datagram; returns its length (truncated to `buf.len()`) and its source.
    ///
    /// # Errors
    ///
    /// As `recvfrom(2)`.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| self.poll_recv_from(cx, buf)).await
    }

    /// Polls receiving a datagram and its source.
    ///
    /// # Errors
    ///
    /// As [`recv_from`](Self::recv_from).
    pub fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        self.io
            .registration()
            .poll_io(cx, Direction::Read, || self.io.get_ref().recv_from(buf))
    }

    /// The address the socket is bound to.
    ///
    /// # Errors
    ///
    /// As `getsockname(2)`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr()
    }

    /// The connected peer's address.
    ///
    /// # Errors
    ///
    /// `NotConnected` if [`connect`](Self::connect) was not called.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().peer_addr()
    }
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.io.get_ref().fmt(f)
    }
}
