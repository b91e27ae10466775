//! What the runtime's cores did, as counts.

use std::ops::{Add, AddAssign};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// A core's counters as other threads see them: written by the core at each idle transition
/// (plain relaxed stores: one writer), read by [`Runtime::stats`](crate::Runtime::stats).
#[derive(Debug, Default)]
pub(crate) struct Published([AtomicU64; 13]);

impl Published {
    pub(crate) fn store(&self, s: &CoreStats) {
        let values = [
            s.polls,
            s.parks,
            s.spins,
            s.timer_inserts,
            s.timer_cancels,
            s.timer_fires,
            s.timerfd_rearms,
            s.timerfd_spurious,
            s.remote_wakes_sent,
            s.remote_wakes_avoided,
            s.clock_reads,
            s.io_polls,
            s.io_events,
        ];
        for (slot, v) in self.0.iter().zip(values) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    pub(crate) fn load(&self) -> CoreStats {
        let v: Vec<u64> = self.0.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        CoreStats {
            polls: v[0],
            parks: v[1],
            spins: v[2],
            timer_inserts: v[3],
            timer_cancels: v[4],
            timer_fires: v[5],
            timerfd_rearms: v[6],
            timerfd_spurious: v[7],
            remote_wakes_sent: v[8],
            remote_wakes_avoided: v[9],
            clock_reads: v[10],
            io_polls: v[11],
            io_events: v[12],
        }
    }
}
