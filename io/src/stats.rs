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
    /// Events of the timerfd ([`Polled::timer_event`](crate::Polled::timer_event)), stale ones
    /// included. Re-programmings are counted by whoever programs it (the timer driver).
    pub timer_events: u64,
    /// Polls that found the unparker written and drained it.
    pub unparks_received: u64,
    /// Task wakers woken by I/O readiness.
    pub wakes: u64,
    /// Wakers that panicked while being woken (the panic was caught).
    pub waker_panics: u64,
    /// Registrations dropped on another thread (or after the reactor stopped being current on
    /// its own) whose slots this reactor then freed.
    pub orphans_freed: u64,
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
        self.timer_events += rhs.timer_events;
        self.unparks_received += rhs.unparks_received;
        self.wakes += rhs.wakes;
        self.waker_panics += rhs.waker_panics;
        self.orphans_freed += rhs.orphans_freed;
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
