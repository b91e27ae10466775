//! `TcpStream::peek`: look at received bytes without taking them.

use std::future::poll_fn;
use std::io;
use std::task::{Context, Poll};

use crate::net::tcp_stream::TcpStream;
use crate::ready::Direction;

impl TcpStream {
    /// Waits for data and copies it into `buf` without removing it from the socket's receive
    /// queue, as `recv(2)` with `MSG_PEEK`: the next read returns the same bytes. Returns the
    /// number of bytes copied; 0 means the peer closed its write side (or `buf` is empty).
    ///
    /// Useful to wait, with a timeout, for a new connection's first bytes before handing the
    /// stream to a protocol library that would wait for them with no timeout of its own.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(stream: tickless_io::TcpStream) -> std::io::Result<()> {
    /// let mut first = [0u8; 1];
    /// if stream.peek(&mut first).await? == 0 {
    ///     return Ok(()); // closed before saying anything
    /// }
    /// // ... the bytes are still there for whoever reads next
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As `recv(2)`: for instance `ConnectionReset`.
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_peek(cx, buf)).await
    }

    /// Polls for [`peek`](Self::peek); registers the task's waker when no data is queued.
    ///
    /// # Errors
    ///
    /// As [`peek`](Self::peek).
    pub fn poll_peek(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        // A peek consumes nothing, so it leaves the read readiness as it is; a `WouldBlock`
        // clears it and waits for the next edge.
        self.io
            .registration()
            .poll_io(cx, Direction::Read, || self.io.get_ref().peek(buf))
    }
}
