//! Serving TCP on every core: one `SO_REUSEPORT` listener per core, an accept loop per core
//! that survives descriptor exhaustion, and a graceful shutdown. Public through
//! [`crate::net`]; the design is described on [`Serve`].

mod accept;
mod conns;
mod stats;
mod stop;

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::net::TcpStream;
use crate::{Handle, JoinHandle, Runtime};

pub use conns::{ConnInfo, ShutdownRequested};
pub use stats::{ServeCounters, ServeStats};

use crate::worker::shared::Shared;
use accept::{Adopt, Config, CoreReport, ErrorHook, Loop, Unserved};
use stats::Counters;
use stop::Listed;
#[cfg(loom)]
pub use stop::Stop;
#[cfg(not(loom))]
use stop::Stop;

/// Binds one listener per core and serves connections on the core that accepted them: the
/// builder behind [`serve_per_core`], for its settings.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use tickless::net::Serve;
///
/// let rt = tickless::Runtime::new()?;
/// let server = Serve::new("0.0.0.0:8080".parse().unwrap())
///     .accept_backoff(Duration::from_millis(5), Duration::from_millis(500))
///     .on_accept_error(|core, e| eprintln!("core {core}: accept: {e}"))
///     .start(&rt, |stream, conn| async move {
///         println!("{} on core {}", conn.peer_addr(), conn.core());
///         drop(stream);
///     })?;
/// rt.block_on(async {
///     tickless::signal::ctrl_c().await?;
///     server.shutdown(Duration::from_secs(10)).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
/// # Implementation
///
/// [`start`](Self::start) binds every core's listener on the calling thread (so a bind error
/// is returned at once, and port 0 becomes one port shared by all cores), then moves each into
/// its core with [`Handle::spawn_pinned`](crate::Handle::spawn_pinned), where it is registered
/// with that core's reactor and accepted from by that core only: the kernel spreads incoming
/// connections over the listeners (by a hash of the 4-tuple), and no connection ever changes
/// core. Each accepted connection runs as a task of its own on its core.
///
/// An `accept` that fails for want of descriptors (`EMFILE`, `ENFILE`) or memory leaves the
/// connection queued and the listener readable: retried at once it fails at once. So the loop
/// reports the first failure of a run (through [`on_accept_error`](Self::on_accept_error)),
/// then sleeps on the core's timer wheel before each retry, doubling the sleep from
/// [`accept_backoff`](Self::accept_backoff)'s first value to its cap, until an `accept`
/// succeeds. Errors about one connection (`ECONNABORTED` and the like) are counted and skipped.
/// No error ends the loop.
#[derive(Clone)]
pub struct Serve {
    /// Where to listen.
    addr: SocketAddr,
    /// First back-off after a failed `accept`.
    backoff: Duration,
    /// Largest back-off.
    max_backoff: Duration,
    /// Set `TCP_NODELAY` on accepted streams.
    nodelay: bool,
    /// Share the address with other `SO_REUSEPORT` sockets instead of refusing a taken one.
    reuse_port: bool,
    /// The accept-error hook; `None`: print to stderr.
    on_error: Option<ErrorHook>,
    /// How connections' tasks are spawned: with a name, or none.
    task: crate::task::Builder,
}

impl Serve {
    /// Serving `addr` with the defaults: back-off from 10 ms doubling up to 1 s, `TCP_NODELAY`
    /// on, accept errors printed to stderr (once per run of failures).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::net::Serve;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let serve = Serve::new("127.0.0.1:0".parse().unwrap());
    /// let server = serve.start(&rt, |_stream, _conn| async {})?;
    /// assert_ne!(server.local_addr().port(), 0); // port 0: one port picked for every core
    /// rt.block_on(server.shutdown(Duration::from_secs(5)))?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new(addr: SocketAddr) -> Serve {
        Serve {
            addr,
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_secs(1),
            nodelay: true,
            reuse_port: false,
            on_error: None,
            task: crate::task::Builder::new(),
        }
    }

    /// Names each connection's task `name` ([`task::Builder::name`](crate::task::Builder::name)),
    /// which the stall detector's reports give next to the task's spawn location (the accept
    /// loop's, the same for every connection). Default: no name; `tickless_http` names them
    /// after the service it serves.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::net::Serve;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let server = Serve::new("127.0.0.1:0".parse().unwrap())
    ///     .task_name("echo")
    ///     .start(&rt, |_stream, _conn| async {})?;
    /// rt.block_on(server.shutdown(Duration::from_secs(5)))?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn task_name(&mut self, name: &'static str) -> &mut Self {
        self.task = crate::task::Builder::new().name(name);
        self
    }

    /// How long an accept loop sleeps after an `accept` failed for want of descriptors or
    /// memory (or for a reason it does not know): `first` after the first failure, doubling
    /// after each further one up to `max`, back to `first` after a success.
    ///
    /// # Panics
    ///
    /// If `first` is zero (a zero back-off would spin), or `max` is less than `first`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::net::Serve;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let server = Serve::new("127.0.0.1:0".parse().unwrap())
    ///     .accept_backoff(Duration::from_millis(1), Duration::from_millis(100))
    ///     .start(&rt, |_stream, _conn| async {})?;
    /// assert_eq!(server.stats().total.backoffs, 0); // no `accept` has failed
    /// rt.block_on(server.shutdown(Duration::from_secs(5)))?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn accept_backoff(&mut self, first: Duration, max: Duration) -> &mut Self {
        assert!(!first.is_zero(), "a zero accept back-off would spin");
        assert!(max >= first, "the largest back-off is less than the first");
        self.backoff = first;
        self.max_backoff = max;
        self
    }

    /// Whether accepted streams get `TCP_NODELAY` (Nagle's algorithm off). Default `true`: what
    /// request-response protocols want.
    ///
    /// # Examples
    ///
    /// Nagle's algorithm left on, for a server that streams bulk data:
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use tickless::net::{Serve, TcpStream};
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let server = Serve::new("127.0.0.1:0".parse().unwrap())
    ///     .nodelay(false)
    ///     .start(&rt, |mut stream, _conn| async move {
    ///         let nodelay = stream.nodelay().unwrap_or(true);
    ///         let _ = stream.write_all(&[nodelay as u8]).await;
    ///     })?;
    /// rt.block_on(async {
    ///     let mut client = TcpStream::connect(server.local_addr()).await?;
    ///     let mut nodelay = [1u8];
    ///     client.read_exact(&mut nodelay).await?;
    ///     assert_eq!(nodelay, [0]); // the accepted stream had it off
    ///     server.shutdown(Duration::from_secs(5)).await?;
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn nodelay(&mut self, nodelay: bool) -> &mut Self {
        self.nodelay = nodelay;
        self
    }

    /// Whether the listeners share their address with other sockets that set `SO_REUSEPORT`
    /// (tokio's `TcpSocket::set_reuseport`): another server of this process, another process
    /// of the same user. The kernel then spreads new connections over all of them.
    ///
    /// Default `false`: an address that any socket holds (another copy of the server, another
    /// server in this process, a listener without `SO_REUSEPORT`) fails [`start`](Self::start)
    /// with `AddrInUse`, as tokio's `TcpListener::bind` does; the runtime's own per-core
    /// listeners share the address all the same. With `true`, the bind fails only where a
    /// socket without `SO_REUSEPORT`, or of another user, holds it.
    ///
    /// # Examples
    ///
    /// Two servers sharing one port on purpose (the old and the new version during a
    /// deploy):
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::net::Serve;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let old = Serve::new("127.0.0.1:0".parse().unwrap())
    ///     .reuse_port(true)
    ///     .start(&rt, |_stream, _conn| async {})?;
    /// let new = Serve::new(old.local_addr())
    ///     .reuse_port(true)
    ///     .start(&rt, |_stream, _conn| async {})?; // without both settings: AddrInUse
    /// assert_eq!(new.local_addr(), old.local_addr());
    /// rt.block_on(async {
    ///     old.shutdown(Duration::from_secs(5)).await?; // the new one serves on
    ///     new.shutdown(Duration::from_secs(5)).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn reuse_port(&mut self, reuse_port: bool) -> &mut Self {
        self.reuse_port = reuse_port;
        self
    }

    /// Called, on the core's thread, with the core's index and the error, at the first failed
    /// `accept` of a run of failures (not at each retry). Connection-level errors
    /// (`ECONNABORTED` and the like) are not reported; [`Server::stats`] counts everything.
    /// Default: a line on stderr.
    ///
    /// # Examples
    ///
    /// Counting the reports (and logging them) instead of printing them:
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tickless::net::Serve;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let reports = Arc::new(AtomicU64::new(0));
    /// let counted = Arc::clone(&reports);
    /// let server = Serve::new("127.0.0.1:0".parse().unwrap())
    ///     .on_accept_error(move |core, e| {
    ///         counted.fetch_add(1, Ordering::Relaxed);
    ///         eprintln!("core {core}: accept failed: {e}");
    ///     })
    ///     .start(&rt, |_stream, _conn| async {})?;
    /// rt.block_on(server.shutdown(Duration::from_secs(5)))?;
    /// assert_eq!(reports.load(Ordering::Relaxed), 0); // no `accept` failed here
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_accept_error(
        &mut self,
        hook: impl Fn(usize, &io::Error) + Send + Sync + 'static,
    ) -> &mut Self {
        self.on_error = Some(Arc::new(hook));
        self
    }

    /// Binds one `SO_REUSEPORT` listener per core of `rt`, here, then starts an accept loop on
    /// each core. Each accepted connection runs `handler(stream, conn)` as a task of the core
    /// that accepted it; the handler is cloned once per core.
    ///
    /// The loops start at once on cores 1 and up; core 0's runs inside [`Runtime::block_on`].
    ///
    /// # Errors
    ///
    /// Binding a listener failed: `AddrInUse` where any socket holds the address (unless
    /// [`reuse_port`](Self::reuse_port)), `EACCES` for a privileged port, `EMFILE`; nothing was
    /// started then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use tickless::net::{Serve, TcpStream};
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let serve = Serve::new("127.0.0.1:0".parse().unwrap());
    /// let server = serve.start(&rt, |mut stream, _conn| async move {
    ///     let _ = stream.write_all(b"hello").await;
    /// })?;
    /// rt.block_on(async {
    ///     let mut client = TcpStream::connect(server.local_addr()).await?;
    ///     let mut hello = String::new();
    ///     client.read_to_string(&mut hello).await?;
    ///     assert_eq!(hello, "hello");
    ///     server.shutdown(Duration::from_secs(5)).await?;
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn start<H, F>(&self, rt: &Runtime, handler: H) -> io::Result<Server>
    where
        H: Fn(TcpStream, ConnInfo) -> F + Clone + Send + 'static,
        F: Future<Output = ()> + 'static,
    {
        let listeners = self.bind(rt.cores())?;
        let handles = (0..rt.cores()).map(|core| rt.handle(core)).collect();
        Ok(self.start_bound(listeners, handles, handler))
    }

    /// Binds one listener for each of `cores` cores on the calling thread (so a bind error is
    /// returned at once, and port 0 becomes one port shared by all cores).
    fn bind(&self, cores: usize) -> io::Result<Bound> {
        // The first bind fixes the port (port 0 picks one); the others share it. Unless asked
        // to share, the first is bound as only a free address allows (see
        // `bind_reuseport_first_std`: no window in which another server could join).
        let first = if self.reuse_port {
            crate::net::TcpListener::bind_reuseport_std(self.addr)?
        } else {
            crate::net::TcpListener::bind_reuseport_first_std(self.addr)?
        };
        let addr = first.local_addr()?;
        let mut listeners = vec![first];
        for _ in 1..cores {
            listeners.push(crate::net::TcpListener::bind_reuseport_std(addr)?);
        }
        Ok(Bound { addr, listeners })
    }

    /// Starts an accept loop on each core of `handles` with its listener of `bound`.
    fn start_bound<H, F>(&self, bound: Bound, handles: Vec<Handle>, handler: H) -> Server
    where
        H: Fn(TcpStream, ConnInfo) -> F + Clone + Send + 'static,
        F: Future<Output = ()> + 'static,
    {
        debug_assert_eq!(bound.listeners.len(), handles.len(), "a listener per core");
        let cores = handles.len();
        let config = Arc::new(Config {
            backoff: self.backoff,
            max_backoff: self.max_backoff,
            nodelay: self.nodelay,
            task: self.task,
            on_error: self.on_error.clone().unwrap_or_else(|| {
                let max = self.max_backoff;
                Arc::new(move |core, e| {
                    eprintln!(
                        "tickless: core {core}: accept failed: {e}; retrying on a timer, backing \
                         off up to {max:?}, until it succeeds (reported once per run)"
                    );
                })
            }),
        });
        let stop = Arc::new(Stop::new(cores));
        let counters: Vec<Arc<Counters>> = (0..cores).map(|_| Arc::default()).collect();
        // Core 1 serves core 0's listener while no thread is in `block_on` (core 0 runs
        // nothing then), and core 0 the listener of a core that stepped back from crowded
        // CPUs: duplicates of their descriptors, the same sockets.
        let shared: Vec<Arc<Shared>> = handles.iter().map(|h| Arc::clone(h.shared())).collect();
        let adopt = |of: usize, when| {
            let listener = bound.listeners[of].try_clone().ok()?;
            let owner = Arc::clone(&shared[of]);
            Some(Adopt {
                listener,
                owner,
                when,
            })
        };
        let mut adopts: Vec<Vec<Adopt>> = (0..cores).map(|_| Vec::new()).collect();
        if cores > 1 {
            adopts[1].extend(adopt(0, Unserved::Left));
            let stepping_back = (1..cores).filter_map(|k| adopt(k, Unserved::SteppedBack));
            adopts[0].extend(stepping_back);
        }
        let loops = bound
            .listeners
            .into_iter()
            .zip(handles)
            .enumerate()
            .map(|(core, (listener, handle))| {
                let l = Loop {
                    core,
                    listener: Listed::new(Arc::clone(&stop), core, listener),
                    adopt: std::mem::take(&mut adopts[core]),
                    cores: (Arc::clone(&shared[core]), Arc::clone(&shared[0])),
                    handler: handler.clone(),
                    config: Arc::clone(&config),
                    stop: Arc::clone(&stop),
                    counters: Arc::clone(&counters[core]),
                };
                handle.spawn_pinned(move || l.run())
            })
            .collect();
        Server {
            addr: bound.addr,
            stop,
            loops,
            counters,
        }
    }
}

/// Listeners bound for every core, not yet serving: what `tickless-http`'s `run` holds between
/// the call (which binds, so that its `local_addr` is known at once) and the first poll (which
/// starts serving). Public only through `__private`, for tickless-http.
#[derive(Debug)]
pub struct Bound {
    /// The address they share.
    addr: SocketAddr,
    /// One per core, by index.
    listeners: Vec<std::net::TcpListener>,
}

impl Bound {
    /// Binds one listener on `addr` for each of `cores` cores on the calling thread, with the
    /// settings of `serve` (whose own address is not used).
    pub fn bind(serve: &Serve, addr: SocketAddr, cores: usize) -> io::Result<Bound> {
        Serve {
            addr,
            ..serve.clone()
        }
        .bind(cores)
    }

    /// The address the listeners share (with the port the kernel picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts an accept loop on each core of `handles` (one per listener, by index) with the
    /// settings of `serve`, as [`Serve::start`] does.
    pub fn start<H, F>(self, serve: &Serve, handles: Vec<Handle>, handler: H) -> Server
    where
        H: Fn(TcpStream, ConnInfo) -> F + Clone + Send + 'static,
        F: Future<Output = ()> + 'static,
    {
        serve.start_bound(self, handles, handler)
    }
}

impl fmt::Debug for Serve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Serve")
            .field("addr", &self.addr)
            .field("backoff", &self.backoff)
            .field("max_backoff", &self.max_backoff)
            .field("nodelay", &self.nodelay)
            .field("reuse_port", &self.reuse_port)
            .field("on_error", &self.on_error.as_ref().map(|_| ".."))
            .field("task", &self.task)
            .finish()
    }
}

/// Binds one `SO_REUSEPORT` listener per core of `rt` on `addr` and serves every connection on
/// the core that accepted it, with `handler(stream, conn)`; [`Serve`] with its defaults.
///
/// The handler is cloned once per core and called on that core, so it must be `Send` and
/// `Clone`; the futures it returns need not be `Send` (they may hold the stream, `Rc`s, hyper
/// connections). See [`Serve`] for how accept errors are survived, and
/// [`Server::shutdown`] for stopping.
///
/// # Errors
///
/// Binding a listener failed; nothing was started then.
///
/// # Examples
///
/// A TCP echo server on every core, stopped by Ctrl-C:
///
/// ```no_run
/// use std::time::Duration;
/// use futures_lite::io::copy;
///
/// let rt = tickless::Runtime::new()?;
/// let server = tickless::net::serve_per_core(
///     &rt,
///     "127.0.0.1:7000".parse().unwrap(),
///     |stream, _conn| async move {
///         let (reader, mut writer) = stream.into_split();
///         let _ = copy(reader, &mut writer).await; // a reset is an ordinary error here
///     },
/// )?;
/// println!("listening on {}", server.local_addr());
/// rt.block_on(async {
///     tickless::signal::ctrl_c().await?;
///     let report = server.shutdown(Duration::from_secs(5)).await?;
///     println!("{report}");
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub fn serve_per_core<H, F>(rt: &Runtime, addr: SocketAddr, handler: H) -> io::Result<Server>
where
    H: Fn(TcpStream, ConnInfo) -> F + Clone + Send + 'static,
    F: Future<Output = ()> + 'static,
{
    Serve::new(addr).start(rt, handler)
}

/// How a [`Server::shutdown`] went.
///
/// # Examples
///
/// A handler that ignores the shutdown is aborted at the end of the grace period (on paused
/// time here, so that no real time passes):
///
/// ```
/// use std::time::Duration;
/// use futures_lite::{AsyncReadExt, AsyncWriteExt};
/// use tickless::net::{ShutdownReport, TcpStream};
///
/// let rt = tickless::Builder::new().cores(1).start_paused(true).build()?;
/// let addr = "127.0.0.1:0".parse().unwrap();
/// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, _conn| async move {
///     let _ = stream.write_all(b"hi").await;
///     std::future::pending::<()>().await; // never ends by itself
/// })?;
/// rt.block_on(async {
///     let mut client = TcpStream::connect(server.local_addr()).await?;
///     client.read_exact(&mut [0u8; 2]).await?;
///     let report = server.shutdown(Duration::from_secs(30)).await?;
///     assert_eq!(report, ShutdownReport { drained: 0, aborted: 1 });
///     assert_eq!(report.to_string(), "0 connections finished, 1 aborted at the deadline");
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Connections open when the shutdown began that ended by themselves within the grace
    /// period.
    pub drained: usize,
    /// Connections still open at the end of the grace period, aborted (their futures dropped,
    /// which closes their sockets).
    pub aborted: usize,
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} connections finished, {} aborted at the deadline",
            self.drained, self.aborted
        )
    }
}

/// A running server: one listener and accept loop per core, from [`serve_per_core`] or
/// [`Serve::start`].
///
/// Dropping it leaves the server running until the runtime is dropped (as dropping a
/// [`JoinHandle`] detaches its task); [`shutdown`](Self::shutdown) stops it gracefully.
///
/// # Examples
///
/// An echo server on every core, and a client:
///
/// ```
/// use std::time::Duration;
/// use futures_lite::{io::copy, AsyncReadExt, AsyncWriteExt};
/// use tickless::net::TcpStream;
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let addr = "127.0.0.1:0".parse().unwrap();
/// let server = tickless::net::serve_per_core(&rt, addr, |stream, _conn| async move {
///     let (reader, mut writer) = stream.into_split();
///     let _ = copy(reader, &mut writer).await;
/// })?;
/// rt.block_on(async {
///     let mut client = TcpStream::connect(server.local_addr()).await?;
///     client.write_all(b"ping").await?;
///     let mut reply = [0u8; 4];
///     client.read_exact(&mut reply).await?;
///     assert_eq!(&reply, b"ping");
///     drop(client); // the echo ends at its end of file
///     server.shutdown(Duration::from_secs(5)).await?;
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub struct Server {
    /// The address every core listens on.
    addr: SocketAddr,
    /// The stop request.
    stop: Arc<Stop>,
    /// Each core's accept-loop task.
    loops: Vec<JoinHandle<io::Result<CoreReport>>>,
    /// Each core's counters.
    counters: Vec<Arc<Counters>>,
}

impl Server {
    /// The address the listeners are bound to (with the port the kernel picked for port 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::net::Ipv4Addr;
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let addr = "127.0.0.1:0".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, |_stream, _conn| async {})?;
    /// let bound = server.local_addr();
    /// assert_eq!(bound.ip(), Ipv4Addr::LOCALHOST);
    /// assert_ne!(bound.port(), 0); // the port the kernel picked, shared by every core
    /// rt.block_on(async {
    ///     tickless::net::TcpStream::connect(bound).await?;
    ///     server.shutdown(Duration::from_secs(5)).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Counters per core and in total: connections accepted and open, accept errors, back-offs.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use tickless::net::TcpStream;
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// let addr = "127.0.0.1:0".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, _conn| async move {
    ///     let _ = stream.write_all(b"hi").await;
    /// })?;
    /// rt.block_on(async {
    ///     let mut client = TcpStream::connect(server.local_addr()).await?;
    ///     client.read_exact(&mut [0u8; 2]).await?; // accepted and served
    ///     let stats = server.stats();
    ///     assert_eq!(stats.total.accepted, 1);
    ///     assert_eq!(stats.total.accept_errors, 0);
    ///     server.shutdown(Duration::from_secs(5)).await?;
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn stats(&self) -> ServeStats {
        ServeStats::from_cores(self.counters.iter().map(|c| c.load()).collect())
    }

    /// Stops gracefully: every core closes its listener at once (new connections are refused),
    /// the handlers' [`ConnInfo::shutdown_requested`] futures complete, connections may finish
    /// until `grace` has passed, and those still open then are aborted. Completes when every
    /// core's loop and connection tasks are done.
    ///
    /// A connection ends early only if its handler acts on the request: an HTTP keep-alive
    /// connection waiting for its next request would otherwise hold the shutdown for the whole
    /// grace period. [`ConnInfo::graceful`] runs a hyper connection so that it does not.
    ///
    /// # Errors
    ///
    /// A core's loop could not start (registering its listener failed) or panicked.
    ///
    /// # Examples
    ///
    /// A handler that ends when asked to, so that the shutdown need not wait for it:
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use tickless::net::{ShutdownReport, TcpStream};
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let addr = "127.0.0.1:0".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, conn| async move {
    ///     let _ = stream.write_all(b"hi").await;
    ///     conn.shutdown_requested().await;
    /// })?;
    /// let bound = server.local_addr();
    /// rt.block_on(async {
    ///     let mut client = TcpStream::connect(bound).await?;
    ///     client.read_exact(&mut [0u8; 2]).await?;
    ///     let report = server.shutdown(Duration::from_secs(10)).await?;
    ///     assert_eq!(report, ShutdownReport { drained: 1, aborted: 0 });
    ///     assert!(TcpStream::connect(bound).await.is_err()); // no one listens any more
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn shutdown(self, grace: Duration) -> io::Result<ShutdownReport> {
        self.request_stop(grace);
        let mut report = ShutdownReport::default();
        let mut first_error = None;
        for handle in self.loops {
            match handle.await {
                Ok(Ok(core)) => {
                    report.drained += core.drained;
                    report.aborted += core.aborted;
                }
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(e) => {
                    first_error.get_or_insert(e.into());
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }
}

impl Server {
    /// Starts the graceful shutdown that [`shutdown`](Self::shutdown) does and returns at
    /// once, without waiting for it: every core's listener is shut down here, on the calling
    /// thread (any thread, in the runtime or not; new connections are refused from now on,
    /// even on a core that no thread runs, core 0 outside `block_on`), and each core drains
    /// its connections by itself, within `grace`. What dropping `tickless-http`'s serving
    /// future does.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::net::TcpStream;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let addr = "127.0.0.1:0".parse().unwrap();
    /// let server = tickless::net::serve_per_core(&rt, addr, |_stream, _conn| async {})?;
    /// let bound = server.local_addr();
    /// server.shutdown_detached(Duration::from_secs(5)); // outside `block_on`
    /// rt.block_on(async {
    ///     assert!(TcpStream::connect(bound).await.is_err()); // refused at once
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn shutdown_detached(self, grace: Duration) {
        self.request_stop(grace);
    }

    /// Asks every core to stop, with connections aborted `grace` from now, and shuts every
    /// listener down.
    fn request_stop(&self, grace: Duration) {
        let now = crate::time::Instant::now();
        let deadline = now
            .checked_add(grace)
            .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365));
        self.stop.request(deadline.into_std());
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("cores", &self.loops.len())
            .finish_non_exhaustive()
    }
}
