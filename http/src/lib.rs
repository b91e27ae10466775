//! HTTP on tickless, the thread-per-core runtime (which itself has no HTTP dependency): what
//! `axum::serve` and hyper-util's `Client` are on tokio, with hyper on the core that accepted
//! the connection, hyper's timers on that core's wheel, and no tokio runtime.
//!
//! - [`serve`] serves any tower `Service` (an axum `Router` included), or a make-service
//!   called with each connection's address ([`ConnService`]), on every core of a
//!   [`Runtime`], given the runtime: it returns the [`Server`] that
//!   [`serve_per_core`](tickless::net::serve_per_core) returns.
//! - [`run`] does the same from inside the runtime (`#[tickless::main] async fn main`), as
//!   `axum::serve(listener, app).await` does on tokio: its future ends when the
//!   [graceful shutdown](Run::with_graceful_shutdown) it is given has finished.
//! - [`Http`] holds the settings of both (hyper's header timeout, a per-request timeout).
//! - [`client`] is hyper-util's `Client` over tickless streams ([`Connector`]).
//! - [`on_core`] runs an upgraded connection (a WebSocket) as a task of the core that served its
//!   request (axum's `WebSocketUpgrade::on_upgrade` runs it on that core's tokio runtime, with
//!   the tokio context; `on_core` makes it a tickless task, whose future need not be `Send`).
//! - [`tower`] has tower-http's and tower's timeout layers with their timers on the core's
//!   wheel; [`hyper_rt`], hyper's runtime traits on tickless, for serving with hyper directly.
//!
//! # What serving does
//!
//! Each core binds its own `SO_REUSEPORT` listener on the address and serves the connections it
//! accepts, start to end, on its own thread (see [`Serve`] for the accept
//! loop, its back-off on descriptor exhaustion and its counters). An address that anything else
//! holds (another copy of the server, another server of this process) fails with `AddrInUse`,
//! as tokio's `TcpListener::bind` does, unless every server on it shares on purpose
//! ([`Serve::reuse_port`], through [`Http::accept`]).
//!
//! A connection speaks HTTP/1.1, with its upgrades, as on `axum::serve` with axum's default
//! features: one that opens with HTTP/2's preface is closed. With this crate's `http2` cargo
//! feature, `Http::http2(true)` serves HTTP/2 with prior knowledge (what gRPC clients
//! speak) beside it on the same port, HTTP/2's extended CONNECT (WebSockets) included; without
//! the feature, hyper's HTTP/2 and `h2` are not compiled in. hyper's background tasks run on
//! the connection's core, and its timers are [`time::Sleep`](tickless::time::Sleep)s on that
//! core's wheel.
//!
//! A graceful shutdown ([`Server::shutdown`], or the end of [`Run`]'s signal) closes every
//! core's listener, lets each request in flight finish and closes idle keep-alive connections at
//! once (hyper's `graceful_shutdown`), so that it ends when the last request does; the grace
//! period bounds it.
//!
//! Differences from `axum::serve`, all settings of [`Http`] with axum's behaviour as the
//! default: a request's head is not timed ([`Http::header_read_timeout`] times it, and the idle
//! keep-alive connection with it); requests are not timed ([`Http::request_timeout`] answers a
//! late one `408 Request Timeout`, in front of every layer of the service). And where axum
//! serves from the one listener it is given, tickless binds one per core.
//!
//! # Examples
//!
//! An axum app, from `main`:
//!
//! ```ignore
//! #[tickless::main]
//! async fn main() -> std::io::Result<()> {
//!     let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
//!     tickless_http::run("127.0.0.1:3000", app)
//!         .with_graceful_shutdown(async { tickless::signal::ctrl_c().await.unwrap() })
//!         .await
//! }
//! ```
//!
//! Any tower service, here a `service_fn`, with the runtime at hand, called with the client:
//!
//! ```
//! use std::convert::Infallible;
//! use std::time::Duration;
//!
//! use http::{Request, Response};
//! use http_body_util::{BodyExt, Empty, Full};
//! use bytes::Bytes;
//!
//! let rt = tickless::Runtime::new()?;
//! let hello = tower::service_fn(|_req: Request<hyper::body::Incoming>| async {
//!     Ok::<_, Infallible>(Response::new(Full::<Bytes>::from("hello")))
//! });
//! let server = tickless_http::serve(&rt, "127.0.0.1:0".parse().unwrap(), hello)?;
//! let uri = format!("http://{}/", server.local_addr());
//! rt.block_on(async {
//!     let client = tickless_http::client::<Empty<Bytes>>();
//!     let res = client.get(uri.parse().unwrap()).await.unwrap();
//!     let body = res.into_body().collect().await.unwrap().to_bytes();
//!     assert_eq!(body, "hello");
//!     server.shutdown(Duration::from_secs(5)).await
//! })?;
//! # std::io::Result::Ok(())
//! ```

mod body;
mod client;
mod connect;
mod head;
pub mod hyper_rt;
pub mod tower;
mod upgrade;

use std::fmt;
use std::future::{Future, IntoFuture};
use std::io;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

#[cfg(feature = "http2")]
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;

#[cfg(feature = "http2")]
use crate::hyper_rt::TicklessExecutor;
use crate::hyper_rt::{TicklessIo, TicklessTimer};
use tickless::__private::{Addrs, Bound};
use tickless::net::{Serve, Server, ToSocketAddrs};
use tickless::{Handle, Runtime};

use body::Respond;
pub use client::{client, Client, ClientStream, Connector};
pub use connect::{ConnService, MakeService, RequestService};
use head::Rewind;
pub use upgrade::{on_core, OnCore};

/// What tower and hyper box their errors as.
///
/// # Examples
///
/// ```
/// use tickless_http::BoxError;
///
/// fn parse_port(s: &str) -> Result<u16, BoxError> {
///     Ok(s.parse::<u16>()?) // any `Error + Send + Sync` converts with `?`
/// }
///
/// assert_eq!(parse_port("80")?, 80);
/// let err = parse_port("eighty").unwrap_err();
/// assert!(err.is::<std::num::ParseIntError>());
/// # Ok::<(), BoxError>(())
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves `service` over HTTP on every core of `rt`, listening on `addr`: [`Http::serve`] with
/// the defaults. See the [module docs](self) for what serving does.
///
/// # Errors
///
/// Binding the listeners failed; nothing was started then.
///
/// # Examples
///
/// ```no_run
/// # use std::convert::Infallible;
/// # let app = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
/// #     Ok::<_, Infallible>(http::Response::new(http_body_util::Empty::<bytes::Bytes>::new()))
/// # });
/// let rt = tickless::Runtime::new()?; // one core per CPU
/// let server = tickless_http::serve(&rt, "0.0.0.0:3000".parse().unwrap(), app)?;
/// rt.block_on(async {
///     tickless::signal::ctrl_c().await?;
///     server.shutdown(std::time::Duration::from_secs(10)).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub fn serve<S, M>(rt: &Runtime, addr: SocketAddr, service: S) -> io::Result<Server>
where
    S: ConnService<M>,
{
    Http::new().serve(rt, addr, service)
}

/// Serves `service` over HTTP on every core of the runtime running the caller, listening on
/// `addr`: `axum::serve(listener, app)` for `#[tickless::main] async fn main`. [`Http::run`]
/// with the defaults.
///
/// `addr` is a [`ToSocketAddrs`] (tokio's: a `SocketAddr`, an `(IpAddr, u16)`, a `"host:port"`
/// string, a `(host, port)` pair). An address is bound here (an error comes out of the
/// future, and [`Run::local_addr`] knows the port at once); a host name is looked up where
/// [`TcpStream::connect`](tickless::net::TcpStream::connect) looks it up, on the runtime's
/// blocking pool, when the future is first polled (never on the core's thread), then bound.
/// Serving starts when the future is first polled and ends when the signal given to
/// [`with_graceful_shutdown`](Run::with_graceful_shutdown) has completed and the shutdown it
/// starts has finished; without one, never.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
///
/// use http::{Request, Response};
/// use http_body_util::{BodyExt, Empty, Full};
/// use bytes::Bytes;
///
/// #[tickless::main(cores = 2)]
/// async fn main() -> std::io::Result<()> {
///     let hello = tower::service_fn(|_req: Request<hyper::body::Incoming>| async {
///         Ok::<_, Infallible>(Response::new(Full::<Bytes>::from("hello")))
///     });
///     let run = tickless_http::run("127.0.0.1:0", hello);
///     let uri = format!("http://{}/", run.local_addr()?);
///     let client = tickless::spawn(async move {
///         let client = tickless_http::client::<Empty<Bytes>>();
///         let res = client.get(uri.parse().unwrap()).await.unwrap();
///         res.into_body().collect().await.unwrap().to_bytes()
///     });
///     // Shut down once the client has its answer; `run` ends when the shutdown has.
///     run.with_graceful_shutdown(async move {
///         assert_eq!(client.await.unwrap(), "hello");
///     })
///     .await?;
///     Ok(())
/// }
/// ```
///
/// # Panics
///
/// Outside a tickless runtime.
pub fn run<A, S, M>(addr: A, service: S) -> Run<S, M>
where
    A: ToSocketAddrs,
    S: ConnService<M>,
{
    Http::new().run(addr, service)
}

/// The settings of [`serve`] and [`run`], for serving with other than the defaults.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// # use std::convert::Infallible;
/// # let app = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
/// #     Ok::<_, Infallible>(http::Response::new(http_body_util::Empty::<bytes::Bytes>::new()))
/// # });
///
/// let rt = tickless::Runtime::new()?;
/// let server = tickless_http::Http::new()
///     .header_read_timeout(Duration::from_secs(30))
///     .request_timeout(Duration::from_secs(10))
///     .serve(&rt, "0.0.0.0:3000".parse().unwrap(), app)?;
/// # drop(server);
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone)]
pub struct Http {
    /// hyper's HTTP/1 header read timeout.
    header_read_timeout: Option<Duration>,
    /// The per-request timeout, answered 408.
    request_timeout: Option<Duration>,
    /// Serve HTTP/2 (prior knowledge) beside HTTP/1.1.
    #[cfg(feature = "http2")]
    http2: bool,
    /// The accept loops' settings.
    serve: Serve,
}

impl Default for Http {
    fn default() -> Self {
        Http::new()
    }
}

impl Http {
    /// axum's defaults: no timeout on a request's head or on a request.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless_http::Http;
    /// # use std::convert::Infallible;
    /// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
    /// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
    /// #     Ok::<_, Infallible>(http::Response::new(body))
    /// # });
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// // What `tickless_http::serve(&rt, addr, hello)` does:
    /// let server = Http::new().serve(&rt, "127.0.0.1:0".parse().unwrap(), hello)?;
    /// rt.block_on(server.shutdown(Duration::from_secs(5)))?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new() -> Http {
        Http {
            header_read_timeout: None,
            request_timeout: None,
            #[cfg(feature = "http2")]
            http2: false,
            serve: Serve::new(SocketAddr::from(([0, 0, 0, 0], 0))),
        }
    }

    /// Closes a connection whose opening has not arrived `timeout` after it was accepted: the
    /// bytes that choose the protocol and the whole first request head on HTTP/1.1, the
    /// preface and the first frame (the client's SETTINGS) on HTTP/2; and an HTTP/1
    /// connection whose next request's head has not arrived `timeout` after the previous
    /// response (hyper's `header_read_timeout`, which is also the keep-alive timeout of an
    /// idle connection). A client that sends one byte, half a head, or the preface and half a
    /// SETTINGS frame, and stops, is disconnected at the timeout. The timers are sleeps on the
    /// core's wheel: an insert and a cancel per connection and per request, no system call.
    /// Default: none, as `axum::serve` (hyper's own default, with a timer set, is 30 s).
    ///
    /// # Implementation
    ///
    /// hyper-util's `auto` builder reads up to 24 bytes to tell HTTP/2's preface from HTTP/1
    /// before hyper's header timer starts, and hyper's HTTP/2 has no header timer. So, with
    /// the setting, the connection's task reads the opening itself (up to 16 KiB of an HTTP/1
    /// head; hyper's own timer times the rest of a longer one), and hands it to hyper in front
    /// of the stream. Without it, hyper reads the stream directly.
    ///
    /// # Examples
    ///
    /// A client that connects and says nothing is disconnected (on paused time, so that no
    /// real time passes):
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_lite::AsyncReadExt;
    /// use tickless_http::Http;
    /// # use std::convert::Infallible;
    /// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
    /// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
    /// #     Ok::<_, Infallible>(http::Response::new(body))
    /// # });
    ///
    /// let rt = tickless::Builder::new().cores(1).start_paused(true).build()?;
    /// let server = Http::new()
    ///     .header_read_timeout(Duration::from_secs(30))
    ///     .serve(&rt, "127.0.0.1:0".parse().unwrap(), hello)?;
    /// rt.block_on(async {
    ///     let mut silent = tickless::net::TcpStream::connect(server.local_addr()).await?;
    ///     let mut got = Vec::new();
    ///     silent.read_to_end(&mut got).await?; // the server closed the connection
    ///     assert!(got.is_empty());
    ///     server.shutdown(Duration::from_secs(5)).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn header_read_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.header_read_timeout = Some(timeout);
        self
    }

    /// Answers `408 Request Timeout` (with an empty body) to a request whose response is not
    /// ready `timeout` after the request's head arrived, dropping the service's future: as
    /// [`tower::TimeoutLayer`] placed around the whole service, for
    /// any body type. A response that is ready at its first poll costs no timer. Default: none.
    ///
    /// # Examples
    ///
    /// A handler that takes a minute, answered after 10 s (on paused time, so that no real
    /// time passes):
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response, StatusCode};
    /// use http_body_util::{Empty, Full};
    /// use tickless_http::Http;
    ///
    /// let rt = tickless::Builder::new().cores(1).start_paused(true).build()?;
    /// let slow = tower::service_fn(|_req: Request<hyper::body::Incoming>| async {
    ///     tickless::time::sleep(Duration::from_secs(60)).await;
    ///     Ok::<_, Infallible>(Response::new(Full::<Bytes>::from("too late")))
    /// });
    /// let server = Http::new()
    ///     .request_timeout(Duration::from_secs(10))
    ///     .serve(&rt, "127.0.0.1:0".parse().unwrap(), slow)?;
    /// let uri = format!("http://{}/", server.local_addr());
    /// rt.block_on(async {
    ///     let client = tickless_http::client::<Empty<Bytes>>();
    ///     let res = client.get(uri.parse().unwrap()).await.unwrap();
    ///     assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    ///     server.shutdown(Duration::from_secs(5)).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn request_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// Serves HTTP/2 with prior knowledge (a connection that opens with HTTP/2's preface, as
    /// gRPC clients' do) beside HTTP/1.1 on the same port, HTTP/2's extended CONNECT
    /// (WebSockets) included. Default `false`: HTTP/1.1 only, where an HTTP/2 client's
    /// connection is closed at its preface, as on `axum::serve` without axum's `http2`
    /// feature. Only with this crate's `http2` cargo feature (which compiles hyper's HTTP/2
    /// and `h2` in); unlike axum's feature, which alone turns HTTP/2 on, the feature makes
    /// this setting available, and the setting turns it on.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bytes::Bytes;
    /// use http_body_util::Empty;
    /// use hyper_util::client::legacy::Client;
    /// use tickless_http::{hyper_rt::TicklessExecutor, Connector, Http};
    /// # use std::convert::Infallible;
    /// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
    /// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
    /// #     Ok::<_, Infallible>(http::Response::new(body))
    /// # });
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let server = Http::new()
    ///     .http2(true)
    ///     .serve(&rt, "127.0.0.1:0".parse().unwrap(), hello)?;
    /// let uri: http::Uri = format!("http://{}/", server.local_addr()).parse().unwrap();
    /// rt.block_on(async {
    ///     let h2: Client<Connector, Empty<Bytes>> =
    ///         Client::builder(TicklessExecutor).http2_only(true).build(Connector);
    ///     let res = h2.get(uri).await.unwrap();
    ///     assert_eq!(res.version(), http::Version::HTTP_2);
    ///     server.shutdown(Duration::from_secs(5)).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    #[cfg(feature = "http2")]
    pub fn http2(&mut self, enabled: bool) -> &mut Self {
        self.http2 = enabled;
        self
    }

    /// The settings of the accept loops ([`Serve`]'s: back-off after a failed accept,
    /// `TCP_NODELAY`, the accept-error hook); the address given to them is not used.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless_http::Http;
    /// # use std::convert::Infallible;
    /// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
    /// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
    /// #     Ok::<_, Infallible>(http::Response::new(body))
    /// # });
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let mut http = Http::new();
    /// http.accept()
    ///     .accept_backoff(Duration::from_millis(1), Duration::from_millis(100))
    ///     .on_accept_error(|core, e| eprintln!("core {core}: accept: {e}"));
    /// let server = http.serve(&rt, "127.0.0.1:0".parse().unwrap(), hello)?;
    /// rt.block_on(server.shutdown(Duration::from_secs(5)))?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn accept(&mut self) -> &mut Serve {
        &mut self.serve
    }

    /// Serves `service` over HTTP on every core of `rt`, listening on `addr`. See the [module
    /// docs](self).
    ///
    /// # Errors
    ///
    /// Binding the listeners failed; nothing was started then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response};
    /// use http_body_util::{BodyExt, Empty, Full};
    /// use tickless_http::Http;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let hello = tower::service_fn(|_req: Request<hyper::body::Incoming>| async {
    ///     Ok::<_, Infallible>(Response::new(Full::<Bytes>::from("hello")))
    /// });
    /// let server = Http::new()
    ///     .request_timeout(Duration::from_secs(10))
    ///     .serve(&rt, "127.0.0.1:0".parse().unwrap(), hello)?;
    /// let uri = format!("http://{}/", server.local_addr());
    /// rt.block_on(async {
    ///     let client = tickless_http::client::<Empty<Bytes>>();
    ///     let res = client.get(uri.parse().unwrap()).await.unwrap();
    ///     assert_eq!(res.into_body().collect().await.unwrap().to_bytes(), "hello");
    ///     server.shutdown(Duration::from_secs(5)).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn serve<S, M>(&self, rt: &Runtime, addr: SocketAddr, service: S) -> io::Result<Server>
    where
        S: ConnService<M>,
    {
        let bound = Bound::bind(&self.serve, addr, rt.cores())?;
        let handles = (0..rt.cores()).map(|core| rt.handle(core)).collect();
        Ok(self.start(bound, handles, service))
    }

    /// Serves `service` over HTTP on every core of the runtime running the caller, listening on
    /// `addr`: see [`run`].
    ///
    /// # Panics
    ///
    /// Outside a tickless runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless_http::Http;
    /// # use std::convert::Infallible;
    /// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
    /// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
    /// #     Ok::<_, Infallible>(http::Response::new(body))
    /// # });
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// rt.block_on(async {
    ///     let run = Http::new()
    ///         .header_read_timeout(Duration::from_secs(30))
    ///         .run("127.0.0.1:0", hello);
    ///     println!("serving on {}", run.local_addr()?);
    ///     run.with_graceful_shutdown(async {}).await // a signal that has already come
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn run<A, S, M>(&self, addr: A, service: S) -> Run<S, M>
    where
        A: ToSocketAddrs,
        S: ConnService<M>,
    {
        let handles = Handle::all_current().expect(
            "tickless_http::run outside a tickless runtime: call it from a task (in \
             `#[tickless::main] async fn main`), or use tickless_http::serve(&rt, ..)",
        );
        let binding = match addr.to_addrs() {
            Ok(Addrs::Ready(addrs)) => match self.bind_first(&addrs, handles.len()) {
                Ok(bound) => Binding::Bound(bound),
                Err(e) => Binding::Failed(e),
            },
            // Not here: the lookup may block (`/etc/hosts`, a slow DNS server).
            Ok(Addrs::Lookup(name)) => Binding::Lookup(name),
            Err(e) => Binding::Failed(e),
        };
        Run {
            http: self.clone(),
            binding,
            handles,
            service,
            signal: None,
            grace: None,
            kind: PhantomData,
        }
    }

    /// hyper's server builder with these settings: HTTP/1.1, and HTTP/2 on the same port
    /// where asked; hyper's tasks on the connection's core, its timers on the core's wheel.
    fn builder(&self) -> Protocols {
        #[cfg(feature = "http2")]
        if self.http2 {
            let mut http = auto::Builder::new(TicklessExecutor);
            http.http1()
                .timer(TicklessTimer)
                .header_read_timeout(self.header_read_timeout);
            http.http2().timer(TicklessTimer).enable_connect_protocol();
            return Protocols::Both(http);
        }
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1
            .timer(TicklessTimer)
            .header_read_timeout(self.header_read_timeout);
        Protocols::Http1(http1)
    }

    /// Binds one listener per core (of `cores`) at the first of `addrs` that works, as
    /// tokio's `TcpListener::bind` does; the last error if none does.
    fn bind_first(&self, addrs: &[SocketAddr], cores: usize) -> io::Result<Bound> {
        let mut last = None;
        for &addr in addrs {
            match Bound::bind(&self.serve, addr, cores) {
                Ok(bound) => return Ok(bound),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve to any address",
            )
        }))
    }

    /// Starts serving on the listeners `bound` for the cores of `handles`.
    fn start<S, M>(&self, bound: Bound, handles: Vec<Handle>, service: S) -> Server
    where
        S: ConnService<M>,
    {
        let http = self.builder();
        let request_timeout = self.request_timeout;
        let head_limit = self.header_read_timeout;
        // Each connection's task is named after the service, for the stall detector's reports.
        let mut serve = self.serve.clone();
        serve.task_name(std::any::type_name::<S>());
        bound.start(&serve, handles, move |mut stream, conn| {
            let http = http.clone();
            let make = service.clone();
            async move {
                // The protocol's choice and the first head (HTTP/2: its first frame), timed
                // here; hyper times the later heads of HTTP/1.
                let opening = match head_limit {
                    None => Vec::new(),
                    Some(limit) => match head::opening_within(&mut stream, limit, &conn).await {
                        Some(opening) => opening,
                        None => return,
                    },
                };
                // The connection's service: a clone of a request service, or what a
                // make-service makes for the peer's address. An error closes the connection.
                let Ok(service) = make.make(conn.peer_addr()).await else {
                    return;
                };
                let service = TowerToHyperService::new(Respond::new(service, request_timeout));
                let io = Rewind::new(opening, TicklessIo::new(stream));
                // A client that resets or goes away is an ordinary end of a connection.
                match &http {
                    Protocols::Http1(http1) => {
                        let served = http1.serve_connection(io, service).with_upgrades();
                        let _ordinary_end = conn.graceful(served, |c| c.graceful_shutdown()).await;
                    }
                    #[cfg(feature = "http2")]
                    Protocols::Both(http) => {
                        let served = http.serve_connection_with_upgrades(io, service);
                        let _ordinary_end = conn.graceful(served, |c| c.graceful_shutdown()).await;
                    }
                }
            }
        })
    }
}

/// hyper's connection builder for what [`Http`] serves.
#[derive(Clone)]
enum Protocols {
    /// HTTP/1.1 only: an HTTP/2 preface is a parse error, and the connection is closed, as on
    /// `axum::serve` without axum's `http2` feature.
    Http1(hyper::server::conn::http1::Builder),
    /// HTTP/1.1, and HTTP/2 for a connection that opens with its preface (`Http::http2`).
    #[cfg(feature = "http2")]
    Both(auto::Builder<TicklessExecutor>),
}

/// Where a [`Run`] stands with its listeners.
#[derive(Debug)]
enum Binding {
    /// Bound, one per core.
    Bound(Bound),
    /// A host name, looked up on the blocking pool when the future is first polled.
    Lookup(String),
    /// Resolving or binding failed.
    Failed(io::Error),
}

/// A shutdown signal.
type Signal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// HTTP served from inside the runtime: made by [`run`], a future once awaited.
///
/// `.await` starts serving and completes with `Ok(())` when the shutdown begun by the
/// [signal](Self::with_graceful_shutdown) has finished, or with the error that binding the
/// listeners gave.
///
/// Dropping the future stops serving, as dropping `axum::serve`'s stops accepting: the
/// listeners close, and a graceful shutdown (within the [grace period](Self::grace_period))
/// lets the requests in flight finish and closes idle connections. So a server run as an
/// aborted task, or in a `select!` whose other branch won, is gone. A `Run` dropped before
/// it is awaited has served nothing; its listeners close with it.
///
/// It is `Send`, and so is the future it becomes, as `axum::serve`'s: a server may run as a
/// task of its own, `tickless::spawn(async move { run.await })` (the shape of
/// `tokio::spawn(async move { axum::serve(listener, app).await })` in axum's tests). `M` says
/// which kind of [`ConnService`] `S` is; it is inferred.
///
/// # Examples
///
/// An address that another socket holds: the error comes out of the future.
///
/// ```
/// use std::io::ErrorKind;
/// # use std::convert::Infallible;
/// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
/// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
/// #     Ok::<_, Infallible>(http::Response::new(body))
/// # });
///
/// let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let rt = tickless::Builder::new().cores(2).build()?;
/// rt.block_on(async {
///     let run = tickless_http::run(taken.local_addr().unwrap(), hello);
///     assert_eq!(run.local_addr().unwrap_err().kind(), ErrorKind::AddrInUse);
///     assert_eq!(run.await.unwrap_err().kind(), ErrorKind::AddrInUse);
/// });
/// # std::io::Result::Ok(())
/// ```
#[must_use = "nothing is served until it is awaited"]
pub struct Run<S, M> {
    /// The settings.
    http: Http,
    /// The listeners, or the name to look up before binding them, or why there are none.
    binding: Binding,
    /// The cores to serve on.
    handles: Vec<Handle>,
    /// What is served.
    service: S,
    /// The shutdown signal; `None` for never.
    signal: Option<Signal>,
    /// The grace period; `None` for as long as it takes.
    grace: Option<Duration>,
    /// Which kind of [`ConnService`] `S` is.
    kind: PhantomData<fn() -> M>,
}

impl<S, M> Run<S, M> {
    /// The address the listeners are bound to (with the port the kernel picked for port 0).
    ///
    /// # Errors
    ///
    /// Binding them failed (the same error `.await` returns); or `WouldBlock` for a host name,
    /// which is looked up (on the blocking pool) when the future is first polled, and bound
    /// then.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::convert::Infallible;
    /// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
    /// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
    /// #     Ok::<_, Infallible>(http::Response::new(body))
    /// # });
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// rt.block_on(async {
    ///     let run = tickless_http::run("127.0.0.1:0", hello);
    ///     let addr = run.local_addr()?; // bound already, before `.await`
    ///     assert_ne!(addr.port(), 0);
    ///     run.with_graceful_shutdown(async {}).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.binding {
            Binding::Bound(bound) => Ok(bound.local_addr()),
            Binding::Lookup(name) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "`{name}` is looked up (on the blocking pool) when the future is first \
                     polled; its address is known then (bind an IP address to know it here)"
                ),
            )),
            Binding::Failed(e) => Err(io::Error::new(e.kind(), e.to_string())),
        }
    }

    /// Shuts the server down gracefully when `signal` completes: every core stops accepting,
    /// requests in flight finish, idle connections close; the future then completes. As
    /// axum's `Serve::with_graceful_shutdown`, whose signal `signal::ctrl_c` makes here
    /// (`async { tickless::signal::ctrl_c().await.unwrap() }`). The signal must be `Send`, as
    /// axum's must, so that the server's future is `Send` (see [`Run`]).
    ///
    /// # Examples
    ///
    /// Shut down once two requests have been answered:
    ///
    /// ```
    /// use bytes::Bytes;
    /// use http_body_util::Empty;
    /// # use std::convert::Infallible;
    /// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
    /// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
    /// #     Ok::<_, Infallible>(http::Response::new(body))
    /// # });
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// rt.block_on(async {
    ///     let run = tickless_http::run("127.0.0.1:0", hello);
    ///     let uri: http::Uri = format!("http://{}/", run.local_addr()?).parse().unwrap();
    ///     let requests = tickless::spawn(async move {
    ///         let client = tickless_http::client::<Empty<Bytes>>();
    ///         for _ in 0..2 {
    ///             assert!(client.get(uri.clone()).await.unwrap().status().is_success());
    ///         }
    ///     });
    ///     run.with_graceful_shutdown(async { requests.await.unwrap() }).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn with_graceful_shutdown<F>(mut self, signal: F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.signal = Some(Box::pin(signal));
        self
    }

    /// Bounds the graceful shutdown: connections still open `grace` after the signal are
    /// aborted (their futures dropped, their sockets closed). Default: no bound, as axum.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # use std::convert::Infallible;
    /// # let hello = tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
    /// #     let body = http_body_util::Full::<bytes::Bytes>::from("hello");
    /// #     Ok::<_, Infallible>(http::Response::new(body))
    /// # });
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// rt.block_on(async {
    ///     tickless_http::run("127.0.0.1:0", hello)
    ///         .grace_period(Duration::from_secs(10)) // then connections still open are cut
    ///         .with_graceful_shutdown(async {})
    ///         .await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }
}

impl<S, M> IntoFuture for Run<S, M>
where
    S: ConnService<M>,
{
    type Output = io::Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let handles = self.handles;
            let bound = match self.binding {
                Binding::Bound(bound) => bound,
                Binding::Failed(e) => return Err(e),
                Binding::Lookup(name) => {
                    let addrs: Vec<SocketAddr> = tickless::net::lookup_host(name).await?.collect();
                    self.http.bind_first(&addrs, handles.len())?
                }
            };
            // No bound: the shutdown's deadline saturates at a year.
            let grace = self.grace.unwrap_or(Duration::MAX);
            let server = self.http.start(bound, handles, self.service);
            // Dropped before the signal (the task serving it aborted, a `select!` that took
            // another branch), the future shuts the server down as the signal would have.
            let mut serving = StopOnDrop {
                server: Some(server),
                grace,
            };
            match self.signal {
                Some(signal) => signal.await,
                None => std::future::pending().await,
            }
            let server = serving.server.take().expect("taken once, here");
            server.shutdown(grace).await.map(drop)
        })
    }
}

/// A server that [`Run`]'s future started, shut down (gracefully, within the grace period) if
/// the future is dropped while it serves.
struct StopOnDrop {
    /// The server, until the signal has come.
    server: Option<Server>,
    /// The grace period.
    grace: Duration,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            // Here, on the dropping thread: every listener is shut down at once (whether or not
            // a thread runs core 0, outside `block_on`), and the connections finish on their
            // own cores.
            server.shutdown_detached(self.grace);
        }
    }
}

impl<S, M> fmt::Debug for Run<S, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("local_addr", &self.local_addr().ok())
            .field("http", &self.http)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}
