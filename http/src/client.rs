//! hyper-util's `Client` over tickless streams.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::Body;
use hyper_util::client::legacy::connect::{Connected, Connection};

use crate::hyper_rt::{SendExecutor, TicklessIo, TicklessTimer};
use tickless::net::TcpStream;

/// hyper-util's legacy `Client` with tickless's [`Connector`]: what [`client`] makes.
///
/// # Examples
///
/// The type to name a client kept in a struct:
///
/// ```
/// use bytes::Bytes;
/// use http_body_util::Full;
/// use tickless_http::Client;
///
/// #[derive(Clone)]
/// struct Api {
///     http: Client<Full<Bytes>>, // a pool of connections, shared by the clones
///     base: http::Uri,
/// }
///
/// let api = Api {
///     http: tickless_http::client(),
///     base: http::Uri::from_static("http://127.0.0.1:3000"),
/// };
/// let _per_task = api.clone();
/// ```
pub type Client<B> = hyper_util::client::legacy::Client<Connector, B>;

/// An HTTP client on tickless: hyper-util's `Client` (a pool of keep-alive connections, HTTP/1.1
/// and, when asked for, HTTP/2) whose connections are tickless streams made by [`Connector`],
/// whose connection tasks run on the core that opened them and whose timers are on that core's
/// wheel. No tokio runtime, no tokio context. `B` is the requests' body type
/// (`http_body_util::Empty<Bytes>` for `GET`s, `axum::body::Body`, ...).
///
/// The client is `Send`, `Sync` and cheap to clone, and may be used from any core: a request
/// reuses a pooled connection whichever core opened it (requests and responses cross cores
/// through hyper's channels; the connection's I/O stays on its core). Plain `http` only (no
/// TLS).
///
/// # Examples
///
/// ```no_run
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, Empty};
///
/// # tickless::Runtime::new()?.block_on(async {
/// let client = tickless_http::client::<Empty<Bytes>>();
/// let res = client.get("http://127.0.0.1:3000/".parse().unwrap()).await.unwrap();
/// println!("{}: {:?}", res.status(), res.into_body().collect().await.unwrap().to_bytes());
/// # });
/// # std::io::Result::Ok(())
/// ```
///
/// # Panics
///
/// A request made outside a tickless runtime panics when it opens a connection.
pub fn client<B>() -> Client<B>
where
    B: Body + Send + 'static,
    B::Data: Send,
{
    hyper_util::client::legacy::Client::builder(SendExecutor)
        .timer(TicklessTimer)
        .pool_timer(TicklessTimer)
        .build(Connector)
}

/// A connector for hyper-util's legacy `Client` (and tonic's
/// `Endpoint::connect_with_connector`): a `tower::Service<Uri>` that connects a tickless
/// [`TcpStream`] to the URI's host and port (80 if none), from the core that calls it, with
/// `TCP_NODELAY` set.
///
/// # Examples
///
/// ```
/// use bytes::Bytes;
/// use http_body_util::Empty;
/// use hyper_util::client::legacy::Client;
/// use tickless_http::Connector;
/// use tickless_http::hyper_rt::TicklessExecutor;
///
/// let client: Client<Connector, Empty<Bytes>> =
///     Client::builder(TicklessExecutor).http2_only(true).build(Connector);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Connector;

impl tower_service::Service<http::Uri> for Connector {
    type Response = ClientStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<ClientStream>> + Send + 'static>>;

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
            // The connect runs here, in this `Send` future, not in a task of its own: a
            // request dropped while connecting (a client timeout) drops the connect with it,
            // and leaves nothing on the core (a `spawn_local` task would tie core 0 to this
            // thread until the connect gave up).
            let stream = TcpStream::connect((host, port)).await?;
            stream.set_nodelay(true)?;
            Ok(ClientStream(TicklessIo::new(stream)))
        })
    }
}

/// A tickless [`TcpStream`] as hyper's client wants it: hyper's `Read`/`Write` (through
/// [`TicklessIo`]) and hyper-util's `Connection`, which its `Client` and tonic's `Channel`
/// require of what a connector returns. Made by [`Connector`]; see the example on
/// [`get_ref`](Self::get_ref).
#[derive(Debug)]
pub struct ClientStream(TicklessIo<TcpStream>);

impl ClientStream {
    /// The stream.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless_http::Connector;
    /// use tickless::net::TcpListener;
    /// use tower::ServiceExt;
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let addr = listener.local_addr()?;
    ///     let stream = Connector.oneshot(format!("http://{addr}/").parse().unwrap()).await?;
    ///     assert_eq!(stream.get_ref().peer_addr()?, addr);
    ///     assert!(stream.get_ref().nodelay()?); // `Connector` sets it
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn get_ref(&self) -> &TcpStream {
        self.0.inner()
    }

    /// The stream, taken out.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use tickless_http::Connector;
    /// use tickless::net::TcpListener;
    /// use tower::ServiceExt;
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let uri = format!("http://{}/", listener.local_addr()?).parse().unwrap();
    ///     let mut stream = Connector.oneshot(uri).await?.into_inner(); // a `TcpStream`
    ///     stream.write_all(b"hi").await?;
    ///     let (mut served, _peer) = listener.accept().await?;
    ///     let mut hi = [0u8; 2];
    ///     served.read_exact(&mut hi).await?;
    ///     assert_eq!(&hi, b"hi");
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn into_inner(self) -> TcpStream {
        self.0.into_inner()
    }
}

impl Connection for ClientStream {
    fn connected(&self) -> Connected {
        Connected::new()
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
