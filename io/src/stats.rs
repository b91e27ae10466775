//! Per-core I/O counters.

use std::cell::Cell;
use std::ops::{Add, AddAssign};
use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of one reactor's counters, from `Reactor::stats`.
///
/// Snapshots add up (`+`, `+=`), so a runtime can report a total over its cores. Tests assert on
/// these counters rather than on time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// `epoll_wait` calls, including those interrupted by a signal.
    pub polls: u64,
    /// Events `epoll_wait` returned, the timerfd's and the unparker's included.
    pub events: u64,
    /// Events of the timerfd (`Polled::timer_event`), stale ones
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
    /// Descriptors registered so far (those no longer registered included), the timerfd and
    /// the unparker not included.
    pub registered: u64,
    /// `epoll_ctl` calls made on the reactor's thread: registering and deregistering, and the
    /// interest changes of level-triggered streams (arming a direction a task waits in, disarming
    /// one an event found nobody waiting in). The removal a drop on another thread makes is not
    /// counted.
    pub epoll_ctls: u64,
    /// Reads (and accepts, receives) that returned `WouldBlock` through a registration: the
    /// system calls a wait cost on top of the `epoll_wait`.
    pub read_would_blocks: u64,
    /// Writes (and sends, connects) that returned `WouldBlock` through a registration.
    pub write_would_blocks: u64,
    /// Connections accepted by the listeners this reactor drives (TCP and Unix).
    pub accepts: u64,
    /// I/O objects (or one direction of one: a split stream's half) polled here while bound to
    /// another reactor, which then registered their descriptor with this reactor too: each
    /// moved here (leaving the other's epoll set if no direction stayed there), or, polled
    /// from several cores at once, stays registered with both.
    pub rebinds: u64,
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
        self.registered += rhs.registered;
        self.epoll_ctls += rhs.epoll_ctls;
        self.read_would_blocks += rhs.read_would_blocks;
        self.write_would_blocks += rhs.write_would_blocks;
        self.accepts += rhs.accepts;
        self.rebinds += rhs.rebinds;
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

/// A counter written on its reactor's thread only, but kept where other threads can reach it
/// (in [`Home`](crate::home::Home), which registrations share): an atomic advanced with a plain
/// load and store, no read-modify-write, which is exact as long as one thread writes it.
#[derive(Debug, Default)]
pub(crate) struct OwnerCounter(AtomicU64);

impl OwnerCounter {
    /// Adds one; on the reactor's thread only (another writer could lose counts, nothing
    /// worse).
    #[inline]
    pub(crate) fn incr(&self) {
        let n = self.0.load(Ordering::Relaxed);
        self.0.store(n.wrapping_add(1), Ordering::Relaxed);
    }

    /// The current value.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The counters of a reactor that its registrations advance as well, shared through
/// [`Home`](crate::home::Home); see [`IoStats`] for what each means.
#[derive(Debug, Default)]
pub(crate) struct SharedCounters {
    /// `epoll_ctl` calls on the reactor's thread.
    pub(crate) epoll_ctls: OwnerCounter,
    /// Reads that returned `WouldBlock`.
    pub(crate) read_would_blocks: OwnerCounter,
    /// Writes that returned `WouldBlock`.
    pub(crate) write_would_blocks: OwnerCounter,
    /// Connections accepted.
    pub(crate) accepts: OwnerCounter,
    /// Registrations (or directions of one) that moved here.
    pub(crate) rebinds: OwnerCounter,
}
