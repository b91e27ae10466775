//! hyper's runtime traits on tickless (feature `hyper`): [`TicklessTimer`] puts hyper's own
//! timeouts (HTTP/1 header read and keep-alive, HTTP/2 keep-alive pings) on the core's timer
//! wheel, [`TicklessExecutor`] spawns hyper's background tasks (HTTP/2 streams and the
//! connection's driver) on the current core, and [`TicklessIo`] gives hyper a tickless stream.
//!
//! Two ways to hand hyper a [`TcpStream`](crate::net::TcpStream): [`TicklessIo`] (hyper's
//! `Read`/`Write` straight on the stream's futures-io impls), or hyper-util's `TokioIo` with
//! the `tokio-io` feature, as for any tokio-io library. They behave
//! the same; `TicklessIo` saves the zeroing of hyper's whole read buffer before each read that
//! going through tokio's `ReadBuf` costs.
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
//! use tickless::hyper_rt::{TicklessExecutor, TicklessIo, TicklessTimer};
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

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use futures_io::{AsyncRead, AsyncWrite};

use crate::time::{self, Sleep};

/// hyper's [`Executor`](hyper::rt::Executor) on tickless: spawns on the current core with
/// [`spawn_local`](crate::spawn_local), so hyper's futures need not be `Send` (HTTP/2 included).
///
/// hyper calls it from the connection's task, so the tasks it spawns run on the core that
/// accepted the connection, next to the connection's I/O objects.
///
/// # Panics
///
/// `execute` panics outside a tickless runtime.
#[derive(Debug, Clone, Copy, Default)]
pub struct TicklessExecutor;

impl<F> hyper::rt::Executor<F> for TicklessExecutor
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn execute(&self, future: F) {
        // Detached: hyper keeps its own handles (channels) to what it spawns.
        drop(crate::spawn_local(future));
    }
}

/// hyper's [`Timer`](hyper::rt::Timer) on tickless: each sleep is a [`time::Sleep`] on the
/// wheel of the core that polls it, with the runtime's default slack. `now` follows paused time.
///
/// A server gives it to `http1().timer(..)` and `http2().timer(..)`; hyper then arms one sleep
/// per request while it waits for the request's head (`header_read_timeout`, which is also the
/// HTTP/1 keep-alive timeout) and drops it when the head arrives: an insert and a cancel on the
/// wheel, no system call.
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

/// Bytes one [`TicklessIo`] read may take: a read fills at most this much of hyper's buffer.
const SCRATCH_LEN: usize = 64 * 1024;

thread_local! {
    /// Where [`TicklessIo`] reads land before they are copied into hyper's buffer: one per
    /// core thread, zeroed once, shared by every connection of the core (a read never waits
    /// while holding it).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A futures-io stream (a [`TcpStream`](crate::net::TcpStream), its halves, a `UnixStream`) as
/// hyper's [`Read`](hyper::rt::Read) and [`Write`](hyper::rt::Write): what hyper-util's
/// `TokioIo` is for tokio streams.
///
/// hyper reads into memory it has not initialised. Safe code must initialise memory before a
/// read fills it: going through tokio's `ReadBuf` zeroes the whole free part of hyper's buffer
/// (8 KiB or more) before every read, whatever arrives. `TicklessIo` reads instead into a
/// per-thread scratch buffer zeroed once, and copies into hyper's buffer only the bytes that
/// arrived. Writes go straight through.
///
/// # Examples
///
/// ```no_run
/// use hyper::service::service_fn;
/// use tickless::hyper_rt::TicklessIo;
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
    pub fn new(inner: T) -> TicklessIo<T> {
        TicklessIo { inner }
    }

    /// The stream.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The stream, mutably.
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the stream.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: AsyncRead + Unpin> hyper::rt::Read for TicklessIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let want = buf.remaining().min(SCRATCH_LEN);
        let inner = Pin::new(&mut self.get_mut().inner);
        SCRATCH.with(|scratch| {
            let mut local;
            let mut borrowed = scratch.try_borrow_mut();
            let space: &mut [u8] = match &mut borrowed {
                Ok(scratch) => {
                    if scratch.len() < SCRATCH_LEN {
                        scratch.resize(SCRATCH_LEN, 0);
                    }
                    &mut scratch[..want]
                }
                // Only when the inner stream is itself read through a `TicklessIo` on this
                // thread, which holds the scratch buffer: use a buffer of our own.
                Err(_) => {
                    local = vec![0u8; want];
                    &mut local
                }
            };
            let n = ready!(inner.poll_read(cx, space))?;
            buf.put_slice(&space[..n]);
            Poll::Ready(Ok(()))
        })
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
