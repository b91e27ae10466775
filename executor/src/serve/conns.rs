//! One core's live connections: what a graceful shutdown waits for, tells, and aborts.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use slab::Slab;

use super::stats::Counters;

/// The connection tasks of one core's accept loop. Lives on that core only (`Rc`).
pub(super) struct Conns {
    /// Live connection tasks, each with the waker of its last poll (to abort it).
    live: RefCell<Slab<Option<Waker>>>,
    /// Set when the server stops accepting: handlers should finish up.
    draining: Cell<bool>,
    /// Set when the grace period is over: every connection task ends at its next poll.
    aborting: Cell<bool>,
    /// Tasks waiting in [`ShutdownRequested`], woken when draining starts.
    drain_waiters: RefCell<Slab<Waker>>,
    /// The accept loop, waiting for `live` to become empty.
    closed_waiter: RefCell<Option<Waker>>,
    /// This core's counters.
    counters: Arc<Counters>,
}

impl Conns {
    /// No connections yet.
    pub(super) fn new(counters: Arc<Counters>) -> Rc<Conns> {
        Rc::new(Conns {
            live: RefCell::new(Slab::new()),
            draining: Cell::new(false),
            aborting: Cell::new(false),
            drain_waiters: RefCell::new(Slab::new()),
            closed_waiter: RefCell::new(None),
            counters,
        })
    }

    /// Wraps a new connection's future so that it is counted, can be told to drain and can be
    /// aborted.
    pub(super) fn track<F: Future<Output = ()>>(
        self: &Rc<Self>,
        make: impl FnOnce(ConnInfo) -> F,
        peer: SocketAddr,
        core: usize,
    ) -> Tracked<F> {
        let info = ConnInfo {
            peer,
            core,
            conns: Rc::clone(self),
        };
        // Make the future first: if the handler panics, nothing is left to undo.
        let inner = make(info);
        let key = self.live.borrow_mut().insert(None);
        Counters::bump(&self.counters.open);
        Tracked {
            inner,
            conns: Rc::clone(self),
            key,
        }
    }

    /// Live connections.
    pub(super) fn len(&self) -> usize {
        self.live.borrow().len()
    }

    /// Tells every handler that the server is stopping.
    pub(super) fn start_draining(&self) {
        self.draining.set(true);
        let waiters: Vec<Waker> = self.drain_waiters.borrow_mut().drain().collect();
        for w in waiters {
            w.wake();
        }
    }

    /// Makes every live connection task end at its next poll (dropping its future); returns
    /// how many there were.
    pub(super) fn abort_all(&self) -> usize {
        self.aborting.set(true);
        let wakers: Vec<Waker> = self
            .live
            .borrow()
            .iter()
            .filter_map(|(_, w)| w.clone())
            .collect();
        let n = self.len();
        for w in wakers {
            w.wake();
        }
        n
    }

    /// Completes once no connection task is left.
    pub(super) fn all_closed(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.live.borrow().is_empty() {
                Poll::Ready(())
            } else {
                *self.closed_waiter.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }

    /// A connection task is gone.
    fn remove(&self, key: usize) {
        // `try_borrow_mut`: a task dropped by the runtime's shutdown while the slab is borrowed
        // cannot happen today (no borrow is held across a drop), but a miscount beats a panic
        // in a destructor.
        let emptied = match self.live.try_borrow_mut() {
            Ok(mut live) => {
                live.try_remove(key);
                live.is_empty()
            }
            Err(_) => false,
        };
        Counters::drop_one(&self.counters.open);
        if emptied {
            if let Some(w) = self.closed_waiter.borrow_mut().take() {
                w.wake();
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// A connection's future as its task runs it.
    pub(super) struct Tracked<F> {
        #[pin]
        inner: F,
        conns: Rc<Conns>,
        key: usize,
    }

    impl<F> PinnedDrop for Tracked<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            this.conns.remove(*this.key);
        }
    }
}

impl<F: Future<Output = ()>> Future for Tracked<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if this.conns.aborting.get() {
            // The task completes and drops its future, closing the connection.
            return Poll::Ready(());
        }
        if let Some(slot) = this.conns.live.borrow_mut().get_mut(*this.key) {
            match slot {
                Some(w) if w.will_wake(cx.waker()) => {}
                slot => *slot = Some(cx.waker().clone()),
            }
        }
        this.inner.poll(cx)
    }
}

/// What a connection handler learns about its connection, besides the stream: the peer, the
/// core, and whether the server is shutting down.
///
/// It belongs to the core that accepted the connection (`!Send`); the stream is `Send`, and is
/// driven by the core of whichever task polls it.
///
/// # Examples
///
/// A server that tells each client who it is and which core served it:
///
/// ```
/// use std::time::Duration;
/// use futures_lite::{AsyncReadExt, AsyncWriteExt};
/// use tickless::net::TcpStream;
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let addr = "127.0.0.1:0".parse().unwrap();
/// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, conn| async move {
///     let line = format!("{} on core {}", conn.peer_addr(), conn.core());
///     let _ = stream.write_all(line.as_bytes()).await;
/// })?;
/// rt.block_on(async {
///     let mut client = TcpStream::connect(server.local_addr()).await?;
///     let mut line = String::new();
///     client.read_to_string(&mut line).await?;
///     println!("{line}"); // "127.0.0.1:41234 on core 1", say
///     server.shutdown(Duration::from_secs(5)).await?;
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub struct ConnInfo {
    /// The peer's address, as `accept` gave it.
    peer: SocketAddr,
    /// The core that accepted the connection and runs its task.
    core: usize,
    /// The core's connection set.
    conns: Rc<Conns>,
}

impl ConnInfo {
    /// The peer's address.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use tickless::net::TcpStream;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let addr = "127.0.0.1:0".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, conn| async move {
    ///     let _ = stream.write_all(conn.peer_addr().to_string().as_bytes()).await;
    /// })?;
    /// rt.block_on(async {
    ///     let mut client = TcpStream::connect(server.local_addr()).await?;
    ///     let mut seen = String::new();
    ///     client.read_to_string(&mut seen).await?;
    ///     assert_eq!(seen, client.local_addr()?.to_string()); // the server saw this client
    ///     server.shutdown(Duration::from_secs(5)).await?;
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// The index of the core that accepted the connection, where its task runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use tickless::net::TcpStream;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let addr = "127.0.0.1:0".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, conn| async move {
    ///     assert_eq!(conn.core(), tickless::core_id()); // the handler runs there
    ///     let _ = stream.write_all(&[conn.core() as u8]).await;
    /// })?;
    /// rt.block_on(async {
    ///     let mut client = TcpStream::connect(server.local_addr()).await?;
    ///     let mut core = [0u8];
    ///     client.read_exact(&mut core).await?;
    ///     assert!(core[0] < 2); // whichever core the kernel gave the connection to
    ///     server.shutdown(Duration::from_secs(5)).await?;
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn core(&self) -> usize {
        self.core
    }

    /// Whether [`Server::shutdown`](super::Server::shutdown) has begun: the server no longer
    /// accepts, and waits for this connection to end until the grace period is over.
    ///
    /// # Examples
    ///
    /// A handler that works in steps and stops between two once the server shuts down:
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_lite::{future, AsyncReadExt, AsyncWriteExt};
    /// use tickless::net::TcpStream;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let addr = "127.0.0.1:0".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, conn| async move {
    ///     while !conn.is_shutting_down() {
    ///         if stream.write_all(b"step\n").await.is_err() {
    ///             return;
    ///         }
    ///         tickless::time::sleep(Duration::from_millis(10)).await;
    ///     }
    ///     let _ = stream.write_all(b"bye\n").await;
    /// })?;
    /// rt.block_on(async {
    ///     let mut client = TcpStream::connect(server.local_addr()).await?;
    ///     let mut first = [0u8; 5];
    ///     client.read_exact(&mut first).await?; // the handler is running
    ///     let mut rest = String::new();
    ///     let stop = server.shutdown(Duration::from_secs(5));
    ///     let (report, read) = future::zip(stop, client.read_to_string(&mut rest)).await;
    ///     read?;
    ///     assert!(rest.ends_with("bye\n"));
    ///     assert_eq!(report?.drained, 1); // it ended by itself, in time
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn is_shutting_down(&self) -> bool {
        self.conns.draining.get()
    }

    /// Completes when [`Server::shutdown`](super::Server::shutdown) begins, so a handler can
    /// finish its current request and close (hyper: `graceful_shutdown`) instead of waiting to
    /// be aborted at the end of the grace period.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::future::{poll_fn, Future};
    /// use std::pin::pin;
    /// use std::task::Poll;
    /// use futures_lite::AsyncReadExt;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// let addr = "127.0.0.1:0".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, conn| async move {
    ///     let mut stopping = pin!(conn.shutdown_requested());
    ///     let mut buf = [0u8; 1024];
    ///     loop {
    ///         let mut read = pin!(stream.read(&mut buf));
    ///         let n = poll_fn(|cx| match stopping.as_mut().poll(cx) {
    ///             Poll::Ready(()) => Poll::Ready(Ok(0)), // stopping: close as if at EOF
    ///             Poll::Pending => read.as_mut().poll(cx),
    ///         })
    ///         .await;
    ///         match n {
    ///             Ok(0) | Err(_) => break,
    ///             Ok(_) => { /* handle the bytes */ }
    ///         }
    ///     }
    /// })?;
    /// # drop(server);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn shutdown_requested(&self) -> ShutdownRequested {
        ShutdownRequested {
            conns: Rc::clone(&self.conns),
            key: None,
        }
    }

    /// Runs `conn` to its end, and when [`Server::shutdown`](super::Server::shutdown) begins
    /// calls `graceful_shutdown` on it, once, and goes on polling it: for a hyper connection,
    /// `|c| c.graceful_shutdown()`, which lets the request in flight finish and then closes the
    /// connection, and closes an idle keep-alive connection at once, so that the shutdown does
    /// not wait for it until the end of the grace period (and then abort it).
    ///
    /// It works with every hyper server connection (`http1`, `http2`, hyper-util's `auto`,
    /// with or without upgrades) and with any future that has a way to be asked to finish.
    /// (`tickless-http`'s `serve` and `run` do this for every connection.)
    ///
    /// # Examples
    ///
    /// A hyper server on every core, with `tickless-http`'s runtime traits for hyper (this
    /// crate has no hyper dependency; `tickless-http`'s tests run this):
    ///
    /// ```ignore
    /// use std::time::Duration;
    /// use hyper::service::service_fn;
    /// use hyper_util::server::conn::auto;
    /// use tickless_http::hyper_rt::{TicklessExecutor, TicklessIo, TicklessTimer};
    /// # async fn hello(_: hyper::Request<hyper::body::Incoming>)
    /// #     -> Result<hyper::Response<String>, std::convert::Infallible> { todo!() }
    ///
    /// let rt = tickless::Runtime::new()?;
    /// let mut http = auto::Builder::new(TicklessExecutor);
    /// http.http1().timer(TicklessTimer);
    /// let addr = "127.0.0.1:3000".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, move |stream, conn| {
    ///     let http = http.clone();
    ///     async move {
    ///         let served = http.serve_connection(TicklessIo::new(stream), service_fn(hello));
    ///         let _ordinary_end = conn.graceful(served, |c| c.graceful_shutdown()).await;
    ///     }
    /// })?;
    /// rt.block_on(async {
    ///     tickless::signal::ctrl_c().await?;
    ///     // Idle keep-alive connections close at once; requests in flight get 10 s.
    ///     server.shutdown(Duration::from_secs(10)).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn graceful<C, G>(&self, conn: C, graceful_shutdown: G) -> impl Future<Output = C::Output>
    where
        C: Future,
        G: FnOnce(Pin<&mut C>),
    {
        let mut stopping = self.shutdown_requested();
        async move {
            let mut conn = std::pin::pin!(conn);
            let mut graceful_shutdown = Some(graceful_shutdown);
            std::future::poll_fn(move |cx| {
                if graceful_shutdown.is_some() && Pin::new(&mut stopping).poll(cx).is_ready() {
                    if let Some(shut_down) = graceful_shutdown.take() {
                        shut_down(conn.as_mut());
                    }
                }
                conn.as_mut().poll(cx)
            })
            .await
        }
    }
}

impl fmt::Debug for ConnInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnInfo")
            .field("peer", &self.peer)
            .field("core", &self.core)
            .field("shutting_down", &self.is_shutting_down())
            .finish()
    }
}

/// The future of [`ConnInfo::shutdown_requested`].
///
/// # Examples
///
/// An idle connection that says goodbye when the server stops, instead of being aborted at
/// the end of the grace period:
///
/// ```
/// use std::time::Duration;
/// use futures_lite::{future, AsyncReadExt, AsyncWriteExt};
/// use tickless::net::TcpStream;
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let addr = "127.0.0.1:0".parse().unwrap();
/// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, conn| async move {
///     let _ = stream.write_all(b"hello\n").await;
///     conn.shutdown_requested().await;
///     let _ = stream.write_all(b"bye\n").await;
/// })?;
/// rt.block_on(async {
///     let mut client = TcpStream::connect(server.local_addr()).await?;
///     let mut hello = [0u8; 6];
///     client.read_exact(&mut hello).await?;
///     let mut rest = String::new();
///     let stop = server.shutdown(Duration::from_secs(60));
///     let (report, read) = future::zip(stop, client.read_to_string(&mut rest)).await;
///     read?;
///     assert_eq!(rest, "bye\n");
///     assert_eq!(report?.drained, 1);
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct ShutdownRequested {
    /// The core's connection set.
    conns: Rc<Conns>,
    /// Our waker's key in the set's drain waiters, once registered.
    key: Option<usize>,
}

impl Future for ShutdownRequested {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.conns.draining.get() {
            self.key = None;
            return Poll::Ready(());
        }
        let mut waiters = self.conns.drain_waiters.borrow_mut();
        match self.key.and_then(|k| waiters.get_mut(k)) {
            Some(w) if w.will_wake(cx.waker()) => {}
            Some(w) => *w = cx.waker().clone(),
            None => {
                let key = waiters.insert(cx.waker().clone());
                drop(waiters);
                self.key = Some(key);
            }
        }
        Poll::Pending
    }
}

impl Drop for ShutdownRequested {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            if let Ok(mut waiters) = self.conns.drain_waiters.try_borrow_mut() {
                waiters.try_remove(key);
            }
        }
    }
}

impl fmt::Debug for ShutdownRequested {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShutdownRequested")
            .field("done", &self.conns.draining.get())
            .finish()
    }
}
