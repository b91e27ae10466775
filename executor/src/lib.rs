//! A thread-per-core async runtime for network servers, built around its timer driver: each
//! core has its own timer wheel and clock device, re-programmed only when the earliest deadline
//! really moves, and no periodic tick. For servers where every request carries a timeout that
//! almost never fires.
//!
//! The API is tokio's where the meaning is the same: [`spawn`], [`time::sleep`],
//! [`time::timeout`], [`net::TcpListener`], [`task::JoinSet`], `#[tickless::main]`. What differs
//! comes from every core being its own single-threaded runtime: a task runs on the core it was
//! placed on at spawn until that core cannot run it (see
//! [`Builder::steal_after`](crate::Builder::steal_after)), and an I/O object is driven by the
//! core that polls it.
//!
//! ```
//! use std::time::Duration;
//! use tickless::time::{sleep, timeout};
//!
//! let rt = tickless::Runtime::new()?; // one core per CPU; core 0 is this thread
//! rt.block_on(async {
//!     let task = tickless::spawn(async { 6 * 7 });
//!     let answer = timeout(Duration::from_secs(1), task).await; // a deadline that won't fire
//!     assert_eq!(answer.unwrap().unwrap(), 42);
//!     sleep(Duration::from_micros(100)).await; // microsecond timers: no 1 ms rounding
//! });
//! # std::io::Result::Ok(())
//! ```
//!
//! A TCP echo server, one accept loop, its connections spread over the cores:
//!
//! ```no_run
//! use tickless::net::TcpListener;
//! use futures_lite::{AsyncReadExt, AsyncWriteExt};
//!
//! #[tickless::main]
//! async fn main() -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:7000").await?;
//!     loop {
//!         let (mut stream, _) = listener.accept().await?;
//!         tickless::spawn(async move {
//!             let mut buf = [0; 1024];
//!             while let Ok(n @ 1..) = stream.read(&mut buf).await {
//!                 if stream.write_all(&buf[..n]).await.is_err() {
//!                     break;
//!                 }
//!             }
//!         });
//!     }
//! }
//! ```
//!
//! # Diagnosis
//!
//! A poll that blocks its core longer than 25 ms is reported on stderr, once, with the task's id,
//! where it was spawned and the stalled thread's backtrace
//! ([`Builder::stall_threshold`], [`Builder::on_stall`]); tokio's task hooks
//! ([`Builder::on_task_spawn`] and the others) see every task's [`task::Id`] and spawn location.
//!
//! # Features
//!
//! - `tokio-io`: tokio's `AsyncRead`/`AsyncWrite` on the stream types.
//! - `tokio-compat`: a tokio context on every core, for libraries that call tokio inside
//!   (`Builder::tokio_context`): each core drives a tokio runtime of its own, on its thread.
//! - `metrics`: `runtime::RuntimeMetricsReporter`, the runtime's metrics published to the
//!   metrics-rs recorder under tokio-metrics' names.
//!
//! HTTP (axum and any tower service on every core, hyper's runtime traits, the timeout layers
//! on the core's wheel) is the `tickless-http` crate's: this one has no HTTP dependency.
//!
//! # Guides
//!
//! In the repository's `docs/`: coming from tokio, serving HTTP, timers and slack, thread per
//! core and placement, testing with paused time.
#![warn(missing_docs)]

mod blocking;
mod catch;
mod context;
mod dns;
pub mod fs;
mod histogram;
mod park;
pub mod runtime;
mod serve;
pub mod signal;
mod stall;
mod stats;
mod sync;
pub mod task;
pub mod time;
mod worker;

/// Internals that the loom models in `loom-tests/` check; only built under `--cfg loom`.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_exports {
    pub use crate::blocking::{BlockingPool, Fate, Job, StartThread};
    pub use crate::runtime::lease::{Held, Lease};
    pub use crate::runtime::tokio_hand_over::{HandOver, Turn};
    pub use crate::runtime::watchdog::sleep_while_idle;
    pub use crate::serve::Stop;
    pub use crate::task::join_slot::JoinSlot;
    pub use crate::task::{schedule, spawn_remote};
    pub use crate::worker::block_on::MainWaker;
    pub use crate::worker::harvest::Harvesting;
    pub use crate::worker::id::CoreId;
    pub use crate::worker::idle::{sleep, Slept};
    pub use crate::worker::kennel::Kennel;
    pub use crate::worker::registry::{register, remote_cancel};
    pub use crate::worker::run::{run, take_handed_over, turn, Driver, Step};
    pub use crate::worker::runq::RunQueue;
    pub use crate::worker::shared::Due;
    pub use crate::worker::shared::{Peers, Runnable, Shared, TaskMeta, Unpark};
    pub use crate::worker::shutdown::{close, shut_down, Owner};
    pub use crate::worker::spill::Spill;
    pub use crate::worker::watch::{Running, Watch};
}

/// What `#[tickless::main]` and `#[tickless::test]` expand to: not for use by hand.
#[doc(hidden)]
pub mod __macro_support {
    /// The `tokio_context = true` setting: there where the crate has its `tokio-compat`
    /// feature, a compile error that says so elsewhere.
    #[diagnostic::on_unimplemented(
        message = "`tokio_context = ...` needs tickless's `tokio-compat` feature",
        label = "add `features = [\"tokio-compat\"]` to the `tickless` dependency"
    )]
    pub trait TokioContext {
        /// `Builder::tokio_context`.
        fn tokio_context(&mut self, enabled: bool) -> &mut Self;
    }

    #[cfg(feature = "tokio-compat")]
    impl TokioContext for crate::Builder {
        fn tokio_context(&mut self, enabled: bool) -> &mut Self {
            crate::Builder::tokio_context(self, enabled)
        }
    }

    /// The `tokio_context = false` setting: the context off where the `tokio-compat` feature
    /// makes it the default, nothing to do without the feature.
    pub fn no_tokio_context(builder: &mut crate::Builder) {
        #[cfg(feature = "tokio-compat")]
        builder.tokio_context(false);
        #[cfg(not(feature = "tokio-compat"))]
        let _ = builder;
    }
}

/// Glue for the `tickless-http` crate, which serves HTTP on the accept loops of
/// [`net::Serve`]: not for use by other crates, and not covered by semver.
#[doc(hidden)]
pub mod __private {
    pub use crate::serve::Bound;
    /// What a [`net::ToSocketAddrs`](crate::net::ToSocketAddrs) stands for: addresses, or a
    /// name to look up (`tickless-http`'s `run` binds the first at once, and looks the second
    /// up on the blocking pool).
    pub use tickless_io::internal::Addrs;

    /// Makes `core` step back from serving (`true`) or serve again (`false`), as the watchdog
    /// does under [`Builder::yield_when_crowded`](crate::Builder::yield_when_crowded) when the
    /// CPUs are crowded: for tests, which cannot crowd the CPUs on cue. Core 0 never steps back
    /// on its own; this does not check.
    pub fn step_back(core: &crate::Handle, stepped_back: bool) {
        if stepped_back {
            core.shared().step_back();
        } else if let Some(cores) = core.peers().all() {
            core.shared().serve_again(cores);
        }
    }
}

pub use context::core_id;
pub use runtime::{Builder, CorePanic, Handle, Runtime, ShutdownError};
pub use stats::{CoreStats, Stats};
pub use task::{spawn, spawn_local, yield_now, JoinError, JoinHandle};
pub use tickless_macros::{main, test};
pub use tickless_timer::RearmPolicy;
pub use worker::device::ClockDevice;

/// Pipes, sockets and any other file descriptor, driven by the core's reactor.
///
/// The types implement futures-io's `AsyncRead` and `AsyncWrite`; each registers with the core
/// that polls it and follows its task to another core (see [`net`]'s *Threads*).
pub mod io {
    pub use tickless_io::{
        pipe, AsyncFd, AsyncFdReadyGuard, Interest, PipeReader, PipeWriter, Ready, TryIoError,
    };
}

/// TCP, UDP and Unix sockets, name lookups, and servers on every core.
///
/// # Threads
///
/// The sockets (and the pipes of [`io`]) are `Send` and `Sync`, as tokio's are, so they fit in
/// `Send` futures, `tokio::sync` channels and libraries' connection pools (hyper-util's
/// `Client`, hyper's upgrades). Each follows the task that polls it: a connection accepted on
/// core 0 and handed to a task on core 1 registers with core 1's reactor at its first read or
/// write there, even if the accept loop wrote a greeting or peeked on core 0 first; it then
/// leaves core 0's epoll set (two `epoll_ctl` calls, counted in
/// [`CoreStats::io_rebinds`](crate::CoreStats::io_rebinds) of the core it joins). The two
/// halves of a split stream polled by tasks on two cores wait each on its own core. A socket
/// polled from several cores at once (an `Arc<UdpSocket>` with a `recv` loop on each) stays
/// registered with each of them: one registration a core, not a move per datagram. Polled
/// where no core runs, or used after its core's runtime was shut down, it returns an error.
/// Dropped on any other thread, it is closed and leaves the core's epoll set at once; the core
/// frees the rest at its next turn.
///
/// # Examples
///
/// A listener and a client on one core: each connection is a task of the core that accepted
/// it, and `connect` takes an address or a `"host:port"` (looked up off the core).
///
/// ```
/// use futures_lite::{AsyncReadExt, AsyncWriteExt};
/// use tickless::net::{TcpListener, TcpStream};
///
/// let rt = tickless::Builder::new().cores(1).build()?;
/// let reply = rt.block_on(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let port = listener.local_addr()?.port();
///     let server = tickless::spawn(async move { // runs on this core, where the listener is
///         let (mut conn, _peer) = listener.accept().await?;
///         let mut buf = [0u8; 4];
///         conn.read_exact(&mut buf).await?;
///         conn.write_all(&buf).await // an echo
///     });
///     let mut client = TcpStream::connect(("localhost", port)).await?;
///     client.write_all(b"ping").await?;
///     let mut reply = [0u8; 4];
///     client.read_exact(&mut reply).await?;
///     server.await??;
///     std::io::Result::Ok(reply)
/// })?;
/// assert_eq!(&reply, b"ping");
/// # std::io::Result::Ok(())
/// ```
pub mod net {
    pub use tickless_io::{
        OwnedReadHalf, OwnedWriteHalf, ReuniteError, TcpListener, TcpStream, ToSocketAddrs,
        UdpSocket, UnixListener, UnixStream,
    };

    pub use crate::dns::lookup_host;
    pub use crate::serve::{
        serve_per_core, ConnInfo, Serve, ServeCounters, ServeStats, Server, ShutdownReport,
        ShutdownRequested,
    };
}
