//! The owned halves of a split `TcpStream`.

use std::error::Error;
use std::fmt;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_io::{AsyncRead, AsyncWrite};

use crate::net::tcp_stream::TcpStream;
use crate::net::{close_write, poll_read, poll_write};

/// The read half of a [`TcpStream`], from [`TcpStream::into_split`].
#[derive(Debug)]
pub struct OwnedReadHalf {
    /// The stream, shared with the write half.
    pub(crate) inner: Arc<TcpStream>,
}

/// The write half of a [`TcpStream`], from [`TcpStream::into_split`].
///
/// Dropping it shuts down the write side, as [`poll_close`](AsyncWrite::poll_close) does, so
/// the peer sees end of file even while the read half lives on.
#[derive(Debug)]
pub struct OwnedWriteHalf {
    /// The stream, shared with the read half.
    inner: Arc<TcpStream>,
    /// Whether dropping shuts down the write side; false once reunited.
    shutdown_on_drop: bool,
}

/// The error of [`OwnedReadHalf::reunite`] with a write half of another stream; gives both
/// halves back.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl OwnedReadHalf {
    /// Wraps the shared stream.
    pub(crate) fn new(inner: Arc<TcpStream>) -> OwnedReadHalf {
        OwnedReadHalf { inner }
    }

    /// Puts the two halves of one stream back together.
    ///
    /// # Errors
    ///
    /// [`ReuniteError`] if the halves come from different streams.
    pub fn reunite(self, mut write: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if !Arc::ptr_eq(&self.inner, &write.inner) {
            return Err(ReuniteError(self, write));
        }
        write.shutdown_on_drop = false;
        drop(write);
        match Arc::try_unwrap(self.inner) {
            Ok(stream) => Ok(stream),
            Err(_) => unreachable!("a TcpStream is shared by exactly its two halves"),
        }
    }

    /// The local address of the connection.
    ///
    /// # Errors
    ///
    /// As [`TcpStream::local_addr`].
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The remote address of the connection.
    ///
    /// # Errors
    ///
    /// As [`TcpStream::peer_addr`].
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }
}

impl OwnedWriteHalf {
    /// Wraps the shared stream.
    pub(crate) fn new(inner: Arc<TcpStream>) -> OwnedWriteHalf {
        OwnedWriteHalf {
            inner,
            shutdown_on_drop: true,
        }
    }

    /// The local address of the connection.
    ///
    /// # Errors
    ///
    /// As [`TcpStream::local_addr`].
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The remote address of the connection.
    ///
    /// # Errors
    ///
    /// As [`TcpStream::peer_addr`].
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }
}

impl AsyncRead for OwnedReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        poll_read(&self.inner.io, cx, buf)
    }
}

impl AsyncWrite for OwnedWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        poll_write(&self.inner.io, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(close_write(|how| self.inner.shutdown_std(how)))
    }
}

impl Drop for OwnedWriteHalf {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            // Best effort, as on close: a connection already gone has nothing to shut down,
            // and a drop cannot report an error.
            let _already_closed = self.inner.shutdown_std(Shutdown::Write);
        }
    }
}

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite halves that are not from the same stream")
    }
}

impl Error for ReuniteError {}
