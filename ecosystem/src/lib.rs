//! What the ecosystem tests and examples share: serving a tower service (an axum `Router`,
//! tonic's `Routes`) with tickless's own hyper serving ([`serve`], the `axum::serve` of
//! tickless, with a graceful shutdown), and the adapters the libraries want around tickless
//! streams (tonic's [`Connected`], hyper-util's client `Connection`).
//!
//! The tests themselves are in `tests/`, one file per library; this crate is not published.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Body, Incoming};
use hyper::{Request, Response};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tickless::hyper_rt::{TicklessExecutor, TicklessIo, TicklessTimer};
use tickless::net::{serve_per_core, ConnInfo, Server, TcpStream};
use tickless::Runtime;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// What tower and hyper box their errors as.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `127.0.0.1:0`: loopback, a port the kernel picks.
pub fn localhost() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Any error as an `io::Error`, for `?` in the tests.
pub fn other<E: Into<BoxError>>(e: E) -> io::Error {
    io::Error::other(e)
}

/// hyper's server settings the tests serve with: HTTP/1.1 and HTTP/2 (prior knowledge, what gRPC
/// clients speak) on one port, hyper's background tasks on the connection's core, hyper's
/// timers on the core's wheel.
pub fn http_builder() -> auto::Builder<TicklessExecutor> {
    let mut http = auto::Builder::new(TicklessExecutor);
    http.http1().timer(TicklessTimer);
    http.http2().timer(TicklessTimer);
    http
}

/// Serves a tower service (an axum `Router`) on every core of `rt`, listening on `addr`: what
/// `axum::serve(listener, app)` is on tokio, in one call.
///
/// Each core binds its own `SO_REUSEPORT` listener ([`serve_per_core`]) and serves the
/// connections it accepts, start to end, with hyper-util's `auto` builder (HTTP/1.1, and HTTP/2
/// with prior knowledge) over [`TicklessIo`], hyper's timers on the core's wheel
/// ([`http_builder`]). Every connection runs through [`ConnInfo::graceful`]: when
/// [`Server::shutdown`] begins, hyper's `graceful_shutdown` lets a request in flight finish and
/// closes an idle keep-alive connection at once, so the shutdown ends when the last request
/// does, not at the end of its grace period. No upgrades (axum's `on_upgrade` needs a tokio
/// runtime: see [`serve_tower_with_upgrades`]).
///
/// ```no_run
/// # fn app() -> axum::Router { axum::Router::new() }
/// let rt = tickless::Runtime::new()?; // one core per CPU
/// let server = tickless_ecosystem_tests::serve(&rt, "127.0.0.1:3000".parse().unwrap(), app())?;
/// rt.block_on(async {
///     tickless::signal::ctrl_c().await?;
///     server.shutdown(std::time::Duration::from_secs(10)).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
///
/// # Errors
///
/// Binding the listeners failed.
pub fn serve<S, B>(rt: &Runtime, addr: SocketAddr, service: S) -> io::Result<Server>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    serve_each(rt, addr, service, |http, io, service, conn| async move {
        let served = http.serve_connection(io, service);
        // A client that resets or goes away is an ordinary end of a connection here.
        let _ordinary_end = conn.graceful(served, |c| c.graceful_shutdown()).await;
    })
}

/// [`serve`] on `127.0.0.1`, on a port the kernel picks ([`Server::local_addr`] says which),
/// for the tests: a tower service (an axum `Router`, tonic's `Routes`) on every core of `rt`.
///
/// # Errors
///
/// Binding the listeners failed.
pub fn serve_tower<S, B>(rt: &Runtime, service: S) -> io::Result<Server>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    serve(rt, localhost(), service)
}

/// [`serve_tower`] with HTTP upgrades (`serve_connection_with_upgrades`: WebSockets), which
/// hyper allows only on `Send` streams.
///
/// # Errors
///
/// Binding the listeners failed.
pub fn serve_tower_with_upgrades<S, B>(rt: &Runtime, service: S) -> io::Result<Server>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    serve_each(
        rt,
        localhost(),
        service,
        |http, io, service, conn| async move {
            let served = http.serve_connection_with_upgrades(io, service);
            let _ordinary_end = conn.graceful(served, |c| c.graceful_shutdown()).await;
        },
    )
}

/// [`serve_per_core`] on `addr` with `serve(builder, stream, service, conn)` for each
/// connection.
fn serve_each<S, F, Fut>(rt: &Runtime, addr: SocketAddr, service: S, serve: F) -> io::Result<Server>
where
    S: Clone + Send + 'static,
    F: Fn(
            auto::Builder<TicklessExecutor>,
            TicklessIo<TcpStream>,
            TowerToHyperService<S>,
            ConnInfo,
        ) -> Fut
        + Clone
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let http = http_builder();
    serve_per_core(rt, addr, move |stream, conn| {
        serve(
            http.clone(),
            TicklessIo::new(stream),
            TowerToHyperService::new(service.clone()),
            conn,
        )
    })
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

/// A tickless [`TcpStream`] as hyper's client side wants it: hyper's `Read`/`Write` (through
/// [`TicklessIo`]) and hyper-util's [`Connection`](hyper_util::client::legacy::connect::Connection),
/// which hyper-util's legacy `Client` and tonic's `Channel` require of what a connector returns.
#[derive(Debug)]
pub struct ClientStream(pub TicklessIo<TcpStream>);

impl hyper_util::client::legacy::connect::Connection for ClientStream {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        hyper_util::client::legacy::connect::Connected::new()
    }
}

impl hyper::rt::Read for ClientStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for ClientStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// A connector for hyper-util's legacy `Client` and tonic's `Endpoint::connect_with_connector`:
/// a `tower::Service<Uri>` that connects a tickless [`TcpStream`] to the URI's host and port
/// (80 if none), on the core that calls it, `TCP_NODELAY` set.
///
/// Both libraries require the stream and the connect future to be `Send`, so this needs
/// tickless's `Send` streams.
#[derive(Debug, Clone, Copy, Default)]
pub struct TicklessConnector;

impl tower::Service<http::Uri> for TicklessConnector {
    type Response = ClientStream;
    type Error = io::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = io::Result<ClientStream>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        Box::pin(async move {
            let host = uri
                .host()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a URI with no host"))?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let port = uri.port_u16().unwrap_or(80);
            // `TcpStream::connect`'s future is not `Send` (the resolver hook's boxed future
            // is not), so the connect runs as a task of this core and this future, `Send`,
            // awaits its handle.
            let stream = tickless::spawn_local(TcpStream::connect((host, port))).await??;
            stream.set_nodelay(true)?;
            Ok(ClientStream(TicklessIo::new(stream)))
        })
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
