//! hyper's runtime traits on tickless: [`TicklessTimer`] puts hyper's own
//! timeouts (HTTP/1 header read and keep-alive, HTTP/2 keep-alive pings) on the core's timer
//! wheel, [`TicklessExecutor`] spawns hyper's background tasks (HTTP/2 streams and the
//! connection's driver) on the current core, and [`TicklessIo`] gives hyper a tickless stream.
//!
//! Two ways to hand hyper a [`TcpStream`](tickless::net::TcpStream): [`TicklessIo`], which needs
//! no hyper-util, or hyper-util's `TokioIo` (tickless's `tokio-io` feature, which this crate
//! turns on), as for any tokio-io library. They behave the same and cost the same: both let the stream read straight into
//! hyper's uninitialised buffer, with no zeroing and no copy.
//!
//! # Examples
//!
//! An HTTP/1.1 and HTTP/2 (prior knowledge) server with a keep-alive timeout, one listener per
//! core (the whole program is `examples/hello_http.rs`):
//!
//! ```no_run
//! use std::convert::Infallible;
//! use std::time::Duration;
//!
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use hyper::{service::service_fn, Request, Response};
//! use hyper_util::server::conn::auto;
//! use tickless_http::hyper_rt::{TicklessExecutor, TicklessIo, TicklessTimer};
//!
//! async fn hello(_: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
//!     Ok(Response::new(Full::new(Bytes::from_static(b"Hello, world!"))))
//! }
//!
//! let rt = tickless::Runtime::new()?;
//! let mut http = auto::Builder::new(TicklessExecutor);
//! http.http1().timer(TicklessTimer).header_read_timeout(Duration::from_secs(5));
//! http.http2().timer(TicklessTimer).keep_alive_interval(Duration::from_secs(5));
//! let server = tickless::net::serve_per_core(
//!     &rt,
//!     "127.0.0.1:3000".parse().unwrap(),
//!     move |stream, _conn| {
//!         let http = http.clone();
//!         async move {
//!             let _ = http.serve_connection(TicklessIo::new(stream), service_fn(hello)).await;
//!         }
//!     },
//! )?;
//! rt.block_on(async {
//!     tickless::signal::ctrl_c().await?;
//!     server.shutdown(Duration::from_secs(5)).await
//! })?;
//! # std::io::Result::Ok(())
//! ```

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use futures_io::AsyncWrite;

use tickless::time::{self, Sleep};

/// hyper's [`Executor`](hyper::rt::Executor) on tickless: spawns on the current core with
/// [`spawn_local`](tickless::spawn_local), so hyper's futures need not be `Send` (HTTP/2 included).
///
/// hyper calls it from the connection's task, so the tasks it spawns run on the core that
/// accepted the connection, next to the connection's I/O objects. Being `spawn_local` tasks,
/// those spawned on core 0 keep its `block_on` to their thread while they live (see
/// [`Runtime`](tickless::Runtime)(tickless::Runtime#moving-it-between-threads)); `tickless_http::client`'s client
/// spawns its connections as `Send` tasks instead, so that it moves between threads.
///
/// # Panics
///
/// `execute` panics outside a tickless runtime.
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use hyper::rt::Executor;
/// use tickless_http::hyper_rt::TicklessExecutor;
///
/// // What hyper's HTTP/2 builders are given, to spawn their tasks with.
/// let _http2 = hyper::server::conn::http2::Builder::new(TicklessExecutor);
///
/// let rt = tickless::Builder::new().cores(1).build()?;
/// rt.block_on(async {
///     let ran = Rc::new(Cell::new(false)); // not `Send`: the task stays on this core
///     let flag = Rc::clone(&ran);
///     TicklessExecutor.execute(async move { flag.set(true) });
///     while !ran.get() {
///         tickless::yield_now().await;
///     }
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TicklessExecutor;

impl<F> hyper::rt::Executor<F> for TicklessExecutor
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn execute(&self, future: F) {
        // Detached: hyper keeps its own handles (channels) to what it spawns.
        drop(tickless::spawn_local(future));
    }
}

/// hyper's executor for `Send` futures, for hyper-util's client ([`crate::client`]): each
/// future a task of the calling core, as with [`TicklessExecutor`], but a `Send` one, so that
/// the connections a client pools on core 0 do not tie core 0 to one thread (a runtime whose
/// core 0 holds a `spawn_local` task cannot move: see [`Runtime`](tickless::Runtime)(tickless::Runtime)).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SendExecutor;

impl<F> hyper::rt::Executor<F> for SendExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        // Detached, as above; on this core (a handle's spawn is never placed elsewhere, as
        // `tickless::spawn` may place the task a connection's accept makes).
        drop(tickless::Handle::current().spawn(future));
    }
}

/// hyper's [`Timer`](hyper::rt::Timer) on tickless: each sleep is a [`time::Sleep`] on the
/// wheel of the core that polls it, with the runtime's default slack. `now` follows paused time.
///
/// A server gives it to `http1().timer(..)` and `http2().timer(..)`; hyper then arms one sleep
/// per request while it waits for the request's head (`header_read_timeout`, which is also the
/// HTTP/1 keep-alive timeout) and drops it when the head arrives: an insert and a cancel on the
/// wheel, no system call.
///
/// # Examples
///
/// Given to hyper, and used by hand on paused time (no real time passes):
///
/// ```
/// use std::time::Duration;
/// use hyper::rt::Timer;
/// use tickless_http::hyper_rt::TicklessTimer;
///
/// let mut http1 = hyper::server::conn::http1::Builder::new();
/// http1.timer(TicklessTimer).header_read_timeout(Duration::from_secs(5));
///
/// let rt = tickless::Builder::new().cores(1).start_paused(true).build()?;
/// rt.block_on(async {
///     let start = TicklessTimer.now();
///     TicklessTimer.sleep(Duration::from_secs(30)).await;
///     assert!(TicklessTimer.now() >= start + Duration::from_secs(30));
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TicklessTimer;

impl hyper::rt::Timer for TicklessTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(TicklessSleep(time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(TicklessSleep(time::sleep_until(deadline.into())))
    }

    fn now(&self) -> Instant {
        time::Instant::now().into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<TicklessSleep>() {
            // Keeps the registration: no allocation, an O(1) move on the wheel.
            Some(mut ours) => ours.0.reset(new_deadline.into()),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// A [`Sleep`] as hyper's `Sleep`.
#[derive(Debug)]
struct TicklessSleep(Sleep);

impl Future for TicklessSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for TicklessSleep {}

/// A tickless stream (a [`TcpStream`](tickless::net::TcpStream), its read half, a `UnixStream`, a
/// pipe) as hyper's [`Read`](hyper::rt::Read) and [`Write`](hyper::rt::Write): what
/// hyper-util's `TokioIo` is for tokio streams.
///
/// hyper reads into memory it has not initialised. `TicklessIo` hands that memory to the
/// stream's tokio [`AsyncRead`](tokio::io::AsyncRead) as an uninitialised `ReadBuf`, and the
/// stream's `read(2)` writes into it directly: nothing is zeroed, nothing is copied, and hyper
/// learns exactly how many bytes arrived. Reads take any tokio `AsyncRead`; writes go straight
/// through the stream's futures-io `AsyncWrite`.
///
/// # Examples
///
/// ```no_run
/// use hyper::service::service_fn;
/// use tickless_http::hyper_rt::TicklessIo;
/// # async fn f(stream: tickless::net::TcpStream) {
/// # async fn hello(_: hyper::Request<hyper::body::Incoming>)
/// #     -> Result<hyper::Response<String>, std::convert::Infallible> { todo!() }
/// let conn = hyper::server::conn::http1::Builder::new()
///     .serve_connection(TicklessIo::new(stream), service_fn(hello));
/// # let _ = conn.await;
/// # }
/// ```
#[derive(Debug)]
pub struct TicklessIo<T> {
    /// The stream.
    inner: T,
}

impl<T> TicklessIo<T> {
    /// Wraps a stream.
    ///
    /// # Examples
    ///
    /// One HTTP/1.1 connection served by hyper, and a client that speaks it by hand:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use hyper::{server::conn::http1, service::service_fn, Request, Response};
    /// use tickless_http::hyper_rt::TicklessIo;
    /// use tickless::net::{TcpListener, TcpStream};
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (stream, _peer) = listener.accept().await?;
    ///     let hello = service_fn(|_: Request<hyper::body::Incoming>| async {
    ///         Ok::<_, Infallible>(Response::new(String::from("hello")))
    ///     });
    ///     let conn = http1::Builder::new().serve_connection(TicklessIo::new(stream), hello);
    ///     let served = tickless::spawn_local(conn);
    ///     client.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await?;
    ///     let mut res = String::new();
    ///     client.read_to_string(&mut res).await?;
    ///     assert!(res.starts_with("HTTP/1.1 200 OK") && res.ends_with("hello"));
    ///     served.await.unwrap().unwrap();
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new(inner: T) -> TicklessIo<T> {
        TicklessIo { inner }
    }

    /// The stream.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless_http::hyper_rt::TicklessIo;
    /// use tickless::net::{TcpListener, TcpStream};
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let io = TicklessIo::new(TcpStream::connect(listener.local_addr()?).await?);
    ///     assert_eq!(io.inner().peer_addr()?, listener.local_addr()?);
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The stream, mutably.
    ///
    /// # Examples
    ///
    /// Writing to the stream directly, not through hyper:
    ///
    /// ```
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use tickless_http::hyper_rt::TicklessIo;
    /// use tickless::net::{TcpListener, TcpStream};
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut io = TicklessIo::new(TcpStream::connect(listener.local_addr()?).await?);
    ///     io.inner_mut().write_all(b"hi").await?;
    ///     let (mut served, _peer) = listener.accept().await?;
    ///     let mut hi = [0u8; 2];
    ///     served.read_exact(&mut hi).await?;
    ///     assert_eq!(&hi, b"hi");
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the stream.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless_http::hyper_rt::TicklessIo;
    /// use tickless::net::{TcpListener, TcpStream};
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let io = TicklessIo::new(TcpStream::connect(listener.local_addr()?).await?);
    ///     let stream: TcpStream = io.into_inner(); // once hyper has let go of it, say
    ///     stream.set_nodelay(true)?;
    ///     assert!(stream.nodelay()?);
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: tokio::io::AsyncRead + Unpin> hyper::rt::Read for TicklessIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let inner = Pin::new(&mut self.get_mut().inner);
        // SAFETY: `as_mut` requires that no byte hyper counts as initialised be de-initialised
        // through the slice. The slice goes only into a tokio `ReadBuf`, whose safe interface,
        // all `poll_read` can use, writes initialised bytes only.
        let space = unsafe { buf.as_mut() };
        let start = space.as_ptr().cast::<u8>();
        let mut read = tokio::io::ReadBuf::uninit(space);
        ready!(tokio::io::AsyncRead::poll_read(inner, cx, &mut read))?;
        // `poll_read` has a `&mut ReadBuf` and could have swapped in one over other memory;
        // then its filled length would say nothing about hyper's buffer.
        assert!(
            std::ptr::eq(read.filled().as_ptr(), start),
            "TicklessIo: the reader replaced the ReadBuf it was given"
        );
        let n = read.filled().len();
        // SAFETY: `read` is a `ReadBuf` over the start of the cursor's unfilled part (checked
        // above), and a `ReadBuf`'s filled part is always initialised: the first `n` bytes of
        // the cursor are.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> hyper::rt::Write for TicklessIo<T> {
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

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn _assert_send_sync<T: Send + Sync + Unpin>() {}

    #[test]
    fn sleeps_are_send_sync_and_unpin_as_hyper_requires() {
        _assert_send_sync::<TicklessSleep>();
    }
}
