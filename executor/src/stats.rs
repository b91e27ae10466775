//! What the runtime's cores did, as counts.

use std::ops::{Add, AddAssign};

/// One core's counters (or their sum over cores). Tests assert on these, never on time.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CoreStats {
    /// Task polls, the `block_on` future's included.
    pub polls: u64,
    /// Times the core blocked in epoll with nothing to run.
    pub parks: u64,
    /// Idle transitions spent polling instead of parking (see the idle governor).
    pub spins: u64,
    /// Timers inserted (sleeps, timeouts, intervals, handed-over timers).
    pub timer_inserts: u64,
    /// Pending timers cancelled.
    pub timer_cancels: u64,
    /// Timers that fired.
    pub timer_fires: u64,
    /// `timerfd_settime` calls: each re-programming of the core's timerfd.
    pub timerfd_rearms: u64,
    /// timerfd expirations that found no timer due.
    pub timerfd_spurious: u64,
    /// Hand-overs from other threads that had to wake this core.
    pub remote_wakes_sent: u64,
    /// Hand-overs from other threads that left it alone.
    pub remote_wakes_avoided: u64,
    /// Reads of the monotonic clock by the core.
    pub clock_reads: u64,
    /// `epoll_wait` calls, blocking or not.
    pub io_polls: u64,
    /// Events epoll returned.
    pub io_events: u64,
}

impl Add for CoreStats {
    type Output = CoreStats;

    fn add(mut self, o: CoreStats) -> CoreStats {
        self += o;
        self
    }
}

impl AddAssign for CoreStats {
    fn add_assign(&mut self, o: CoreStats) {
        self.polls += o.polls;
        self.parks += o.parks;
        self.spins += o.spins;
        self.timer_inserts += o.timer_inserts;
        self.timer_cancels += o.timer_cancels;
        self.timer_fires += o.timer_fires;
        self.timerfd_rearms += o.timerfd_rearms;
        self.timerfd_spurious += o.timerfd_spurious;
        self.remote_wakes_sent += o.remote_wakes_sent;
        self.remote_wakes_avoided += o.remote_wakes_avoided;
        self.clock_reads += o.clock_reads;
        self.io_polls += o.io_polls;
        self.io_events += o.io_events;
    }
}

/// The counters of every core, and their total; from [`Runtime::stats`](crate::Runtime::stats).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Per core, by index.
    pub cores: Vec<CoreStats>,
    /// The sum over cores.
    pub total: CoreStats,
}

impl Stats {
    pub(crate) fn from_cores(cores: Vec<CoreStats>) -> Stats {
        let total = cores.iter().fold(CoreStats::default(), |a, &c| a + c);
        Stats { cores, total }
    }
}
