//! The part of a reactor that other threads can reach: whether the reactor still runs, and
//! where the registrations dropped away from it go.
//!
//! The I/O types are `Send`, so that a stream can sit in a `Send` future or a library's
//! connection pool, but their readiness and waker lists are plain cells read and written by the
//! owning core alone. [`Home`] is what lets that hold:
//!
//! - each direction of a registration is bound to the reactor that was current where it was
//!   last polled (see `Registration`), and every use first checks that this reactor is the one
//!   entered on the calling thread ([`Home::is_current`]: one thread-local read and a
//!   compare). Elsewhere the direction moves to the reactor current there, while its reactor
//!   lives; once the reactor is gone ([`Home::close`]) every use gives an error instead of
//!   waiting for events nobody will deliver;
//! - a registration dropped away from its reactor (on another thread, or on its own thread once
//!   the reactor is no longer current there) removes its descriptor from the epoll set through
//!   its own registry (a duplicate of the epoll descriptor, usable from any thread and open
//!   as long as a registration or the reactor needs it), then leaves its slab key in
//!   [`Home::orphans`], raises [`Home::pending`] and unparks the reactor, which frees the slot
//!   on its own thread at its next poll ([`Home::take_orphans`]). The key is pushed *before*
//!   the flag is raised, and the reactor lowers the flag *before* it takes the list, so a key
//!   missed by one take always leaves the flag up for the next
//!   (`loom-tests/tests/foreign_drop.rs`). The unpark only makes a sleeping core get there
//!   soon;
//! - a registration that moved away from the reactor ([`Home::moved_away`]) leaves the same
//!   way, its key marked: the reactor then also wakes the tasks still waiting in that slot,
//!   so that they poll again and find where the registration went.

use std::fmt;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, RawFd};

use std::sync::Arc;

use mio::unix::SourceFd;
use slab::Slab;

use crate::key::{KeyGuard, KeyLock};
use crate::registration::{EpollSet, ScheduledIo};
use crate::stats::SharedCounters;
use crate::unparker::Unparker;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicU8, Ordering};
#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
#[cfg(not(loom))]
use std::sync::{Mutex, MutexGuard};

use std::cell::Cell;

#[cfg(not(loom))]
thread_local! {
    /// The address of the [`Home`] of the reactor entered on this thread (0: none), what a
    /// registration compares its own with on every use: one plain thread-local read. Set by
    /// `context`'s enter guards alone ([`set_current`]).
    static CURRENT_HOME: Cell<usize> = const { Cell::new(0) };
}

#[cfg(loom)]
loom::thread_local! {
    /// The address of the current reactor's [`Home`] (0: none); loom's threads share one OS
    /// thread, so the models need loom's thread-locals.
    static CURRENT_HOME: Cell<usize> = Cell::new(0);
}

/// Makes `home` the one [`Home::is_current`] finds on this thread (`None`: no reactor is
/// entered). Called by `context`'s enter guards, which keep it in step with the reactor they
/// enter and restore.
#[inline]
pub(crate) fn set_current(home: Option<&Home>) {
    let address = home.map_or(0, Home::address);
    // During the thread's exit, once its thread-locals are gone, nothing is current.
    let _gone = CURRENT_HOME.try_with(|h| h.set(address));
}

/// One entry of a reactor's slab.
pub(crate) struct Slot {
    /// Readiness and wakers, shared with the `Registration`.
    pub(crate) io: Arc<ScheduledIo>,
    /// Must match the token's generation for an event to reach this slot.
    pub(crate) generation: usize,
}

/// The reactor's slab, held through its home's key: whoever holds it may dispatch events into
/// the slots and touch their waiters (see [`ScheduledIo`]).
pub(crate) type Key<'a> = KeyGuard<'a, Slab<Slot>>;

/// A descriptor of the owner's own that a harvester took an event of (see
/// [`Home::hand_back`]): the timerfd.
pub(crate) const TAKEN_TIMER: u8 = 1;
/// The unparker's eventfd.
pub(crate) const TAKEN_UNPARK: u8 = 1 << 1;

/// A reactor's cross-thread part, shared by the reactor and each of its registrations.
pub(crate) struct Home {
    /// The reactor's live registrations, keyed by the low bits of their token: the key to
    /// dispatching events and to every registration's waiters. The owner takes it around its
    /// dispatch, a slot's insertion and removal, and a task's wait; a harvester (another core,
    /// when the owner could not poll for a while) around its own `epoll_wait` and dispatch.
    slots: KeyLock<Slab<Slot>>,
    /// The owner's own events a harvester took ([`TAKEN_TIMER`], [`TAKEN_UNPARK`]), for the
    /// owner's next poll to report as its own.
    taken: AtomicU8,
    /// A duplicate of the epoll descriptor, to deregister from any thread.
    registry: mio::Registry,
    /// Slab keys of registrations dropped away from the owner, or moved away from it (`true`:
    /// wake what still waits there), already out of the epoll set.
    orphans: Mutex<Vec<(usize, bool)>>,
    /// Raised after a key is pushed to `orphans`: the reactor's poll looks at the list only
    /// when it is up.
    pending: AtomicBool,
    /// Wakes the reactor so that it frees the orphans' slots.
    unparker: Unparker,
    /// Counters the reactor and its registrations advance on the reactor's thread.
    pub(crate) counters: SharedCounters,
    /// The reactor is gone: its registrations will never see another event.
    closed: AtomicBool,
}

impl Home {
    /// The home of a reactor created on this thread, polling `poll`, woken by `unparker`.
    pub(crate) fn new(poll: &mio::Poll, unparker: Unparker) -> io::Result<Home> {
        Ok(Home {
            slots: KeyLock::new(Slab::new()),
            taken: AtomicU8::new(0),
            registry: poll.registry().try_clone()?,
            orphans: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            unparker,
            counters: SharedCounters::default(),
            closed: AtomicBool::new(false),
        })
    }

    /// The epoll instance (this home's duplicate of its descriptor, open as long as the home):
    /// where the reactor's thread changes a level-triggered registration's interest.
    #[inline]
    pub(crate) fn epoll_fd(&self) -> RawFd {
        self.registry.as_raw_fd()
    }

    /// The epoll set and its counters, for a level-triggered registration's `epoll_ctl` calls.
    #[inline]
    pub(crate) fn epoll_set(&self) -> EpollSet<'_> {
        EpollSet {
            fd: self.registry.as_raw_fd(),
            counters: &self.counters,
        }
    }

    /// The key (see [`slots`](Self::slots)), waiting for a harvester that holds it: the owner's
    /// dispatch and its slab changes, which no user code runs inside.
    #[inline]
    pub(crate) fn key(&self) -> Key<'_> {
        self.slots.lock()
    }

    /// The key if nobody holds it: a task's wait (which, held by a harvester, polls again
    /// rather than wait) and a harvester's look.
    #[inline]
    pub(crate) fn try_key(&self) -> Option<Key<'_>> {
        self.slots.try_lock()
    }

    /// A harvester took events of the owner's own descriptors (`taken`, [`TAKEN_TIMER`] and
    /// [`TAKEN_UNPARK`] bits): records them for the owner's next poll and unparks the owner,
    /// which may be waiting in `epoll_wait` for the very edge the harvester took.
    pub(crate) fn hand_back(&self, taken: u8) {
        self.taken.fetch_or(taken, Ordering::Release);
        self.unparker.unpark();
    }

    /// The owner's events a harvester took since the last call: one relaxed load when none.
    #[inline]
    pub(crate) fn take_handed_back(&self) -> u8 {
        if self.taken.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.taken.swap(0, Ordering::Acquire)
    }

    /// Whether this home's reactor is the one entered on this thread.
    #[inline]
    pub(crate) fn is_current(&self) -> bool {
        // A registration's `Arc<Home>` keeps the address from being reused while it lives.
        // During the thread's exit, once its thread-locals are gone, nothing is current.
        CURRENT_HOME
            .try_with(|h| h.get() == self.address())
            .unwrap_or(false)
    }

    /// The address this home has in [`CURRENT_HOME`].
    #[inline]
    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// The reactor is being dropped: from now on its registrations fail instead of waiting.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Whether the reactor is gone ([`close`](Self::close)).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The error of a registration of this closed home used anywhere (`fd` names it).
    #[cold]
    pub(crate) fn stopped(fd: RawFd) -> io::Error {
        io::Error::other(format!(
            "tickless: the core that drives this I/O object (fd {fd}) has stopped: its \
             runtime was shut down or dropped"
        ))
    }

    /// Drops a registration away from the reactor's thread: `fd` leaves the epoll set now (it
    /// must still be open), and the slot at `key` is freed by the reactor's next poll.
    pub(crate) fn orphan(&self, key: usize, fd: RawFd) {
        self.leave(key, fd, false);
    }

    /// Moves a registration away from the reactor, from any thread: `fd` leaves the epoll set
    /// now, and the reactor's next poll wakes the tasks still waiting in the slot at `key` and
    /// frees it (see `Registration`'s protocol).
    pub(crate) fn moved_away(&self, key: usize, fd: RawFd) {
        self.leave(key, fd, true);
    }

    /// [`orphan`](Self::orphan) and [`moved_away`](Self::moved_away): out of the set, the key
    /// pushed (`wake`: marked moved), the flag raised, the reactor unparked.
    fn leave(&self, key: usize, fd: RawFd, wake: bool) {
        // It fails only if the descriptor was closed first, which removed it from the set
        // already (see `Reactor::deregister`), or if a level-triggered registration had left
        // the set already (nothing armed).
        let _gone_already = self.registry.deregister(&mut SourceFd(&fd));
        lock(&self.orphans).push((key, wake));
        self.pending.store(true, Ordering::Release);
        self.unparker.unpark();
    }

    /// Whether a registration was orphaned since the last [`take_orphans`](Self::take_orphans):
    /// one relaxed load, so the reactor asks on every poll.
    #[inline]
    pub(crate) fn has_orphans(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// The keys orphaned since the last call (`true`: moved away); the reactor frees their
    /// slots.
    pub(crate) fn take_orphans(&self) -> Vec<(usize, bool)> {
        // Lower the flag before taking the list: a key pushed after the take raises it again.
        self.pending.store(false, Ordering::Relaxed);
        mem::take(&mut *lock(&self.orphans))
    }
}

/// Locks `m`, ignoring poisoning: the list is never left half-written.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl fmt::Debug for Home {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Home")
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
