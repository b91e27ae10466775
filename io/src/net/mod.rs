//! Sockets: TCP, UDP and Unix domain, and the stream plumbing they share.

pub(crate) mod addr;
pub(crate) mod reuseport;
pub(crate) mod tcp_listener;
pub(crate) mod tcp_peek;
pub(crate) mod tcp_split;
pub(crate) mod tcp_stream;
pub(crate) mod udp;
pub(crate) mod unix;

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd};
use std::task::{Context, Poll};

use crate::async_fd::AsyncFd;
use crate::ready::Direction;
use crate::sys;

/// Reads from a stream socket, trying first and waiting only on `WouldBlock`.
pub(crate) fn poll_read<T: AsRawFd + AsFd>(
    io: &AsyncFd<T>,
    cx: &mut Context<'_>,
    buf: &mut [u8],
) -> Poll<io::Result<usize>> {
    let fd = io.get_ref().as_fd();
    let len = buf.len();
    io.registration()
        .poll_read_io(cx, len, || sys::read(fd, buf))
}

/// Writes to a stream socket with `MSG_NOSIGNAL`: a closed peer gives `BrokenPipe`, not
/// `SIGPIPE`, whatever the process's signal disposition.
pub(crate) fn poll_write<T: AsRawFd + AsFd>(
    io: &AsyncFd<T>,
    cx: &mut Context<'_>,
    buf: &[u8],
) -> Poll<io::Result<usize>> {
    io.registration().poll_io(cx, Direction::Write, || {
        sys::send_nosignal(io.get_ref().as_fd(), buf)
    })
}

/// The `poll_close` of a stream socket: shuts down the write side, so the peer reads end of
/// file. A socket that is no longer connected counts as closed.
pub(crate) fn close_write(shutdown: impl FnOnce(Shutdown) -> io::Result<()>) -> io::Result<()> {
    match shutdown(Shutdown::Write) {
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
        result => result,
    }
}

/// Implements futures-io's `AsyncRead` and `AsyncWrite` for a stream type and for a shared
/// reference to it, given its `AsyncFd` field and its `shutdown_std` method.
macro_rules! impl_stream_io {
    ($ty:ty) => {
        $crate::net::impl_stream_io!(@for $ty);
        $crate::net::impl_stream_io!(@for &$ty);
    };
    (@for $target:ty) => {
        impl futures_io::AsyncRead for $target {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                $crate::net::poll_read(&self.io, cx, buf)
            }
        }

        impl futures_io::AsyncWrite for $target {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                $crate::net::poll_write(&self.io, cx, buf)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // Socket writes are not buffered in user space.
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready($crate::net::close_write(|how| self.shutdown_std(how)))
            }
        }
    };
}

pub(crate) use impl_stream_io;
