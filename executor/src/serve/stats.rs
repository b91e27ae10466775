//! What a [`Server`](super::Server)'s accept loops did, as counts.

use std::ops::{Add, AddAssign};

use crate::sync::{AtomicU64, Ordering};

/// One core's serving counters (or their sum over cores); from
/// [`Server::stats`](super::Server::stats). Tests assert on these, never on time.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use futures_lite::{AsyncReadExt, AsyncWriteExt};
/// use tickless::net::{ServeCounters, TcpStream};
///
/// let rt = tickless::Builder::new().cores(1).build()?;
/// let addr = "127.0.0.1:0".parse().unwrap();
/// let server = tickless::net::serve_per_core(&rt, addr, |mut stream, conn| async move {
///     let _ = stream.write_all(b"hi").await;
///     conn.shutdown_requested().await; // open until the server stops
/// })?;
/// rt.block_on(async {
///     let mut client = TcpStream::connect(server.local_addr()).await?;
///     client.read_exact(&mut [0u8; 2]).await?;
///     let now: ServeCounters = server.stats().total;
///     assert_eq!((now.accepted, now.open, now.accept_errors), (1, 1, 0));
///     server.shutdown(Duration::from_secs(5)).await?;
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ServeCounters {
    /// Connections accepted.
    pub accepted: u64,
    /// Of those, connections taken from another core's listener while that core could not
    /// serve it: core 0's while no thread was in `block_on`, or that of a core that had
    /// stepped back from crowded CPUs ([`Builder::yield_when_crowded`]). Counted on the core
    /// that served them.
    ///
    /// [`Builder::yield_when_crowded`]: crate::Builder::yield_when_crowded
    pub adopted: u64,
    /// Connections whose task is still running.
    pub open: u64,
    /// `accept` calls that failed, whatever the error.
    pub accept_errors: u64,
    /// Of those, failures for want of descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`,
    /// `ENOMEM`, `ENOSPC`): the loop backs off on a timer after each.
    pub resource_errors: u64,
    /// Times the accept-error hook was called: once per run of failures, however long.
    pub error_reports: u64,
    /// Back-off sleeps that ran to their end (each followed by one more `accept`).
    pub backoffs: u64,
    /// Connections aborted because they outlived the shutdown's grace period.
    pub aborted: u64,
}

impl Add for ServeCounters {
    type Output = ServeCounters;

    fn add(mut self, o: ServeCounters) -> ServeCounters {
        self += o;
        self
    }
}

impl AddAssign for ServeCounters {
    fn add_assign(&mut self, o: ServeCounters) {
        self.accepted += o.accepted;
        self.adopted += o.adopted;
        self.open += o.open;
        self.accept_errors += o.accept_errors;
        self.resource_errors += o.resource_errors;
        self.error_reports += o.error_reports;
        self.backoffs += o.backoffs;
        self.aborted += o.aborted;
    }
}

/// The serving counters of every core, and their total.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let addr = "127.0.0.1:0".parse().unwrap();
/// let server = tickless::net::serve_per_core(&rt, addr, |_stream, _conn| async {})?;
/// let stats = server.stats();
/// assert_eq!(stats.cores.len(), rt.cores()); // by core index
/// let accepted: u64 = stats.cores.iter().map(|core| core.accepted).sum();
/// assert_eq!(accepted, stats.total.accepted);
/// rt.block_on(server.shutdown(Duration::from_secs(5)))?;
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ServeStats {
    /// Per core, by index.
    pub cores: Vec<ServeCounters>,
    /// The sum over cores.
    pub total: ServeCounters,
}

/// One core's counters, written by that core only and read from anywhere.
///
/// Aligned to a cache line so that two cores' counters never share one.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct Counters {
    /// See [`ServeCounters::accepted`].
    pub(super) accepted: AtomicU64,
    /// See [`ServeCounters::adopted`].
    pub(super) adopted: AtomicU64,
    /// See [`ServeCounters::open`].
    pub(super) open: AtomicU64,
    /// See [`ServeCounters::accept_errors`].
    pub(super) accept_errors: AtomicU64,
    /// See [`ServeCounters::resource_errors`].
    pub(super) resource_errors: AtomicU64,
    /// See [`ServeCounters::error_reports`].
    pub(super) error_reports: AtomicU64,
    /// See [`ServeCounters::backoffs`].
    pub(super) backoffs: AtomicU64,
    /// See [`ServeCounters::aborted`].
    pub(super) aborted: AtomicU64,
}

impl Counters {
    /// Adds one; only the owning core writes, so a load and a store would do, but an add is
    /// as cheap uncontended and stays right if that ever changes.
    pub(super) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Subtracts one.
    pub(super) fn drop_one(counter: &AtomicU64) {
        counter.fetch_sub(1, Ordering::Relaxed);
    }

    /// A snapshot.
    pub(super) fn load(&self) -> ServeCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ServeCounters {
            accepted: get(&self.accepted),
            adopted: get(&self.adopted),
            open: get(&self.open),
            accept_errors: get(&self.accept_errors),
            resource_errors: get(&self.resource_errors),
            error_reports: get(&self.error_reports),
            backoffs: get(&self.backoffs),
            aborted: get(&self.aborted),
        }
    }
}

impl ServeStats {
    /// Sums per-core snapshots.
    pub(super) fn from_cores(cores: Vec<ServeCounters>) -> ServeStats {
        let total = cores.iter().fold(ServeCounters::default(), |a, &c| a + c);
        ServeStats { cores, total }
    }
}
