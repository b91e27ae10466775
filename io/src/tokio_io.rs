//! tokio's `AsyncRead` and `AsyncWrite` for the byte-stream types (feature `tokio`), so hyper
//! and the rest of the tokio-io ecosystem run on them.
//!
//! Each impl forwards to the type's futures-io impl; reads fill the `ReadBuf`'s unfilled part
//! after initialising it, which keeps this module free of `unsafe`.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::net::tcp_split::{OwnedReadHalf, OwnedWriteHalf};
use crate::net::tcp_stream::TcpStream;
use crate::net::unix::UnixStream;
use crate::pipe::{PipeReader, PipeWriter};

/// Reads through a futures-io reader into a tokio `ReadBuf`.
fn poll_read_buf<R: futures_io::AsyncRead + Unpin + ?Sized>(
    reader: &mut R,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    let n = ready!(Pin::new(reader).poll_read(cx, buf.initialize_unfilled()))?;
    buf.advance(n);
    Poll::Ready(Ok(()))
}

/// Implements tokio's `AsyncRead` by forwarding to futures-io's.
macro_rules! tokio_read {
    ($($ty:ty),*) => {$(
        impl AsyncRead for $ty {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                poll_read_buf(self.get_mut(), cx, buf)
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

tokio_read!(TcpStream, OwnedReadHalf, UnixStream, PipeReader);
tokio_write!(TcpStream, OwnedWriteHalf, UnixStream, PipeWriter);
