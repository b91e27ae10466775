//! tokio's `AsyncRead` and `AsyncWrite` for the byte-stream types (feature `tokio`), so hyper
//! and the rest of the tokio-io ecosystem run on them.
//!
//! Writes forward to the type's futures-io impl. Reads do not: futures-io reads into a `&mut
//! [u8]`, which would oblige us to initialise (zero) the whole unfilled part of the `ReadBuf`
//! before every read, 8 KiB or more for hyper, whatever arrives. Instead `read(2)` writes
//! straight into the unfilled part, and the `ReadBuf` is told that the bytes it wrote are
//! initialised and filled; no `&mut [u8]` is ever made over memory nobody initialised. The
//! readiness discipline is the futures-io path's: [`Registration::poll_read_io`].
//!
//! [`Registration::poll_read_io`]: crate::Registration::poll_read_io

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::async_fd::AsyncFd;
use crate::net::tcp_split::{OwnedReadHalf, OwnedWriteHalf};
use crate::net::tcp_stream::TcpStream;
use crate::net::unix::UnixStream;
use crate::pipe::{PipeReader, PipeWriter};
use crate::sys;

/// `read(2)` into memory that need not be initialised; returns how many bytes it wrote at the
/// start of `buf` (those, and only those, are initialised afterwards).
fn read_uninit(fd: RawFd, buf: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its whole length for the duration of the call, and
    // `read_raw` only writes through the pointer; `fd` is the descriptor of a live `AsyncFd`
    // borrowed by our caller.
    unsafe { sys::read_raw(fd, buf.as_mut_ptr().cast::<u8>(), buf.len()) }
}

/// Reads from a stream descriptor into the unfilled part of `buf`, without initialising it.
///
/// Same discipline as the futures-io read (`net::poll_read`): try first, wait only on
/// `WouldBlock`, and clear read readiness after a short read. A buffer with no room returns at
/// once, without a system call.
fn poll_read_buf<T: AsRawFd>(
    io: &AsyncFd<T>,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    if buf.remaining() == 0 {
        return Poll::Ready(Ok(()));
    }
    let fd = io.get_ref().as_raw_fd();
    // SAFETY: `unfilled_mut` is unsafe because writing `MaybeUninit::uninit()` through it
    // would de-initialise bytes `buf` counts as initialised; the only writer here is `read(2)`,
    // which stores real bytes.
    let unfilled = unsafe { buf.unfilled_mut() };
    let len = unfilled.len();
    let n = ready!(io
        .registration()
        .poll_read_io(cx, len, || read_uninit(fd, unfilled)))?;
    // SAFETY: `read(2)` returned `n`, so it wrote the first `n` bytes of `unfilled`, which
    // starts where `buf`'s filled part ends; nothing has touched `buf` since.
    unsafe { buf.assume_init(n) };
    buf.advance(n);
    Poll::Ready(Ok(()))
}

/// Implements tokio's `AsyncRead` with [`poll_read_buf`] on the type's `AsyncFd`.
macro_rules! tokio_read {
    ($($ty:ty => |$s:ident| $io:expr),* $(,)?) => {$(
        impl AsyncRead for $ty {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                let $s = self.get_mut();
                poll_read_buf($io, cx, buf)
            }
        }
    )*};
}

/// Implements tokio's `AsyncWrite` by forwarding to futures-io's; shutdown is `poll_close`.
macro_rules! tokio_write {
    ($($ty:ty),*) => {$(
        impl AsyncWrite for $ty {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                futures_io::AsyncWrite::poll_write(self, cx, buf)
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                futures_io::AsyncWrite::poll_flush(self, cx)
            }

            fn poll_shutdown(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<io::Result<()>> {
                futures_io::AsyncWrite::poll_close(self, cx)
            }
        }
    )*};
}

tokio_read!(
    TcpStream => |s| &s.io,
    OwnedReadHalf => |s| &s.inner.io,
    UnixStream => |s| &s.io,
    PipeReader => |s| &s.io,
);
tokio_write!(TcpStream, OwnedWriteHalf, UnixStream, PipeWriter);
