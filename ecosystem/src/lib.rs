//! What the ecosystem tests share: small helpers (an HTTP/1.1 client connection and a `GET`,
//! handler counters for the timeout tests) and the one adapter tickless cannot ship, tonic's
//! [`Connected`] on a tickless stream (tonic's trait and tickless's type are both foreign
//! here). Serving and the HTTP client are tickless's own public `tickless_http`.
//!
//! The tests themselves are in `tests/`, one file per library; this crate is not published.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Request;
use tickless::net::TcpStream;
use tickless_http::hyper_rt::TicklessIo;

use tonic::transport::server::{Connected, TcpConnectInfo};

/// What tower and hyper box their errors as.
pub use tickless_http::BoxError;

/// `127.0.0.1:0`: loopback, a port the kernel picks.
pub fn localhost() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Any error as an `io::Error`, for `?` in the tests.
pub fn other<E: Into<BoxError>>(e: E) -> io::Error {
    io::Error::other(e)
}

/// A tickless [`TcpStream`] as tonic's server wants it: tokio's `AsyncRead`/`AsyncWrite` (the
/// `tokio-io` feature) and tonic's [`Connected`], whose connection info (the addresses) a
/// service finds in its requests' extensions, as with tonic's own `TcpIncoming`.
///
/// tonic's trait and tickless's type are both foreign here, so the impl needs this wrapper.
#[derive(Debug)]
pub struct TonicStream(pub TcpStream);

impl Connected for TonicStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        TcpConnectInfo {
            local_addr: self.0.local_addr().ok(),
            remote_addr: self.0.peer_addr().ok(),
        }
    }
}

impl tokio::io::AsyncRead for TonicStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        tokio::io::AsyncRead::poll_read(Pin::new(&mut self.0), cx, buf)
    }
}

impl tokio::io::AsyncWrite for TonicStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        tokio::io::AsyncWrite::poll_write(Pin::new(&mut self.0), cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::io::AsyncWrite::poll_flush(Pin::new(&mut self.0), cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::io::AsyncWrite::poll_shutdown(Pin::new(&mut self.0), cx)
    }
}

/// An HTTP/1.1 client connection to `addr` from the current core: hyper's `client::conn` over a
/// tickless stream (needs no `Send`), its driver a task of this core.
///
/// # Errors
///
/// Connecting or the handshake failed.
pub async fn http1_client(
    addr: SocketAddr,
) -> io::Result<hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>>> {
    let io = TicklessIo::new(TcpStream::connect(addr).await?);
    let (sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(other)?;
    drop(tickless::spawn_local(conn));
    Ok(sender)
}

/// `GET path` on `sender`: the status and the body as text.
///
/// # Errors
///
/// The request failed (the connection closed before a response, for one).
pub async fn get(
    sender: &mut hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>>,
    path: &str,
) -> io::Result<(http::StatusCode, String)> {
    use http_body_util::BodyExt;
    sender.ready().await.map_err(other)?;
    let req = Request::get(path)
        .header(http::header::HOST, "localhost")
        .body(http_body_util::Empty::new())
        .map_err(other)?;
    let resp = sender.send_request(req).await.map_err(other)?;
    let status = resp.status();
    let body = resp.into_body().collect().await.map_err(other)?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// What an app's handlers saw, for the timeout tests: slow requests started and cancelled, fast
/// ones answered.
#[derive(Debug, Default)]
pub struct HandlerCounts {
    /// Slow requests whose handler started.
    slow_started: AtomicUsize,
    /// Slow handlers dropped before they finished (a timeout cancelled them).
    slow_dropped: AtomicUsize,
    /// Fast requests answered.
    fast: AtomicUsize,
}

impl HandlerCounts {
    /// A slow handler starts: counted now, and counted as dropped when the guard drops (a
    /// handler that finishes forgets it with [`SlowGuard::finished`]).
    pub fn slow_started(self: &Arc<Self>) -> SlowGuard {
        self.slow_started.fetch_add(1, Ordering::SeqCst);
        SlowGuard(Some(Arc::clone(self)))
    }

    /// A fast handler answers.
    pub fn fast(&self) {
        self.fast.fetch_add(1, Ordering::SeqCst);
    }

    /// Asserts that `n` slow requests started and were all cancelled, and `n` fast ones were
    /// answered.
    ///
    /// # Panics
    ///
    /// When a count differs.
    pub fn assert_rounds(&self, n: usize) {
        assert_eq!(
            self.slow_started.load(Ordering::SeqCst),
            n,
            "slow handlers run"
        );
        assert_eq!(
            self.slow_dropped.load(Ordering::SeqCst),
            n,
            "slow handlers cancelled by the timeout"
        );
        assert_eq!(
            self.fast.load(Ordering::SeqCst),
            n,
            "fast requests answered"
        );
    }
}

/// Held by a slow handler: counts its drop.
#[derive(Debug)]
pub struct SlowGuard(Option<Arc<HandlerCounts>>);

impl SlowGuard {
    /// The handler finished: not a cancellation.
    pub fn finished(mut self) {
        self.0 = None;
    }
}

impl Drop for SlowGuard {
    fn drop(&mut self) {
        if let Some(counts) = &self.0 {
            counts.slow_dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The README's and the guides' code blocks, compiled and run as this crate's doctests (the
/// guides use axum, which only this crate has).
#[cfg(doctest)]
mod guides {
    #[doc = include_str!("../../README.md")]
    mod readme {}
    #[doc = include_str!("../../docs/coming-from-tokio.md")]
    mod coming_from_tokio {}
    #[doc = include_str!("../../docs/serving-http.md")]
    mod serving_http {}
    #[doc = include_str!("../../docs/timers.md")]
    mod timers {}
    #[doc = include_str!("../../docs/thread-per-core.md")]
    mod thread_per_core {}
    #[doc = include_str!("../../docs/testing.md")]
    mod testing {}
    #[doc = include_str!("../../benches/README.md")]
    mod benches {}
}
