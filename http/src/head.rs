//! The opening of a connection, read under [`Http::header_read_timeout`](crate::Http): the
//! bytes that choose the protocol and the first request's head, before hyper sees any of them.
//!
//! hyper-util's `auto` builder reads up to 24 bytes to tell HTTP/2's preface from HTTP/1
//! before hyper starts its header timer, and HTTP/2 has no header timer at all: a client that
//! sends one byte, or the preface and half a SETTINGS frame, and stops would hold its
//! connection for ever. So the connection's task reads the opening itself, within the
//! timeout, and hands the bytes to hyper in front of the stream ([`Rewind`]).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_io::AsyncRead;
use tickless::net::{ConnInfo, TcpStream};

/// HTTP/2's connection preface (RFC 9113, 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The most of an HTTP/1 head read here; a longer one is handed to hyper, whose own header
/// timer then times the rest.
const MAX_HEAD: usize = 16 * 1024;

/// The largest first HTTP/2 frame waited for in full (HTTP/2's default largest frame); a
/// larger one is hyper's to refuse.
const MAX_FRAME: usize = 16 * 1024;

/// How many more bytes the opening needs: 0 once it is complete. An HTTP/1 opening is
/// complete at the end of the first head (or at [`MAX_HEAD`]); an HTTP/2 one with the preface
/// and the whole first frame (the client's SETTINGS).
fn needed(buf: &[u8]) -> usize {
    let common = buf.len().min(PREFACE.len());
    if buf[..common] != PREFACE[..common] {
        // HTTP/1: up to the blank line that ends the head.
        let ended = buf.windows(4).any(|w| w == b"\r\n\r\n");
        return if ended || buf.len() >= MAX_HEAD { 0 } else { 1 };
    }
    if buf.len() < PREFACE.len() {
        return PREFACE.len() - buf.len();
    }
    let frame = &buf[PREFACE.len()..];
    if frame.len() < 9 {
        return 9 - frame.len();
    }
    let len = u32::from_be_bytes([0, frame[0], frame[1], frame[2]]) as usize;
    (9 + len.min(MAX_FRAME)).saturating_sub(frame.len())
}

/// Reads the opening of `stream` within `limit` of now: the bytes read, or `None` if the time
/// ran out, the client closed or failed, or the server began to shut down first.
pub(crate) async fn opening_within(
    stream: &mut TcpStream,
    limit: Duration,
    conn: &ConnInfo,
) -> Option<Vec<u8>> {
    let read = async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while needed(&buf) > 0 {
            let n = std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_read(cx, &mut chunk))
                .await
                .ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(buf)
    };
    let mut read = std::pin::pin!(tickless::time::timeout(limit, read));
    let mut stop = std::pin::pin!(conn.shutdown_requested());
    std::future::poll_fn(|cx| {
        if let Poll::Ready(read) = read.as_mut().poll(cx) {
            return Poll::Ready(read.ok().flatten());
        }
        stop.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// A stream whose first reads give back `prefix`: the opening read by [`opening_within`], in
/// front of the rest, as hyper expects to read it.
#[derive(Debug)]
pub(crate) struct Rewind<T> {
    /// What was read ahead; empty when nothing was.
    prefix: Vec<u8>,
    /// How much of `prefix` has been given back.
    given: usize,
    /// The stream.
    inner: T,
}

impl<T> Rewind<T> {
    /// `inner`, with `prefix` read first.
    pub(crate) fn new(prefix: Vec<u8>, inner: T) -> Rewind<T> {
        Rewind {
            prefix,
            given: 0,
            inner,
        }
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for Rewind<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let left = &this.prefix[this.given..];
        if left.is_empty() {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let n = left.len().min(buf.remaining());
        buf.put_slice(&left[..n]);
        this.given += n;
        if this.given == this.prefix.len() {
            this.prefix = Vec::new(); // given back: free it
            this.given = 0;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for Rewind<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opening_is_complete_at_the_end_of_an_http1_head_or_of_http2_s_first_frame() {
        assert_eq!(needed(b""), 24);
        assert_eq!(needed(b"P"), 23);
        assert_eq!(needed(b"G"), 1); // HTTP/1: to the end of the head
        assert_eq!(needed(b"GET / HTTP/1.1\r\nhost: x\r\n"), 1);
        assert_eq!(needed(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"), 0);
        assert_eq!(needed(b"PRI * HTTP/1.1\r\n\r\n"), 0); // not the preface: HTTP/1
        assert_eq!(needed(PREFACE), 9);
        let mut h2 = PREFACE.to_vec();
        h2.extend_from_slice(&[0, 0, 6, 4, 0, 0, 0, 0, 0]); // SETTINGS, 6 bytes of payload
        assert_eq!(needed(&h2), 6);
        h2.extend_from_slice(&[0, 3, 0, 0, 0, 100]);
        assert_eq!(needed(&h2), 0);
    }
}
