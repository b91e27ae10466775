//! Per-core I/O counters.

use std::cell::Cell;
use std::ops::{Add, AddAssign};

/// A snapshot of one reactor's counters, from [`Reactor::stats`](crate::Reactor::stats).
///
/// Snapshots add up (`+`, `+=`), so a runtime can report a total over its cores. Tests assert on
/// these counters rather than on time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// `epoll_wait` calls, including those interrupted by a signal.
    pub polls: u64,
    /// Events `epoll_wait` returned, the timerfd's and the unparker's included.
    pub events: u64,
    /// Calls to [`TimerFd::arm`](crate::TimerFd::arm): each is one `timerfd_settime`.
    pub timerfd_arms: u64,
    /// Calls to [`TimerFd::disarm`](crate::TimerFd::disarm): each is one `timerfd_settime`.
    pub timerfd_disarms: u64,
    /// Expirations of the timerfd that a poll read (an event whose read found nothing, because
    /// the timer was re-armed in between, is not counted).
    pub timerfd_fires: u64,
    /// Polls that found the unparker written and drained it.
    pub unparks_received: u64,
    /// Task wakers woken by I/O readiness.
    pub wakes: u64,
    /// Wakers that panicked while being woken (the panic was caught).
    pub waker_panics: u64,
    /// Descriptors registered right now, the timerfd and the unparker not included.
    pub registrations: u64,
}

impl Add for IoStats {
    type Output = IoStats;

    fn add(mut self, rhs: IoStats) -> IoStats {
        self += rhs;
        self
    }
}

impl AddAssign for IoStats {
    fn add_assign(&mut self, rhs: IoStats) {
        self.polls += rhs.polls;
        self.events += rhs.events;
        self.timerfd_arms += rhs.timerfd_arms;
        self.timerfd_disarms += rhs.timerfd_disarms;
        self.timerfd_fires += rhs.timerfd_fires;
        self.unparks_received += rhs.unparks_received;
        self.wakes += rhs.wakes;
        self.waker_panics += rhs.waker_panics;
        self.registrations += rhs.registrations;
    }
}

/// A counter owned by one core: a plain `Cell`, since only that core's thread touches it.
#[derive(Debug, Default)]
pub(crate) struct Counter(Cell<u64>);

impl Counter {
    /// Adds `n`.
    pub(crate) fn add(&self, n: u64) {
        self.0.set(self.0.get().wrapping_add(n));
    }

    /// Adds one.
    pub(crate) fn incr(&self) {
        self.add(1);
    }

    /// The current value.
    pub(crate) fn get(&self) -> u64 {
        self.0.get()
    }
}
